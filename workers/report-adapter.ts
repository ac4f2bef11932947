// The side panel's report, built exactly as the CLI builds `memscope report FILE [--counters F] --json`
// (src/cli/report.ts: buildReport(model, { counters })), plus the replay section (peak, composition,
// snapshot-vs-peak gap) from core replayReport with the worker's already prepared replays.

import type { Attribution } from "../src/core/attribution/index";
import type { CountersSidecar, SnapshotModel } from "../src/core/model/types";
import { type ReplayInputs, type ReplayReport, replayReport } from "../src/core/replay/report";
import type { Replay } from "../src/core/replay/types";
import { buildReport, type ReportJson } from "../src/core/report/index";

export function replayInputs(attribution: Attribution | null): ReplayInputs {
  return {
    traceCategory: attribution?.traceCategory,
    traceSite: attribution?.traceSite,
    blockCategory: attribution?.blockCategory,
    blockSite: attribution?.blockSite,
    categoryNames: attribution ? [...attribution.categoryNames] : ["unknown"],
    siteKeys: attribution ? attribution.sites.map((s) => s.key) : [],
  };
}

export function buildPanelReport(
  model: SnapshotModel,
  attribution: Attribution | null,
  counters: CountersSidecar | null,
): ReportJson {
  return buildReport(model, { counters, ...(attribution ? { attribution } : {}) });
}

export function buildReplayReport(
  model: SnapshotModel,
  attribution: Attribution | null,
  counters: CountersSidecar | null,
  replays: Map<number, Replay>,
): ReplayReport {
  return replayReport(model, replayInputs(attribution), counters, { replays });
}
