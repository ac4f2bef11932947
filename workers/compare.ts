// The comparison of the two open files, built exactly as `peakscope report A --compare B --json` builds its
// `compare` section (the snapshots, and `atPeaks`: each file at its peak): core buildReport(A, { other: B,
// counters, otherCounters }), reusing each side's attribution and replays. Both models live in this worker
// (one Engine per side), so nothing large crosses threads.

import { buildReport } from "../src/core/report/index";
import type { CompareAnswer } from "./api";
import type { Engine } from "./engine";

export function compareEngines(base: Engine, other: Engine): CompareAnswer {
  if (!base.model || !other.model) throw new Error("No snapshot is open.");
  const report = buildReport(base.model, {
    counters: base.countersSidecar,
    other: other.model,
    otherCounters: other.countersSidecar,
    ...(base.attribution ? { attribution: base.attribution } : {}),
    ...(other.attribution ? { otherAttribution: other.attribution } : {}),
    // The same replays as each side's timeline (the replay options follow the attribution given here).
    ...(base.attribution ? { replays: base.replays() } : {}),
    ...(other.attribution ? { otherReplays: other.replays() } : {}),
  });
  if (!report.compare) throw new Error("The comparison could not be built.");
  return { compare: report.compare, baseFile: report.file, baseTotals: report.totals };
}
