// The side panel's report, built exactly as the CLI builds `peakscope report FILE [--counters F] --json`
// (buildReport, replay section included), reusing the worker's already prepared replays.

import type { Attribution } from "../src/core/attribution/index";
import type { CountersSidecar, SnapshotModel } from "../src/core/model/types";
import { type ReplayReport, replayReport } from "../src/core/replay/report";
import type { Replay } from "../src/core/replay/types";
import { buildReport, type ReportJson, replayInputs } from "../src/core/report/index";

export { replayInputs } from "../src/core/report/index";

export function buildReplayReport(
  model: SnapshotModel,
  attribution: Attribution | null,
  counters: CountersSidecar | null,
  replays: Map<number, Replay>,
): ReplayReport {
  const inputs = attribution
    ? replayInputs(attribution)
    : { categoryNames: ["unknown"], siteKeys: [] as string[] };
  return replayReport(model, inputs, counters, { replays });
}

export function buildPanelReport(
  model: SnapshotModel,
  attribution: Attribution | null,
  counters: CountersSidecar | null,
  replay?: ReplayReport,
  /** The replays `replay` came from: the report's `summary` (peak phase, own lines, OOMs) needs them. */
  replays?: Map<number, Replay>,
): ReportJson {
  return buildReport(model, {
    counters,
    ...(attribution ? { attribution } : {}),
    ...(replay ? { replay } : {}),
    ...(replay && replays && attribution ? { replays } : {}),
  });
}
