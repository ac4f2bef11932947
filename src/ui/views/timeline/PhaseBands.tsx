// The timeline's phase layer (issue 21): the run's phases — forward, backward, optimizer step, model
// set-up — as bands in a lane at the top of the plot, labelled where they fit, from the attribution's
// phases (core whatif/phases.ts, the same the Summary names the peak's phase from; worker `phaseRuns`).
// A transparent canvas over the timeline's (no pointer events), on its x range. A file whose stacks say
// no phase (no trace, a window without phased stacks, a profiler trace) draws nothing.

import { useCallback, useEffect, useState } from "react";
import type { PhaseRun, PhaseRunsAnswer } from "../../../../workers/api";
import { Canvas, type DrawFn } from "../../components/Canvas";
import { formatCount } from "../../format";
import { useSide } from "../../state/store";
import { PHASE_FILL, PHASE_LABEL, phaseSummary } from "./phase-runs";
import { makePlot, xToPx } from "./scales";

/** The lane's height in CSS pixels, just inside the plot's top edge (the chart's headroom: y tops at 108 %). */
export const PHASE_LANE_PX = 12;

/** Answers by side, file generation and device: the tooltip mounts on every hover and reads it at once. */
const known = new Map<string, PhaseRunsAnswer>();

/** The phase runs of the side's device (one request per device and file). */
export function usePhaseRuns(): PhaseRunsAnswer | null {
  const S = useSide();
  const ask = S((s) => s.ask);
  const side = S((s) => s.side);
  const device = S((s) => s.device);
  const generation = S((s) => s.generation);
  const hasTrace = S((s) => (s.panel?.replay?.events ?? 0) > 0);
  const key = `${side}|${generation}|${device}`;
  const [answer, setAnswer] = useState<PhaseRunsAnswer | null>(() => known.get(key) ?? null);
  useEffect(() => {
    const hit = known.get(key);
    setAnswer(hasTrace ? (hit ?? null) : null);
    if (!hasTrace || hit) return;
    let stale = false;
    ask((api) => api.phaseRuns(device)).then(
      (a) => {
        if (known.size > 16) known.clear();
        known.set(key, a);
        if (!stale) setAnswer(a);
      },
      () => {},
    );
    return () => {
      stale = true;
    };
  }, [ask, device, hasTrace, key]);
  return answer;
}

function runX(run: PhaseRun, axis: "time" | "event"): [number, number] {
  return axis === "time" && Number.isFinite(run.startUs)
    ? [run.startUs, run.endUs]
    : [run.startEvent, run.endEvent];
}

export function PhaseBands({ height }: { height: number }) {
  const S = useSide();
  const view = S((s) => s.view);
  const answer = usePhaseRuns();
  const [width, setWidth] = useState(0);
  const runs = answer?.runs ?? [];

  const draw: DrawFn = useCallback(
    (ctx) => {
      if (!answer || !view || width <= 0) return;
      const p = makePlot(width, height, view.x0, view.x1, 1);
      const y = p.top + 1;
      ctx.save();
      ctx.beginPath();
      ctx.rect(p.left, p.top, p.plotWidth, p.plotHeight);
      ctx.clip();
      ctx.font = "10px system-ui, sans-serif";
      ctx.textBaseline = "middle";
      for (const run of answer.runs) {
        const [x0, x1] = runX(run, view.axis);
        const a = Math.max(p.left, xToPx(p, x0));
        const b = Math.min(p.left + p.plotWidth, xToPx(p, x1));
        if (b < p.left || a > p.left + p.plotWidth || b <= a) continue;
        ctx.globalAlpha = 0.9;
        ctx.fillStyle = PHASE_FILL[run.phase];
        ctx.fillRect(a, y, Math.max(1, b - a), PHASE_LANE_PX);
        // Narrower than a letter: no label (and no text measuring, the costly call, per sliver).
        if (b - a < 10) continue;
        ctx.globalAlpha = 1;
        // Black on the light fills (both themes): the full word, else its first letter.
        ctx.fillStyle = "#000";
        const word = PHASE_LABEL[run.phase];
        if (ctx.measureText(word).width < b - a - 6) ctx.fillText(word, a + 3, y + PHASE_LANE_PX / 2);
        else ctx.fillText(word[0].toUpperCase(), a + 2, y + PHASE_LANE_PX / 2);
      }
      ctx.restore();
    },
    [answer, view, width, height],
  );

  if (runs.length === 0) return null;
  const first = runs[0];
  const last = runs[runs.length - 1];
  return (
    <Canvas
      draw={draw}
      height={height}
      testId="phase-bands"
      dataset={{
        runs: runs.length,
        // The runs for tests and tools (pixels are not readable), while short enough to carry.
        phases:
          runs.length <= 200 ? runs.map((r) => `${r.phase}:${r.startEvent}-${r.endEvent}`).join(" ") : "",
      }}
      ariaLabel={`Phases of the run as bands at the top of the timeline: ${phaseSummary(runs)}, events ${formatCount(first.startEvent)} to ${formatCount(last.endEvent - 1)}${answer?.omitted ? ` (${formatCount(answer.omitted)} more runs not drawn)` : ""}`}
      onSize={setWidth}
      style={{ position: "absolute", left: 0, top: 0, pointerEvents: "none" }}
    />
  );
}

/** The legend's entry: one swatch per phase the trace has. */
export function PhaseLegend() {
  const answer = usePhaseRuns();
  const runs = answer?.runs ?? [];
  if (runs.length === 0) return null;
  const present = (["parameters", "forward", "backward", "optimizer"] as const).filter((p) =>
    runs.some((r) => r.phase === p),
  );
  return (
    <span
      data-testid="phase-legend"
      title="From each trace entry's stack (the attribution's phase rules): the same phases the Summary names the peak's phase from"
    >
      phases (top lane):{" "}
      {present.map((p) => (
        <span key={p} className="phase-key">
          <span className="swatch" style={{ background: PHASE_FILL[p] }} />
          {PHASE_LABEL[p]}{" "}
        </span>
      ))}
    </span>
  );
}
