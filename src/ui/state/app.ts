// What spans both sides: single or compare mode, opening files (dropped, picked, downloaded), the
// comparison answer, linked zoom and cursor, time alignment, the notices, and the page's idle signal
// (body[data-state]). The per-file state lives in store.ts (one store per side).
//
// Opening rules: one snapshot opens alone (the worker is ended first, so nothing of the previous file
// stays in memory); two at once open side by side (A = the first, B = the second); one dropped on the
// "Compare with" zone, or picked with "Compare with…", becomes B next to the open A. Counters sidecars
// go to the snapshot they are named after (`X.counters.json` for `X`), or to the only snapshot.

import { create } from "zustand";
import type { CompareAnswer, ReplayFacts, XAxis } from "../../../workers/api";
import { restoreCapacity, restoreDevices, restoreWhatIf } from "../views/whatif/store";
import { askRoot, freshWorker, onWorkerCrash, prewarm, prewarmWhenIdle, type Side } from "./client";
import { checkUrl, nameOfUrl } from "./download";
import { canHash, contentHash } from "./hash";
import { nextPaint, tracked } from "./idle";
import type { LinkState } from "./link";
import { applyMoment, parseMoment } from "./momentLink";
import { clampView, fullView, onUserView, type Source, sides, type TimelineView } from "./store";

export type Mode = "single" | "compare";

export interface Notice {
  id: number;
  kind: "info" | "warn" | "error" | "ok";
  text: string;
  /** Notices of one origin replace each other ("link", "match", …). */
  topic: string;
}

/** A file a link asks for: the link was made while viewing a dropped file. */
export interface Expected {
  name: string;
  hash: string | null;
}

export interface AppState {
  mode: Mode;
  /** The side shown on the left and compared against (A); the other side is B. */
  base: Side;
  compare: CompareAnswer | null;
  compareStatus: "idle" | "loading" | "ready" | "error";
  compareError: string | null;
  /** Zoom and cursor of the two timelines move together. */
  linked: boolean;
  /**
   * Where the two time axes are aligned: each trace's start, or its first `_snapshot()` marker (the
   * default; used only when both files have one, else the start).
   */
  align: "start" | "snapshot";
  /**
   * "Compare at: Peaks | Snapshots" as the user chose it (null: no choice yet, each file's peak when both
   * have one); kept in the link as `at=`.
   */
  compareAt: "peaks" | "snapshots" | null;
  /** The hovered moment, as an offset from the hovering side's anchor (axis units). */
  cursor: { side: Side; offset: number; axis: XAxis } | null;
  /**
   * What each side's own view needs (the timeline's top in bytes, the map's bytes per pixel): in a
   * comparison both draw at the larger of the two, so the same height or width is the same bytes.
   */
  scales: { yTop: [number, number]; mapBytesPerPx: [number, number] };
  /** The side the keyboard acts on: the last one the pointer was over. */
  activeSide: Side;
  notices: Notice[];
  /** A link made from dropped files waits for them. */
  expecting: { a: Expected | null; b: Expected | null } | null;
  /** View state to apply once the files of a link are open. */
  pendingRestore: LinkState | null;

  openFiles(files: File[], how?: "auto" | "replace" | "compare"): Promise<void>;
  openUrls(a: string, b: string | null): Promise<void>;
  openDemo(): Promise<void>;
  cancel(): void;
  /** Closes everything: the worker ends, both sides are empty. */
  reset(): void;
  /** Back to the base file alone. */
  closeCompare(): void;
  swap(): Promise<void>;
  setLinked(linked: boolean): void;
  setAlign(align: "start" | "snapshot"): void;
  setCompareAt(at: "peaks" | "snapshots" | null): void;
  setCursor(c: AppState["cursor"]): void;
  setActiveSide(side: Side): void;
  setScale(side: Side, key: "yTop" | "mapBytesPerPx", value: number): void;
  /** Highlights a call site (portable key) in both files, or clears it. */
  highlightBoth(site: string | null): void;
  notify(kind: Notice["kind"], text: string, topic?: string): void;
  dismiss(id: number): void;
  clearTopic(topic: string): void;
  runCompare(): Promise<void>;
}

