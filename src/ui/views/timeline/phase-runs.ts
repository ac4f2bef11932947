// Pure helpers of the timeline's phase and capacity layers (no DOM, no store): which phase run holds an
// event, how a run's band is named, how the phases read in one sentence, the capacity's label in GiB.

import type { PhaseName, PhaseRun } from "../../../../workers/api";

/** Words for a phase, as the Summary says them. */
export const PHASE_LABEL: Record<PhaseName, string> = {
  forward: "forward",
  backward: "backward",
  optimizer: "optimizer step",
  parameters: "model set-up",
};

/**
 * Band fills: light enough that black text reads on them in both themes, told apart by hue (Tol's light
 * scheme); the bands sit in a lane of their own at the plot's top, so they never tint the categories.
 */
export const PHASE_FILL: Record<PhaseName, string> = {
  forward: "#77AADD",
  backward: "#EE8866",
  optimizer: "#BBCC33",
  parameters: "#DDDDDD",
};

/** The run holding `event` (runs sorted by start, [startEvent, endEvent)); null: before the first, or none. */
export function runAt(runs: readonly PhaseRun[], event: number): PhaseRun | null {
  let lo = 0;
  let hi = runs.length - 1;
  let found = -1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    if (runs[mid].startEvent <= event) {
      found = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  if (found < 0) return null;
  const r = runs[found];
  return event < r.endEvent ? r : null;
}

/** "3 forward, 3 backward and 2 optimizer step runs" (the layer's accessible name). */
export function phaseSummary(runs: readonly PhaseRun[]): string {
  if (runs.length === 0) return "no phases";
  const counts = new Map<PhaseName, number>();
  for (const r of runs) counts.set(r.phase, (counts.get(r.phase) ?? 0) + 1);
  const parts = (["parameters", "forward", "backward", "optimizer"] as const)
    .filter((p) => counts.has(p))
    .map((p) => `${counts.get(p)} ${PHASE_LABEL[p]}`);
  const list =
    parts.length > 1 ? `${parts.slice(0, -1).join(", ")} and ${parts[parts.length - 1]}` : parts[0];
  return `${list} ${runs.length === 1 ? "run" : "runs"}`;
}

const GiB = 1024 ** 3;

/** "79.35 GiB": the capacity always in GiB (a device's size is read in GiB), two decimals. */
export function gibLabel(bytes: number): string {
  return `${(bytes / GiB).toFixed(2)} GiB`;
}
