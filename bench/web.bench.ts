// `npm run bench:web`: the built site (a copy of dist/) in headless Chromium at 1400×900 @1×, opening
// snapshots through the page's file input as a user does (setInputFiles with a path: Chromium reads the
// file from disk; this process never holds it). Figures only; nothing here is a test.
// Per file, in ms after the input's `change` event (the moment the file is picked), seen from inside the
// page by an init script (MutationObserver, requestAnimationFrame, a wrapper on canvas drawing calls):
//   progress     the progress panel ([data-testid=progress]) is in the DOM: the earliest visible feedback
//   state=ready  body[data-state] becomes "ready": summary and timeline sections are rendered
//   1st draw     the first drawing call on the timeline canvas (the app draws there only once it has data)
//   1st ink      the first animation frame in which the timeline canvas holds drawn pixels (read back)
//   hash         the last SHA-256 digest of the page's link hash of the file (src/ui/state/hash.ts)
//   idle         body[data-state=ready] and body[data-busy="0"]: the app's own "loaded, nothing pending"
//                signal (it currently also waits for the link hash)
// Peaks over change → idle, sampled every ~200 ms: the RSS of the renderer process (page + worker, /proc)
// and, with BENCH_WEB_HEAP=1, the page's and the worker's JS heap (CDP Runtime.getHeapUsage; the worker
// reached through Target.setAutoAttach) and their ArrayBuffer backing stores. (Off by default: each
// sample interrupts the worker mid-load, which the timed figures should not pay.) Main-thread
// responsiveness over the same window: 'longtask' entries and requestAnimationFrame gaps (max, and how
// many exceed 100 ms). Then, after idle, 60 wheel events over the timeline plot (30 in, 30 out; each
// awaited), frame times from requestAnimationFrame deltas from the first wheel to idle after the last.
//
//   BENCH_WEB_FILES=100,real,1000  which files (default all three); 100/1000 are generated if missing;
//                                  trace50 / trace300: a generated torch.profiler trace of that many MB
//                                  grown100 / grown1000 / grown2000: a real training snapshot grown to that
//                                  many MB (test/gen/memgen/growreal.py: its window repeated, fresh
//                                  addresses and times, torch's memo layout) — the real-shaped input;
//                                  grown100host: the same with pinned host memory recorded (64
//                                  tensors pinned per step, the step before's freed: --host-pins);
//                                  grown100pool: with a pool_id in every entry, as torch ≥ 2.10 writes
//   BENCH_WEB_RUNS=3               runs per file (files of 1 GB and more: BENCH_WEB_BIG_RUNS, default 1)
//   BENCH_WEB_ZOOM=1000,100,real   which files get the wheel-zoom measurement (default: all selected)
//   BENCH_WEB_SETTLE_MS=2000      wait between the page's start and picking the file
//   BENCH_WEB_WINDOW=1             before each page is loaded, wait until Chromium's new window has
//                                  started (its processes quiet; at most 5 s): each run opens a new
//                                  browser context, thus a new window, and Chromium starts a window's
//                                  omnibox-popup WebUI in its own renderer (≈ 0.2 s of CPU) — work a
//                                  user's already-open window has done. 0: the page loads at once, as
//                                  the sets before 2026-12-05 16:20 did
//   BENCH_WEB_PORT=0               port for scripts/serve.mjs (0: a free one)
//   BENCH_WEB_VERBOSE=1            also print each run's data-state/data-busy transitions
//   BENCH_WEB_HEAP=1               also sample the JS heaps over CDP (above; the load then takes longer)
//   BENCH_WEB_CPU=1                also the CPU seconds Chromium's threads used from the pick to state=ready
//                                  (Linux /proc; the page is then polled every 10 ms for state=ready): the
//                                  parsing worker, the reader worker, V8's background threads (compiling,
//                                  GC), the page's main thread, Chromium's own UI renderers (a window's
//                                  omnibox popup), the browser and GPU processes
//   BENCH_WEB_VIA=src              open each file through the link instead (#src=, served beside the
//                                  site): times are then from the page's start (navigation), not a pick
//   BENCH_WEB_WARMUP=0             the page without its idle warm-up (for the A/B the README quotes)
//   BENCH_WEB_SERIES=10            also open that many 100 MB dumps of one rank (steps 1…N, hard links to
//                                  the generated 100 MB file) into the Series view: time to its verdict
//   BENCH_WEB_RANKS=16             also open that many 100 MB rank files at once (hard links to the
//                                  generated 100 MB file) into the rank overview: time until every row is
//                                  in, and the renderer's peak RSS beside one 100 MB file's (0: skip)
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import {
  cpSync,
  existsSync,
  linkSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
} from "node:fs";
import { availableParallelism, loadavg } from "node:os";
import { basename, join, resolve } from "node:path";
import { type Browser, type CDPSession, chromium, type Page } from "@playwright/test";

const ROOT = resolve(import.meta.dirname, "..");
const TMP = join(ROOT, ".tmp/bench");
const REAL = resolve(
  ROOT,
  "../shared/fixtures/real/kkaitlyn111__cs336-a2-systems__memory_ctx128_fullstep.pickle",
);
/** The real file grown into the real-shaped benchmark inputs: a late-recorded training step (AdamW). */
const GROW_FROM = resolve(
  ROOT,
  "../shared/fixtures/real/Wedsonlin__assignment2-systems__medium_256_training_memory_snapshot.pickle",
);
const SETTLE_MS = Number(process.env.BENCH_WEB_SETTLE_MS ?? 2000);
const WINDOW_SETTLES = process.env.BENCH_WEB_WINDOW !== "0";
const VIA: "input" | "src" = process.env.BENCH_WEB_VIA === "src" ? "src" : "input";
const WARM_UP = process.env.BENCH_WEB_WARMUP !== "0";
const CPU = process.env.BENCH_WEB_CPU === "1";
const HEAP = process.env.BENCH_WEB_HEAP === "1";
/** The served copy of dist/ (files opened through #src= are linked into it). */
let servedDir = "";
const PIECE = 4 << 20; // src/ui/state/hash.ts hashes the file in 4 MiB pieces, then once over the digests

const selected = (process.env.BENCH_WEB_FILES ?? "100,real,1000").split(",").map((s) => s.trim());
const zoomOn = (process.env.BENCH_WEB_ZOOM ?? selected.join(",")).split(",").map((s) => s.trim());
const runsWanted = Number(process.env.BENCH_WEB_RUNS ?? 3);
/** Files of 1 GB and more: one run unless asked (each takes seconds and most of the machine's memory). */
const bigRuns = Number(process.env.BENCH_WEB_BIG_RUNS ?? 1);

