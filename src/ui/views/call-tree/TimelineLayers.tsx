// Layers the call tree adds to the timeline, each a transparent canvas over it that keeps no pointer
// events (mounted with one line in Timeline.tsx, like the health overlay):
// - TreeSearchLayer: while "Search frames" holds a query, the live bytes of the matching stacks over time
//   (a line, max per pixel), and in "each allocation" mode an outline around every matching band.
// - CompileContextLayer: the trace's compile_context regions as a band along the plot's top, one colour
//   per context (torch.compile's frame / graph ids), with their names where there is room.
// Their legends (TreeSearchLegend, CompileContextLegend) go in the timeline's legend.

import { useCallback, useEffect, useMemo, useState } from "react";
import { create } from "zustand";
import type { BandsAnswer, CompileRegionsAnswer, TreeSearchTimelineAnswer } from "../../../../workers/api";
import { Canvas, type DrawFn, themeColors } from "../../components/Canvas";
import { formatBytes } from "../../format";
import { PALETTE } from "../../palette";
import { useApp } from "../../state/app";
import { useSide } from "../../state/store";
import { makePlot, xToPx, yToPx } from "../timeline/scales";
import { usableSearch, useCallTree } from "./store";

export const SEARCH_COLOR = "#00A5C8";

function useYTop(): number {
  const S = useSide();
  const side = S((s) => s.side);
  const compare = useApp((a) => a.mode === "compare");
  const linked = useApp((a) => a.linked);
  const tops = useApp((a) => a.scales.yTop);
  return compare && linked ? Math.max(tops[0], tops[1]) : tops[side];
}

