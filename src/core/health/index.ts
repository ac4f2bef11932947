// Allocator health of one device: per-event cached / pending / inactive-split columns, pending frees,
// memory_stats() verdicts and fragmentation at the peak and at each OOM. Pure: a prepared replay, the
// model and the counters sidecar in; plain data (plus typed-array columns) out.

import { attribute } from "../attribution/index";
import type { CountersSidecar, SnapshotModel } from "../model/types";
import { prepareReplays } from "../replay/report";
import type { Replay } from "../replay/types";
import { replayInputs } from "../report/index";
import { type HealthCurves, healthCurves, inactiveSplitExtremes, maxOf } from "./curves";
import {
  type FragmentationDetail,
  type FragmentationOptions,
  fragmentationAtOoms,
  fragmentationAtPeak,
} from "./fragmentation";
import { type PendingFreeOptions, type PendingFreesReport, pendingFrees } from "./pending";
import { memoryStatsVerdicts, type StatVerdict } from "./verdicts";

export interface HealthOptions extends FragmentationOptions, PendingFreeOptions {}

/** The JSON-safe part of the health of one device (what a page lists next to the curves). */
export interface HealthSummary {
  device: number;
  events: number;
  /** Highest value of each curve and its first event; null without events. */
  max: {
    cached: { value: number; eventIndex: number } | null;
    pending: { value: number; eventIndex: number } | null;
    inactiveSplit: { value: number; eventIndex: number } | null;
  };
  /** The curves' values after the last event (the snapshot's state for a complete trace). */
  end: { cached: number; pending: number; inactiveSplit: number } | null;
  pendingFrees: PendingFreesReport;
  /** memory_stats() verdicts; [] without a sidecar. The sidecar is per process, so only the device it
   * names (or every device when it names none) gets them. */
  verdicts: StatVerdict[];
  fragmentation: { peak: FragmentationDetail | null; ooms: FragmentationDetail[] };
}

export interface DeviceHealth {
  /** Made on first access (one more pass over the trace): the summary does not need them. */
  readonly curves: HealthCurves;
  summary: HealthSummary;
}

/** Health of one device from its prepared replay. */
export function buildHealth(
  model: SnapshotModel,
  replay: Replay,
  counters: CountersSidecar | null,
  opts: HealthOptions = {},
): DeviceHealth {
  const n = replay.length;
  const cachedAt = (i: number) => replay.reserved[i] - replay.allocated[i];
  const pendingAt = (i: number) => replay.active[i] - replay.allocated[i];
  // the summary from a pass that keeps no column; the curves themselves only when asked for (the overlay)
  const split = inactiveSplitExtremes(replay);
  let curves: HealthCurves | null = null;
  const forThisDevice = counters !== null && (counters.device === null || counters.device === replay.device);
  return {
    get curves() {
      curves ??= healthCurves(replay);
      return curves;
    },
    summary: {
      device: replay.device,
      events: n,
      max: {
        cached: maxOf(n, cachedAt),
        pending: maxOf(n, pendingAt),
        inactiveSplit: split.max,
      },
      end:
        n > 0
          ? { cached: cachedAt(n - 1), pending: pendingAt(n - 1), inactiveSplit: split.end as number }
          : null,
      pendingFrees: pendingFrees(replay, model, opts),
      verdicts: forThisDevice ? memoryStatsVerdicts(counters) : [],
      fragmentation: { peak: fragmentationAtPeak(replay, opts), ooms: fragmentationAtOoms(replay, opts) },
    },
  };
}

/** Attribution + replay of every traced device, then buildHealth for each (convenience for the CLI/tests). */
export function healthForModel(
  model: SnapshotModel,
  counters: CountersSidecar | null,
  opts: HealthOptions = {},
): Map<number, DeviceHealth> {
  const inputs = replayInputs(attribute(model));
  const named = { siteKeys: inputs.siteKeys, categoryNames: inputs.categoryNames, ...opts };
  const out = new Map<number, DeviceHealth>();
  for (const [device, r] of prepareReplays(model, inputs))
    out.set(device, buildHealth(model, r, counters, named));
  return out;
}

export { columnMax, type HealthCurves, healthCurves, inactiveSplitExtremes, maxOf } from "./curves";
export {
  type FragmentationDetail,
  type FragmentationOptions,
  fragmentationAtOoms,
  fragmentationAtPeak,
  fragmentationDetail,
  type PinnedSegment,
  type PinningBlock,
  type SegmentFree,
} from "./fragmentation";
export { type PendingFree, type PendingFreeOptions, type PendingFreesReport, pendingFrees } from "./pending";
export { memoryStatsVerdicts, STAT_KEYS, type StatVerdict, statValue, type VerdictLevel } from "./verdicts";