interface Spec {
  key: string;
  label: string;
  path: string;
  runs: number;
  timeoutMs: number;
}

const la = () =>
  loadavg()
    .map((x) => x.toFixed(2))
    .join(" ");
const log = (s: string) => console.log(s);
const median = (xs: number[]) => {
  const v = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (v.length === 0) return Number.NaN;
  return v.length % 2 ? v[v.length >> 1] : (v[v.length / 2 - 1] + v[v.length / 2]) / 2;
};
const pct = (xs: number[], p: number) => {
  const v = [...xs].sort((a, b) => a - b);
  return v.length ? v[Math.min(v.length - 1, Math.ceil((p / 100) * v.length) - 1)] : Number.NaN;
};
const ms = (x: number | null | undefined) => (x == null || !Number.isFinite(x) ? "—" : `${Math.round(x)}`);
const mb = (x: number | null | undefined) =>
  x == null || !Number.isFinite(x) ? "—" : `${(x / 2 ** 20).toFixed(0)}`;

// ---------------------------------------------------------------------------------------------------------
// In the page, before any of its scripts: milestones, frames, long tasks, the first drawing on the timeline.

// Plain JavaScript in a string: tsx's transform would add helpers (__name) the page does not have.
const PAGE_PROBE = `(() => {
  const B = {
    t0: null, // the input's change event (performance.now())
    t0Epoch: null,
    marks: {},
    phases: [], // [time, phase text]
    states: [], // [time, data-state, data-busy]
    frames: [], // flat: frame time, delta since the previous frame
    longtasks: [], // flat: start, duration
    digests: [], // times the link hash's digests resolved
    error: null,
  };
  window.__bench = B;
  const now = () => performance.now();
  // BENCH_WEB_VIA=src: the file comes through the link (#src=), so the clock starts with the page
  if (location.hash.includes("src=")) {
    B.t0 = 0;
    B.t0Epoch = performance.timeOrigin;
  }
  const mark = (name) => {
    if (B.t0 != null && !(name in B.marks)) B.marks[name] = now();
  };
  window.addEventListener(
    "change",
    (e) => {
      const t = e.target;
      if (t && t.dataset && t.dataset.testid === "file-input") {
        B.t0 = now();
        B.t0Epoch = performance.timeOrigin + B.t0;
        B.marks = {};
        B.phases = [];
        B.digests = [];
      }
    },
    true,
  );
  let lastPhase = "";
  let lastState = "";
  const observe = () => {
    if (B.t0 == null || !document.body) return;
    if (document.querySelector("[data-testid=progress]")) mark("progress");
    const phEl = document.querySelector("[data-testid=progress-phase]");
    const ph = phEl ? phEl.textContent : "";
    if (ph && ph !== lastPhase) {
      lastPhase = ph;
      B.phases.push([now(), ph]);
    }
    if (document.querySelector("[data-testid=summary]")) mark("summary");
    if (document.querySelector("canvas[data-testid=timeline-canvas]")) mark("timelineCanvas");
    const st = document.body.dataset.state || "";
    const busy = document.body.dataset.busy || "";
    if (st + "/" + busy !== lastState) {
      lastState = st + "/" + busy;
      B.states.push([now(), st, busy]);
    }
    if (st === "ready") mark("stateReady");
    if (st === "ready" && busy === "0") mark("ready");
    if (st === "error" && !("error" in B.marks)) {
      mark("error");
      const m = document.querySelector("[data-testid=error-message]");
      B.error = (m && m.textContent) || "error";
    }
  };
  new MutationObserver(observe).observe(document, {
    subtree: true,
    childList: true,
    characterData: true,
    attributes: true,
    attributeFilter: ["data-state", "data-busy", "data-testid"],
  });

  // Frames: every requestAnimationFrame delta; and, until it has some, whether the timeline canvas has ink.
  let last = 0;
  const loop = (t) => {
    if (last) B.frames.push(t, t - last);
    last = t;
    // (read back only once a drawing call has been made: never during the load itself, where the read
    // back of a whole canvas every frame took CPU from the load on a 2-core machine)
    if (B.t0 != null && "draw" in B.marks && !("ink" in B.marks)) {
      const c = document.querySelector("canvas[data-testid=timeline-canvas]");
      if (c && c.width > 0 && c.height > 0) {
        const ctx = c.getContext("2d");
        const d = ctx ? ctx.getImageData(0, 0, c.width, c.height).data : null;
        let n = 0;
        if (d) for (let i = 3; i < d.length; i += 64) if (d[i] > 0) n++;
        if (n > 200) mark("ink");
      }
    }
    requestAnimationFrame(loop);
  };
  requestAnimationFrame(loop);

  // The first drawing call on the timeline canvas; the originals are put back right after.
  const P = CanvasRenderingContext2D.prototype;
  const names = ["fillRect", "fill", "stroke", "drawImage", "putImageData", "fillText"];
  const orig = {};
  for (const n of names) {
    orig[n] = P[n];
    P[n] = function (...a) {
      if (B.t0 != null && this.canvas && this.canvas.getAttribute("data-testid") === "timeline-canvas") {
        mark("draw");
        for (const m of names) P[m] = orig[m];
      }
      return orig[n].apply(this, a);
    };
  }

  try {
    new PerformanceObserver((l) => {
      for (const e of l.getEntries()) B.longtasks.push(e.startTime, e.duration);
    }).observe({ type: "longtask", buffered: true });
  } catch (e) {}

  // The link hash (src/ui/state/hash.ts): one digest per 4 MiB piece, then one over the digests.
  if (typeof SubtleCrypto !== "undefined") {
    const digest = SubtleCrypto.prototype.digest;
    SubtleCrypto.prototype.digest = function (...a) {
      const p = digest.apply(this, a);
      p.then(() => B.digests.push(now()), () => {});
      return p;
    };
  }
})();`;

// ---------------------------------------------------------------------------------------------------------
// Outside the page: heap of page and worker over CDP, RSS of the renderer from /proc.

interface Sample {
  at: number; // epoch ms
  used: number;
  backing: number;
}

class Sampler {
  page: Sample[] = [];
  worker: Sample[] = [];
  rss: { at: number; bytes: number }[] = [];
  nodeRss: { at: number; bytes: number }[] = [];
  workerGapMax = 0;
  private stop = false;
  private loops: Promise<void>[] = [];
  private workers = new Map<string, string>(); // session id → url
  private nextId = 1_000_000;
  private waiting = new Map<number, (m: any) => void>();