let noticeId = 0;
/** Bumped whenever everything is closed: an open that started before is then stale. */
let epoch = 0;
let cancelTimer: ReturnType<typeof setTimeout> | null = null;

/** A counters sidecar: named `*.counters.json`, or a small JSON file naming the allocator counters. */
async function isCounters(f: File): Promise<boolean> {
  if (/\.counters\.json$/i.test(f.name)) return true;
  if (f.size > 4 << 20) return false;
  const head = await f.slice(0, 4096).text();
  return (
    /^\s*\{/.test(head) && /"(memory_allocated|max_memory_allocated|memory_reserved|memory_stats)"/.test(head)
  );
}

interface Sorted {
  snapshots: File[];
  /** counters[i] is the sidecar of snapshots[i], or null. */
  counters: (File | null)[];
  /** Sidecars that match no snapshot. */
  loose: File[];
}

async function sortFiles(files: File[]): Promise<Sorted> {
  const snapshots: File[] = [];
  const sidecars: File[] = [];
  for (const f of files) ((await isCounters(f)) ? sidecars : snapshots).push(f);
  const counters: (File | null)[] = snapshots.map(() => null);
  const loose: File[] = [];
  const stem = (n: string) => n.replace(/\.counters\.json$/i, "").replace(/\.json$/i, "");
  for (const c of sidecars) {
    const i = snapshots.findIndex(
      (s, k) => !counters[k] && (stem(c.name) === s.name || stem(c.name) === stripExt(s.name)),
    );
    if (i >= 0) counters[i] = c;
    else loose.push(c);
  }
  // A lone sidecar with a lone snapshot belongs to it, whatever its name.
  if (snapshots.length === 1 && !counters[0] && loose.length === 1) counters[0] = loose.shift() ?? null;
  return { snapshots, counters, loose };
}

function stripExt(n: string): string {
  return n.replace(/\.(pickle|pkl|json|gz|zip)+$/i, "");
}

/**
 * Anchor of a side on an axis: its trace's start, or (align "snapshot", when both files have one) its
 * first `_snapshot()` marker.
 */
export function anchorOf(
  r: ReplayFacts | null | undefined,
  axis: XAxis,
  align: "start" | "snapshot",
): number {
  if (!r) return 0;
  if (align === "snapshot" && bothHaveSnapshotMarkers()) {
    const m = r.markers.find((k) => k.kind === "snapshot");
    if (m) return axis === "time" ? m.timeUs : m.event;
  }
  return axis === "time" ? r.t0 : 0;
}

/** Both sides have a `_snapshot()` marker (alignment on it is possible). */
export function bothHaveSnapshotMarkers(): boolean {
  return sides.every((s) => s.getState().panel?.replay?.markers.some((m) => m.kind === "snapshot"));
}

/**
 * The rank overview (views/ranks) plugs in here: more than two snapshots (or `#src` URLs) go to it; it
 * hears every fresh start (a file opened on its own replaces it); while it is on screen its state is the
 * page's data-state / data-mode.
 */
export const manyFiles: {
  open: ((snapshots: File[], counters: (File | null)[]) => Promise<void>) | null;
  openUrls: ((urls: string[]) => Promise<void>) | null;
  onFresh: (() => void) | null;
  pageState: (() => { state: string; mode: string; title: string } | null) | null;
} = { open: null, openUrls: null, onFresh: null, pageState: null };

/** The page's data-state / data-mode again (the rank overview calls it when its state changes). */
export function refreshPageState(): void {
  setPageState();
}

function setPageState(): void {
  const app = useApp.getState();
  const states =
    app.mode === "compare"
      ? [sides[app.base].getState(), sides[1 - app.base].getState()]
      : [sides[app.base].getState()];
  let status: string;
  if (states.some((s) => s.status === "loading") || app.compareStatus === "loading") status = "loading";
  else if (states.some((s) => s.status === "error")) status = "error";
  else if (states.some((s) => s.status === "ready")) status = "ready";
  else status = "empty";
  const b = document.body.dataset;
  const many = manyFiles.pageState?.() ?? null;
  if (many) {
    if (b.state !== many.state) b.state = many.state;
    if (b.mode !== many.mode) b.mode = many.mode;
    if (document.title !== many.title) document.title = many.title;
    return;
  }
  if (b.state !== status) b.state = status;
  if (b.mode !== app.mode) b.mode = app.mode;
  const names = states.map((s) => s.fileName).filter((n): n is string => !!n);
  const title =
    names.length > 0 ? `${names.join(" vs ")} — peakscope` : "peakscope — PyTorch memory snapshot viewer";
  if (document.title !== title) document.title = title;
}

prewarm(); // the first file opens in a worker that has already started

export const useApp = create<AppState>()((set, get) => {
  /** Opens one file into a side; then its hash (dropped files) and the link check. */
  async function openInto(side: Side, file: Blob | URL, name: string, counters: File | null, source: Source) {
    const s = sides[side];
    const ok = await s.getState().open(file, name, { counters, source });
    if (ok && source.kind === "file" && file instanceof Blob && canHash()) {
      const generation = s.getState().generation;
      // the hash reads the whole file again: let the timeline draw first
      await nextPaint(1500);
      const h = await contentHash(file, { stale: () => s.getState().generation !== generation });
      if (h && s.getState().generation === generation) s.setState({ contentHash: h });
    }
    prewarmWhenIdle(); // a started worker for the next file
    return ok;
  }

  function startFresh(mode: Mode) {
    epoch++;
    freshWorker();
    sides[0].getState().reset();
    sides[1].getState().reset();
    delete document.body.dataset.cancelled;
    set({
      mode,
      base: 0,
      compare: null,
      compareStatus: "idle",
      compareError: null,
      cursor: null,
      compareAt: null,
    });
    manyFiles.onFresh?.();
  }

  async function afterOpen() {
    if (get().mode === "compare") await get().runCompare();
    if (get().expecting && !checkExpected()) return;
    const restore = get().pendingRestore;
    set({ expecting: null, pendingRestore: null });
    if (restore) await restoreView(restore);
  }

  /**
   * A link made from dropped files: says whether the dropped ones are those. False while the link still
   * waits for its second file.
   */
  function checkExpected(): boolean {
    const exp = get().expecting;
    if (!exp) return true;
    const want = get().mode === "compare" ? [exp.a, exp.b] : [exp.a];
    if (exp.b && get().mode !== "compare") return false;
    const lines: { ok: boolean; text: string }[] = [];
    want.forEach((w, i) => {
      if (!w) return;
      const s = sides[i === 0 ? get().base : ((1 - get().base) as Side)].getState();
      if (s.status !== "ready") return;
      const sameName = s.fileName === w.name;
      if (w.hash && s.contentHash) {
        lines.push(
          s.contentHash === w.hash
            ? { ok: true, text: `${s.fileName} is the file the link was made from (same content).` }
            : {
                ok: false,
                text: `${s.fileName} is not the file the link was made from: its content differs${sameName ? " (same name)" : ` (the link is for ${w.name})`}. The view was applied where it fits.`,
              },
        );
      } else {
        lines.push(
          sameName
            ? {
                ok: true,
                text: `${s.fileName} has the name the link asks for (its content could not be checked here).`,
              }
            : { ok: false, text: `${s.fileName} is not ${w.name}, the file the link was made from.` },
        );
      }
    });
    get().clearTopic("match");
    get().clearTopic("link-wait");
    for (const l of lines) get().notify(l.ok ? "ok" : "warn", l.text, "match");
    return true;
  }

  return {
    mode: "single",
    base: 0,
    compare: null,
    compareStatus: "idle",
    compareError: null,
    // Each file on its own time axis by default (issue 21): one short run must not fill 10 % of its chart.
    linked: false,
    align: "snapshot",
    compareAt: null,
    cursor: null,
    scales: { yTop: [0, 0], mapBytesPerPx: [0, 0] },
    activeSide: 0,
    notices: [],
    expecting: null,
    pendingRestore: null,

    openFiles: (files, how = "auto") =>
      tracked(async () => {
        const { snapshots, counters, loose } = await sortFiles(files);
        for (const f of loose) {
          if (snapshots.length > 0 || get().mode === "compare")
            get().notify(
              "warn",
              `${f.name} looks like a counters sidecar but matches no snapshot; it was not used.`,
              "files",
            );
        }
        if (snapshots.length === 0) {
          // Only a sidecar: use it for the open snapshot.
          const a = sides[get().base].getState();
          if (loose.length > 0 && a.summary) {
            const error = await a.applyCounters(loose[0]);
            sides[get().base].setState({ countersError: error });
            if (get().mode === "compare") await get().runCompare();
          }
          return;
        }
        if (snapshots.length > 2 && manyFiles.open) {
          // More than two: the rank overview (one row per file); no side opens until a row is picked.
          startFresh("single");
          await manyFiles.open(snapshots, counters);
          return;
        }
        if (snapshots.length > 2) {
          get().notify(
            "warn",
            `Only two snapshots can be compared; ${snapshots
              .slice(2)
              .map((f) => f.name)
              .join(", ")} ${snapshots.length > 3 ? "were" : "was"} not opened.`,
            "files",
          );
        }
        const exp = get().expecting;
        if (snapshots.length >= 2) {
          let [x, y] = [0, 1];
          // A link that asks for two files: put each where the link had it.
          if (exp?.a && snapshots[1].name === exp.a.name && snapshots[0].name !== exp.a.name) [x, y] = [1, 0];
          startFresh("compare");
          const mine = epoch;
          const okA = await openInto(
            0,
            snapshots[x],
            snapshots[x].name,
            counters[x],
            fileSource(snapshots[x]),
          );
          if (epoch !== mine) return;
          const okB = await openInto(
            1,
            snapshots[y],
            snapshots[y].name,
            counters[y],
            fileSource(snapshots[y]),
          );
          if (okA && okB && epoch === mine) await afterOpen();
          return;
        }
        const f = snapshots[0];
        const a = sides[get().base].getState();
        if (how === "compare" && (a.status === "ready" || get().mode === "compare")) {
          // The second file of a comparison: B is replaced; A and its worker stay.
          const b = (1 - get().base) as Side;
          const mine = epoch;
          set({ mode: "compare", compare: null, compareStatus: "idle", compareError: null });
          const ok = await openInto(b, f, f.name, counters[0], fileSource(f));
          if (ok && epoch === mine && sides[get().base].getState().status === "ready") await afterOpen();
          return;
        }
        startFresh("single");
        const mine = epoch;
        if ((await openInto(0, f, f.name, counters[0], fileSource(f))) && epoch === mine) await afterOpen();
      }),

    openUrls: (a, b) =>
      tracked(async () => {
        startFresh(b ? "compare" : "single");
        const mine = epoch;
        const list: [Side, string][] = b
          ? [
              [0, a],
              [1, b],
            ]
          : [[0, a]];
        const ready: boolean[] = [];
        for (const [side, raw] of list) {
          const s = sides[side].getState();
          const checked = checkUrl(raw);
          if ("error" in checked) {
            s.fail(raw, `This link's snapshot URL cannot be loaded: ${checked.error}.`);
            ready.push(false);
            continue;
          }
          const name = nameOfUrl(checked.url);
          // The worker downloads it and reads it as it comes (workers/url-source.ts).
          if (epoch !== mine) return;
          const kind = checked.url.origin === location.origin && raw === "demo.pickle" ? "demo" : "url";
          ready.push(await openInto(side, checked.url, name, null, { kind, name, size: 0, url: raw }));
          if (epoch !== mine) return;
        }
        if (ready.every(Boolean)) await afterOpen();
        else set({ pendingRestore: null, expecting: null });
      }),

    openDemo: () => get().openUrls("demo.pickle", null),

    reset: () => startFresh("single"),

    cancel() {
      const loading = sides.filter((s) => s.getState().status === "loading");
      if (loading.length === 0) return;
      for (const s of loading) s.getState().cancelRead();
      // A reader busy in a long synchronous stretch cannot see the abort: after a grace period, end the
      // worker itself (both sides go with it); the open() promises are then dropped as stale.
      if (cancelTimer) clearTimeout(cancelTimer);
      const generations = sides.map((s) => s.getState().generation);
      cancelTimer = setTimeout(() => {
        cancelTimer = null;
        const still = sides.some(
          (s, i) => s.getState().status === "loading" && s.getState().generation === generations[i],
        );
        if (!still) return;
        startFresh("single");
        document.body.dataset.cancelled = "1";
      }, 1500);
    },

    closeCompare() {
      // The base file stays (the single-file page shows the base side); the other's model is dropped.
      const base = get().base;
      const other = sides[(1 - base) as Side];
      void tracked(() => other.getState().ask((api) => api.close())).catch(() => {});
      other.getState().reset();
      const kept = sides[base].getState();
      if (kept.highlightBy === "portable") kept.setHighlightSite(null);
      set({
        mode: "single",
        compare: null,
        compareStatus: "idle",
        compareError: null,
        cursor: null,
        compareAt: null,
      });
    },

    swap: () =>
      tracked(async () => {
        if (get().mode !== "compare") return;
        set({ base: (1 - get().base) as Side });
        await get().runCompare();
      }),

    setLinked(linked) {
      set({ linked });
      // Turning the shared axis on shows both traces on it, whole.
      if (linked) alignViews(get().base, true);
    },
    setAlign(align) {
      set({ align });
      alignViews(get().base, true);
    },
    setCompareAt(compareAt) {
      set({ compareAt });
    },
    setCursor: (c) => set({ cursor: c }),
    setActiveSide: (side) => {
      if (get().activeSide !== side) set({ activeSide: side });
    },
    setScale(side, key, value) {
      const cur = get().scales[key];
      if (cur[side] === value) return;
      const next: [number, number] = [cur[0], cur[1]];
      next[side] = value;
      set({ scales: { ...get().scales, [key]: next } });
    },
    highlightBoth(site) {
      for (const s of sides) s.getState().setHighlightSite(site, "portable");
    },

    notify(kind, text, topic = "general") {
      set({
        notices: [...get().notices.filter((n) => n.text !== text), { id: ++noticeId, kind, text, topic }],
      });
    },
    dismiss: (id) => set({ notices: get().notices.filter((n) => n.id !== id) }),
    clearTopic: (topic) => set({ notices: get().notices.filter((n) => n.topic !== topic) }),

    runCompare: () =>
      tracked(async () => {
        const base = get().base;
        if (get().mode !== "compare") return;
        if (sides.some((s) => s.getState().status !== "ready")) return;
        set({ compareStatus: "loading", compareError: null });
        try {
          const answer = await askRoot((api) => api.compare(base));
          if (get().base !== base || get().mode !== "compare") return;
          set({ compare: answer, compareStatus: "ready" });
          alignViews(base, true);
        } catch (e) {
          set({
            compare: null,
            compareStatus: "error",
            compareError: e instanceof Error ? e.message : String(e),
          });
        }
      }),
  };
});

function fileSource(f: File): Source {
  return { kind: "file", name: f.name, size: f.size };
}

/** Keeps views of the two sides showing the same offsets from their anchors (when linked). */
function follow(from: Side, view: TimelineView): void {
  const app = useApp.getState();
  if (app.mode !== "compare" || !app.linked) return;
  const to = (1 - from) as Side;
  const src = sides[from].getState();
  const dst = sides[to].getState();
  const rs = src.panel?.replay;
  const rd = dst.panel?.replay;
  if (!rs || !rd) return;
  const axis: XAxis = view.axis === "time" && rd.hasTime ? "time" : "event";
  if (axis !== view.axis) return; // B cannot show A's axis: each keeps its own
  const shift = anchorOf(rd, axis, app.align) - anchorOf(rs, axis, app.align);
  dst.setViewQuiet({ axis, x0: view.x0 + shift, x1: view.x1 + shift });
}

/**
 * Puts both timelines on one axis covering both traces (each from its own anchor), so the same pixel is
 * the same offset in both. With `force`, even when the user had zoomed.
 */
export function alignViews(base: Side, force = false, axisWanted?: XAxis): void {
  const app = useApp.getState();
  if (app.mode !== "compare" || !app.linked) return;
  const a = sides[base].getState();
  const b = sides[(1 - base) as Side].getState();
  const ra = a.panel?.replay;
  const rb = b.panel?.replay;
  if (!ra || !rb) return;
  if (!force && a.view && b.view) return;
  const axis: XAxis = ra.hasTime && rb.hasTime ? (axisWanted ?? a.view?.axis ?? "time") : "event";
  const ext = (r: ReplayFacts) => {
    const anchor = anchorOf(r, axis, app.align);
    return axis === "time" ? [r.t0 - anchor, r.t1 - anchor] : [-anchor, r.events - 1 - anchor];
  };
  const [a0, a1] = ext(ra);
  const [b0, b1] = ext(rb);
  const lo = Math.min(a0, b0);
  const hi = Math.max(a1, b1);
  const pad = Math.max(1, hi - lo) * 0.01;
  const anchorA = anchorOf(ra, axis, app.align);
  const anchorB = anchorOf(rb, axis, app.align);
  a.setViewQuiet({ axis, x0: lo - pad + anchorA, x1: hi + pad + anchorA });
  b.setViewQuiet({ axis, x0: lo - pad + anchorB, x1: hi + pad + anchorB });
}

/** In a linked comparison: the range a side may zoom out to (both traces, in its coordinates). */
export function linkedExtent(side: Side, axis: XAxis): { x0: number; x1: number } | null {
  const app = useApp.getState();
  if (app.mode !== "compare" || !app.linked) return null;
  const me = sides[side].getState().panel?.replay;
  const other = sides[(1 - side) as Side].getState().panel?.replay;
  if (!me || !other) return null;
  if (axis === "time" && !(me.hasTime && other.hasTime)) return null;
  const shift = anchorOf(me, axis, app.align) - anchorOf(other, axis, app.align);
  const ext = (r: ReplayFacts) => (axis === "time" ? [r.t0, r.t1] : [0, r.events - 1]);
  const [m0, m1] = ext(me);
  const [o0, o1] = ext(other);
  return { x0: Math.min(m0, o0 + shift), x1: Math.max(m1, o1 + shift) };
}

/** Applies a link's view state to the open file(s); what does not fit is ignored with a notice. */
export async function restoreView(link: LinkState): Promise<void> {
  const app = useApp.getState();
  const ignored: string[] = [];
  const apply = async (side: Side, l: LinkState["a"], suffix: string) => {
    const s = sides[side];
    const st = s.getState();
    if (!st.summary) return;
    if (l.device !== undefined && l.device !== st.device) {
      if (st.summary.devices.some((d) => d.device === l.device)) await st.setDevice(l.device);
      else ignored.push(`device${suffix}=${l.device} (this file has no such device)`);
    }
    const panel = s.getState().panel;
    if (l.view) s.getState().setTimelineMode(l.view);
    if (l.color) s.getState().setMapColor(l.color);
    const r = panel?.replay;
    if (r) {
      const axis = l.axis ?? (l.t0 !== undefined ? s.getState().view?.axis : undefined);
      if (axis === "time" && !r.hasTime) ignored.push(`axis${suffix}=time (this trace has no times)`);
      if (axis && (axis === "event" || r.hasTime)) {
        const full = fullView(panel, axis);
        if (full) {
          let v = full;
          if (l.t0 !== undefined && l.t1 !== undefined) {
            const origin = axis === "time" ? r.t0 : 0;
            if (l.t1 > l.t0) {
              const want = { axis, x0: l.t0 + origin, x1: l.t1 + origin };
              v = clampView(want, r);
              if (Math.abs(v.x0 - want.x0) > 1 || Math.abs(v.x1 - want.x1) > 1)
                ignored.push(
                  `t0${suffix}=${l.t0}, t1${suffix}=${l.t1} (beyond this trace: the nearest range is shown)`,
                );
            } else ignored.push(`t0${suffix}/t1${suffix} (t1 must be after t0)`);
          } else if (l.t0 !== undefined || l.t1 !== undefined)
            ignored.push(`t0${suffix}/t1${suffix} (both are needed)`);
          s.getState().setViewQuiet(v);
        }
      }
      if (l.pin !== undefined) {
        if (l.pin < r.events) s.getState().pin(l.pin);
        else ignored.push(`pin${suffix}=${l.pin} (the trace has ${r.events} events)`);
      }
    } else {
      if (l.pin !== undefined) ignored.push(`pin${suffix} (no trace on this device)`);
    }
    // The moment (after pin: it says what pin cannot, a range or the snapshot).
    const moment = l.moment !== undefined ? parseMoment(l.moment) : null;
    if (moment) {
      const why = await applyMoment(s, moment, r, `moment${suffix}`);
      if (why) ignored.push(why);
    }
    if (!r) {
      if (l.t0 !== undefined || l.t1 !== undefined)
        ignored.push(`t0${suffix}/t1${suffix} (no trace on this device)`);
    }
    const names = panel?.categories.map((c) => c.name) ?? [];
    if (l.cat !== undefined) {
      if (names.includes(l.cat)) s.getState().setHighlightCategory(l.cat);
      else ignored.push(`cat${suffix}=${l.cat} (no such category)`);
    }
    if (l.site !== undefined && useApp.getState().mode !== "compare")
      s.getState().setHighlightSite(l.site, "key");
    if (l.devices !== undefined) restoreDevices(side, l.devices);
    if (l.cap !== undefined) restoreCapacity(side, l.cap);
    if (l.whatif !== undefined && useApp.getState().mode !== "compare") {
      if (r) restoreWhatIf(side, l.whatif, l.whatifid ?? null);
      else ignored.push(`whatif${suffix} (no trace on this device: a what-if replays the trace)`);
    }
  };
  if (link.link !== undefined && app.mode === "compare") useApp.setState({ linked: link.link });
  if (link.align && app.mode === "compare") useApp.setState({ align: link.align });
  // Before the moments: a link's own moment=/moment2= (written with it) then say where each file stands.
  if (link.at && app.mode === "compare") useApp.setState({ compareAt: link.at });
  if (app.mode === "compare") alignViews(app.base, true);
  await apply(app.base, link.a, "");
  const a = sides[app.base].getState();
  if (app.mode === "compare" && a.view && (link.b?.t0 === undefined || link.b?.t1 === undefined)) {
    follow(app.base, a.view);
  }
  if (link.b && app.mode === "compare") await apply((1 - app.base) as Side, link.b, "2");
  if (link.a.site && app.mode === "compare") useApp.getState().highlightBoth(link.a.site);
  if (ignored.length > 0) {
    useApp
      .getState()
      .notify(
        "warn",
        `Parts of the link do not fit ${app.mode === "compare" ? "these files" : "this file"} and were ignored: ${ignored.join("; ")}.`,
        "restore",
      );
  }
}

// Linked zoom: a view the user sets on one side moves the other.
onUserView(follow);

// A crash ends both sides' models: say so where a file was shown.
onWorkerCrash((reason) => {
  for (const s of sides) {
    const st = s.getState();
    if (st.status === "ready" && st.fileName) {
      st.fail(st.fileName, `The worker holding ${st.fileName} stopped (${reason}). Drop the file again.`);
    }
  }
});

// The idle signal's page state follows every store.
for (const s of sides) s.subscribe(setPageState);
useApp.subscribe(setPageState);
setPageState();
