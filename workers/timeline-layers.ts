// What the timeline's layers ask the worker beyond the buckets (issue 21): the run's phases (forward /
// backward / optimizer / parameters, the attribution's phases that the Summary names the peak's phase
// from: core whatif/phases.ts), the allocation under the pointer in the stacked chart, and the replayed
// allocation of a snapshot block (for the sidebar's alloc / free events). Spread into each side's
// PeakscopeApi by peakscope.worker.ts.

import { liveAllocationsAt } from "../src/core/replay/state";
import { blockOf, type Replay } from "../src/core/replay/types";
import { PHASE_NAMES, tracePhases } from "../src/core/whatif/phases";
import type { AllocationDetail, XAxis } from "./api";
import { stackRanks } from "./bands";
import type { Engine } from "./engine";
import { axisX, lowerBound } from "./timeline";

export type PhaseName = "forward" | "backward" | "optimizer" | "parameters";

/** One run of a phase: events [startEvent, endEvent) (the next run's start, or the trace's length). */
export interface PhaseRun {
  phase: PhaseName;
  startEvent: number;
  endEvent: number;
  /** Time (µs, the timeline's time axis) of the first event and of the run's end; NaN without times. */
  startUs: number;
  endUs: number;
}

export interface PhaseRunsAnswer {
  device: number;
  runs: PhaseRun[];
  /** Runs left out beyond MAX_RUNS (the layer says so). */
  omitted: number;
}

export interface BlockAtQuery {
  device: number;
  axis: XAxis;
  /** The hovered pixel column's range in axis units (the bucket the stacked column was drawn from). */
  x0: number;
  x1: number;
  /** The pointer's height in bytes from the chart's bottom. */
  yBytes: number;
}

export interface BlockAtAnswer {
  /** The event whose state the column shows (the bucket's highest moment; -1: before the first event). */
  event: number;
  category: string;
  /** The category's bytes at that event (its band's height). */
  categoryBytes: number;
  /** The allocation under the pointer; null when the pointer is above the stack. */
  detail: AllocationDetail | null;
  /** `file:line function` of the innermost own-code frame (the attribution's own-code call site). */
  ownLine: string | null;
}

export interface TimelineLayersApi {
  /** The run's phases on this device's trace (empty without phased entries). */
  phaseRuns(device: number): Promise<PhaseRunsAnswer>;
  /** The allocation whose part of the stacked column is under the pointer. */
  blockAt(q: BlockAtQuery): Promise<BlockAtAnswer | null>;
  /**
   * A segment map block's replayed allocation (`ref` is a block index at the snapshot, an allocation id at
   * an event, as the map's refs are), with its innermost own-code line: the sidebar's block details.
   */
  blockAllocation(device: number, ref: number, event: number | null): Promise<BlockAllocation>;
}

export interface BlockAllocation {
  /** -1: the block has no replayed allocation (no trace on this device). */
  alloc: number;
  detail: AllocationDetail | null;
  ownLine: string | null;
}

const MAX_RUNS = 50000;

const runsCache = new WeakMap<Replay, PhaseRunsAnswer>();

export function phaseRuns(engine: Engine, device: number): PhaseRunsAnswer {
  const model = engine.model;
  const attr = engine.attribution;
  const empty = { device, runs: [], omitted: 0 };
  if (!model || !attr || !(model.traces[device]?.length > 0)) return empty;
  const d = engine.device(device);
  const hit = runsCache.get(d.replay);
  if (hit) return hit;
  const ph = tracePhases(model, model.traces[device], attr.stackRule);
  const r = d.replay;
  const n = r.length;
  const t = (i: number) => (d.timeAxis && i >= 0 && i < n ? r.x[i] : Number.NaN);
  const runs: PhaseRun[] = [];
  const R = ph.runStart.length;
  for (let k = 0; k < R && runs.length < MAX_RUNS; k++) {
    const name = PHASE_NAMES[ph.runPhase[k]];
    if (!name || name === "none") continue;
    const start = ph.runStart[k];
    const end = ph.runEnd[k];
    runs.push({
      phase: name,
      startEvent: start,
      endEvent: end,
      startUs: t(start),
      // The run ends where the next begins; the last one at the trace's last event.
      endUs: t(Math.min(end, n - 1)),
    });
  }
  const answer = { device, runs, omitted: R - runs.length };
  runsCache.set(d.replay, answer);
  return answer;
}

