// Every rank's allocated memory over its trace, one small chart each, all on one scale: the same bytes are
// the same height and the same time (from each trace's first event) the same width, so a rank that peaks
// higher or later stands out at a glance. The curves come from the worker, ≤ 400 points (max per bucket).

import { useCallback, useMemo } from "react";
import type { RankCurveSeries } from "../../../../workers/ranks";
import type { RankOutlier, RankRow } from "../../../core/ranks/index";
import { Canvas, type DrawFn, themeColors } from "../../components/Canvas";
import { formatBytes, formatCount, formatDurationUs } from "../../format";
import { type RankEntry, useRanks } from "./store";

const H = 64;

export function RankMultiples({
  rows,
  entries,
  outliers,
}: {
  rows: RankRow[];
  entries: Map<string, RankEntry>;
  outliers: Map<string, RankOutlier>;
}) {
  const curves = rows.map((r) => entries.get(r.file)?.result?.curve ?? null);
  const withCurve = curves.filter((c) => c !== null);
  // Time when every traced rank has times, else event index (one axis for all).
  const axis: "time" | "event" = withCurve.length > 0 && withCurve.every((c) => c.byTime) ? "time" : "event";
  const scale = useMemo(() => {
    let span = 1;
    let top = 1;
    for (const c of withCurve) {
      const s = axis === "time" ? c.byTime : c.byEvent;
      if (!s) continue;
      span = Math.max(span, s.span);
      for (let i = 0; i < s.points; i++) {
        if (s.allocated[i] > top) top = s.allocated[i];
        if (s.reserved[i] > top) top = s.reserved[i];
      }
    }
    return { span, top: top * 1.05 };
  }, [withCurve, axis]);
  if (withCurve.length === 0)
    return <p className="muted small">No rank has a trace: there is no memory-over-time curve to draw.</p>;
  const spanText = axis === "time" ? formatDurationUs(scale.span) : `${formatCount(scale.span)} events`;
  return (
    <section className="rank-multiples-box" aria-label="Allocated memory over time, each rank">
      <h3>Allocated over time, each rank — one shared scale</h3>
      <p className="muted small" data-testid="rank-scale">
        Each chart: x from its trace's first event to {spanText} ({axis === "time" ? "time" : "event index"}),
        y from 0 to {formatBytes(scale.top)}. Filled: allocated (max per pixel); line: reserved; dashed: the
        peak. Click a chart to open that file.
      </p>
      <div className="rank-multiples" data-testid="rank-multiples">
        {rows.map((r, i) => {
          const c = curves[i];
          const series = c ? (axis === "time" ? c.byTime : c.byEvent) : null;
          const e = entries.get(r.file);
          const o = outliers.get(r.file) ?? null;
          const peakX = c ? (axis === "time" ? c.peakTimeUs : c.peakEvent) : null;
          return (
            <button
              type="button"
              key={r.file}
              className={o ? "rank-multiple outlier" : "rank-multiple"}
              data-testid="rank-multiple"
              data-rank={r.rank}
              data-points={series?.points ?? 0}
              onClick={() => e && void useRanks.getState().openRank(e.id)}
              title={`Open ${r.file}`}
            >
              <span className="rank-multiple-label">
                {o ? "▲ " : ""}rank {r.rank}
                <span className="muted"> · peak {r.peakBytes === null ? "—" : formatBytes(r.peakBytes)}</span>
              </span>
              {series ? (
                <Multiple
                  series={series}
                  span={scale.span}
                  top={scale.top}
                  peakX={peakX}
                  outlier={o !== null}
                  rank={r.rank}
                />
              ) : (
                <span className="muted small">no trace</span>
              )}
            </button>
          );
        })}
      </div>
    </section>
  );
}

function Multiple({
  series: s,
  span,
  top,
  peakX,
  outlier,
  rank,
}: {
  series: RankCurveSeries;
  span: number;
  top: number;
  peakX: number | null;
  outlier: boolean;
  rank: number;
}) {
  const draw: DrawFn = useCallback(
    (ctx, w, h) => {
      const th = themeColors();
      const x = (i: number) => (((i + 0.5) * s.span) / s.points / span) * w;
      const y = (v: number) => h - 1 - (v / top) * (h - 2);
      ctx.strokeStyle = th.grid;
      ctx.strokeRect(0.5, 0.5, w - 1, h - 1);
      ctx.fillStyle = outlier ? th.danger : th.accent;
      ctx.globalAlpha = 0.45;
      ctx.beginPath();
      ctx.moveTo(x(0), h);
      for (let i = 0; i < s.points; i++)
        if (Number.isFinite(s.allocated[i])) ctx.lineTo(x(i), y(s.allocated[i]));
      ctx.lineTo(x(s.points - 1), h);
      ctx.closePath();
      ctx.fill();
      ctx.globalAlpha = 1;
      ctx.strokeStyle = outlier ? th.danger : th.accent;
      ctx.beginPath();
      for (let i = 0; i < s.points; i++) {
        if (!Number.isFinite(s.allocated[i])) continue;
        if (i === 0) ctx.moveTo(x(i), y(s.allocated[i]));
        else ctx.lineTo(x(i), y(s.allocated[i]));
      }
      ctx.stroke();
      ctx.strokeStyle = th.reserved;
      ctx.globalAlpha = 0.6;
      ctx.beginPath();
      for (let i = 0; i < s.points; i++) {
        if (!Number.isFinite(s.reserved[i])) continue;
        if (i === 0) ctx.moveTo(x(i), y(s.reserved[i]));
        else ctx.lineTo(x(i), y(s.reserved[i]));
      }
      ctx.stroke();
      ctx.globalAlpha = 1;
      if (peakX !== null) {
        const px = Math.round((peakX / span) * w) + 0.5;
        ctx.strokeStyle = th.danger;
        ctx.setLineDash([3, 2]);
        ctx.beginPath();
        ctx.moveTo(px, 0);
        ctx.lineTo(px, h);
        ctx.stroke();
        ctx.setLineDash([]);
      }
    },
    [s, span, top, peakX, outlier],
  );
  return (
    <div className="rank-multiple-plot">
      <Canvas draw={draw} height={H} ariaLabel={`Allocated memory of rank ${rank} over its trace`} />
    </div>
  );
}