export function TreeSearchLayer({ height }: { height: number }) {
  const S = useSide();
  const ask = S((s) => s.ask);
  const device = S((s) => s.device);
  const view = S((s) => s.view);
  const mode = S((s) => s.timelineMode);
  const hasReplay = S((s) => !!s.panel?.replay);
  const search = usableSearch(useCallTree((t) => t.search));
  const ownCodeOnly = useCallTree((t) => t.ownCodeOnly);
  const yTop = useYTop();
  const [width, setWidth] = useState(0);
  const [curve, setCurve] = useState<TreeSearchTimelineAnswer | null>(null);
  const [bands, setBands] = useState<BandsAnswer | null>(null);
  const side = S((s) => s.side);
  useEffect(() => {
    publishBands(side, bands ? bands.count : null);
    return () => publishBands(side, null);
  }, [side, bands]);
  const plotWidth = width > 0 ? makePlot(width, height, 0, 1, 1).plotWidth : 0;
  const on = !!search && hasReplay;

  useEffect(() => {
    if (!on || !view || plotWidth <= 0) {
      setCurve(null);
      return;
    }
    let stale = false;
    ask((api) =>
      api.treeSearchTimeline({
        device,
        axis: view.axis,
        x0: view.x0,
        x1: view.x1,
        buckets: plotWidth,
        search,
        ownCodeOnly,
      }),
    ).then(
      (a) => {
        if (!stale) setCurve(a);
      },
      () => {
        if (!stale) setCurve(null);
      },
    );
    return () => {
      stale = true;
    };
  }, [on, ask, device, view, plotWidth, search, ownCodeOnly]);

  // The bands as the timeline lays them out (same query), only the matching ones.
  useEffect(() => {
    if (!on || mode !== "allocations" || !view || plotWidth <= 0 || yTop <= 0) {
      setBands(null);
      return;
    }
    let stale = false;
    const yMax = makePlot(width, height, view.x0, view.x1, yTop).yMax;
    ask((api) =>
      api.treeSearchBands({
        device,
        axis: view.axis,
        x0: view.x0,
        x1: view.x1,
        width: plotWidth,
        height: height - 48,
        yMax,
        search,
        ownCodeOnly,
      }),
    ).then(
      (b) => {
        if (!stale) setBands(b);
      },
      () => {
        if (!stale) setBands(null);
      },
    );
    return () => {
      stale = true;
    };
  }, [on, mode, ask, device, view, plotWidth, width, height, yTop, search, ownCodeOnly]);

  const draw: DrawFn = useCallback(
    (ctx) => {
      if (!view || yTop <= 0 || (!curve && !bands)) return;
      const p = makePlot(width, height, view.x0, view.x1, yTop);
      const th = themeColors();
      ctx.save();
      ctx.beginPath();
      ctx.rect(p.left, p.top, p.plotWidth, p.plotHeight);
      ctx.clip();
      const bottom = p.top + p.plotHeight;
      if (bands) {
        const scale = p.plotHeight / p.yMax;
        ctx.lineWidth = 1.5;
        for (let i = 0; i < bands.count; i++) {
          const h = Math.max(1, bands.sizeBytes[i] * scale);
          for (let k = bands.pointStart[i]; k < bands.pointStart[i + 1] - 1; k++) {
            const x0 = xToPx(p, bands.px[k]);
            const x1 = xToPx(p, bands.px[k + 1]);
            const y = bottom - bands.py[k] * scale - h;
            ctx.strokeStyle = th.bg;
            ctx.strokeRect(x0, y, Math.max(1, x1 - x0), h);
            ctx.strokeStyle = SEARCH_COLOR;
            ctx.strokeRect(x0 + 0.75, y + 0.75, Math.max(0.5, x1 - x0 - 1.5), Math.max(0.5, h - 1.5));
          }
        }
        ctx.lineWidth = 1;
      }
      let max = 0;
      if (curve) {
        ctx.beginPath();
        let open = false;
        for (let b = 0; b < curve.buckets; b++) {
          const v = curve.match[b];
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
        ctx.strokeStyle = th.bg;
        ctx.lineWidth = 5;
        ctx.globalAlpha = 0.85;
        ctx.stroke();
        ctx.globalAlpha = 1;
        ctx.strokeStyle = SEARCH_COLOR;
        ctx.lineWidth = 2.5;
        ctx.stroke();
        ctx.lineWidth = 1;
      }
      // What the line is, in the plot's top-right corner.
      const text = `search "${search}": ${formatBytes(max)} max in view${bands ? `, ${bands.count} matching bands outlined` : ""}`;
      ctx.font = "11px system-ui, sans-serif";
      ctx.textBaseline = "middle";
      ctx.textAlign = "left";
      const w = ctx.measureText(text).width + 30;
      const x = p.left + p.plotWidth - w - 6;
      const y = p.top + 22;
      ctx.fillStyle = th.bg;
      ctx.globalAlpha = 0.85;
      ctx.fillRect(x, y - 7, w, 14);
      ctx.globalAlpha = 1;
      ctx.strokeStyle = SEARCH_COLOR;
      ctx.lineWidth = 2.5;
      ctx.beginPath();
      ctx.moveTo(x + 4, y);
      ctx.lineTo(x + 20, y);
      ctx.stroke();
      ctx.lineWidth = 1;
      ctx.fillStyle = th.fg;
      ctx.fillText(text, x + 24, y);
      ctx.restore();
    },
    [curve, bands, view, yTop, width, height, search],
  );

  // Nothing at all without a search (the timeline keeps its own canvases only).
  if (!on) return null;
  return (
    <Canvas
      draw={draw}
      height={height}
      testId="tree-search-layer"
      ariaLabel={
        search ? `Live bytes of the stacks matching ${search} over time` : "Search layer (no search)"
      }
      onSize={setWidth}
      style={{ position: "absolute", left: 0, top: 0, pointerEvents: "none" }}
    />
  );
}

/** The search layer's line in the timeline's legend (only while a search is on). */
export function TreeSearchLegend() {
  const side = useSide()((s) => s.side);
  const search = usableSearch(useCallTree((t) => t.search));
  const bands = useLayerBands((b) => b.count[side]);
  if (!search) return null;
  return (
    <span className="ct-layer-legend" data-testid="tree-search-legend" data-bands={bands ?? ""}>
      <span
        className="swatch line"
        style={{ borderTop: `3px solid ${SEARCH_COLOR}`, background: "transparent" }}
      />
      live bytes of stacks matching “{search}” (Call tree search)
      {bands !== null ? `; ${bands.toLocaleString("en-US")} matching allocations outlined` : ""}
    </span>
  );
}

/** How many matching bands the search layer outlines, per side (null: not in "each allocation" mode). */
const useLayerBands = create<{ count: [number | null, number | null] }>()(() => ({ count: [null, null] }));

function publishBands(side: 0 | 1, n: number | null): void {
  const next: [number | null, number | null] = [...useLayerBands.getState().count];
  next[side] = n;
  useLayerBands.setState({ count: next });
}

const CONTEXT_COLORS = [...PALETTE.slice(4), ...PALETTE.slice(0, 4)];

function useCompileRegions(): CompileRegionsAnswer | null {
  const S = useSide();
  const ask = S((s) => s.ask);
  const device = S((s) => s.device);
  const hasReplay = S((s) => !!s.panel?.replay);
  const [a, setA] = useState<CompileRegionsAnswer | null>(null);
  useEffect(() => {
    if (!hasReplay) {
      setA(null);
      return;
    }
    let stale = false;
    ask((api) => api.compileRegions(device)).then(
      (r) => {
        if (!stale) setA(r);
      },
      () => {},
    );
    return () => {
      stale = true;
    };
  }, [ask, device, hasReplay]);
  return a;
}

const BAND_Y = 3;
const BAND_H = 8;

export function CompileContextLayer({ height }: { height: number }) {
  const S = useSide();
  const view = S((s) => s.view);
  const regions = useCompileRegions();
  const [width, setWidth] = useState(0);
  const any = !!regions && regions.regions.length > 0;
  const draw: DrawFn = useCallback(
    (ctx) => {
      if (!view || !regions || regions.regions.length === 0) return;
      const p = makePlot(width, height, view.x0, view.x1, 1);
      const th = themeColors();
      const time = view.axis === "time";
      ctx.save();
      ctx.beginPath();
      ctx.rect(p.left, p.top, p.plotWidth, p.plotHeight);
      ctx.clip();
      const y = p.top + BAND_Y;
      ctx.font = "10px system-ui, sans-serif";
      ctx.textBaseline = "middle";
      ctx.textAlign = "left";
      for (const r of regions.regions) {
        const a = time ? r.t0 : r.startEvent;
        const b = time ? r.t1 : r.endEvent + 1;
        if (!Number.isFinite(a) || !Number.isFinite(b)) continue;
        const x0 = xToPx(p, a);
        const x1 = Math.max(x0 + 1, xToPx(p, b));
        if (x1 < p.left || x0 > p.left + p.plotWidth) continue;
        const color = CONTEXT_COLORS[r.id % CONTEXT_COLORS.length];
        ctx.fillStyle = color;
        ctx.fillRect(x0, y, x1 - x0, BAND_H);
        if (x1 - x0 > 50) {
          ctx.fillStyle = th.fg;
          const t = r.text.length > 40 ? `${r.text.slice(0, 39)}…` : r.text;
          ctx.fillText(t, Math.max(x0, p.left) + 2, y + BAND_H + 7);
        }
      }
      ctx.restore();
    },
    [regions, view, width, height],
  );
  if (!any) return null;
  return (
    <Canvas
      draw={draw}
      height={height}
      testId="compile-context-layer"
      ariaLabel="compile_context regions of the trace, as a band along the top of the timeline"
      onSize={setWidth}
      style={{ position: "absolute", left: 0, top: 0, pointerEvents: "none" }}
    />
  );
}

/** The band's legend: one swatch per context (the first few), only when the trace has any. */
export function CompileContextLegend() {
  const regions = useCompileRegions();
  const shown = useMemo(() => regions?.texts.slice(0, 8) ?? [], [regions]);
  if (!regions || regions.regions.length === 0) return null;
  return (
    <span
      className="ct-layer-legend"
      data-testid="compile-context-legend"
      data-regions={regions.regions.length}
      title="torch.compile's compile_context of each trace event: which compiled frame / graph allocated"
    >
      <span className="muted">compile_context band (top):</span>
      {shown.map((t, i) => (
        <span key={t}>
          <span className="swatch" style={{ background: CONTEXT_COLORS[i % CONTEXT_COLORS.length] }} />
          {t.length > 30 ? `${t.slice(0, 29)}…` : t}
        </span>
      ))}
      {regions.texts.length > shown.length && (
        <span className="muted">+{regions.texts.length - shown.length} more</span>
      )}
      <span className="muted">({regions.regions.length.toLocaleString("en-US")} regions)</span>
    </span>
  );
}
