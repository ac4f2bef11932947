// The page's handle on the worker. One worker holds up to two engines (side 0 = A, side 1 = B of a
// comparison); `ask(side, api => …)` runs one request on a side, counted for the idle signal, and fails
// (instead of hanging) if the worker is ended while it is in flight.
//
// Memory: `freshWorker()` terminates the worker (and with it every model it held) before a file is opened
// on its own, so a file replaced by the next one is released at once, whatever the previous one left.
//
// Speed: a spare worker is started as the page loads, and again whenever it is idle after a file
// (`prewarm()`), with side 0's proxy already asked for, so opening a file does not wait for a worker to
// start; while nothing is open it warms up (workers/warm-up.ts).
//
// Offline: in the built site the worker's script is fetched once at start-up and every worker is started
// from that copy (a blob: URL), so a page that has loaded keeps working without the network.

import * as Comlink from "comlink";
import type { PeakscopeApi, WorkerApi } from "../../../workers/api";
import workerUrl from "../../../workers/peakscope.worker.ts?worker&url";
import { beginWork, endWork, workPending } from "./idle";

export type Side = 0 | 1;
type SideApi = Comlink.Remote<PeakscopeApi>;

interface Instance {
  worker: Worker;
  root: Comlink.Remote<WorkerApi>;
  sides: [Promise<SideApi> | null, Promise<SideApi> | null];
  /** Each side's proxy once it has come (askNow posts through it without waiting a turn). */
  ready: [SideApi | null, SideApi | null];
  /** Rejects when the worker is ended or crashes. */
  ended: Promise<never>;
  end: (reason: Error) => void;
}

let current: Instance | null = null;
let script: Promise<string> | null = null;
const endListeners = new Set<(reason: string) => void>();

/** Called when a worker ends on its own (a crash, out of memory), not when the page ends it. */
export function onWorkerCrash(fn: (reason: string) => void): () => void {
  endListeners.add(fn);
  return () => endListeners.delete(fn);
}

// Trusted Types: the CSP lets only this policy make script URLs, and it makes only the worker's.
const policy = window.trustedTypes?.createPolicy("peakscope-worker", {
  createScriptURL(url: string) {
    const u = new URL(url, document.baseURI);
    const own = new URL(workerUrl, document.baseURI).href;
    if (u.href === own || (u.protocol === "blob:" && url.startsWith(`blob:${location.origin}/`))) return url;
    throw new Error(`refusing to start a worker from ${url}`);
  },
});

/** The worker script's URL: a blob: copy in the built site (works offline), the module itself in dev. */
export function workerScript(): Promise<string> {
  if (!script) {
    script = import.meta.env.DEV
      ? Promise.resolve(workerUrl)
      : fetch(workerUrl)
          .then((r) => {
            if (!r.ok) throw new Error(`HTTP ${r.status}`);
            return r.blob();
          })
          .then((b) => URL.createObjectURL(new Blob([b], { type: "text/javascript" })))
          .catch(() => {
            script = null;
            return workerUrl;
          });
  }
  return script;
}

async function create(): Promise<Instance> {
  const url = await workerScript();
  const worker = new Worker((policy ? policy.createScriptURL(url) : url) as string, {
    type: "module",
    name: "peakscope",
  });
  let end: (reason: Error) => void = () => {};
  const ended = new Promise<never>((_, reject) => {
    end = reject;
  });
  ended.catch(() => {});
  const root = Comlink.wrap<WorkerApi>(worker);
  // side 0's proxy asked for now: a file picked at once does not wait for that round trip
  const inst: Instance = {
    worker,
    root,
    sides: [null, null],
    ready: [null, null],
    ended,
    end,
  };
  sideOf(inst, 0).catch(() => {});
  worker.addEventListener("error", (e) => {
    e.preventDefault();
    const reason = e.message || "the worker crashed";
    inst.end(new Error(reason));
    if (current === inst) {
      current = null;
      for (const fn of endListeners) fn(reason);
    }
  });
  return inst;
}

/**
 * A worker of its own from the same script, apart from the sides' one (the rank overview reads its files
 * in such workers, so that opening one rank, which ends the sides' worker, does not stop them). `ended`
 * rejects when it crashes; the caller terminates it.
 */
export async function separateWorker(): Promise<{
  worker: Worker;
  root: Comlink.Remote<WorkerApi>;
  ended: Promise<never>;
}> {
  const inst = await create();
  return { worker: inst.worker, root: inst.root, ended: inst.ended };
}

/** A started worker with nothing open, ready for the next file (starting one costs ≈ 0.1 s). */
let spare: Promise<Instance> | null = null;
/** The spare once it has started. */
let spareNow: Instance | null = null;

/** Starts a spare worker if there is none; call when the page is idle. */
export function prewarm(): void {
  if (spare) return;
  // Never beside a load or a query: two workers would share the CPU. Try again later.
  if (workPending() || spawning) {
    setTimeout(prewarmWhenIdle, 1000);
    return;
  }
  const p = create();
  spare = p;
  p.then(
    (inst) => {
      if (spare === p) spareNow = inst;
      warmUp(inst);
    },
    () => {
      if (spare === p) spare = null;
    },
  );
}

