// One zustand store per side: side 0 is the open file (A, the base of a comparison), side 1 the file it is
// compared with (B). Each holds that file's status, progress, summary, device and side-panel answer, the
// timeline view (axis, visible range, pinned moment), highlights and view options. Views find their side
// through SideContext (`useSide()`); what spans both sides (mode, comparison, linking, notices) lives in
// app.ts. 60 fps values (hover position) do not live here: the views keep them locally.

import * as Comlink from "comlink";
import { createContext, useContext } from "react";
import { create, type StoreApi, type UseBoundStore } from "zustand";
import type {
  OpenResult,
  PanelAnswer,
  PeakscopeApi,
  ProgressInfo,
  ReplayFacts,
  SiteMatch,
  Summary,
  XAxis,
} from "../../../workers/api";
import { categoryColors } from "../palette";
import { ask, askNow, type Side, tell } from "./client";
import { defaultPinnedEvent } from "./momentDefault";

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

/** Where the open file came from: dropped or picked (never uploaded), a URL the user gave, the demo. */
export interface Source {
  kind: "file" | "url" | "demo";
  name: string;
  size: number;
  /** For "url" and "demo": the URL as given (relative ones stay relative, so links stay portable). */
  url?: string;
}

export interface State {
  side: Side;
  status: Status;
  fileName: string | null;
  source: Source | null;
  /** Content hash of a dropped file (see hash.ts), once computed; null for URLs and while computing. */
  contentHash: string | null;
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
  /** A range moment (events a..b, inclusive): the views show its highest moment, `pinnedEvent`. */
  momentRange: { a: number; b: number } | null;
  highlightSite: string | null;
  /** What highlightSite is: this file's own site key, or the portable key of the comparison. */
  highlightBy: SiteMatch;
  /** A category drawn in full while the others are dimmed (timeline and map); null = none. */
  highlightCategory: string | null;
  timelineMode: "stacked" | "allocations";
  mapColor: "category" | "state";
  /** Bumped on each open so stale answers are dropped. */
  generation: number;

  /** A worker request on this side. */
  ask<T>(fn: (api: Comlink.Remote<PeakscopeApi>) => Promise<T>): Promise<T>;
  /**
   * Opens a snapshot in this side's engine — a file, or a URL the worker downloads and reads as it
   * comes; resolves true when it is ready.
   */
  open(file: Blob | URL, name: string, opts?: { counters?: File | null; source?: Source }): Promise<boolean>;
  /** Shows an error for this side without opening anything (a link whose URL cannot be loaded). */
  fail(name: string, message: string): void;
  /** Back to empty (the worker's model is dropped by whoever calls this). */
  reset(): void;
  /** Asks the worker to stop reading; see app.ts for the fallback that ends the worker. */
  cancelRead(): void;
  setDevice(device: number): Promise<void>;
  /** A view set by the user: linked views follow (see app.ts). */
  setView(view: TimelineView): void;
  /** A view set by the link to the other side: nothing follows. */
  setViewQuiet(view: TimelineView): void;
  setAxis(axis: XAxis): void;
  pin(event: number | null): void;
  /** A range as the current moment: `event` is its highest moment (moment.ts finds it). */
  pinRange(range: { a: number; b: number }, event: number): void;
  setHighlightSite(site: string | null, by?: SiteMatch): void;
  setHighlightCategory(category: string | null): void;
  setTimelineMode(mode: "stacked" | "allocations"): void;
  setMapColor(mode: "category" | "state"): void;
  /** Uses a counters sidecar (null drops it); returns the parser's message when it is not usable. */
  applyCounters(file: File | null): Promise<string | null>;
}

export type SideStore = UseBoundStore<StoreApi<State>>;

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

/**
 * Keeps a view near the trace: at most 1.2× its span, at most 10% beyond its ends. `extent` (a linked
 * comparison) widens the trace to both files' range in this side's coordinates.
 */
export function clampView(
  v: TimelineView,
  r: ReplayFacts,
  extent?: { x0: number; x1: number } | null,
): TimelineView {
  const full = extent ?? (v.axis === "time" ? { x0: r.t0, x1: r.t1 } : { x0: 0, x1: r.events - 1 });
  const fullSpan = Math.max(1, full.x1 - full.x0);
  const minSpan = v.axis === "time" ? Math.max(1, fullSpan * 1e-7) : 4;
  let span = v.x1 - v.x0;
  span = Math.min(fullSpan * 1.2, Math.max(minSpan, span));
  const mid = (v.x0 + v.x1) / 2;
  let x0 = mid - span / 2;
  const lo = full.x0 - fullSpan * 0.1;
  const hi = full.x1 + fullSpan * 0.1;
  if (x0 < lo) x0 = lo;
  if (x0 + span > hi) x0 = hi - span;
  return { axis: v.axis, x0, x1: x0 + span };
}

type ViewHook = (side: Side, view: TimelineView) => void;
let viewHook: ViewHook | null = null;
/** app.ts: called after every user-set view, to move the linked side. */
export function onUserView(fn: ViewHook): void {
  viewHook = fn;
}

const EMPTY = {
  status: "empty" as Status,
  fileName: null,
  source: null,
  contentHash: null,
  progress: null,
  error: null,
  summary: null,
  device: 0,
  panel: null,
  panelError: null,
  countersError: null,
  colors: [] as string[],
  view: null,
  pinnedEvent: null,
  momentRange: null,
  highlightSite: null,
  highlightBy: "key" as SiteMatch,
  highlightCategory: null,
};

