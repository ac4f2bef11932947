// The timeline's step layer: each step of the trace (worker `leaks`) as a band — alternate steps shaded —
// labelled with its number and what it kept into the next step. A transparent canvas over the timeline's (no
// pointer events), on the timeline's own x range, like the health overlay.

import { useCallback, useState } from "react";
import { Canvas, type DrawFn, themeColors } from "../../components/Canvas";
import { formatBytes } from "../../format";
import { useSide } from "../../state/store";
import { PHASE_LANE_PX } from "../timeline/PhaseBands";
import { makePlot, xToPx } from "../timeline/scales";
import { useTraceLeaks } from "./useTraceLeaks";

export function StepBands({ height }: { height: number }) {
  const S = useSide();
  const view = S((s) => s.view);
  const { answer } = useTraceLeaks();
  const [width, setWidth] = useState(0);
  const steps = answer?.steps ?? [];

  const draw: DrawFn = useCallback(
    (ctx) => {
      if (!answer || !view || width <= 0) return;
      const p = makePlot(width, height, view.x0, view.x1, 1);
      const th = themeColors();
      ctx.save();
      ctx.beginPath();
      ctx.rect(p.left, p.top, p.plotWidth, p.plotHeight);
      ctx.clip();
      ctx.font = "10px system-ui, sans-serif";
      ctx.textBaseline = "top";
      // Thousands of steps (a small model's trace) are narrower than a pixel: one pass per kind of mark,
      // a boundary once per pixel column, shading only where a band is wide enough to see, and a label only
      // where one could fit (measuring text is the costly call).
      const right = p.left + p.plotWidth;
      const bands: [number, number][] = [];
      answer.steps.forEach((s, i) => {
        const [x0, x1] =
          view.axis === "time" && answer.stepTimes
            ? answer.stepTimes[i]
            : [s.startEvent ?? 0, (s.endEvent ?? 0) + 1];
        bands.push([xToPx(p, x0), xToPx(p, x1)]);
      });
      const visible = (k: number) => bands[k][1] >= p.left && bands[k][0] <= right;
      ctx.fillStyle = th.fg;
      ctx.globalAlpha = 0.06;
      for (let k = 0; k < bands.length; k += 2) {
        const [a, b] = bands[k];
        if (visible(k) && b - a >= 2) ctx.fillRect(a, p.top, b - a, p.plotHeight);
      }
      ctx.globalAlpha = 0.5;
      let lastColumn = Number.NaN;
      for (let k = 0; k < bands.length; k++) {
        const column = Math.round(bands[k][1]);
        if (!visible(k) || column === lastColumn) continue;
        lastColumn = column;
        ctx.fillRect(column, p.top, 1, p.plotHeight);
      }
      ctx.globalAlpha = 0.9;
      // Below the phase lane (timeline/PhaseBands.tsx), which holds the plot's top edge.
      const y = p.top + PHASE_LANE_PX + 3;
      answer.steps.forEach((s, k) => {
        const [a, b] = bands[k];
        if (!visible(k) || b - a < 10) return;
        const kept = s.retainedBytes == null ? "" : ` · kept ${formatBytes(s.retainedBytes)}`;
        const label = `step ${s.step}${kept}`;
        if (ctx.measureText(label).width < b - a - 4) ctx.fillText(label, a + 3, y);
        else if (ctx.measureText(String(s.step)).width < b - a - 2) ctx.fillText(String(s.step), a + 2, y);
      });
      ctx.restore();
    },
    [answer, view, width, height],
  );

  if (steps.length === 0) return null;
  return (
    <Canvas
      draw={draw}
      height={height}
      testId="step-bands"
      ariaLabel={stepsLabel(steps)}
      onSize={setWidth}
      style={{ position: "absolute", left: 0, top: 0, pointerEvents: "none" }}
    />
  );
}

/** The layer's accessible name: every step when there are few, the count and the first ones when many. */
const LABELLED_STEPS = 24;
function stepsLabel(steps: { step: number; retainedBytes?: number | null }[]): string {
  const one = (s: (typeof steps)[number]) =>
    `step ${s.step}${s.retainedBytes == null ? "" : ` kept ${formatBytes(s.retainedBytes)}`}`;
  if (steps.length <= LABELLED_STEPS) return `Steps of the trace as bands: ${steps.map(one).join(", ")}`;
  return `Steps of the trace as bands: ${steps.length} steps; ${steps.slice(0, LABELLED_STEPS).map(one).join(", ")}, …`;
}
