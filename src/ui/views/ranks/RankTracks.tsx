// Every rank as a track on one shared time axis (issue 21, point 7; the Perfetto shape): one row per rank,
// its allocated memory over its trace (filled, max per pixel), reserved as a line and the peak dashed, all
// on one x scale (from each trace's first event; one axis under the tracks) and one byte scale, so a rank
// that peaks higher or later stands out at a glance. The outlier's track is marked: red curve and border,
// "▲ outlier" in its label and in its accessible name. The curves come from the worker (≤ 400 points).

import { useCallback, useMemo } from "react";
import type { RankCurveSeries } from "../../../../workers/ranks";
import type { RankOutlier, RankRow } from "../../../core/ranks/index";
import { Canvas, type DrawFn, themeColors } from "../../components/Canvas";
import { formatBytes, formatBytesSigned, formatCount, formatDurationUs } from "../../format";
import { type RankEntry, useRanks } from "./store";

/** One track's plot height (CSS px): 16 ranks still fit beside the table. */
const H = 34;

export function RankTracks({
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
  const fmt = (x: number) => (axis === "time" ? formatDurationUs(x) : formatCount(x));
  const spanText = axis === "time" ? formatDurationUs(scale.span) : `${formatCount(scale.span)} events`;
  return (
    <section
      className="rank-tracks-box"
      aria-label="Allocated memory over time, one track per rank"
      data-testid="rank-tracks"
      data-axis={axis}
      data-span={scale.span}
      data-top={scale.top}
    >
      <h3>Each rank over time — one shared axis</h3>
      <p className="muted small" data-testid="rank-scale">
        x: {axis === "time" ? "time" : "event index"} from each trace's first event, 0 to {spanText}; y: 0 to{" "}
        {formatBytes(scale.top)} on every track. Filled: allocated; line: reserved; dashed: the peak. Click a
        track to open that file.
      </p>
      <ul className="rank-tracks" data-testid="rank-multiples">
        {rows.map((r, i) => {
          const c = curves[i];
          const series = c ? (axis === "time" ? c.byTime : c.byEvent) : null;
          const e = entries.get(r.file);
          const o = outliers.get(r.file) ?? null;
          const peakX = c ? (axis === "time" ? c.peakTimeUs : c.peakEvent) : null;
          const peak = r.peakBytes === null ? "no peak" : `peak ${formatBytes(r.peakBytes)}`;
          // The accessible name starts with the visible label (rank, then "▲ outlier" or its peak).
          const more = o
            ? `: ${peak}, ${formatBytesSigned(o.aboveMedianBytes)} above the median${o.category ? `, mostly ${o.category}` : ""}; opens ${r.file}`
            : ` peak; opens ${r.file}`;
          const label = o ? "▲ outlier" : r.peakBytes === null ? "—" : formatBytes(r.peakBytes);
          return (
            <li key={r.file}>
              <button
                type="button"
                className={o ? "rank-multiple rank-track outlier" : "rank-multiple rank-track"}
                data-testid="rank-multiple"
                data-rank={r.rank}
                data-outlier={o ? "1" : "0"}
                data-points={series?.points ?? 0}
                data-span={series?.span ?? ""}
                title={`rank ${r.rank} ${label}${more}`}
                onClick={() => e && void useRanks.getState().openRank(e.id)}
              >
                <span className="rank-track-label">
                  <span className="rank-track-name">rank {r.rank}</span>
                  <span className={o ? "rank-track-flag" : "muted"}>{label}</span>
                </span>
                <span className="visually-hidden">{more}</span>
                {series ? (
                  <Track
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
            </li>
          );
        })}
      </ul>
      <SharedAxis span={scale.span} fmt={fmt} />
    </section>
  );
}

/** The one x axis under every track: about five round ticks from 0 to the longest trace's span. */
function SharedAxis({ span, fmt }: { span: number; fmt: (x: number) => string }) {
  const ticks = niceTicks(span, 5);
  return (
    <div className="rank-axis" aria-hidden="true" data-testid="rank-axis">
      <span />
      <span className="rank-axis-scale">
        {ticks.map((t) => (
          <span key={t} className="rank-axis-tick" style={{ left: `${(t / span) * 100}%` }}>
            {t === 0 ? "0" : fmt(t)}
          </span>
        ))}
      </span>
    </div>
  );
}

/** Round tick values in [0, span]: steps of 1, 2 or 5 × 10^k. */
function niceTicks(span: number, about: number): number[] {
  const raw = span / about;
  const p = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * p).find((s) => s >= raw) ?? 10 * p;
  const out: number[] = [];
  for (let t = 0; t <= span * 1.0001; t += step) out.push(t);
  return out;
}

function Track({
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
      ctx.beginPath();
      ctx.moveTo(0, h - 0.5);
      ctx.lineTo(w, h - 0.5);
      ctx.stroke();
      const ink = outlier ? th.danger : th.accent;
      ctx.fillStyle = ink;
      ctx.globalAlpha = 0.45;
      ctx.beginPath();
      ctx.moveTo(x(0), h);
      for (let i = 0; i < s.points; i++)
        if (Number.isFinite(s.allocated[i])) ctx.lineTo(x(i), y(s.allocated[i]));
      ctx.lineTo(x(s.points - 1), h);
      ctx.closePath();
      ctx.fill();
      ctx.globalAlpha = 1;
      ctx.strokeStyle = ink;
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
    // The button names the track; the picture inside it is not read out twice.
    <span className="rank-multiple-plot" aria-hidden="true">
      <Canvas
        draw={draw}
        height={H}
        ariaLabel={`Allocated memory of rank ${rank} over its trace${outlier ? " (the outlier)" : ""}`}
      />
    </span>
  );
}
