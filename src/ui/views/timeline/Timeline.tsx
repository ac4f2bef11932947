// The stacked timeline: allocated bytes by category over time (or event index), reserved as a line,
// peak / snapshot / OOM / annotation markers, wheel zoom around the cursor, drag to pan, an overview
// strip with a brush, hover values, click to pin. The worker sends one bucket per pixel; in
// "each allocation" mode it sends bands at pixel level of detail.

import { useCallback, useEffect, useMemo, useRef, useState } from "react";
import type {
  AllocationDetail,
  BandsAnswer,
  Marker,
  ReplayFacts,
  TimelineAnswer,
} from "../../../../workers/api";
import { Bytes } from "../../components/Bytes";
import { Canvas, type CanvasHandle, type DrawFn, themeColors } from "../../components/Canvas";
import { hatchRect } from "../../components/hatch";
import { InferredLine } from "../../components/Inferred";
import { SeeCapture } from "../../components/SeeCapture";
import { CompactStack, firstSentence, StackList } from "../../components/StackList";
import { formatBytes, formatCount, formatDurationUs } from "../../format";
import { alignViews, anchorOf, linkedExtent, useApp } from "../../state/app";
import { notePainted } from "../../state/idle";
import { clampView, fullView, type SideStore, sides, type TimelineView, useSide } from "../../state/store";
import {
  CompileContextLayer,
  CompileContextLegend,
  TreeSearchLayer,
  TreeSearchLegend,
} from "../call-tree/TimelineLayers";
import { HealthOverlay, HealthOverlayToggles } from "../health/HealthOverlay";
import { StepBands } from "../series/StepBands";
import { WhatIfOverlay } from "../whatif/WhatIfOverlay";
import { CapacityLegend, CapacityLine } from "./CapacityLine";
import { CategoryLegend } from "./CategoryLegend";
import { HoverBlock, HoverPhase } from "./HoverBlock";
import { Overview } from "./Overview";
import { PHASE_LANE_PX, PhaseBands, PhaseLegend, usePhaseRuns } from "./PhaseBands";
import { MARGIN, makePlot, type Plot, pxToX, xTicks, xToPx, yTicks, yToPx } from "./scales";

/** The canvas height by default (the workspace strip passes a shorter one). */
const DEFAULT_HEIGHT = 330;

interface Hover {
  px: number;
  py: number;
  bucket: number;
  band: number;
}