  constructor(
    private cdp: CDPSession,
    private browserPid: number | undefined,
  ) {
    cdp.on("Target.attachedToTarget", (e: any) => {
      if (e.targetInfo?.type === "worker") this.workers.set(e.sessionId, e.targetInfo.url);
    });
    cdp.on("Target.detachedFromTarget", (e: any) => this.workers.delete(e.sessionId));
    cdp.on("Target.receivedMessageFromTarget", (e: any) => {
      try {
        const m = JSON.parse(e.message);
        const f = this.waiting.get(m.id);
        if (f) {
          this.waiting.delete(m.id);
          f(m);
        }
      } catch {}
    });
  }

  async attach() {
    if (!HEAP) return;
    // Non-flat auto-attach on our own session: Playwright's own flat attachment is left alone.
    await this.cdp.send("Target.setAutoAttach", {
      autoAttach: true,
      waitForDebuggerOnStart: false,
      flatten: false,
    });
  }

  private toWorker(sessionId: string, method: string): Promise<any> {
    const id = this.nextId++;
    return new Promise((res) => {
      const timer = setTimeout(() => {
        this.waiting.delete(id);
        res(null);
      }, 30_000);
      this.waiting.set(id, (m) => {
        clearTimeout(timer);
        res(m);
      });
      this.cdp
        .send(
          "Target.sendMessageToTarget" as any,
          { sessionId, message: JSON.stringify({ id, method }) } as any,
        )
        .catch(() => {
          clearTimeout(timer);
          this.waiting.delete(id);
          res(null);
        });
    });
  }

  start(everyMs = 200) {
    const sleep = (t: number) => new Promise((r) => setTimeout(r, t));
    if (HEAP) this.sampleHeaps(everyMs, sleep);
    this.loops.push(
      (async () => {
        while (!this.stop) {
          const at = Date.now();
          this.rss.push({ at, bytes: rendererRss(this.browserPid) });
          this.nodeRss.push({ at, bytes: process.memoryUsage().rss });
          await sleep(everyMs);
        }
      })(),
    );
  }

  private sampleHeaps(everyMs: number, sleep: (t: number) => Promise<unknown>) {
    this.loops.push(
      (async () => {
        while (!this.stop) {
          const r: any = await this.cdp.send("Runtime.getHeapUsage" as any).catch(() => null);
          if (r) this.page.push({ at: Date.now(), used: r.usedSize, backing: r.backingStorageSize ?? 0 });
          await sleep(everyMs);
        }
      })(),
    );
    this.loops.push(
      (async () => {
        let lastAt = 0;
        while (!this.stop) {
          let used = 0;
          let backing = 0;
          let got = false;
          for (const sid of [...this.workers.keys()]) {
            const m = await this.toWorker(sid, "Runtime.getHeapUsage");
            if (m?.result) {
              used += m.result.usedSize;
              backing += m.result.backingStorageSize ?? 0;
              got = true;
            }
          }
          if (got) {
            const at = Date.now();
            if (lastAt) this.workerGapMax = Math.max(this.workerGapMax, at - lastAt);
            lastAt = at;
            this.worker.push({ at, used, backing });
          }
          await sleep(everyMs);
        }
      })(),
    );
  }

  async end() {
    this.stop = true;
    await Promise.all(this.loops);
  }
}

/** The largest RSS among the browser's renderer processes (the page's, holding its worker). */
function rendererRss(browserPid: number | undefined): number {
  if (!browserPid) return Number.NaN;
  const parent = new Map<number, number>();
  const renderers: number[] = [];
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      parent.set(Number(d), ppid);
      if (readFileSync(`/proc/${d}/cmdline`, "utf8").includes("--type=renderer")) renderers.push(Number(d));
    } catch {}
  }
  let best = 0;
  for (const pid of renderers) {
    let p: number | undefined = pid;
    for (let i = 0; i < 10 && p && p !== browserPid; i++) p = parent.get(p);
    if (p !== browserPid) continue;
    try {
      const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
      if (m) best = Math.max(best, Number(m[1]) * 1024);
    } catch {}
  }
  return best;
}

interface ThreadTicks {
  /** Which part of Chromium the thread belongs to (see cpuByClass). */
  kind:
    | "renderer-main"
    | "worker"
    | "v8-background"
    | "renderer-other"
    | "chrome-ui"
    | "browser"
    | "gpu"
    | "other";
  ticks: number;
}

/** CPU ticks (user + system, clock ticks) of every thread of the browser's processes, by pid/tid. */
function threadTicks(browserPid: number | undefined): Map<string, ThreadTicks> {
  const out = new Map<string, ThreadTicks>();
  if (!browserPid) return out;
  const parent = new Map<number, number>();
  const type = new Map<number, string>();
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, "utf8");
      parent.set(Number(d), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]));
      const cmd = readFileSync(`/proc/${d}/cmdline`, "utf8");
      // (a renderer of Chromium's own UI, such as a window's omnibox popup, is told apart)
      const ui = cmd.includes("--top-chrome-webui");
      type.set(Number(d), ui ? "chrome-ui" : (/--type=([a-z-]+)/.exec(cmd)?.[1] ?? "browser"));
    } catch {}
  }
  for (const [pid, t] of type) {
    let p: number | undefined = pid;
    for (let i = 0; i < 10 && p && p !== browserPid; i++) p = parent.get(p);
    if (p !== browserPid) continue;
    try {
      for (const tid of readdirSync(`/proc/${pid}/task`)) {
        const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8");
        const name = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
        const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
        const ticks = Number(f[11]) + Number(f[12]);
        let kind: ThreadTicks["kind"] = "other";
        if (t === "renderer") {
          if (tid === String(pid)) kind = "renderer-main";
          else if (name.startsWith("DedicatedWorker")) kind = "worker";
          else if (name.startsWith("ThreadPoolForeg")) kind = "v8-background";
          else kind = "renderer-other";
        } else if (t === "chrome-ui") kind = "chrome-ui";
        else if (t === "browser") kind = "browser";
        else if (t === "gpu-process") kind = "gpu";
        out.set(`${pid}/${tid}`, { kind, ticks });
      }
    } catch {}
  }
  return out;
}

/**
 * CPU seconds between two thread snapshots, by class: the busiest worker thread is the parsing one
 * ("engine"), the other workers' together "reader+" (the reader, a spare); "v8 bg" is the renderer's
 * thread pool, where V8 compiles optimised code and runs its concurrent GC.
 */
