// The timeline's capacity layer (issue 21): once the device's capacity is known — typed in What if (or
// the link's), the counters sidecar's device total / memory_stats, or an OOM entry's device total less
// what was held outside the allocator (core deviceCapacity, through the worker's what-if) — a line at that
// many bytes, labelled in GiB. A capacity above the chart's scale is said at the plot's top edge instead
// of stretching the scale (the chart would flatten to a strip). A transparent canvas, no pointer events.

import { useCallback, useEffect, useState } from "react";
import type { Capacity } from "../../../../workers/api";
import { Canvas, type DrawFn, themeColors } from "../../components/Canvas";
import { useApp } from "../../state/app";
import { useSide } from "../../state/store";
import { useWhatIf } from "../whatif/store";
import { PHASE_LANE_PX } from "./PhaseBands";
import { gibLabel } from "./phase-runs";
import { makePlot, yToPx } from "./scales";

/** The device's capacity as the what-if engine knows it (null: unknown). */
export function useCapacity(): Capacity | null {
  const S = useSide();
  const ask = S((s) => s.ask);
  const side = S((s) => s.side);
  const device = S((s) => s.device);
  const generation = S((s) => s.generation);
  const hasTrace = S((s) => (s.panel?.replay?.events ?? 0) > 0);
  const countersFile = S((s) => s.panel?.countersFile ?? null);
  const typed = useWhatIf((w) => w.capacity[side]);
  const [capacity, setCapacity] = useState<Capacity | null>(null);
  // Another file (generation) or sidecar changes what is known: ask again.
  const known = `${generation}|${countersFile ?? ""}`;
  useEffect(() => {
    if (!hasTrace || !known) {
      setCapacity(null);
      return;
    }
    let stale = false;
    ask((api) => api.whatIf({ device, specs: [], capacityBytes: typed })).then(
      (w) => !stale && setCapacity(w.error ? null : w.capacity),
      () => !stale && setCapacity(null),
    );
    return () => {
      stale = true;
    };
  }, [ask, device, hasTrace, typed, known]);
  return capacity;
}

const SOURCE_WORDS: Record<Capacity["source"], string> = {
  option: "as typed in What if",
  counters: "from the counters sidecar",
  oom: "from the OOM entry",
};

export function capacityWords(c: Capacity): string {
  return `capacity ${gibLabel(c.bytes)} (${SOURCE_WORDS[c.source]}: ${c.detail})`;
}

export function CapacityLine({ height }: { height: number }) {
  const S = useSide();
  const side = S((s) => s.side);
  const view = S((s) => s.view);
  const capacity = useCapacity();
  const compare = useApp((a) => a.mode === "compare");
  const linked = useApp((a) => a.linked);
  const tops = useApp((a) => a.scales.yTop);
  const yTop = compare && linked ? Math.max(tops[0], tops[1]) : tops[side];
  const [width, setWidth] = useState(0);
  const above = capacity !== null && capacity.bytes > yTop;

  const draw: DrawFn = useCallback(
    (ctx) => {
      if (!capacity || !view || width <= 0 || !(yTop > 0)) return;
      const p = makePlot(width, height, view.x0, view.x1, yTop);
      const th = themeColors();
      const label = `capacity ${gibLabel(capacity.bytes)}`;
      ctx.font = "bold 11px system-ui, sans-serif";
      ctx.textBaseline = "bottom";
      ctx.textAlign = "right";
      const right = p.left + p.plotWidth - 4;
      if (capacity.bytes <= yTop) {
        const y = Math.round(yToPx(p, capacity.bytes)) + 0.5;
        ctx.strokeStyle = th.danger;
        ctx.lineWidth = 2;
        ctx.setLineDash([8, 4]);
        ctx.beginPath();
        ctx.moveTo(p.left, y);
        ctx.lineTo(p.left + p.plotWidth, y);
        ctx.stroke();
        ctx.setLineDash([]);
        // The label above the line, on a backdrop so it reads over the categories.
        const w = ctx.measureText(label).width;
        const ly = Math.max(p.top + PHASE_LANE_PX + 14, y - 2);
        ctx.fillStyle = th.bg;
        ctx.globalAlpha = 0.85;
        ctx.fillRect(right - w - 3, ly - 13, w + 6, 13);
        ctx.globalAlpha = 1;
        ctx.fillStyle = th.danger;
        ctx.fillText(label, right, ly);
      } else {
        // Above the scale: said below the phase lane, at the right, with an arrow up.
        const text = `↑ ${label} (above this scale)`;
        const w = ctx.measureText(text).width;
        const ly = p.top + PHASE_LANE_PX + 15;
        ctx.fillStyle = th.bg;
        ctx.globalAlpha = 0.85;
        ctx.fillRect(right - w - 3, ly - 13, w + 6, 13);
        ctx.globalAlpha = 1;
        ctx.fillStyle = th.danger;
        ctx.fillText(text, right, ly);
      }
    },
    [capacity, view, width, height, yTop],
  );

  if (!capacity) return null;
  return (
    <Canvas
      draw={draw}
      height={height}
      testId="capacity-line"
      dataset={{ bytes: capacity.bytes, source: capacity.source, above: above ? 1 : 0 }}
      ariaLabel={`Capacity line: ${capacityWords(capacity)}${above ? ", above the chart's scale" : ""}`}
      onSize={setWidth}
      style={{ position: "absolute", left: 0, top: 0, pointerEvents: "none" }}
    />
  );
}

/** The legend's entry, with the capacity's source on hover. */
export function CapacityLegend() {
  const capacity = useCapacity();
  if (!capacity) return null;
  return (
    <span data-testid="capacity-legend" data-bytes={capacity.bytes} title={capacityWords(capacity)}>
      <span className="swatch" style={{ background: "var(--danger)", height: 3 }} />
      capacity {gibLabel(capacity.bytes)} (dashed)
    </span>
  );
}