export function Timeline({ height = DEFAULT_HEIGHT }: { height?: number } = {}) {
  const HEIGHT = height;
  const S = useSide();
  const side = S((s) => s.side);
  const k = `s${side}`;
  const ask = S((s) => s.ask);
  const panel = S((s) => s.panel);
  const panelError = S((s) => s.panelError);
  const device = S((s) => s.device);
  const view = S((s) => s.view);
  const colors = S((s) => s.colors);
  const pinned = S((s) => s.pinnedEvent);
  const mode = S((s) => s.timelineMode);
  const highlightSite = S((s) => s.highlightSite);
  const highlightBy = S((s) => s.highlightBy);
  const highlightCategory = S((s) => s.highlightCategory);
  const setView = S((s) => s.setView);
  const setAxis = S((s) => s.setAxis);
  const pin = S((s) => s.pin);
  const setMode = S((s) => s.setTimelineMode);
  const replay = panel?.replay ?? null;
  // A comparison: the other side's hovered moment, drawn here as a ghost line (linked cursor).
  const compare = useApp((a) => a.mode === "compare");
  const linked = useApp((a) => a.linked);
  const align = useApp((a) => a.align);
  const cursor = useApp((a) => a.cursor);
  const setCursor = useApp((a) => a.setCursor);
  const ghostX =
    compare && linked && cursor && cursor.side !== side && view && cursor.axis === view.axis && replay
      ? cursor.offset + anchorOf(replay, view.axis, align)
      : null;
  const chooseAxis = (axis: "time" | "event") => {
    const app = useApp.getState();
    const both = sides.every((x) => x.getState().panel?.replay?.hasTime);
    if (app.mode === "compare" && app.linked && (axis === "event" || both)) alignViews(app.base, true, axis);
    else setAxis(axis);
  };
  const clamp = useCallback(
    (v: TimelineView) => (replay ? clampView(v, replay, linkedExtent(side, v.axis)) : v),
    [replay, side],
  );

  const [width, setWidth] = useState(0);
  const [answer, setAnswer] = useState<TimelineAnswer | null>(null);
  const [bands, setBands] = useState<BandsAnswer | null>(null);
  const [showReserved, setShowReserved] = useState(true);
  const [hover, setHover] = useState<Hover | null>(null);
  const [detail, setDetail] = useState<AllocationDetail | null>(null);
  const [selected, setSelected] = useState<AllocationDetail | null>(null);
  const [siteAllocs, setSiteAllocs] = useState<Set<number> | null>(null);
  const base = useRef<CanvasHandle>(null);
  const drag = useRef<{ startPx: number; view: TimelineView; moved: boolean } | null>(null);

  const categories = panel?.categories ?? [];
  // The phase lane holds the plot's top edge: the headroom above the highest value makes room for it.
  const hasPhases = (usePhaseRuns()?.runs.length ?? 0) > 0;
  const headroom = hasPhases ? (PHASE_LANE_PX + 4) / Math.max(1, HEIGHT - MARGIN.top - MARGIN.bottom) : 0;
  // The y scale: this range's top; in a linked comparison the larger of both files' (same scale).
  const ownTop = useMemo(() => {
    if (!answer) return 0;
    let yMax = 0;
    for (let b = 0; b < answer.buckets; b++) {
      const a = answer.allocMax[b];
      if (a > yMax) yMax = a;
      const r = answer.reservedMax[b];
      if (showReserved && r > yMax) yMax = r;
    }
    return niceTop(yMax, headroom);
  }, [answer, showReserved, headroom]);
  const setScale = useApp((a) => a.setScale);
  useEffect(() => setScale(side, "yTop", ownTop), [setScale, side, ownTop]);
  const otherTop = useApp((a) => a.scales.yTop[1 - side]);
  const sharedY = compare && linked;
  const yTop = sharedY ? Math.max(ownTop, otherTop) : ownTop;
  const plot = useMemo(() => {
    if (!view || !answer || width <= 0) return null;
    return makePlot(width, HEIGHT, view.x0, view.x1, yTop);
  }, [view, answer, width, yTop, HEIGHT]);

  // Buckets for the visible range: one per plot pixel, newest request wins.
  const plotWidth = width > 0 ? makePlot(width, HEIGHT, 0, 1, 1).plotWidth : 0;
  useEffect(() => {
    if (!view || plotWidth <= 0 || !replay) return;
    let stale = false;
    ask((api) =>
      api.timeline({ device, axis: view.axis, x0: view.x0, x1: view.x1, buckets: plotWidth }),
    ).then(
      (a) => {
        if (!stale) setAnswer(a);
      },
      () => {},
    );
    return () => {
      stale = true;
    };
  }, [ask, device, view, plotWidth, replay]);

  // Bands in "each allocation" mode, at the y scale the plot uses.
  const yMax = plot?.yMax ?? 0;
  useEffect(() => {
    if (mode !== "allocations" || !view || plotWidth <= 0 || !replay || yMax <= 0) {
      setBands(null);
      return;
    }
    let stale = false;
    const plotHeight = HEIGHT - 48;
    ask((api) =>
      api.bands({
        device,
        axis: view.axis,
        x0: view.x0,
        x1: view.x1,
        width: plotWidth,
        height: plotHeight,
        yMax,
      }),
    ).then(
      (b) => {
        if (!stale) setBands(b);
      },
      () => {},
    );
    return () => {
      stale = true;
    };
  }, [ask, mode, device, view, plotWidth, replay, yMax, HEIGHT]);

  // Allocations of the highlighted call site.
  useEffect(() => {
    if (!highlightSite) {
      setSiteAllocs(null);
      return;
    }
    let stale = false;
    ask((api) => api.siteAllocations(device, highlightSite, highlightBy)).then(
      (ids) => {
        if (!stale) setSiteAllocs(new Set(ids));
      },
      () => {}, // the worker was replaced meanwhile (the next file's)
    );
    return () => {
      stale = true;
    };
  }, [ask, device, highlightSite, highlightBy]);

  // Hovered band → its allocation's details (size, category, site, rule, stack).
  const hoverAlloc = hover && bands && hover.band >= 0 ? bands.alloc[hover.band] : -1;
  useEffect(() => {
    if (hoverAlloc < 0) {
      setDetail(null);
      return;
    }
    let stale = false;
    ask((api) => api.allocation(device, hoverAlloc)).then(
      (d) => {
        if (!stale) setDetail(d);
      },
      () => {}, // the worker was replaced meanwhile (the next file's)
    );
    return () => {
      stale = true;
    };
  }, [ask, device, hoverAlloc]);

  const draw: DrawFn = useCallback(
    (ctx) => {
      if (!plot || !answer || !replay) return;
      drawTimeline(ctx, plot, answer, replay, {
        colors,
        showReserved,
        bands: mode === "allocations" ? bands : null,
        siteAllocs,
        axis: view?.axis ?? "event",
        pinned,
        hover,
        selectedAlloc: selected?.alloc ?? -1,
        dimCategory: highlightCategory ? categories.findIndex((c) => c.name === highlightCategory) : -1,
        ghostX,
      });
      notePainted();
    },
    [
      plot,
      answer,
      replay,
      colors,
      showReserved,
      bands,
      mode,
      siteAllocs,
      view,
      pinned,
      hover,
      selected,
      highlightCategory,
      categories,
      ghostX,
    ],
  );

  const onWheel = useCallback(
    (e: WheelEvent) => {
      const s = S.getState();
      const v = s.view;
      if (!v || !plot || !replay) return;
      e.preventDefault();
      const rect = (e.target as HTMLElement).getBoundingClientRect();
      const px = e.clientX - rect.left;
      if (e.shiftKey || Math.abs(e.deltaX) > Math.abs(e.deltaY)) {
        const d = ((e.shiftKey ? e.deltaY : e.deltaX) / plot.plotWidth) * (v.x1 - v.x0);
        s.setView(clamp({ ...v, x0: v.x0 + d, x1: v.x1 + d }));
        return;
      }
      const at = pxToX(
        { ...plot, x0: v.x0, x1: v.x1 },
        Math.max(plot.left, Math.min(plot.left + plot.plotWidth, px)),
      );
      const k = Math.exp(Math.max(-1, Math.min(1, e.deltaY * (e.deltaMode === 1 ? 0.05 : 0.002))));
      s.setView(clamp({ ...v, x0: at - (at - v.x0) * k, x1: at + (v.x1 - at) * k }));
    },
    [plot, replay, S, clamp],
  );

  const hitTest = useCallback(
    (px: number, py: number): Hover | null => {
      if (!plot || !answer) return null;
      if (
        px < plot.left ||
        px > plot.left + plot.plotWidth ||
        py < plot.top ||
        py > plot.top + plot.plotHeight
      ) {
        return null;
      }
      const bucket = Math.min(answer.buckets - 1, Math.max(0, Math.floor(px - plot.left)));
      let band = -1;
      if (mode === "allocations" && bands) {
        const x = pxToX(plot, px);
        const y = ((plot.top + plot.plotHeight - py) / plot.plotHeight) * plot.yMax;
        band = hitBand(bands, x, y);
      }
      return { px, py, bucket, band };
    },
    [plot, answer, bands, mode],
  );

  if (panelError) {
    return (
      <section className="card" aria-labelledby={`timeline-title-${k}`}>
        <h2 id={`timeline-title-${k}`}>Memory over time</h2>
        <p className="status-fail">
          The trace of device {device} could not be replayed: {panelError}
        </p>
      </section>
    );
  }
  if (!panel) {
    return (
      <section className="card" aria-labelledby={`timeline-title-${k}`}>
        <h2 id={`timeline-title-${k}`}>Memory over time</h2>
        <p className="muted">Replaying the trace…</p>
      </section>
    );
  }
  if (!replay || !view) {
    return (
      <section className="card" aria-labelledby={`timeline-title-${k}`} data-testid="timeline-empty">
        <h2 id={`timeline-title-${k}`}>Memory over time — device {device}</h2>
        <p className="muted">
          No trace for this device: history was not recorded, or this device had no allocations. Call{" "}
          <code>peakscope_hook.start()</code> (or <code>torch.cuda.memory._record_memory_history()</code>)
          before the model is built — <SeeCapture />. The segment map below shows the snapshot: one moment,
          the one it was taken at.
        </p>
      </section>
    );
  }

  const oom = replay.markers.find((m) => m.kind === "oom");

  return (
    <section
      className="card timeline"
      aria-labelledby={`timeline-title-${k}`}
      data-testid="timeline"
      data-axis={view.axis}
      data-x0={view.x0}
      data-x1={view.x1}
      data-origin={view.axis === "time" ? replay.t0 : 0}
      data-anchor={compare ? anchorOf(replay, view.axis, align) : undefined}
      data-highlight-category={highlightCategory ?? undefined}
      data-plot-left={plot?.left}
      data-plot-width={plot?.plotWidth}
      data-plot-top={plot?.top}
      data-plot-height={plot?.plotHeight}
      data-mode={mode}
      data-bands={bands?.count ?? ""}
    >
      <h2 id={`timeline-title-${k}`}>
        Allocated memory over time — device {device}{" "}
        <span className="muted small">
          ({formatCount(replay.events)} trace events; stacked by category, rounded block bytes)
        </span>
      </h2>
      <div className="toolbar">
        <span className="label">x axis</span>
        <span className="group">
          <button
            type="button"
            aria-pressed={view.axis === "time"}
            disabled={!replay.hasTime}
            title={
              replay.hasTime
                ? "Time since the first trace event"
                : "This trace has no time_us: only event order"
            }
            onClick={() => chooseAxis("time")}
          >
            Time
          </button>
          <button type="button" aria-pressed={view.axis === "event"} onClick={() => chooseAxis("event")}>
            Event index
          </button>
        </span>
        <span className="label">show</span>
        <span className="group">
          <button
            type="button"
            aria-pressed={mode === "stacked"}
            onClick={() => setMode("stacked")}
            data-testid="mode-stacked"
          >
            By category
          </button>
          <button
            type="button"
            aria-pressed={mode === "allocations"}
            onClick={() => setMode("allocations")}
            data-testid="mode-allocations"
          >
            Each allocation
          </button>
        </span>
        <span className="spacer" />
        <button type="button" onClick={() => jumpTo(S, replay.peakEvent)} data-testid="jump-peak">
          Jump to peak
        </button>
        {oom && (
          <button type="button" onClick={() => jumpTo(S, oom.event)} data-testid="jump-oom">
            Jump to OOM
          </button>
        )}
        <button
          type="button"
          onClick={() => pin(null)}
          disabled={pinned === null}
          title="Show the snapshot itself"
        >
          Snapshot
        </button>
        <button type="button" onClick={() => resetZoom(S)} title="Reset zoom (0)">
          Reset zoom
        </button>
      </div>
      {/* Focusable so that Tab reaches the timeline; the page's keys (←/→, +/−, 0) act on it. */}
      {/* biome-ignore lint/a11y/useSemanticElements: a keyboard-operated plot, not a fieldset */}
      <div
        className="canvas-box"
        style={{ height: HEIGHT }}
        role="group"
        // biome-ignore lint/a11y/noNoninteractiveTabindex: a keyboard-operated plot, its keys in the label
        tabIndex={0}
        aria-label="Timeline: ←/→ step the moment (Shift: 100 events), +/− zoom, 0 reset zoom, Esc unpin"
        data-testid="timeline-focus"
      >
        <Canvas
          ref={base}
          draw={draw}
          height={HEIGHT}
          testId="timeline-canvas"
          ariaLabel={`Allocated memory of device ${device} over ${view.axis === "time" ? "time" : "trace events"}, stacked by category`}
          onSize={setWidth}
          onWheel={onWheel}
          cursor={drag.current?.moved ? "grabbing" : "crosshair"}
          onPointerDown={(e) => {
            e.currentTarget.setPointerCapture(e.pointerId);
            const v = S.getState().view;
            if (v) drag.current = { startPx: e.nativeEvent.offsetX, view: v, moved: false };
          }}
          onPointerMove={(e) => {
            const px = e.nativeEvent.offsetX;
            const py = e.nativeEvent.offsetY;
            const d = drag.current;
            if (d && plot) {
              const dx = px - d.startPx;
              if (Math.abs(dx) > 3) d.moved = true;
              if (d.moved) {
                const shift = (-dx / plot.plotWidth) * (d.view.x1 - d.view.x0);
                setView(clamp({ ...d.view, x0: d.view.x0 + shift, x1: d.view.x1 + shift }));
                return;
              }
            }
            const h = hitTest(px, py);
            setHover(h);
            if (compare && plot && view) {
              useApp.getState().setActiveSide(side);
              setCursor(
                h
                  ? { side, axis: view.axis, offset: pxToX(plot, px) - anchorOf(replay, view.axis, align) }
                  : null,
              );
            }
          }}
          onPointerUp={(e) => {
            const d = drag.current;
            drag.current = null;
            if (d && !d.moved) {
              const h = hitTest(e.nativeEvent.offsetX, e.nativeEvent.offsetY);
              if (!h || !answer) return;
              if (mode === "allocations" && h.band >= 0 && bands) {
                const k = bands.alloc[h.band];
                void ask((api) => api.allocation(device, k)).then(setSelected, () => {});
              }
              const ev = answer.lastEvent[h.bucket];
              if (ev >= 0) pin(ev);
            }
          }}
          onPointerLeave={() => {
            setHover(null);
            if (compare) setCursor(null);
          }}
        />
        <StepBands height={HEIGHT} />
        <PhaseBands height={HEIGHT} />
        <CapacityLine height={HEIGHT} />
        <HealthOverlay height={HEIGHT} />
        <WhatIfOverlay height={HEIGHT} />
        <TreeSearchLayer height={HEIGHT} />
        <CompileContextLayer height={HEIGHT} />
        {hover && answer && plot && (
          <HoverTip
            hover={hover}
            plot={plot}
            answer={answer}
            replay={replay}
            axis={view.axis}
            colors={colors}
            names={categories.map((c) => c.name)}
            detail={mode === "allocations" && hover.band >= 0 ? detail : null}
          />
        )}
      </div>
      <Overview device={device} replay={replay} view={view} onView={(v) => setView(clamp(v))} />
      <div className="legend" data-testid="timeline-legend">
        <CategoryLegend />
        <label title="The reserved total (what the caching allocator holds from the device), drawn as a line">
          <input
            type="checkbox"
            checked={showReserved}
            onChange={(e) => setShowReserved(e.currentTarget.checked)}
          />{" "}
          <span
            className="swatch"
            style={{ background: "transparent", borderColor: "var(--reserved)", borderWidth: 2 }}
          />
          reserved (line)
        </label>
        <HealthOverlayToggles compact />
        <TreeSearchLegend />
        <CompileContextLegend />
        <PhaseLegend />
        <CapacityLegend />
        <span>
          <span className="swatch" style={{ background: "var(--danger)" }} />
          peak (dashed) / OOM (solid)
        </span>
        {replay.markers.some((m) => m.kind === "snapshot") && <span>▼ _snapshot() call</span>}
        {replay.markers.some((m) => m.kind === "annotation") && (
          <span>╵ annotation (hover for its name)</span>
        )}
        <span>┆ the snapshot moment (end of trace)</span>
        <span className="muted">
          Wheel: zoom · drag: pan · click: pin the moment · ←/→ step events · Esc: unpin
        </span>
      </div>
      {mode === "allocations" && bands && (
        <p className="small muted" data-testid="bands-note">
          {formatCount(bands.count)} allocations drawn as bands
          {bands.lumped > 0
            ? `; ${formatCount(bands.lumped)} smaller than one pixel (up to ${formatBytes(bands.lumpedBytesMax)}) are in the grey area`
            : ""}
          {bands.truncated ? "; too many to draw at this zoom — zoom in to see all" : ""}. Hover a band for
          its stack; click to keep it below.
        </p>
      )}
      {compare && linked && (
        <p className="small muted" data-testid="link-note">
          {view.axis === "time" ? "Time" : "Events"} counted from{" "}
          {align === "snapshot" && replay.markers.some((m) => m.kind === "snapshot")
            ? "the first _snapshot() call"
            : "the trace's start"}
          , aligned with the other file, on the same byte scale; zoom and cursor move both (the dashed grey
          line is the other file's cursor).
        </p>
      )}
      <PinnedLine replay={replay} />
      {selected && <AllocationPanel detail={selected} device={device} onClose={() => setSelected(null)} />}
    </section>
  );
}

/** The whole trace; in a linked comparison, both traces on the shared axis. */
export function resetZoom(S: SideStore): void {
  const app = useApp.getState();
  const s = S.getState();
  if (app.mode === "compare" && app.linked) {
    alignViews(app.base, true);
    return;
  }
  const f = fullView(s.panel, s.view?.axis);
  if (f) s.setView(f);
}

function jumpTo(S: SideStore, event: number) {
  const s = S.getState();
  s.pin(event);
  const r = s.panel?.replay;
  const v = s.view;
  if (!r || !v) return;
  const x = v.axis === "time" ? eventX(r, event) : event;
  if (x < v.x0 || x > v.x1) {
    const half = (v.x1 - v.x0) / 2;
    s.setView(clampView({ ...v, x0: x - half, x1: x + half }, r));
  }
}

/** x of an event on the time axis, from the markers when known, else linear between t0 and t1. */
function eventX(r: ReplayFacts, event: number): number {
  const m = r.markers.find((k) => k.event === event);
  if (m) return m.timeUs;
  return r.t0 + ((r.t1 - r.t0) * event) / Math.max(1, r.events - 1);
}

/** The y scale's top: 8 % above the highest value, or more when `headroom` (a fraction of the plot) asks. */
function niceTop(v: number, headroom = 0): number {
  if (!(v > 0)) return 1;
  return v * Math.max(1.08, 1 / (1 - Math.min(0.5, headroom)));
}

function hitBand(b: BandsAnswer, x: number, y: number): number {
  for (let i = b.count - 1; i >= 0; i--) {
    const s = b.pointStart[i];
    const e = b.pointStart[i + 1];
    if (e - s < 2 || x < b.px[s] || x >= b.px[e - 1]) continue;
    for (let k = s; k < e - 1; k++) {
      if (x >= b.px[k] && x < b.px[k + 1]) {
        if (y >= b.py[k] && y < b.py[k] + b.sizeBytes[i]) return i;
        break;
      }
    }
  }
  return -1;
}

interface DrawOpts {
  colors: string[];
  showReserved: boolean;
  bands: BandsAnswer | null;
  siteAllocs: Set<number> | null;
  axis: "time" | "event";
  pinned: number | null;
  hover: Hover | null;
  selectedAlloc: number;
  /** Category drawn in full while the others are dimmed; -1 for none. */
  dimCategory: number;
  /** The other file's cursor (linked comparison), in this side's axis units. */
  ghostX: number | null;
}

function drawTimeline(
  ctx: CanvasRenderingContext2D,
  p: Plot,
  a: TimelineAnswer,
  r: ReplayFacts,
  o: DrawOpts,
): void {
  const th = themeColors();
  const C = a.categories;
  const bottom = p.top + p.plotHeight;
  ctx.font = "11px system-ui, sans-serif";
  // Grid and y labels.
  ctx.textAlign = "right";
  ctx.textBaseline = "middle";
  for (const t of yTicks(p)) {
    const y = Math.round(yToPx(p, t.at)) + 0.5;
    ctx.strokeStyle = th.grid;
    ctx.beginPath();
    ctx.moveTo(p.left, y);
    ctx.lineTo(p.left + p.plotWidth, y);
    ctx.stroke();
    ctx.fillStyle = th.muted;
    ctx.fillText(t.label, p.left - 6, y);
  }
  // x ticks.
  ctx.textAlign = "center";
  ctx.textBaseline = "top";
  for (const t of xTicks(p, o.axis, r.t0)) {
    const x = Math.round(xToPx(p, t.at)) + 0.5;
    if (x < p.left || x > p.left + p.plotWidth) continue;
    ctx.strokeStyle = th.grid;
    ctx.beginPath();
    ctx.moveTo(x, p.top);
    ctx.lineTo(x, bottom + 4);
    ctx.stroke();
    ctx.fillStyle = th.muted;
    // Keep the label inside the canvas at both ends.
    const half = ctx.measureText(t.label).width / 2;
    ctx.fillText(t.label, Math.min(p.width - half - 1, Math.max(half + 1, x)), bottom + 6);
  }
  ctx.save();
  ctx.beginPath();
  ctx.rect(p.left, p.top, p.plotWidth, p.plotHeight);
  ctx.clip();

  const scale = p.plotHeight / p.yMax;
  if (o.bands) {
    // Grey total behind the bands: allocations under a pixel tall.
    ctx.fillStyle = th.inactive;
    for (let b = 0; b < a.buckets; b++) {
      const v = a.allocMax[b];
      if (!(v > 0)) continue;
      const h = v * scale;
      ctx.fillRect(p.left + b, bottom - h, 1, h);
    }
    const bd = o.bands;
    const dim = o.siteAllocs;
    for (let i = 0; i < bd.count; i++) {
      const s = bd.pointStart[i];
      const e = bd.pointStart[i + 1];
      const hi = (dim?.has(bd.alloc[i]) ?? true) && (o.dimCategory < 0 || bd.category[i] === o.dimCategory);
      ctx.globalAlpha = hi ? 1 : 0.2;
      ctx.fillStyle = o.colors[bd.category[i]] ?? "#888";
      const h = Math.max(1, bd.sizeBytes[i] * scale);
      for (let k = s; k < e - 1; k++) {
        const x0 = xToPx(p, bd.px[k]);
        const x1 = xToPx(p, bd.px[k + 1]);
        const y = bottom - bd.py[k] * scale - h;
        ctx.fillRect(x0, y, Math.max(1, x1 - x0), h);
        // Inferred category (allocated before recording, no stack): the ╲ hatch, as in the map.
        if (bd.inferred[i]) hatchRect(ctx, x0, y, Math.max(1, x1 - x0), h, th.fg);
      }
    }
    ctx.globalAlpha = 1;
    // Outline of the hovered / selected band.
    for (const idx of [o.hover?.band ?? -1, findBand(bd, o.selectedAlloc)]) {
      if (idx < 0) continue;
      const s = bd.pointStart[idx];
      const e = bd.pointStart[idx + 1];
      const h = Math.max(1, bd.sizeBytes[idx] * scale);
      ctx.strokeStyle = th.fg;
      ctx.lineWidth = 1.5;
      for (let k = s; k < e - 1; k++) {
        const x0 = xToPx(p, bd.px[k]);
        const x1 = xToPx(p, bd.px[k + 1]);
        ctx.strokeRect(x0, bottom - bd.py[k] * scale - h, Math.max(1, x1 - x0), h);
      }
      ctx.lineWidth = 1;
    }
  } else {
    // Stacked by category, one column per bucket, the composition at the bucket's max.
    const cum = new Float64Array(a.buckets);
    for (let c = 0; c < C; c++) {
      ctx.fillStyle = o.colors[c] ?? "#888";
      ctx.globalAlpha = o.dimCategory < 0 || o.dimCategory === c ? 1 : 0.2;
      for (let b = 0; b < a.buckets; b++) {
        const v = a.byCategory[b * C + c];
        if (!(v > 0)) continue;
        const y0 = cum[b] * scale;
        const y1 = (cum[b] + v) * scale;
        cum[b] += v;
        ctx.fillRect(p.left + b, bottom - y1, 1, Math.max(0.5, y1 - y0));
      }
    }
    ctx.globalAlpha = 1;
    // The min inside each pixel, where it differs from the max: short-lived spikes.
    ctx.fillStyle = th.bg;
    ctx.globalAlpha = 0.35;
    for (let b = 0; b < a.buckets; b++) {
      const mn = a.allocMin[b];
      const mx = a.allocMax[b];
      if (!(mx > mn)) continue;
      const h = (mx - mn) * scale;
      if (h < 2) continue;
      ctx.fillRect(p.left + b, bottom - mx * scale, 1, h);
    }
    ctx.globalAlpha = 1;
  }
  // Reserved line.
  if (o.showReserved) {
    ctx.strokeStyle = th.reserved;
    ctx.lineWidth = 1.5;
    ctx.beginPath();
    let open = false;
    for (let b = 0; b < a.buckets; b++) {
      const v = a.reservedMax[b];
      if (!Number.isFinite(v)) {
        open = false;
        continue;
      }
      const y = bottom - v * scale;
      if (!open) {
        ctx.moveTo(p.left + b, y);
        open = true;
      } else ctx.lineTo(p.left + b, y);
      ctx.lineTo(p.left + b + 1, y);
    }
    ctx.stroke();
    ctx.lineWidth = 1;
  }
  ctx.restore();

  // Markers.
  const xOf = (m: Marker) => xToPx(p, o.axis === "time" ? m.timeUs : m.event);
  const inPlot = (x: number) => x >= p.left - 0.5 && x <= p.left + p.plotWidth + 0.5;
  const labels = new Labels(ctx, p);
  ctx.textBaseline = "bottom";
  const annotations = r.markers.filter((m) => m.kind === "annotation");
  ctx.fillStyle = th.muted;
  for (const m of annotations) {
    const x = xOf(m);
    if (!inPlot(x)) continue;
    ctx.fillRect(Math.round(x), p.top - 4, 1, 4);
  }
  for (const m of r.markers) {
    if (m.kind === "annotation") continue;
    const x = Math.round(xOf(m)) + 0.5;
    if (!inPlot(x)) continue;
    if (m.kind === "peak") {
      ctx.strokeStyle = th.danger;
      ctx.setLineDash([4, 3]);
      line(ctx, x, p.top, bottom);
      ctx.setLineDash([]);
      labels.put(x, `peak ${formatBytes(r.peakBytes)}`, th.danger);
    } else if (m.kind === "oom") {
      ctx.strokeStyle = th.danger;
      ctx.lineWidth = 2;
      line(ctx, x, p.top, bottom);
      ctx.lineWidth = 1;
      labels.put(x, "OOM", th.danger);
    } else if (m.kind === "snapshot") {
      // _snapshot() calls: small triangles hanging inside the plot's top edge.
      ctx.fillStyle = th.accent;
      ctx.beginPath();
      ctx.moveTo(x - 4, p.top);
      ctx.lineTo(x + 4, p.top);
      ctx.lineTo(x, p.top + 6);
      ctx.fill();
    }
  }
  // The snapshot moment: the end of the trace.
  const endX = Math.round(xToPx(p, o.axis === "time" ? r.t1 : r.events - 1)) + 0.5;
  if (inPlot(endX)) {
    ctx.strokeStyle = th.fg;
    ctx.setLineDash([2, 2]);
    line(ctx, endX, p.top, bottom);
    ctx.setLineDash([]);
    labels.put(endX, "snapshot", th.fg);
  }
  // Pinned moment.
  if (o.pinned !== null) {
    const b = bucketOfEvent(a, o.pinned);
    const x = b >= 0 ? p.left + b + 0.5 : Number.NaN;
    if (inPlot(x)) {
      ctx.strokeStyle = th.accent;
      ctx.lineWidth = 2;
      line(ctx, x, p.top, bottom);
      ctx.lineWidth = 1;
    }
  }
  // The other file's cursor (linked comparison).
  if (o.ghostX !== null) {
    const x = Math.round(xToPx(p, o.ghostX)) + 0.5;
    if (inPlot(x)) {
      ctx.strokeStyle = th.muted;
      ctx.setLineDash([5, 3]);
      ctx.lineWidth = 1.5;
      line(ctx, x, p.top, bottom);
      ctx.setLineDash([]);
      ctx.lineWidth = 1;
    }
  }
  // Hover crosshair.
  if (o.hover) {
    ctx.strokeStyle = th.fg;
    ctx.globalAlpha = 0.5;
    line(ctx, Math.round(o.hover.px) + 0.5, p.top, bottom);
    ctx.globalAlpha = 1;
  }
  // Axis frame.
  ctx.strokeStyle = th.muted;
  ctx.beginPath();
  ctx.moveTo(p.left + 0.5, p.top);
  ctx.lineTo(p.left + 0.5, bottom + 0.5);
  ctx.lineTo(p.left + p.plotWidth, bottom + 0.5);
  ctx.stroke();
}

function findBand(b: BandsAnswer, alloc: number): number {
  if (alloc < 0) return -1;
  for (let i = 0; i < b.count; i++) if (b.alloc[i] === alloc) return i;
  return -1;
}

function bucketOfEvent(a: TimelineAnswer, ev: number): number {
  for (let b = 0; b < a.buckets; b++) {
    if (a.firstEvent[b] >= 0 && a.firstEvent[b] <= ev && a.lastEvent[b] >= ev) return b;
  }
  // The event's bucket may hold no event of its own (a carried state): the last bucket ending before it.
  let best = -1;
  for (let b = 0; b < a.buckets; b++) if (a.lastEvent[b] >= 0 && a.lastEvent[b] <= ev) best = b;
  return best >= 0 && best < a.buckets - 1 && a.lastEvent[best] === ev ? best : -1;
}

function line(ctx: CanvasRenderingContext2D, x: number, y0: number, y1: number): void {
  ctx.beginPath();
  ctx.moveTo(x, y0);
  ctx.lineTo(x, y1);
  ctx.stroke();
}

/** Marker labels above the plot, in two lanes so neighbours do not overwrite each other. */
class Labels {
  private taken: [number, number, number][] = [];
  constructor(
    private ctx: CanvasRenderingContext2D,
    private p: Plot,
  ) {}
  put(x: number, text: string, color: string): void {
    const { ctx, p } = this;
    const w = ctx.measureText(text).width;
    let x0 = x + 3;
    if (x0 + w > p.left + p.plotWidth) x0 = x - 3 - w;
    if (x0 < p.left) x0 = p.left;
    for (let lane = 0; lane < 2; lane++) {
      const clash = this.taken.some(([l, a, b]) => l === lane && x0 < b + 4 && x0 + w > a - 4);
      if (clash && lane === 0) continue;
      this.taken.push([lane, x0, x0 + w]);
      ctx.textAlign = "left";
      ctx.textBaseline = "bottom";
      ctx.fillStyle = color;
      ctx.fillText(text, x0, p.top - 3 - lane * 13);
      return;
    }
  }
}

function HoverTip({
  hover,
  plot,
  answer,
  replay,
  axis,
  colors,
  names,
  detail,
}: {
  hover: Hover;
  plot: Plot;
  answer: TimelineAnswer;
  replay: ReplayFacts;
  axis: "time" | "event";
  colors: string[];
  names: string[];
  detail: AllocationDetail | null;
}) {
  const b = hover.bucket;
  const phases = usePhaseRuns();
  const C = answer.categories;
  const first = answer.firstEvent[b];
  const last = answer.lastEvent[b];
  const x = pxToX(plot, plot.left + b);
  const left = hover.px + 16 + 420 > plot.width ? Math.max(0, hover.px - 436) : hover.px + 16;
  const where =
    axis === "time"
      ? `t = ${formatDurationUs(x - replay.t0)}`
      : `event #${formatCount(Math.max(0, Math.round(x)))}`;
  if (!Number.isFinite(answer.allocMax[b])) {
    return (
      <div className="tooltip" style={{ left, top: 8 }}>
        {where}: outside the trace
      </div>
    );
  }
  // Markers within 3 px of the cursor: annotations, OOM, _snapshot() calls.
  const near = replay.markers.filter((m) => {
    if (m.kind === "peak") return false;
    const mx = xToPx(plot, axis === "time" ? m.timeUs : m.event);
    return Math.abs(mx - hover.px) <= 3;
  });
  const rows = [];
  for (let c = C - 1; c >= 0; c--) {
    const v = answer.byCategory[b * C + c];
    if (v > 0) rows.push({ c, v });
  }
  return (
    <div className="tooltip" style={{ left, top: 8 }} data-testid="timeline-tooltip">
      <div>
        <strong>{where}</strong>{" "}
        <span className="muted">
          {first >= 0
            ? first === last
              ? `event #${formatCount(first)}`
              : `events #${formatCount(first)}–#${formatCount(last)}`
            : `after event #${formatCount(last)}`}
        </span>
      </div>
      <HoverPhase runs={phases} event={last >= 0 ? last : first} />
      {near.length > 0 && (
        <div className="small" data-testid="tooltip-markers">
          {near.slice(0, 4).map((m) => (
            <div key={`${m.kind}-${m.event}-${m.label}`}>
              <strong>{m.kind === "annotation" ? "annotation" : m.label}</strong>
              {m.kind === "annotation" ? `: ${m.label}` : ""} at event #{formatCount(m.event)}
            </div>
          ))}
        </div>
      )}
      {detail ? (
        <AllocationSummary detail={detail} />
      ) : (
        <HoverBlock plot={plot} answer={answer} bucket={b} py={hover.py} axis={axis} />
      )}
      {detail ? null : (
        <table>
          <tbody>
            <tr data-row="allocated" data-value={answer.allocMax[b]}>
              <td>allocated</td>
              <td className="num">
                <strong>{formatBytes(answer.allocMax[b])}</strong>
                {answer.allocMin[b] < answer.allocMax[b]
                  ? ` (min ${formatBytes(answer.allocMin[b])} in this pixel)`
                  : ""}
              </td>
            </tr>
            <tr>
              <td>reserved</td>
              <td className="num">{formatBytes(answer.reservedMax[b])}</td>
            </tr>
            {rows.map(({ c, v }) => (
              <tr key={c} data-row="category" data-category={names[c]} data-value={v}>
                <td>
                  <span className="swatch" style={{ background: colors[c] }} />
                  {names[c]}
                </td>
                <td className="num">{formatBytes(v)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <div className="muted small">Click to show this moment in the segment map.</div>
    </div>
  );
}

function AllocationSummary({ detail }: { detail: AllocationDetail }) {
  return (
    <div className="detail">
      <div>
        <strong>{formatBytes(detail.sizeBytes)}</strong> <span className="muted">{detail.category}</span>
      </div>
      <div>
        call site: <code>{detail.site ?? "—"}</code>
      </div>
      {detail.inferred ? (
        <InferredLine rule={detail.inferred.rule} description={detail.inferred.description} short />
      ) : (
        detail.rule && (
          <div className="muted small">
            why: <strong>{detail.rule}</strong> — {firstSentence(detail.ruleDetail)}
          </div>
        )
      )}
      <CompactStack stack={detail.stack} emptyReason={detail.emptyStackReason} />
    </div>
  );
}

function AllocationPanel({
  detail,
  device,
  onClose,
}: {
  detail: AllocationDetail;
  device: number;
  onClose: () => void;
}) {
  const ask = useSide()((s) => s.ask);
  return (
    <div className="detail" data-testid="allocation-detail">
      <div className="toolbar">
        <strong>
          Allocation of <Bytes value={detail.sizeBytes} /> at <code>{`0x${detail.addr.toString(16)}`}</code>
        </strong>
        <span className="spacer" />
        <button type="button" onClick={onClose}>
          Close
        </button>
      </div>
      <div>
        category <strong>{detail.category}</strong> · call site <code>{detail.site ?? "—"}</code> · stream{" "}
        {detail.stream}
      </div>
      {detail.inferred ? (
        <InferredLine rule={detail.inferred.rule} description={detail.inferred.description} />
      ) : (
        detail.rule && (
          <div className="muted small">
            why this category: rule <strong>{detail.rule}</strong> — {detail.ruleDetail}
          </div>
        )
      )}
      <div className="small">
        {detail.allocEvent >= 0
          ? `allocated at event #${formatCount(detail.allocEvent)}`
          : "allocated before the trace"}
        {detail.freeEvent >= 0
          ? `, freed at event #${formatCount(detail.freeEvent)}`
          : ", still allocated at the snapshot"}
        {Number.isFinite(detail.allocTimeUs) && Number.isFinite(detail.freeTimeUs)
          ? ` (lived ${formatDurationUs(detail.freeTimeUs - detail.allocTimeUs)})`
          : ""}
        {detail.compileContext && detail.compileContext !== "N/A"
          ? ` · compile context ${detail.compileContext}`
          : ""}
        {detail.userMetadata ? ` · ${detail.userMetadata}` : ""}
      </div>
      <StackList
        stack={detail.stack}
        emptyReason={detail.emptyStackReason}
        testId="allocation-stack"
        loadFull={() =>
          ask((api) => api.fullStack({ device, kind: "alloc", ref: detail.alloc, event: null }))
        }
      />
    </div>
  );
}

function PinnedLine({ replay }: { replay: ReplayFacts }) {
  const S = useSide();
  const pinned = S((s) => s.pinnedEvent);
  return (
    <p className="small" data-testid="pinned">
      {pinned === null ? (
        <>
          The segment map shows <strong>the snapshot</strong> (after the last of {formatCount(replay.events)}{" "}
          events).
        </>
      ) : (
        <>
          The segment map shows the state <strong>after event #{formatCount(pinned)}</strong>
          {pinned === replay.peakEvent ? " (the peak)" : ""}.{" "}
          <button type="button" className="link" onClick={() => S.getState().pin(null)}>
            Back to the snapshot
          </button>
        </>
      )}
    </p>
  );
}