function cpuByClass(
  before: Map<string, ThreadTicks>,
  after: Map<string, ThreadTicks>,
): Record<string, number> {
  const hz = 100; // USER_HZ: /proc's clock ticks per second on Linux
  const by: Record<string, number> = {
    all: 0,
    engine: 0,
    "reader+": 0,
    "v8 bg": 0,
    page: 0,
    "renderer other": 0,
    "chrome UI": 0,
    browser: 0,
    gpu: 0,
  };
  const workers: number[] = [];
  for (const [key, a] of after) {
    const s = (a.ticks - (before.get(key)?.ticks ?? 0)) / hz;
    if (s <= 0) continue;
    by.all += s;
    if (a.kind === "worker") workers.push(s);
    else if (a.kind === "v8-background") by["v8 bg"] += s;
    else if (a.kind === "renderer-main") by.page += s;
    else if (a.kind === "renderer-other") by["renderer other"] += s;
    else if (a.kind === "chrome-ui") by["chrome UI"] += s;
    else if (a.kind === "browser" || a.kind === "other") by.browser += s;
    else by.gpu += s;
  }
  workers.sort((x, y) => y - x);
  by.engine = workers[0] ?? 0;
  by["reader+"] = workers.slice(1).reduce((x, y) => x + y, 0);
  return by;
}

// ---------------------------------------------------------------------------------------------------------

interface Zoom {
  events: number;
  spanIn: number;
  dispatchMs: number;
  settleMs: number;
  frames: number;
  p50: number;
  p95: number;
  max: number;
  over50: number;
}

interface Run {
  file: string;
  /** The file's size in bytes. */
  fileBytes: number;
  run: number;
  loadavg: string;
  /** ms waited for the run's new window to start (BENCH_WEB_WINDOW), NaN when not waited */
  windowMs: number;
  outcome: string;
  pickToChange: number;
  progress: number;
  draw: number;
  stateReady: number;
  ink: number;
  ready: number;
  hash: number;
  phases: string;
  states: string;
  pageHeap: number;
  pageBacking: number;
  workerHeap: number;
  workerBacking: number;
  workerGapMax: number;
  rendererRss: number;
  /** The renderer's RSS peak over the load less its RSS before it: what the load added, shared memory too. */
  rendererRssGrowth: number;
  nodeRssGrowth: number;
  longMax: number;
  long100: number;
  longCount: number;
  rafMax: number;
  raf100: number;
  zoom?: Zoom;
  /** BENCH_WEB_CPU=1: CPU seconds from the pick to state=ready, by thread class. */
  cpu?: Record<string, number>;
  errors: string[];
}

