// One zustand store for the page. Slices: the open file (status, progress, summary), the device and its
// side-panel answer, the timeline view (axis, visible range, pinned moment), and view options.
// 60 fps values (hover position) do not live here: the views keep them locally.

import * as Comlink from "comlink";
import { create } from "zustand";
import type { OpenResult, PanelAnswer, ProgressInfo, Summary, XAxis } from "../../../workers/api";
import { categoryColors } from "../palette";
import { ask, getApi, restartWorker } from "./client";
import { tracked } from "./idle";

export type Status = "empty" | "loading" | "ready" | "error";

export interface Progress extends ProgressInfo {
  startedAt: number;
  now: number;
}

export interface TimelineView {
  axis: XAxis;
  /** Visible range in axis units. */
  x0: number;
  x1: number;
}

export interface State {
  status: Status;
  fileName: string | null;
  progress: Progress | null;
  error: string | null;
  summary: Summary | null;
  device: number;
  panel: PanelAnswer | null;
  panelError: string | null;
  /** The counters sidecar dropped with the snapshot could not be used: the parser's message. */
  countersError: string | null;
  colors: string[];
  view: TimelineView | null;
  /** The event the segment map shows (state after it); null = the snapshot itself. */
  pinnedEvent: number | null;
  highlightSite: string | null;
  timelineMode: "stacked" | "allocations";
  mapColor: "category" | "state";
  /** Bumped on each open so stale answers are dropped. */
  generation: number;

  openFile(file: Blob, name: string, counters?: File | null): Promise<void>;
  /** Several files dropped together: the snapshot and, optionally, its counters sidecar. */
  openFiles(files: File[]): Promise<void>;
  openDemo(): Promise<void>;
  cancel(): void;
  setDevice(device: number): Promise<void>;
  setView(view: TimelineView): void;
  setAxis(axis: XAxis): void;
  pin(event: number | null): void;
  setHighlightSite(site: string | null): void;
  setTimelineMode(mode: "stacked" | "allocations"): void;
  setMapColor(mode: "category" | "state"): void;
}

function setPageState(status: Status, fileName: string | null): void {
  document.body.dataset.state = status;
  document.title = fileName ? `${fileName} — memscope` : "memscope — PyTorch memory snapshot viewer";
}

/** The default view of a device: the whole trace on the time axis when it has times. */
export function fullView(panel: PanelAnswer | null, axis?: XAxis): TimelineView | null {
  const r = panel?.replay;
  if (!r || r.events === 0) return null;
  const a: XAxis = axis ?? (r.hasTime ? "time" : "event");
  if (a === "time" && r.hasTime) {
    const span = Math.max(1, r.t1 - r.t0);
    return { axis: "time", x0: r.t0 - span * 0.01, x1: r.t1 + span * 0.01 };
  }
  const span = Math.max(1, r.events - 1);
  return { axis: "event", x0: -span * 0.01, x1: r.events - 1 + span * 0.01 };
}

