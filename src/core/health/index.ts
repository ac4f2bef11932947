// Allocator health of one device: per-event cached / pending / inactive-split columns, pending frees,
// memory_stats() verdicts and fragmentation at the peak and at each OOM. Pure: a prepared replay, the
// model and the counters sidecar in; plain data (plus typed-array columns) out.

import { attribute } from "../attribution/index";
import type { CountersSidecar, SnapshotModel } from "../model/types";
import { prepareReplays } from "../replay/report";
import type { Replay } from "../replay/types";
import { replayInputs } from "../report/index";
import { columnMax, type HealthCurves, healthCurves, maxOf } from "./curves";
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
  curves: HealthCurves;
  summary: HealthSummary;
}

/** Health of one device from its prepared replay. */
export function buildHealth(
  model: SnapshotModel,
  replay: Replay,
  counters: CountersSidecar | null,
  opts: HealthOptions = {},
): DeviceHealth {
  const curves = healthCurves(replay);
  const n = curves.length;
  const forThisDevice = counters !== null && (counters.device === null || counters.device === replay.device);
  return {
    curves,
    summary: {
      device: replay.device,
      events: n,
      max: {
        cached: maxOf(n, curves.cachedAt),
        pending: maxOf(n, curves.pendingAt),
        inactiveSplit: columnMax(curves.inactiveSplit),
      },
      end:
        n > 0
          ? {
              cached: curves.cachedAt(n - 1),
              pending: curves.pendingAt(n - 1),
              inactiveSplit: curves.inactiveSplit[n - 1],
            }
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

export { columnMax, type HealthCurves, healthCurves, maxOf } from "./curves";
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