async function oneRun(
  browser: Browser,
  url: string,
  spec: Spec,
  run: number,
  withZoom: boolean,
): Promise<Run> {
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 }, deviceScaleFactor: 1 });
  const page = await context.newPage();
  const windowMs = WINDOW_SETTLES ? await windowStarted(browserPid) : Number.NaN;
  const errors: string[] = [];
  page.on("console", (m) => {
    if (m.type() === "error") errors.push(m.text().slice(0, 200));
  });
  page.on("pageerror", (e) => errors.push(String(e).slice(0, 200)));
  let crashed = false;
  page.on("crash", () => {
    crashed = true;
  });
  await page.addInitScript({ content: PAGE_PROBE });
  if (!WARM_UP) await page.addInitScript({ content: "window.__peakscopeNoWarmUp = true;" });
  const cdp = await context.newCDPSession(page);
  const sampler = new Sampler(cdp, browserPid);
  await sampler.attach();
  const r: Run = {
    file: spec.label,
    fileBytes: statSync(spec.path).size,
    run,
    loadavg: la(),
    windowMs,
    outcome: "ok",
    pickToChange: Number.NaN,
    progress: Number.NaN,
    draw: Number.NaN,
    stateReady: Number.NaN,
    ink: Number.NaN,
    ready: Number.NaN,
    hash: Number.NaN,
    phases: "",
    states: "",
    pageHeap: Number.NaN,
    pageBacking: Number.NaN,
    workerHeap: Number.NaN,
    workerBacking: Number.NaN,
    workerGapMax: Number.NaN,
    rendererRss: Number.NaN,
    rendererRssGrowth: Number.NaN,
    nodeRssGrowth: Number.NaN,
    longMax: Number.NaN,
    long100: Number.NaN,
    longCount: Number.NaN,
    rafMax: Number.NaN,
    raf100: Number.NaN,
    errors,
  };
  try {
    let nodeRss0 = process.memoryUsage().rss;
    let tCall = Date.now();
    if (VIA === "src") {
      const served = basename(spec.path);
      if (!existsSync(join(servedDir, served))) linkSync(spec.path, join(servedDir, served));
      sampler.start();
      await page.goto(`${url}#src=${encodeURIComponent(served)}`);
    } else {
      await page.goto(url);
      await page.waitForFunction(() => !!document.body?.dataset.state, undefined, { timeout: 60_000 });
      sampler.start();
      // a baseline sample or two, and the time a person takes to pick a file (the page uses it to start
      // and warm up a worker)
      await new Promise((res) => setTimeout(res, SETTLE_MS));
      nodeRss0 = process.memoryUsage().rss;
      tCall = Date.now();
      const cpu0 = CPU ? threadTicks(browserPid) : null;
      await page.getByTestId("file-input").setInputFiles(spec.path, { timeout: 120_000 });
      if (cpu0) {
        await page.waitForFunction(
          () => {
            const B = (window as any).__bench;
            return B && ("stateReady" in B.marks || "error" in B.marks);
          },
          undefined,
          { timeout: spec.timeoutMs, polling: 10 },
        );
        r.cpu = cpuByClass(cpu0, threadTicks(browserPid));
      }
    }
    const probed = await page
      .waitForFunction(() => (window as any).__bench?.t0 != null, undefined, { timeout: 30_000 })
      .then(() => true)
      .catch(() => false);
    if (!probed) throw new Error("the page probe saw no change event on the file input");
    // Loaded (ready and idle) or failed.
    let timedOut = false;
    await page
      .waitForFunction(
        () => {
          const B = (window as any).__bench;
          return B && ("ready" in B.marks || "error" in B.marks);
        },
        undefined,
        { timeout: spec.timeoutMs, polling: 250 },
      )
      .catch((e) => {
        timedOut = true;
        if (!crashed) r.outcome = `timeout after ${Math.round(spec.timeoutMs / 1000)} s`;
        else r.outcome = "page crashed";
        errors.push(String(e).split("\n")[0]);
      });
    const size = statSync(spec.path).size;
    const digestsWanted = Math.max(1, Math.ceil(size / PIECE)) + 1;
    if (!timedOut && VIA === "input") {
      // The link hash, after ready: wait for it so that the zoom measures a settled page.
      await page
        .waitForFunction((n) => (window as any).__bench.digests.length >= n, digestsWanted, {
          timeout: Math.max(60_000, size / 5e3),
          polling: 250,
        })
        .catch(() => errors.push("hash did not finish (or the page has no crypto.subtle)"));
    }
    const B: any = crashed ? null : await page.evaluate(() => (window as any).__bench).catch(() => null);
    await sampler.end();
    if (!B) {
      r.outcome = crashed ? "page crashed" : r.outcome === "ok" ? "page unreadable" : r.outcome;
      return r;
    }
    if (B.error) r.outcome = `error: ${B.error}`;
    const t0: number = B.t0;
    const rel = (name: string) => (name in B.marks ? B.marks[name] - t0 : Number.NaN);
    r.pickToChange = B.t0Epoch - tCall;
    r.progress = rel("progress");
    r.draw = rel("draw");
    r.stateReady = rel("stateReady");
    r.ink = rel("ink");
    r.ready = rel("ready");
    r.states = B.states
      .filter(([t]: [number]) => t >= t0)
      .map(([t, st, busy]: [number, string, string]) => `${st}/${busy}@${Math.round(t - t0)}`)
      .join(" ");
    r.phases = B.phases.map(([t, p]: [number, string]) => `${p}@${Math.round(t - t0)}`).join(", ");
    const end = Number.isFinite(r.ready) ? B.marks.ready : Number.POSITIVE_INFINITY;
    if (B.digests.length >= digestsWanted) r.hash = B.digests[B.digests.length - 1] - t0;
    // Heaps and RSS over the load window, in epoch ms.
    const e0 = B.t0Epoch;
    const e1 = Number.isFinite(r.ready) ? B.t0Epoch + r.ready : Number.POSITIVE_INFINITY;
    const inWin = (at: number) => at >= e0 - 250 && at <= e1 + 250;
    const maxOf = (xs: number[]) => (xs.length ? Math.max(...xs) : Number.NaN);
    const pageIn = sampler.page.filter((s) => inWin(s.at));
    const workerIn = sampler.worker.filter((s) => inWin(s.at));
    r.pageHeap = maxOf(pageIn.map((s) => s.used));
    r.pageBacking = maxOf(pageIn.map((s) => s.backing));
    r.workerHeap = maxOf(workerIn.map((s) => s.used));
    r.workerBacking = maxOf(workerIn.map((s) => s.backing));
    r.workerGapMax = sampler.workerGapMax;
    r.rendererRss = maxOf(sampler.rss.filter((s) => inWin(s.at)).map((s) => s.bytes));
    // (a cross-origin isolated page's columns are SharedArrayBuffers, which CDP's heap figures leave out)
    const before = sampler.rss.filter((s) => s.at < e0).at(-1) ?? sampler.rss.find((s) => inWin(s.at));
    r.rendererRssGrowth = before ? r.rendererRss - before.bytes : Number.NaN;
    r.nodeRssGrowth = maxOf(sampler.nodeRss.filter((s) => s.at >= tCall).map((s) => s.bytes)) - nodeRss0;
    // Responsiveness over the load window (page clock).
    const lts: number[] = [];
    for (let i = 0; i < B.longtasks.length; i += 2) {
      const s = B.longtasks[i];
      const d = B.longtasks[i + 1];
      if (s + d >= t0 && s <= end) lts.push(d);
    }
    r.longCount = lts.length;
    r.longMax = lts.length ? Math.max(...lts) : 0;
    r.long100 = lts.filter((d) => d > 100).length;
    const gaps = (a: number, b: number) => {
      const out: number[] = [];
      for (let i = 0; i < B.frames.length; i += 2) {
        const t = B.frames[i];
        const d = B.frames[i + 1];
        if (t >= a && t - d <= b) out.push(d);
      }
      return out;
    };
    const g = gaps(t0, end);
    r.rafMax = g.length ? Math.max(...g) : Number.NaN;
    r.raf100 = g.filter((d) => d > 100).length;
    if (withZoom && Number.isFinite(r.ready)) r.zoom = await zoom(page);
    return r;
  } catch (e) {
    r.outcome = crashed ? "page crashed" : `failed: ${String(e).split("\n")[0].slice(0, 160)}`;
    await sampler.end().catch(() => {});
    return r;
  } finally {
    await context.close().catch(() => {});
  }
}

/** ~60 wheel events over the plot (30 in, 30 out), frame times from requestAnimationFrame deltas. */
async function zoom(page: Page): Promise<Zoom | undefined> {
  const tl = page.getByTestId("timeline");
  if ((await tl.count()) === 0) return undefined;
  const box = await page.getByTestId("timeline-canvas").boundingBox();
  if (!box) return undefined;
  const attr = async (n: string) => Number(await tl.getAttribute(n));
  const left = await attr("data-plot-left");
  const width = await attr("data-plot-width");
  const top = await attr("data-plot-top");
  const height = await attr("data-plot-height");
  const x0 = await attr("data-x0");
  const x1 = await attr("data-x1");
  await page.mouse.move(box.x + left + width * 0.4, box.y + top + height * 0.5);
  await page.waitForFunction(() => document.body.dataset.busy === "0", undefined, { timeout: 60_000 });
  const t1 = await page.evaluate(() => performance.now());
  const n = 60;
  const d0 = Date.now();
  let spanIn = Number.NaN;
  for (let i = 0; i < n; i++) {
    await page.mouse.wheel(0, i < n / 2 ? -120 : 120);
    if (i === n / 2 - 1) {
      // How far in the 30 zoom-ins got (the app clamps): a check that the wheel did zoom.
      const v = await tl.evaluate((e) => [Number(e.dataset.x0), Number(e.dataset.x1)]).catch(() => null);
      if (v) spanIn = (v[1] - v[0]) / (x1 - x0);
    }
  }
  const dispatchMs = Date.now() - d0;
  const tLast = await page.evaluate(() => performance.now());
  await page.waitForFunction(() => document.body.dataset.busy === "0", undefined, {
    timeout: 120_000,
    polling: 50,
  });
  const { t2, frames } = await page.evaluate(() => ({
    t2: performance.now(),
    frames: (window as any).__bench.frames as number[],
  }));
  const d: number[] = [];
  for (let i = 0; i < frames.length; i += 2) if (frames[i] >= t1 && frames[i] <= t2) d.push(frames[i + 1]);
  return {
    events: n,
    spanIn,
    dispatchMs,
    settleMs: t2 - tLast,
    frames: d.length,
    p50: pct(d, 50),
    p95: pct(d, 95),
    max: d.length ? Math.max(...d) : Number.NaN,
    over50: d.filter((x) => x > 50).length,
  };
}

