// The sentences of a leaks answer: the verdict (the leak named, or "no growth found") and how warm-up was told
// apart. One place, so the CLI, the JSON and the page say the same.

import { formatMiB } from "../report/format";
import type { GrowthResult } from "./growth";

const stepList = (steps: number[]) =>
  steps.length > 2 && steps.every((s, i) => i === 0 || s === steps[i - 1] + 1)
    ? `${steps[0]}–${steps[steps.length - 1]}`
    : steps.join(", ");

export function verdictMessage(
  g: GrowthResult,
  measured: number,
  projectedOomStep: number | null,
  capacity: { bytes: number; detail: string } | null,
  stepsDetail = "",
): string {
  if (g.verdict === "too-few-steps") {
    if (measured < 2 && stepsDetail) return `too few steps: ${stepsDetail}`;
    return (
      `too few steps: ${measured} measured, a leak needs ${g.minGrowthSteps} steps of growth ` +
      `(${g.minGrowthSteps + 1} measurements)`
    );
  }
  if (g.verdict === "none") return "no growth found";
  const total = g.leaks.reduce((s, l) => s + l.bytesPerStep, 0);
  const parts = g.leaks
    .slice(0, 3)
    .map(
      (l) => `${l.label} (${l.category}) +${formatMiB(l.bytesPerStep)} per step, steps ${stepList(l.steps)}`,
    );
  const more = g.leaks.length > 3 ? `, and ${g.leaks.length - 3} more` : "";
  const oom =
    projectedOomStep !== null && capacity
      ? `; at this rate memory runs out at step ${projectedOomStep} (capacity ${formatMiB(capacity.bytes)}: ${capacity.detail})`
      : "";
  return `leak: +${formatMiB(total)} per step: ${parts.join("; ")}${more}${oom}`;
}

export function warmUpText(
  g: GrowthResult,
  firstStep: number | null,
  firstStepRetainedBytes: number | null,
): string {
  const parts: string[] = [];
  if (firstStep !== null && firstStepRetainedBytes !== null)
    parts.push(
      `step ${firstStep} kept ${formatMiB(firstStepRetainedBytes)} (one-off state made before growth is measured)`,
    );
  const oneOff = g.oneOff.reduce((s, o) => s + o.bytes, 0);
  if (g.oneOff.length > 0) {
    const top = g.oneOff
      .slice(0, 2)
      .map((o) => `${o.label} (${o.category}) +${formatMiB(o.bytes)} in step ${stepList(o.steps)}`);
    parts.push(`${formatMiB(oneOff)} grew and then stopped, not a leak: ${top.join("; ")}`);
  }
  return parts.length > 0 ? `warm-up: ${parts.join("; ")}` : "warm-up: nothing grew once and stopped";
}
