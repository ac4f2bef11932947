// The timeline's allocator-health overlay: cached (reserved − allocated), inactive split and pending
// (active − allocated) as lines over the stacked chart, on the timeline's own axes (same range, same byte
// scale, one bucket per pixel, max per bucket). A layer of its own — a transparent canvas over the
// timeline's, which keeps every pointer event — so the timeline itself is unchanged while it is off.

import { useCallback, useEffect, useState } from "react";
import type { HealthTimelineAnswer } from "../../../../workers/api";
import { Canvas, type DrawFn, themeColors } from "../../components/Canvas";
import { formatBytes } from "../../format";
import { useApp } from "../../state/app";
import { useSide } from "../../state/store";
import { makePlot, yToPx } from "../timeline/scales";
import { CURVES, type CurveKey, useHealthOverlay } from "./store";

export function HealthOverlay({ height }: { height: number }) {
  const S = useSide();
  const side = S((s) => s.side);
  const ask = S((s) => s.ask);
  const device = S((s) => s.device);
  const view = S((s) => s.view);
  const hasReplay = S((s) => !!s.panel?.replay);
  const shown = useHealthOverlay((h) => h.shown[side]);
  const any = shown.cached || shown.inactiveSplit || shown.pending;
  const compare = useApp((a) => a.mode === "compare");
  const linked = useApp((a) => a.linked);
  const tops = useApp((a) => a.scales.yTop);
  const yTop = compare && linked ? Math.max(tops[0], tops[1]) : tops[side];
  const [width, setWidth] = useState(0);
  const [answer, setAnswer] = useState<HealthTimelineAnswer | null>(null);
  const plotWidth = width > 0 ? makePlot(width, height, 0, 1, 1).plotWidth : 0;

  useEffect(() => {
    if (!any || !view || plotWidth <= 0 || !hasReplay) {
      setAnswer(null);
      return;
    }
    let stale = false;
    ask((api) =>
      api.healthTimeline({ device, axis: view.axis, x0: view.x0, x1: view.x1, buckets: plotWidth }),
    ).then(
      (a) => {
        if (!stale) setAnswer(a);
      },
      () => {},
    );
    return () => {
      stale = true;
    };
  }, [any, ask, device, view, plotWidth, hasReplay]);

  const draw: DrawFn = useCallback(
    (ctx) => {
      if (!answer || !view || yTop <= 0) return;
      const p = makePlot(width, height, view.x0, view.x1, yTop);
      const th = themeColors();
      ctx.save();
      ctx.beginPath();
      ctx.rect(p.left, p.top, p.plotWidth, p.plotHeight);
      ctx.clip();
      const legend: { text: string; color: string; dash: number[] }[] = [];
      for (const c of CURVES) {
        if (!shown[c.key]) continue;
        const col = answer[c.key as CurveKey];
        ctx.beginPath();
        let open = false;
        let max = 0;
        for (let b = 0; b < answer.buckets; b++) {
          const v = col[b];
          if (!Number.isFinite(v)) {
            open = false;
            continue;
          }
          if (v > max) max = v;
          const y = yToPx(p, v);
          if (!open) {
            ctx.moveTo(p.left + b, y);
            open = true;
          } else ctx.lineTo(p.left + b, y);
          ctx.lineTo(p.left + b + 1, y);
        }
        // A halo in the background colour first, so the line reads over any category's fill.
        ctx.setLineDash([]);
        ctx.strokeStyle = th.bg;
        ctx.lineWidth = 4;
        ctx.globalAlpha = 0.8;
        ctx.stroke();
        ctx.globalAlpha = 1;
        ctx.strokeStyle = c.color;
        ctx.lineWidth = 2;
        ctx.setLineDash(c.dash);
        ctx.stroke();
        legend.push({ text: `${c.label}: max ${formatBytes(max)} in view`, color: c.color, dash: c.dash });
      }
      ctx.setLineDash([]);
      // What the lines are, inside the plot's top-left corner.
      ctx.font = "11px system-ui, sans-serif";
      ctx.textBaseline = "middle";
      ctx.textAlign = "left";
      let y = p.top + 10;
      for (const l of legend) {
        const w = ctx.measureText(l.text).width + 30;
        ctx.fillStyle = th.bg;
        ctx.globalAlpha = 0.85;
        ctx.fillRect(p.left + 4, y - 7, w, 14);
        ctx.globalAlpha = 1;
        ctx.strokeStyle = l.color;
        ctx.lineWidth = 2;
        ctx.setLineDash(l.dash);
        ctx.beginPath();
        ctx.moveTo(p.left + 8, y);
        ctx.lineTo(p.left + 24, y);
        ctx.stroke();
        ctx.setLineDash([]);
        ctx.fillStyle = th.fg;
        ctx.fillText(l.text, p.left + 28, y);
        y += 15;
      }
      ctx.restore();
    },
    [answer, view, yTop, width, height, shown],
  );

  // Nothing at all while every curve is off: the timeline is exactly as without the overlay.
  if (!hasReplay || !any) return null;
  // Each drawn curve's max in view (as the legend says it), readable where the pixels are not.
  const maxes: Record<string, number> = {};
  if (answer) {
    for (const c of CURVES) {
      if (!shown[c.key]) continue;
      let max = 0;
      for (const v of answer[c.key as CurveKey]) if (Number.isFinite(v) && v > max) max = v;
      maxes[`max-${c.key.replace(/[A-Z]/g, (m) => `-${m.toLowerCase()}`)}`] = max;
    }
  }
  return (
    <Canvas
      draw={draw}
      height={height}
      testId="health-overlay"
      dataset={maxes}
      ariaLabel="Allocator health curves over the timeline"
      onSize={setWidth}
      style={{
        position: "absolute",
        left: 0,
        top: 0,
        pointerEvents: "none",
      }}
    />
  );
}

/** The toggles, for the timeline's legend and the health panel. */
export function HealthOverlayToggles({ compact = false }: { compact?: boolean }) {
  const side = useSide()((s) => s.side);
  const shown = useHealthOverlay((h) => h.shown[side]);
  const toggle = useHealthOverlay((h) => h.toggle);
  return (
    <span className="health-toggles" data-testid={compact ? "health-toggles-timeline" : "health-toggles"}>
      {compact && <span className="muted">allocator health:</span>}
      {CURVES.map((c) => (
        <label key={c.key} title={c.help}>
          <input
            type="checkbox"
            checked={shown[c.key]}
            onChange={(e) => toggle(side, c.key, e.currentTarget.checked)}
            data-testid={`overlay-${c.key}`}
          />{" "}
          <span
            className="swatch line"
            style={{ borderTop: `2px ${c.dash.length > 0 ? "dashed" : "solid"} ${c.color}` }}
          />
          {c.label}
        </label>
      ))}
    </span>
  );
}