// ---------------------------------------------------------------------------------------------------------

let browserPid: number | undefined;

function fileSpecs(): Spec[] {
  mkdirSync(TMP, { recursive: true });
  const out: Spec[] = [];
  for (const key of selected) {
    if (key === "real") {
      if (!existsSync(REAL)) {
        log(`skip real: ${REAL} is missing`);
        continue;
      }
      out.push({ key, label: "real 3 MB", path: REAL, runs: runsWanted, timeoutMs: 120_000 });
      continue;
    }
    const traceMb = /^trace(\d+)$/.exec(key);
    if (traceMb) {
      // a generated torch.profiler trace of that many MB (docs/artifacts.md)
      const mb = Number(traceMb[1]);
      const tracePath = join(TMP, `trace-${mb}mb.json`);
      if (!existsSync(tracePath)) {
        log(`generating ${tracePath} …`);
        execFileSync("python3", ["test/gen/generate.py", "big-trace", "--target-mb", String(mb), tracePath], {
          cwd: ROOT,
          stdio: ["ignore", "ignore", "inherit"],
        });
      }
      out.push({
        key,
        label: `trace ${mb} MB`,
        path: tracePath,
        runs: runsWanted,
        timeoutMs: 90_000 + mb * 1200,
      });
      continue;
    }
    const grownMb = /^grown(\d+)(host|pool)?$/.exec(key);
    if (grownMb) {
      const mb = Number(grownMb[1]);
      const path =
        grownMb[2] === "pool"
          ? withPoolIds(grownSnapshot(mb))
          : grownSnapshot(mb, grownMb[2] === "host" ? HOST_PINS : 0);
      out.push({
        key,
        label: `real-shaped ${(statSync(path).size / 1e6).toFixed(0)} MB${grownMb[2] ? ` + ${grownMb[2]}` : ""}`,
        path,
        runs: mb >= 1000 ? bigRuns : runsWanted,
        timeoutMs: 90_000 + mb * 600,
      });
      continue;
    }
    const n = Number(key);
    if (!Number.isFinite(n) || n <= 0) {
      log(`skip ${key}: not a size in MB, "real" or "traceN"`);
      continue;
    }
    const path = join(TMP, `big-${n}mb.pickle`);
    if (!existsSync(path)) {
      log(`generating ${path} …`);
      execFileSync("python3", ["test/gen/generate.py", "big", "--target-mb", String(n), path], {
        cwd: ROOT,
        stdio: ["ignore", "ignore", "inherit"],
      });
    }
    out.push({
      key,
      label: `gen ${n} MB`,
      path,
      runs: n >= 1000 ? bigRuns : runsWanted,
      timeoutMs: 90_000 + n * 600, // 1 GB: 11.5 min at most
    });
  }
  return out;
}

/** Pinned host tensors per step in the `grownNhost` inputs (a data loader's batch fields, a heavy one). */
const HOST_PINS = 64;

/**
 * A real training snapshot grown to about `mb` MB, written once into .tmp/bench; with `hostPins`, pinned
 * host memory recorded too (`grow-real --host-pins`).
 */
function grownSnapshot(mb: number, hostPins = 0): string {
  const path = join(TMP, hostPins > 0 ? `grown-${mb}mb-host${hostPins}.pickle` : `grown-${mb}mb.pickle`);
  if (!existsSync(path)) {
    log(`growing ${GROW_FROM} to ${path} …`);
    const args = ["test/gen/generate.py", "grow-real", "--from", GROW_FROM, "--target-mb", String(mb)];
    if (hostPins > 0) args.push("--host-pins", String(hostPins));
    execFileSync("python3", [...args, path], { cwd: ROOT, stdio: ["ignore", "ignore", "inherit"] });
  }
  return path;
}

/**
 * The grown file as torch ≥ 2.10 writes its entries: each with a `pool_id`, a new (0, 0) tuple each time
 * (`generate.py pool-ids`). Written once.
 */
function withPoolIds(grown: string): string {
  const path = grown.replace(/\.pickle$/, "-pool.pickle");
  if (!existsSync(path)) {
    log(`writing ${path} (pool_id on every entry) …`);
    execFileSync("python3", ["test/gen/generate.py", "pool-ids", grown, path], {
      cwd: ROOT,
      stdio: ["ignore", "ignore", "inherit"],
    });
  }
  return path;
}

async function serve(dir: string): Promise<{ url: string; proc: ChildProcess }> {
  const port = process.env.BENCH_WEB_PORT ?? "0";
  const proc = spawn(process.execPath, [join(ROOT, "scripts/serve.mjs"), dir, "--port", port], {
    cwd: ROOT,
    stdio: ["ignore", "pipe", "inherit"],
  });
  const url = await new Promise<string>((res, rej) => {
    const t = setTimeout(() => rej(new Error("serve.mjs printed no URL in 20 s")), 20_000);
    proc.stdout?.on("data", (d) => {
      const m = /http:\/\/\S+/.exec(String(d));
      if (m) {
        clearTimeout(t);
        res(m[0]);
      }
    });
    proc.on("exit", (c) => rej(new Error(`serve.mjs exited (${c})`)));
  });
  return { url, proc };
}