/** A counters sidecar: named `*.counters.json`, or a small JSON file naming the allocator counters. */
async function isCounters(f: File): Promise<boolean> {
  if (/\.counters\.json$/i.test(f.name)) return true;
  if (f.size > 4 << 20) return false;
  const head = await f.slice(0, 4096).text();
  return (
    /^\s*\{/.test(head) && /"(memory_allocated|max_memory_allocated|memory_reserved|memory_stats)"/.test(head)
  );
}

async function splitCounters(files: File[]): Promise<{ snapshot: File | null; counters: File | null }> {
  if (files.length === 1) {
    return (await isCounters(files[0]))
      ? { snapshot: null, counters: files[0] }
      : { snapshot: files[0], counters: null };
  }
  let counters: File | null = null;
  const rest: File[] = [];
  for (const f of files) {
    if (!counters && (await isCounters(f))) counters = f;
    else rest.push(f);
  }
  rest.sort((a, b) => b.size - a.size);
  return { snapshot: rest[0] ?? null, counters };
}

/** Hands a sidecar to the worker; returns the parser's message when it is not usable. */
async function applyCounters(f: File): Promise<string | null> {
  try {
    const text = await f.text();
    await ask((api) => api.setCounters(text, f.name));
    return null;
  } catch (e) {
    return e instanceof Error ? e.message : String(e);
  }
}

let cancelTimer: ReturnType<typeof setTimeout> | null = null;

export const useStore = create<State>()((set, get) => {
  async function openFileNow(file: Blob, name: string, counters?: File | null): Promise<void> {
    const generation = get().generation + 1;
    const startedAt = performance.now();
    set({
      status: "loading",
      fileName: name,
      generation,
      error: null,
      progress: { phase: "reading", bytesDone: 0, bytesTotal: file.size, startedAt, now: startedAt },
      summary: null,
      panel: null,
      panelError: null,
      countersError: null,
      view: null,
      pinnedEvent: null,
      highlightSite: null,
    });
    setPageState("loading", name);
    delete document.body.dataset.cancelled;
    const onProgress = Comlink.proxy((p: ProgressInfo) => {
      if (get().generation !== generation) return;
      set({ progress: { ...p, startedAt, now: performance.now() } });
    });
    let result: OpenResult;
    try {
      result = await ask((api) => api.open(file, name, onProgress) as Promise<OpenResult>);
    } catch (e) {
      if (get().generation !== generation) return;
      // The worker died (out of memory, ended by a cancel…): a fresh one serves the next file.
      restartWorker();
      const message = e instanceof Error ? e.message : String(e);
      set({ status: "error", error: `The worker stopped while reading ${name}: ${message}`, progress: null });
      setPageState("error", name);
      return;
    }
    if (cancelTimer) {
      clearTimeout(cancelTimer);
      cancelTimer = null;
    }
    if (get().generation !== generation) return;
    if (!result.ok) {
      if (result.cancelled) {
        set({ status: "empty", fileName: null, progress: null, error: null });
        setPageState("empty", null);
        document.body.dataset.cancelled = "1";
      } else {
        set({ status: "error", error: result.message, progress: null });
        setPageState("error", name);
      }
      return;
    }
    const summary = result.summary;
    const countersError = counters ? await applyCounters(counters) : null;
    const withTrace = summary.devices.find((d) => d.traceEntries > 0);
    const device = withTrace?.device ?? summary.devices[0]?.device ?? 0;
    set({
      summary,
      device,
      countersError,
      progress: {
        phase: "replaying the trace",
        bytesDone: file.size,
        bytesTotal: file.size,
        startedAt,
        now: performance.now(),
      },
    });
    await get().setDevice(device);
    if (get().generation !== generation) return;
    set({ status: "ready", progress: null });
    setPageState("ready", name);
  }

  async function openFilesNow(files: File[]): Promise<void> {
    const { snapshot, counters } = await splitCounters(files);
    if (snapshot) await openFileNow(snapshot, snapshot.name, counters);
    else if (counters && get().summary) {
      // Only a sidecar: use it for the open snapshot.
      set({ countersError: await applyCounters(counters) });
      await get().setDevice(get().device);
    }
  }

  return {
    status: "empty",
    fileName: null,
    progress: null,
    error: null,
    summary: null,
    device: 0,
    panel: null,
    panelError: null,
    countersError: null,
    colors: [],
    view: null,
    pinnedEvent: null,
    highlightSite: null,
    timelineMode: "stacked",
    mapColor: "category",
    generation: 0,

    // Counted as work from the call itself, so the idle signal never reports the old state meanwhile.
    openFiles: (files) => tracked(() => openFilesNow(files)),
    openFile: (file, name, counters) => tracked(() => openFileNow(file, name, counters)),

    openDemo: () =>
      tracked(async () => {
        const name = "demo.pickle";
        let blob: Blob;
        try {
          const res = await fetch("./demo.pickle");
          if (!res.ok) throw new Error(`the demo file is not on this site (HTTP ${res.status})`);
          blob = await res.blob();
        } catch (e) {
          const message = e instanceof Error ? e.message : String(e);
          set({
            status: "error",
            fileName: name,
            error: `Could not load the demo: ${message}`,
            progress: null,
          });
          setPageState("error", name);
          return;
        }
        await openFileNow(blob, name);
      }),

    cancel() {
      if (get().status !== "loading") return;
      void getApi().cancel();
      // A reader busy in a long synchronous stretch cannot see the abort: after a grace period, end the
      // worker itself; the open() promise is then dropped as stale.
      const generation = get().generation;
      cancelTimer = setTimeout(() => {
        if (get().generation !== generation || get().status !== "loading") return;
        set({ generation: generation + 1, status: "empty", fileName: null, progress: null });
        setPageState("empty", null);
        document.body.dataset.cancelled = "1";
        restartWorker();
      }, 1500);
    },

    async setDevice(device) {
      const generation = get().generation;
      set({ device, panel: null, panelError: null, view: null, pinnedEvent: null, highlightSite: null });
      try {
        const panel = await ask((api) => api.panel(device));
        if (get().generation !== generation || get().device !== device) return;
        set({
          panel,
          colors: categoryColors(panel.categories.map((c) => c.name)),
          view: fullView(panel),
        });
      } catch (e) {
        if (get().generation !== generation) return;
        set({ panelError: e instanceof Error ? e.message : String(e) });
      }
    },

    setView: (view) => set({ view }),
    setAxis(axis) {
      const v = fullView(get().panel, axis);
      if (v) set({ view: v });
    },
    pin: (event) => set({ pinnedEvent: event }),
    setHighlightSite: (site) => set({ highlightSite: site }),
    setTimelineMode: (mode) => set({ timelineMode: mode }),
    setMapColor: (mode) => set({ mapColor: mode }),
  };
});

setPageState("empty", null);
