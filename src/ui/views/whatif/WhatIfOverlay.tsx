// The timeline's what-if layer: the chosen what-if's allocated curve as a dashed line over the stacked
// chart, and a second peak marker at the new peak — on the timeline's own axes (same range, same byte
// scale, one bucket per pixel, max per bucket, computed in the worker). A transparent canvas over the
// timeline's, which keeps every pointer event; nothing is drawn while no what-if is chosen.

import { useCallback, useEffect, useState } from "react";
import type { WhatIfCurveAnswer } from "../../../../workers/api";
import { Canvas, type DrawFn, themeColors } from "../../components/Canvas";
import { formatBytes } from "../../format";
import { useApp } from "../../state/app";
import { useSide } from "../../state/store";
import { makePlot, xToPx, yToPx } from "../timeline/scales";
import { useWhatIf } from "./store";

let tickets = 0;

export function WhatIfOverlay({ height }: { height: number }) {
  const S = useSide();
  const side = S((s) => s.side);
  const ask = S((s) => s.ask);
  const device = S((s) => s.device);
  const view = S((s) => s.view);
  const replay = S((s) => s.panel?.replay ?? null);
  const chosen = useWhatIf((w) => w.chosen[side]);
  const compare = useApp((a) => a.mode === "compare");
  const linked = useApp((a) => a.linked);
  const tops = useApp((a) => a.scales.yTop);
  const yTop = compare && linked ? Math.max(tops[0], tops[1]) : tops[side];
  const [width, setWidth] = useState(0);
  const [answer, setAnswer] = useState<WhatIfCurveAnswer | null>(null);
  const plotWidth = width > 0 ? makePlot(width, height, 0, 1, 1).plotWidth : 0;
  const specsKey = chosen ? chosen.specs.join("\n") : "";
  const label = chosen?.label ?? "";

  useEffect(() => {
    if (!specsKey || !view || plotWidth <= 0 || !replay) {
      setAnswer(null);
      return;
    }
    let stale = false;
    const ticket = ++tickets;
    ask((api) =>
      api.whatIfCurve({
        device,
        axis: view.axis,
        x0: view.x0,
        x1: view.x1,
        buckets: plotWidth,
        specs: specsKey.split("\n"),
        ticket,
      }),
    ).then(
      (a) => {
        if (!stale && !a.stale) setAnswer(a.error ? null : a);
      },
      () => {},
    );
    return () => {
      stale = true;
    };
  }, [specsKey, ask, device, view, plotWidth, replay]);

  const draw: DrawFn = useCallback(
    (ctx) => {
      if (!answer || !view || yTop <= 0 || !replay) return;
      const p = makePlot(width, height, view.x0, view.x1, yTop);
      const th = themeColors();
      // The foreground colour (black / white) with a halo: it reads over every category's colour.
      const color = th.fg;
      const bottom = p.top + p.plotHeight;
      ctx.save();
      ctx.beginPath();
      ctx.rect(p.left, p.top, p.plotWidth, p.plotHeight);
      ctx.clip();
      // Where the what-if swings inside a pixel (many events per pixel): a faint band from its min to its max.
      const n = answer.buckets;
      ctx.fillStyle = color;
      ctx.globalAlpha = 0.14;
      for (let b = 0; b < n; b++) {
        const lo = answer.allocMin[b];
        const hi = answer.allocMax[b];
        if (!Number.isFinite(lo) || !Number.isFinite(hi) || hi <= lo) continue;
        const y1 = yToPx(p, hi);
        ctx.fillRect(p.left + b, y1, 1, yToPx(p, lo) - y1);
      }
      ctx.globalAlpha = 1;
      // The dashed line: the what-if's upper envelope (max over ±2 px), so that a curve swinging at the
      // pixel scale reads as one line; its highest point is still the new peak.
      const top = new Float64Array(n).fill(Number.NaN);
      for (let b = 0; b < n; b++) {
        if (!Number.isFinite(answer.allocMax[b])) continue;
        let m = answer.allocMax[b];
        for (let j = Math.max(0, b - 2); j <= Math.min(n - 1, b + 2); j++) {
          const v = answer.allocMax[j];
          if (v > m) m = v;
        }
        top[b] = m;
      }
      ctx.beginPath();
      let open = false;
      for (let b = 0; b < n; b++) {
        const v = top[b];
        if (!Number.isFinite(v)) {
          open = false;
          continue;
        }
        const y = yToPx(p, v);
        if (!open) {
          ctx.moveTo(p.left + b, y);
          open = true;
        } else ctx.lineTo(p.left + b, y);
        ctx.lineTo(p.left + b + 1, y);
      }
      // A halo in the background colour first, so the dashes read over any category's fill.
      ctx.strokeStyle = th.bg;
      ctx.lineWidth = 4;
      ctx.globalAlpha = 0.7;
      ctx.setLineDash([]);
      ctx.stroke();
      ctx.globalAlpha = 1;
      ctx.strokeStyle = color;
      ctx.lineWidth = 2;
      ctx.setLineDash([7, 4]);
      ctx.stroke();
      ctx.setLineDash([]);
      ctx.restore();

      // The new peak: a second marker, in the line's colour (the real peak keeps its red dashes).
      const px = Math.round(xToPx(p, answer.peakX)) + 0.5;
      const inPlot = px >= p.left - 0.5 && px <= p.left + p.plotWidth + 0.5;
      ctx.font = "11px system-ui, sans-serif";
      // What the dashes are: measured first, so the marker's label keeps clear of it.
      const saved = replay.peakBytes - answer.peakBytes;
      const name = label.length > 48 ? `${label.slice(0, 47)}…` : label;
      const legend = `what if ${name}: peak ${formatBytes(answer.peakBytes)} (${saved >= 0 ? `−${formatBytes(saved)}` : `+${formatBytes(-saved)}`})`;
      const lw = ctx.measureText(legend).width + 30;
      const lx = p.left + p.plotWidth - lw - 4;
      const ly = p.top + 10;
      if (inPlot) {
        const py = yToPx(p, answer.peakBytes);
        ctx.strokeStyle = th.bg;
        ctx.lineWidth = 4;
        ctx.beginPath();
        ctx.moveTo(px, py);
        ctx.lineTo(px, bottom);
        ctx.stroke();
        ctx.strokeStyle = color;
        ctx.lineWidth = 1.5;
        ctx.setLineDash([2, 3]);
        ctx.beginPath();
        ctx.moveTo(px, py);
        ctx.lineTo(px, bottom);
        ctx.stroke();
        ctx.setLineDash([]);
        // A diamond on the curve at the new peak.
        ctx.fillStyle = color;
        ctx.strokeStyle = th.bg;
        ctx.lineWidth = 1.5;
        ctx.beginPath();
        ctx.moveTo(px, py - 6);
        ctx.lineTo(px + 6, py);
        ctx.lineTo(px, py + 6);
        ctx.lineTo(px - 6, py);
        ctx.closePath();
        ctx.fill();
        ctx.stroke();
        const text = `what-if peak ${formatBytes(answer.peakBytes)}`;
        const w = ctx.measureText(text).width;
        let tx = px + 9;
        if (tx + w > p.left + p.plotWidth) tx = px - 9 - w;
        let ty = Math.max(p.top + 8, py - 10);
        if (ty < ly + 16 && tx + w > lx) ty = ly + 18;
        ctx.fillStyle = th.bg;
        ctx.globalAlpha = 0.85;
        ctx.fillRect(tx - 2, ty - 7, w + 4, 14);
        ctx.globalAlpha = 1;
        ctx.fillStyle = th.fg;
        ctx.textAlign = "left";
        ctx.textBaseline = "middle";
        ctx.fillText(text, tx, ty);
      }
      // The legend (drawn last), inside the plot's top-right corner.
      ctx.fillStyle = th.bg;
      ctx.globalAlpha = 0.85;
      ctx.fillRect(lx, ly - 7, lw, 14);
      ctx.globalAlpha = 1;
      ctx.strokeStyle = color;
      ctx.lineWidth = 2;
      ctx.setLineDash([7, 4]);
      ctx.beginPath();
      ctx.moveTo(lx + 4, ly);
      ctx.lineTo(lx + 22, ly);
      ctx.stroke();
      ctx.setLineDash([]);
      ctx.fillStyle = th.fg;
      ctx.textAlign = "left";
      ctx.textBaseline = "middle";
      ctx.fillText(legend, lx + 26, ly);
    },
    [answer, view, yTop, width, height, replay, label],
  );

  if (!replay) return null;
  const peakPx =
    answer && view && width > 0 ? xToPx(makePlot(width, height, view.x0, view.x1, 1), answer.peakX) : null;
  return (
    <div
      data-testid="whatif-layer"
      data-shown={answer ? "1" : "0"}
      data-peak-event={answer?.peakEvent ?? ""}
      data-peak-bytes={answer?.peakBytes ?? ""}
      data-peak-px={peakPx ?? ""}
      style={{ position: "absolute", inset: 0, pointerEvents: "none", display: chosen ? "block" : "none" }}
    >
      <Canvas
        draw={draw}
        height={height}
        testId="whatif-overlay"
        ariaLabel={
          answer
            ? `What-if allocated memory (dashed), new peak ${formatBytes(answer.peakBytes)}`
            : "What-if allocated memory"
        }
        onSize={setWidth}
        style={{ position: "absolute", left: 0, top: 0, pointerEvents: "none" }}
      />
    </div>
  );
}