async function main() {
  const started = Date.now();
  log(`web bench: built site in headless Chromium, 1400×900 @1×; load average ${la()} (1/5/15 min)`);
  const dist = join(ROOT, "dist");
  if (!existsSync(join(dist, "index.html"))) {
    log("dist/ missing: npx vite build …");
    execFileSync("npx", ["vite", "build"], { cwd: ROOT, stdio: ["ignore", "ignore", "inherit"] });
  }
  // A private copy, so that a rebuild of dist/ during the (long) run cannot pull files from under the page.
  const copy = join(TMP, "web-dist");
  rmSync(copy, { recursive: true, force: true });
  cpSync(dist, copy, { recursive: true });
  servedDir = copy;
  log(
    `opened through ${VIA === "src" ? "the link (#src=, times from the page's start)" : "the file input"}; ` +
      `warm-up ${WARM_UP ? "on" : "off (BENCH_WEB_WARMUP=0)"}`,
  );
  log(`site: dist/ built ${statSync(join(dist, "index.html")).mtime.toISOString()} (served from a copy)`);
  const specs = fileSpecs();
  const { url, proc } = await serve(copy);
  let browser: Browser | undefined;
  const results: Run[] = [];
  try {
    browser = await chromium.launch({
      executablePath: "/usr/bin/chromium",
      headless: true,
      args: [
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
      ],
    });
    browserPid = findBrowserPid();
    log(`serving ${url}; Chromium ${browser.version()}${browserPid ? ` (pid ${browserPid})` : ""}`);
    for (const spec of specs) {
      const size = statSync(spec.path).size;
      log(`\n${spec.label}: ${basename(spec.path)} (${(size / 1e6).toFixed(1)} MB), ${spec.runs} run(s)`);
      for (let i = 1; i <= spec.runs; i++) {
        const r = await oneRun(browser, url, spec, i, i === 1 && zoomOn.includes(spec.key));
        results.push(r);
        printRun(r);
      }
    }
    const ranks = Number(process.env.BENCH_WEB_RANKS ?? 16);
    if (ranks > 0) await manyRun(browser, url, ranks, results, "ranks");
    const series = Number(process.env.BENCH_WEB_SERIES ?? 10);
    if (series > 0) await manyRun(browser, url, series, results, "series");
  } finally {
    await browser?.close().catch(() => {});
    proc.kill();
  }
  printTable(results);
  log(`\nload average at the end ${la()}; bench took ${((Date.now() - started) / 1000).toFixed(0)} s`);
}

/**
 * N files of 100 MB picked at once: as rank files (`snapshot_rankR.pickle`) the rank overview reads them
 * two at a time in workers of their own and keeps summaries only; as one rank's dumps after steps 1…N
 * (`peakscope-rank0-stepK.pickle`) the Series view does the same and finds what grows. Prints the time
 * until every row is in (ranks) or the verdict is given (series) and the renderer's peak RSS (page and its
 * workers), beside the peak of one 100 MB file's load in this run.
 */
async function manyRun(
  browser: Browser,
  url: string,
  n: number,
  results: Run[],
  as: "ranks" | "series",
): Promise<void> {
  const big = join(TMP, "big-100mb.pickle");
  if (!existsSync(big)) {
    execFileSync("python3", [join(ROOT, "test/gen/generate.py"), "big", "--target-mb", "100", big], {
      stdio: ["ignore", "ignore", "inherit"],
    });
  }
  const dir = join(TMP, `${as}${n}`);
  mkdirSync(dir, { recursive: true });
  const files = Array.from({ length: n }, (_, r) => {
    const f = join(dir, as === "ranks" ? `snapshot_rank${r}.pickle` : `peakscope-rank0-step${r + 1}.pickle`);
    if (!existsSync(f)) linkSync(big, f);
    return f;
  });
  log(
    `\n${n} ${as === "ranks" ? "ranks" : "dumps of one rank (a series)"} × ${(statSync(big).size / 1e6).toFixed(1)} MB (hard links to ${basename(big)}), picked at once`,
  );
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  const page = await context.newPage();
  if (WINDOW_SETTLES) await windowStarted(browserPid);
  await page.goto(url);
  await page.waitForTimeout(SETTLE_MS);
  let peak = rendererRss(browserPid);
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      peak = Math.max(peak, rendererRss(browserPid));
      await new Promise((r) => setTimeout(r, 200));
    }
  })();
  const t0 = Date.now();
  await page.getByTestId("file-input").setInputFiles(files, { timeout: 600_000 });
  if (as === "ranks") {
    await page
      .getByRole("region", { name: "Rank overview" })
      .getByTestId("rank-row")
      .nth(n - 1)
      .waitFor({ timeout: 600_000 });
  } else {
    await page.locator("body[data-mode=series][data-state=ready]").waitFor({ timeout: 600_000 });
    await page.waitForFunction(
      () => !!document.querySelector("[data-verdict]")?.getAttribute("data-verdict"),
      null,
      {
        timeout: 600_000,
      },
    );
  }
  await page.waitForFunction(() => document.body.dataset.busy !== "1", null, { timeout: 600_000 });
  const seconds = (Date.now() - t0) / 1000;
  sampling = false;
  await sampler;
  await context.close();
  const one = results.filter((r) => r.file.includes("100 MB") && Number.isFinite(r.rendererRss));
  const oneRss = one.length > 0 ? Math.max(...one.map((r) => r.rendererRss)) : Number.NaN;
  log(
    `  ${as === "ranks" ? `all ${n} rows` : `the series' verdict (${n} dumps)`} in ${seconds.toFixed(1)} s; renderer peak RSS ${mb(peak)} MiB` +
      (Number.isFinite(oneRss)
        ? `; one 100 MB file's load peaked at ${mb(oneRss)} MiB: ${(peak / oneRss).toFixed(2)} ×`
        : " (run the 100 MB file too, BENCH_WEB_FILES=100, for the comparison)"),
  );
}

/** CPU nanoseconds used so far by every thread of Chromium's processes (/proc/…/task/…/schedstat). */
function chromiumCpuNs(browserPid: number | undefined): number {
  let total = 0;
  for (const key of threadTicks(browserPid).keys()) {
    try {
      total += Number(readFileSync(`/proc/${key.replace("/", "/task/")}/schedstat`, "utf8").split(" ")[0]);
    } catch {}
  }
  return total;
}

/**
 * Waits until a new window's start-up is over: Chromium's processes used < 5 % of a core over 300 ms
 * (at most 5 s). Returns the ms waited. Each run's new context opens a new window, and Chromium loads
 * the window's omnibox popup (chrome://omnibox-popup.top-chrome, a WebUI in a renderer of its own) as
 * it opens: ≈ 0.2 s of CPU, which on two cores overlapped the first load. A user's window is open
 * already.
 */
async function windowStarted(browserPid: number | undefined): Promise<number> {
  if (!browserPid) return Number.NaN;
  const t0 = Date.now();
  let last = chromiumCpuNs(browserPid);
  let quietSince = Date.now();
  while (Date.now() - t0 < 5000) {
    await new Promise((r) => setTimeout(r, 100));
    const now = chromiumCpuNs(browserPid);
    if (now - last > 5e6) quietSince = Date.now(); // 5 ms of CPU in 100 ms: still busy
    last = now;
    if (Date.now() - quietSince >= 300) break;
  }
  return Date.now() - t0;
}

/** The Chromium browser process Playwright started: a child of this process (Playwright runs in-process). */
function findBrowserPid(): number | undefined {
  for (const d of readdirSync("/proc")) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (ppid !== process.pid) continue;
      const cmd = readFileSync(`/proc/${d}/cmdline`, "utf8");
      if (cmd.includes("chrom") && !cmd.includes("--type=")) return Number(d);
    } catch {}
  }
  return undefined;
}

