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
      answer.steps.forEach((s, i) => {
        const [x0, x1] =
          view.axis === "time" && answer.stepTimes
            ? answer.stepTimes[i]
            : [s.startEvent ?? 0, (s.endEvent ?? 0) + 1];
        const a = xToPx(p, x0);
        const b = xToPx(p, x1);
        if (b < p.left || a > p.left + p.plotWidth) return;
        if (i % 2 === 0) {
          ctx.fillStyle = th.fg;
          ctx.globalAlpha = 0.06;
          ctx.fillRect(a, p.top, Math.max(1, b - a), p.plotHeight);
        }
        ctx.globalAlpha = 0.5;
        ctx.fillStyle = th.fg;
        ctx.fillRect(b, p.top, 1, p.plotHeight);
        ctx.globalAlpha = 0.9;
        const kept = s.retainedBytes == null ? "" : ` · kept ${formatBytes(s.retainedBytes)}`;
        const label = `step ${s.step}${kept}`;
        // Below the phase lane (timeline/PhaseBands.tsx), which holds the plot's top edge.
        const y = p.top + PHASE_LANE_PX + 3;
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
      ariaLabel={`Steps of the trace as bands: ${steps
        .map((s) => `step ${s.step}${s.retainedBytes == null ? "" : ` kept ${formatBytes(s.retainedBytes)}`}`)
        .join(", ")}`}
      onSize={setWidth}
      style={{ position: "absolute", left: 0, top: 0, pointerEvents: "none" }}
    />
  );
}
