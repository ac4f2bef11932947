// What-if on the replay: selections and transformations of the allocation table → a new curve and peak,
// and ranked suggestions for getting under the device's limit. Pure: runs in a worker, the CLI and tests.

import { type Attribution, attribute } from "../attribution/index";
import type { CountersSidecar, SnapshotModel } from "../model/types";
import { prepareReplays } from "../replay/report";
import type { Replay } from "../replay/types";
import { replayInputs } from "../report";
import { prepareWhatIf, type WhatIfContext, WhatIfError } from "./engine";

export {
  evaluate,
  prepareWhatIf,
  selectAllocations,
  siteFileMatches,
  type WhatIfContext,
  WhatIfError,
  type WhatIfInputs,
  type WhatIfOptions,
  whatIf,
} from "./engine";
export { isPythonOnly, PHASE_NAMES, type Phases, tracePhases } from "./phases";
export { planRecompute, type RecomputePlan } from "./recompute";
export {
  parseFactor,
  parseRecompute,
  parseScale,
  parseSelection,
  selectionSpec,
  transformSpec,
  WhatIfSpecError,
} from "./spec";
export {
  COST,
  deviceCapacity,
  oomNeeds,
  rankSuggestions,
  type SuggestOptions,
  suggest,
  suggestSteps,
  topLevelModules,
} from "./suggest";
export * from "./types";

/**
 * The device a what-if is about: the one asked for; else the counters' device when it has a trace; else the
 * first device with an OOM entry; else the one with the highest replayed peak.
 */
export function whatIfDevice(
  replays: Map<number, Replay>,
  counters: CountersSidecar | null,
  device?: number | null,
): number {
  if (device !== undefined && device !== null) {
    if (!replays.has(device)) {
      const have = [...replays.keys()].join(", ") || "none";
      throw new WhatIfError(`device ${device} has no trace entries (devices with traces: ${have})`);
    }
    return device;
  }
  if (replays.size === 0)
    throw new WhatIfError("this file has no trace entries: a what-if needs device_traces");
  const cd = counters?.device;
  if (cd !== null && cd !== undefined && replays.has(cd)) return cd;
  const list = [...replays.values()].sort((a, b) => a.device - b.device);
  const oom = list.find((r) => r.markers.oom.length > 0);
  if (oom) return oom.device;
  let best = list[0];
  for (const r of list) if (r.peakAllocatedBytes > best.peakAllocatedBytes) best = r;
  return best.device;
}

export interface ContextOptions {
  device?: number | null;
  counters?: CountersSidecar | null;
  attribution?: Attribution;
  /** Replays already prepared with the same attribution (the worker's). */
  replays?: Map<number, Replay>;
}

/** Attribution + replay + what-if context for one device of a model. */
export function whatIfContext(model: SnapshotModel, opts: ContextOptions = {}): WhatIfContext {
  const a = opts.attribution ?? attribute(model);
  const replays = opts.replays ?? prepareReplays(model, replayInputs(a));
  const device = whatIfDevice(replays, opts.counters ?? null, opts.device);
  return prepareWhatIf(model, replays.get(device) as Replay, a);
}