function printRun(r: Run) {
  log(
    `  run ${r.run} [load ${r.loadavg}${Number.isFinite(r.windowMs) ? `; window ${r.windowMs} ms` : ""}] ${r.outcome}: progress ${ms(r.progress)} ms, state=ready ${ms(r.stateReady)} ms, ` +
      `1st draw ${ms(r.draw)} ms, 1st ink ${ms(r.ink)} ms, hash ${ms(r.hash)} ms, idle ${ms(r.ready)} ms; ` +
      `setInputFiles call→change ${ms(r.pickToChange)} ms`,
  );
  log(`    phases (ms after change): ${r.phases || "—"}`);
  if (process.env.BENCH_WEB_VERBOSE) log(`    data-state/data-busy (ms after change): ${r.states || "—"}`);
  if (r.cpu) log(`    CPU s, pick → state=ready: ${cpuText(r.cpu)}`);
  const heaps = HEAP
    ? `peak heap: page ${mb(r.pageHeap)} MiB (+${mb(r.pageBacking)} ArrayBuffers), worker ${mb(r.workerHeap)} MiB ` +
      `(+${mb(r.workerBacking)} ArrayBuffers; longest gap between worker samples ${ms(r.workerGapMax)} ms), `
    : "";
  log(
    `    ${heaps}renderer RSS ${mb(r.rendererRss)} MiB (+${mb(r.rendererRssGrowth)} over the load); ` +
      `bench process RSS growth ${mb(r.nodeRssGrowth)} MiB`,
  );
  if (HEAP)
    log(
      `    the tab's JS heaps + ArrayBuffers (page + workers): at most ${mb(tabPeak(r))} MiB (the sum of the four ` +
        `peaks) = ${(tabPeak(r) / r.fileBytes).toFixed(2)} × the file`,
    );
  log(
    `    main thread during load: longtasks ${r.longCount} (max ${ms(r.longMax)} ms, ${r.long100} > 100 ms); ` +
      `rAF gap max ${ms(r.rafMax)} ms, ${r.raf100} gaps > 100 ms`,
  );
  if (r.zoom) {
    const z = r.zoom;
    log(
      `    zoom: ${z.events} wheel events (30 in: visible span ${(z.spanIn * 100).toPrecision(2)}% of the start) dispatched in ${z.dispatchMs} ms, idle ${ms(z.settleMs)} ms after the last; ` +
        `${z.frames} frames: p50 ${z.p50.toFixed(1)} ms, p95 ${z.p95.toFixed(1)} ms, max ${z.max.toFixed(1)} ms, ${z.over50} > 50 ms`,
    );
  }
  if (r.errors.length) log(`    page errors: ${[...new Set(r.errors)].slice(0, 5).join(" | ")}`);
}

/** An upper bound of the tab's peak JS heap + ArrayBuffer bytes: the page's and the workers' peaks added. */
function tabPeak(r: Run): number {
  return r.pageHeap + r.pageBacking + r.workerHeap + r.workerBacking;
}

function printTable(results: Run[]) {
  const files = [...new Set(results.map((r) => r.file))];
  log(
    `\nmedians over runs (ms after ${VIA === "src" ? "the page's start" : "the file input's change event"}; MiB peaks and main-thread figures over that → idle)`,
  );
  const head = [
    "file",
    "runs",
    "progress",
    "state=ready",
    "1st draw",
    "1st ink",
    "hash",
    "idle",
    "page heap",
    "wkr heap",
    "wkr ABuf",
    "rndr RSS",
    "tab/file",
    "rss+/file",
    "longtask max",
    ">100",
    "rAF gap max",
    ">100",
    "zoom p50/p95/max",
  ];
  const rows: string[][] = [head];
  for (const f of files) {
    const rs = results.filter((r) => r.file === f);
    const ok = rs.filter((r) => r.outcome === "ok");
    const use = ok.length ? ok : rs;
    const m = (k: keyof Run) => median(use.map((r) => r[k] as number));
    const z = rs.find((r) => r.zoom)?.zoom;
    rows.push([
      f,
      `${ok.length}/${rs.length}`,
      ms(m("progress")),
      ms(m("stateReady")),
      ms(m("draw")),
      ms(m("ink")),
      ms(m("hash")),
      ms(m("ready")),
      mb(m("pageHeap")),
      mb(m("workerHeap")),
      mb(m("workerBacking")),
      mb(m("rendererRss")),
      median(use.map((r) => tabPeak(r) / r.fileBytes)).toFixed(2),
      median(use.map((r) => r.rendererRssGrowth / r.fileBytes)).toFixed(2),
      ms(m("longMax")),
      ms(m("long100")),
      ms(m("rafMax")),
      ms(m("raf100")),
      z ? `${z.p50.toFixed(1)}/${z.p95.toFixed(1)}/${z.max.toFixed(0)}` : "—",
    ]);
  }
  const w = head.map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  for (const r of rows) log(r.map((c, i) => (i === 0 ? c.padEnd(w[i]) : c.padStart(w[i]))).join("  "));
  const bad = results.filter((r) => r.outcome !== "ok");
  for (const r of bad) log(`  ${r.file} run ${r.run}: ${r.outcome}`);
  if (!results.some((r) => r.cpu)) return;
  log(
    `\nCPU seconds from the pick to state=ready, medians over runs (BENCH_WEB_CPU=1): on ${availableParallelism()} cores, ` +
      `no overlap of the work brings state=ready under all ÷ ${availableParallelism()} s`,
  );
  for (const f of files) {
    const rs = results.filter((r) => r.file === f && r.cpu && r.outcome === "ok");
    if (!rs.length) continue;
    const keys = Object.keys(rs[0].cpu as Record<string, number>);
    const med = Object.fromEntries(
      keys.map((k) => [k, median(rs.map((r) => (r.cpu as Record<string, number>)[k]))]),
    );
    log(
      `  ${f} (${rs.length} runs; state=ready ${ms(median(rs.map((r) => r.stateReady)))} ms): ${cpuText(med)}`,
    );
  }
}

/** "all 4.61: engine 2.70, reader+ 0.28, …" */
function cpuText(cpu: Record<string, number>): string {
  const { all, ...parts } = cpu;
  return `all ${all.toFixed(2)}: ${Object.entries(parts)
    .map(([k, v]) => `${k} ${v.toFixed(2)}`)
    .join(", ")}`;
}

await main();