/** The event of the highest allocated moment of the events in [x0, x1) (the state carried in included). */
export function bucketPeakEvent(r: Replay, x: (i: number) => number, x0: number, x1: number): number {
  const n = r.length;
  let i = lowerBound(n, x, x0);
  let best = i - 1;
  let max = best >= 0 ? r.allocated[best] : r.initial.allocatedBytes;
  for (; i < n && x(i) < x1; i++) {
    if (r.allocated[i] > max) {
      max = r.allocated[i];
      best = i;
    }
  }
  return best;
}

export function blockAt(engine: Engine, q: BlockAtQuery): BlockAtAnswer | null {
  const model = engine.model;
  if (!model || !(model.traces[q.device]?.length > 0)) return null;
  const d = engine.device(q.device);
  const r = d.replay;
  const axis = q.axis === "time" && d.timeAxis ? "time" : "event";
  const event = bucketPeakEvent(r, axisX(r, axis), q.x0, q.x1);
  // The column is stacked by category id from the bottom (Timeline.tsx), each category's blocks in the
  // "each allocation" order (oldest first: workers/bands.ts stackRanks).
  const byCat = r.categoriesAt(event);
  let below = 0;
  let cat = -1;
  for (let c = 0; c < byCat.length; c++) {
    const v = byCat[c];
    if (!(v > 0)) continue;
    if (q.yBytes >= below && q.yBytes < below + v) {
      cat = c;
      break;
    }
    below += v;
  }
  const names = engine.categoryNames();
  if (cat < 0) return { event, category: "", categoryBytes: 0, detail: null, ownLine: null };
  const A = r.allocations;
  const fr = A.freeRequestedEvent;
  const ids = Array.from(liveAllocationsAt(r, event)).filter((k) => A.category[k] === cat && fr[k] > event);
  d.rank ??= stackRanks(r);
  const rank = d.rank;
  ids.sort((a, b) => rank[a] - rank[b]);
  let at = below;
  let hit = ids.length > 0 ? ids[ids.length - 1] : -1;
  for (const k of ids) {
    if (q.yBytes < at + A.sizeBytes[k]) {
      hit = k;
      break;
    }
    at += A.sizeBytes[k];
  }
  const detail = hit >= 0 ? engine.allocation(q.device, hit) : null;
  return {
    event,
    category: names[cat] ?? "unknown",
    categoryBytes: byCat[cat],
    detail,
    ownLine: hit >= 0 ? ownLineOf(engine, q.device, hit) : null,
  };
}

export function allocationOfBlock(engine: Engine, device: number, block: number): number {
  const model = engine.model;
  if (!model || !(model.traces[device]?.length > 0)) return -1;
  const A = engine.device(device).replay.allocations;
  for (let k = 0; k < A.length; k++) if (blockOf(A, k) === block) return k;
  return -1;
}

/** The innermost own-code line of an allocation's stack (its attribution call site, when that is own code). */
function ownLineOf(engine: Engine, device: number, k: number): string | null {
  const A = engine.device(device).replay.allocations;
  const site = engine.attribution?.sites[A.site[k]];
  return site && site.via === "own-code" ? site.label : null;
}

export function blockAllocation(
  engine: Engine,
  device: number,
  ref: number,
  event: number | null,
): BlockAllocation {
  const k = event === null ? allocationOfBlock(engine, device, ref) : ref;
  if (k < 0) return { alloc: -1, detail: null, ownLine: null };
  return { alloc: k, detail: engine.allocation(device, k), ownLine: ownLineOf(engine, device, k) };
}

export function timelineLayersApi(engine: Engine): TimelineLayersApi {
  return {
    phaseRuns: async (device) => phaseRuns(engine, device),
    blockAt: async (q) => blockAt(engine, q),
    blockAllocation: async (device, ref, event) => blockAllocation(engine, device, ref, event),
  };
}