function createSideStore(side: Side): SideStore {
  return create<State>()((set, get) => {
    const sideAsk: State["ask"] = (fn) => ask(side, fn);

    async function applyCounters(f: File | null): Promise<string | null> {
      try {
        const text = f ? await f.text() : null;
        await sideAsk((api) => api.setCounters(text, f?.name ?? ""));
        return null;
      } catch (e) {
        return e instanceof Error ? e.message : String(e);
      }
    }

    return {
      side,
      ...EMPTY,
      timelineMode: "stacked",
      mapColor: "category",
      generation: 0,
      ask: sideAsk,

      async open(file, name, opts = {}) {
        const generation = get().generation + 1;
        const t0 = performance.now();
        const url = file instanceof URL ? file : null;
        const sizeBytes = file instanceof URL ? 0 : file.size;
        // Progress comes one way through a port of its own (no reply per update, as a proxy would want).
        const progress = new MessageChannel();
        progress.port1.onmessage = (e: MessageEvent<ProgressInfo>) => {
          if (get().generation !== generation) return;
          const p = e.data;
          // Plain progress messages keep the last load preview drawn.
          const preview = p.preview ?? get().progress?.preview;
          set({ progress: { ...p, preview, startedAt: t0, now: performance.now() } });
        };
        const port = Comlink.transfer(progress.port2, [progress.port2]);
        // Asked first, the state after: the worker has the file while the page draws the load (askNow).
        const answer = askNow(
          side,
          (api) =>
            (url
              ? api.openUrl(url.href, name, { origin: location.origin, protocol: location.protocol }, port)
              : api.open(file as Blob, name, port)) as Promise<OpenResult>,
        );
        set({
          ...EMPTY,
          status: "loading",
          fileName: name,
          source: opts.source ?? { kind: "file", name, size: sizeBytes },
          generation,
          progress: {
            phase: url ? "downloading" : "reading",
            bytesDone: 0,
            bytesTotal: sizeBytes,
            startedAt: t0,
            now: t0,
          },
        });
        let result: OpenResult;
        try {
          result = await answer;
        } catch (e) {
          if (get().generation !== generation) return false;
          const message = e instanceof Error ? e.message : String(e);
          set({
            status: "error",
            error: `The worker stopped while reading ${name}: ${message}`,
            progress: null,
          });
          return false;
        } finally {
          // the load's answer is in: a progress message still on its way must not show progress again
          progress.port1.close();
        }
        if (get().generation !== generation) return false;
        if (!result.ok) {
          if (result.cancelled) {
            set({ ...EMPTY, generation: generation + 1 });
            document.body.dataset.cancelled = "1";
          } else set({ status: "error", error: result.message, progress: null });
          return false;
        }
        const summary = result.summary;
        const countersError = opts.counters ? await applyCounters(opts.counters) : null;
        const withTrace = summary.devices.find((d) => d.traceEntries > 0);
        const device = withTrace?.device ?? summary.devices[0]?.device ?? 0;
        set({
          summary,
          device,
          countersError,
          ...(url ? { source: { ...(get().source as Source), size: summary.byteLength } } : {}),
          progress: {
            phase: "replaying the trace",
            bytesDone: summary.byteLength,
            bytesTotal: summary.byteLength,
            startedAt: t0,
            now: performance.now(),
          },
        });
        await get().setDevice(device);
        if (get().generation !== generation) return false;
        set({ status: "ready", progress: null });
        return true;
      },

      fail(name, message) {
        set({ ...EMPTY, generation: get().generation + 1, status: "error", fileName: name, error: message });
      },

      reset() {
        set({ ...EMPTY, generation: get().generation + 1 });
      },

      cancelRead() {
        if (get().status !== "loading") return;
        tell(side, (api) => api.cancel());
      },

      async setDevice(device) {
        const generation = get().generation;
        set({
          device,
          panel: null,
          panelError: null,
          view: null,
          pinnedEvent: null,
          momentRange: null,
          highlightSite: null,
          highlightCategory: null,
        });
        try {
          const panel = await sideAsk((api) => api.panel(device));
          if (get().generation !== generation || get().device !== device) return;
          set({
            panel,
            colors: categoryColors(panel.categories.map((c) => c.name)),
            view: fullView(panel),
            // The current moment opens at the peak whenever the snapshot is not the worst moment.
            pinnedEvent: defaultPinnedEvent(panel),
          });
        } catch (e) {
          if (get().generation !== generation) return;
          set({ panelError: e instanceof Error ? e.message : String(e) });
        }
      },

      setView(view) {
        set({ view });
        viewHook?.(side, view);
      },
      setViewQuiet: (view) => set({ view }),
      setAxis(axis) {
        const v = fullView(get().panel, axis);
        if (v) get().setView(v);
      },
      pin: (event) => set({ pinnedEvent: event, momentRange: null }),
      pinRange: (range, event) => set({ pinnedEvent: event, momentRange: range }),
      setHighlightSite: (site, by = "key") => set({ highlightSite: site, highlightBy: site ? by : "key" }),
      setHighlightCategory: (category) => set({ highlightCategory: category }),
      setTimelineMode: (mode) => set({ timelineMode: mode }),
      setMapColor: (mode) => set({ mapColor: mode }),
      applyCounters: async (f) => {
        const error = await applyCounters(f);
        if (!error) await get().setDevice(get().device);
        return error;
      },
    };
  });
}

/** Side 0 (A: the open file, the base of a comparison) and side 1 (B: the file it is compared with). */
export const sides: readonly [SideStore, SideStore] = [createSideStore(0), createSideStore(1)];

/** Side 0's store: what the single-file page shows. */
export const useStore = sides[0];

export const SideContext = createContext<SideStore>(sides[0]);

/** The store of the side this view shows (SideContext; side 0 outside any provider). */
export function useSide(): SideStore {
  return useContext(SideContext);
}

/** A key unique to the side, for element ids (two columns in a comparison). */
export function useSideKey(): string {
  return `s${useSide()((s) => s.side)}`;
}