/**
 * Has a spare worker open a small snapshot a few dozen times (≈ 1.1 s while the page is idle, on this
 * project's 2-core test machine), so that V8 does not compile and recompile the parser in the middle of
 * the user's first file (see workers/warm-up.ts).
 */
function warmUp(inst: Instance): void {
  // `npm run bench:web` with BENCH_WEB_WARMUP=0 sets this flag to measure the page without a warm-up
  if ((window as { __peakscopeNoWarmUp?: boolean }).__peakscopeNoWarmUp) return;
  // Not at once: a file given in the link, or picked as the page loads, is asked for in these first
  // moments, and finds the worker free instead of writing its warm-up files (then it never warms up).
  setTimeout(() => {
    if (current === inst) return;
    try {
      inst.root.warmUp(WARM_UP_ROUNDS).catch(() => undefined);
    } catch {
      // the worker was ended meanwhile (its proxy released): nothing to warm up
    }
  }, WARM_UP_AFTER_MS);
}

const WARM_UP_ROUNDS = 30;
const WARM_UP_AFTER_MS = 300;

/** prewarm() once the page has nothing else to do (after start-up, after a file has loaded). */
export function prewarmWhenIdle(): void {
  if (typeof requestIdleCallback === "function") requestIdleCallback(prewarm, { timeout: 2000 });
  else setTimeout(prewarm, 200);
}

let spawning: Promise<Instance> | null = null;
async function instance(): Promise<Instance> {
  if (current) return current;
  spawning ??= (async () => {
    const next = spare ?? create();
    spare = null;
    spareNow = null;
    const inst = await next;
    current ??= inst;
    return current;
  })().finally(() => {
    spawning = null;
  });
  return spawning;
}

function sideOf(inst: Instance, side: Side): Promise<SideApi> {
  let s = inst.sides[side];
  if (!s) {
    s = inst.root.side(side) as unknown as Promise<SideApi>;
    inst.sides[side] = s;
    s.then(
      (api) => {
        inst.ready[side] = api;
      },
      () => {},
    );
  }
  return s;
}

/** Ends the worker and every model in it; requests in flight fail. The next request starts a new one. */
export function freshWorker(): void {
  const inst = current;
  current = null;
  if (!inst) return;
  inst.end(new Error("the worker was stopped"));
  endWorker(inst.worker, inst.root);
}

/**
 * Terminates a worker once it has ended its own reader worker (WorkerApi.shutdown), or after
 * `SHUTDOWN_WAIT_MS` if it is too busy to answer: Chromium sometimes never finishes ending a worker
 * terminated with a nested worker still alive, and the stuck worker keeps its memory until the tab closes.
 */
export function endWorker(worker: Worker, root: Comlink.Remote<WorkerApi>): void {
  let done = false;
  const end = () => {
    if (done) return;
    done = true;
    clearTimeout(timer);
    worker.terminate();
    root[Comlink.releaseProxy]();
  };
  const timer = setTimeout(end, SHUTDOWN_WAIT_MS);
  root.shutdown().then(end, end);
}

const SHUTDOWN_WAIT_MS = 1000;

/** Runs a request on one side, counted for the idle signal. */
export async function ask<T>(side: Side, fn: (api: SideApi) => Promise<T>): Promise<T> {
  beginWork();
  try {
    const inst = await instance();
    const api = await Promise.race([sideOf(inst, side), inst.ended]);
    return await Promise.race([fn(api), inst.ended]);
  } finally {
    endWork();
  }
}

/**
 * ask(), the request posted before this returns where the worker and the side's proxy have come (the
 * usual case: a spare worker waits). Opening a file posts it this way before the page re-renders for the
 * load: awaited first, the worker had the file only after that render (8–30 ms at 101 MB, cold).
 */
export function askNow<T>(side: Side, fn: (api: SideApi) => Promise<T>): Promise<T> {
  const inst = current ?? (spawning ? null : spareNow);
  const api = inst?.ready[side];
  if (!inst || !api) return ask(side, fn);
  if (current !== inst) {
    current = inst;
    spare = null;
    spareNow = null;
  }
  beginWork();
  let answer: Promise<T>;
  try {
    answer = fn(api);
  } catch (e) {
    answer = Promise.reject(e);
  }
  return Promise.race([answer, inst.ended]).finally(endWork);
}

/** Runs a request on the worker's root (the comparison), counted for the idle signal. */
export async function askRoot<T>(fn: (api: Comlink.Remote<WorkerApi>) => Promise<T>): Promise<T> {
  beginWork();
  try {
    const inst = await instance();
    return await Promise.race([fn(inst.root), inst.ended]);
  } finally {
    endWork();
  }
}

/** Fire-and-forget on a side (cancel): never starts a worker. */
export function tell(side: Side, fn: (api: SideApi) => unknown): void {
  const inst = current;
  if (!inst) return;
  void sideOf(inst, side).then(fn, () => {});
}

// Fetch the worker's script now, while the network is there.
void workerScript();
