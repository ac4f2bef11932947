// Which moment the comparison's verdict, Categories and Call sites show: each file's peak (the default
// whenever both files have a trace to replay) or each file's snapshot. Pure: no store.

import type { CompareAnswer } from "../../../../workers/api";
import type { ComparisonJson, PeaksCompareJson } from "../../../core/report/index";
import { formatCount } from "../../format";

export type CompareAt = "peaks" | "snapshots";

/** The user's choice (null: none yet) as it can be honoured: peaks only when both files have one. */
export function effectiveAt(answer: CompareAnswer | null, choice: CompareAt | null): CompareAt {
  const peaks = answer?.compare.atPeaks ?? null;
  if (!peaks) return "snapshots";
  return choice ?? "peaks";
}

/** The comparison at that moment. */
export function comparisonAt(answer: CompareAnswer, at: CompareAt): ComparisonJson {
  return at === "peaks" && answer.compare.atPeaks ? answer.compare.atPeaks : answer.compare;
}

type PeakMoment = PeaksCompareJson["basePeak"];

/** "A's peak: after event #2,780 on device 0" (+ that it is the recorded window's highest, when so). */
export function peakWords(label: "A" | "B", m: PeakMoment): string {
  const window = m.isRunPeak
    ? ""
    : " (the highest of the recorded window; the run may have peaked before it)";
  return `${label}'s peak: after event #${formatCount(m.eventIndex)} on device ${m.device}${window}`;
}

/** What the numbers are, for titles: "at each file's peak (…)" or "at each file's snapshot". */
export function momentNote(answer: CompareAnswer, at: CompareAt): string {
  const p = answer.compare.atPeaks;
  if (at === "peaks" && p) {
    return `B − A of the allocations alive at each file's peak (${peakWords("A", p.basePeak)}; ${peakWords("B", p.otherPeak)})`;
  }
  return "B − A in the live blocks at each file's snapshot (every device)";
}
