// The icicle: the same pruned tree as the outline, drawn on a canvas — one row per depth, each node as wide
// as its bytes. Click a node to zoom into it (and pin it); the breadcrumbs (or a click on the top bar) zoom
// back out. The same layout draws the PNG and writes the SVG exports.

import { useCallback, useMemo, useState } from "react";
import type { TreeNodeOut } from "../../../../workers/api";
import { Canvas, type DrawFn, themeColors } from "../../components/Canvas";
import { formatBytes, formatPercent } from "../../format";
import { mainCategory, paler, textOn } from "./model";

export const ICICLE_ROW = 20;
const MAX_ROWS = 40;
const MIN_LABEL_PX = 36;

export interface IcicleRect {
  node: TreeNodeOut;
  /** Keys from the root (excluded) to this node (included). */
  path: string[];
  x: number;
  w: number;
  depth: number;
  /** This node or an ancestor matched the search. */
  matched: boolean;
}

export interface IcicleStyle {
  colors: string[];
  searchActive: boolean;
  selectedKey: string | null;
  bg: string;
  fg: string;
  muted: string;
}

/** Rectangles of the subtree of `zoom` (at row 0, the full width), widths by bytes. */
export function icicleLayout(
  zoom: TreeNodeOut,
  zoomPath: string[],
  zoomMatched: boolean,
  width: number,
): { rects: IcicleRect[]; rows: number } {
  const rects: IcicleRect[] = [];
  let rows = 0;
  const scale = zoom.bytes > 0 ? width / zoom.bytes : 0;
  const place = (n: TreeNodeOut, path: string[], x: number, depth: number, matched: boolean) => {
    const w = n.bytes * scale;
    if (w < 0.5 || depth >= MAX_ROWS) return;
    const m = matched || n.match;
    rects.push({ node: n, path, x, w, depth, matched: m });
    if (depth + 1 > rows) rows = depth + 1;
    let cx = x;
    for (const c of n.children) {
      place(c, [...path, c.key], cx, depth + 1, m);
      cx += c.bytes * scale;
    }
  };
  place(zoom, zoomPath, 0, 0, zoomMatched);
  return { rects, rows };
}

function fillOf(r: IcicleRect, s: IcicleStyle): string {
  const n = r.node;
  // The root is all of it (no one category's colour); "… N more" is grey.
  if (n.kind === "more" || n.kind === "root") return s.muted;
  const base = s.colors[mainCategory(n)] ?? "#888888";
  return n.own ? base : paler(base, n.kind === "library" ? 0.55 : 0.3);
}

function fitText(ctx: CanvasRenderingContext2D, text: string, w: number): string {
  if (ctx.measureText(text).width <= w) return text;
  let lo = 0;
  let hi = text.length;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (ctx.measureText(`${text.slice(0, mid)}…`).width <= w) lo = mid;
    else hi = mid - 1;
  }
  return lo > 0 ? `${text.slice(0, lo)}…` : "";
}

function label(n: TreeNodeOut, total: number): string {
  return `${n.name} · ${formatBytes(n.bytes)}${total > 0 ? ` (${formatPercent(n.bytes / total)})` : ""}`;
}

export function drawIcicle(
  ctx: CanvasRenderingContext2D,
  rects: IcicleRect[],
  total: number,
  s: IcicleStyle,
): void {
  ctx.font = "11px system-ui, sans-serif";
  ctx.textBaseline = "middle";
  ctx.textAlign = "left";
  for (const r of rects) {
    const y = r.depth * ICICLE_ROW;
    const dim = s.searchActive && !r.matched;
    ctx.globalAlpha = dim ? 0.28 : 1;
    const fill = fillOf(r, s);
    ctx.fillStyle = fill;
    ctx.fillRect(r.x, y, Math.max(0.5, r.w - (r.w > 3 ? 1 : 0)), ICICLE_ROW - 1);
    if (r.w >= MIN_LABEL_PX) {
      // A dimmed node's name stays readable: the foreground colour over the paled fill.
      ctx.globalAlpha = dim ? 0.6 : 1;
      ctx.fillStyle = dim ? s.fg : textOn(fill);
      ctx.font = `${r.node.own ? "600 " : ""}11px system-ui, sans-serif`;
      const t = fitText(ctx, label(r.node, total), r.w - 6);
      if (t) ctx.fillText(t, r.x + 3, y + ICICLE_ROW / 2);
    }
    ctx.globalAlpha = 1;
    if (s.searchActive && r.node.match) {
      ctx.strokeStyle = s.fg;
      ctx.lineWidth = 2;
      ctx.strokeRect(r.x + 1, y + 1, Math.max(1, r.w - 3), ICICLE_ROW - 3);
      ctx.lineWidth = 1;
    }
    if (r.node.key === s.selectedKey) {
      ctx.strokeStyle = s.fg;
      ctx.setLineDash([3, 2]);
      ctx.lineWidth = 2;
      ctx.strokeRect(r.x + 1, y + 1, Math.max(1, r.w - 3), ICICLE_ROW - 3);
      ctx.setLineDash([]);
      ctx.lineWidth = 1;
    }
  }
}

function esc(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** The icicle as an SVG document (text as text, a title per node with its exact bytes). */
export function icicleSvg(
  rects: IcicleRect[],
  width: number,
  height: number,
  total: number,
  s: IcicleStyle,
  title: string,
): string {
  const measure = document.createElement("canvas").getContext("2d");
  if (measure) measure.font = "11px system-ui, sans-serif";
  const parts: string[] = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height + 24}" viewBox="0 0 ${width} ${height + 24}" font-family="system-ui, sans-serif" font-size="11">`,
    `<title>${esc(title)}</title>`,
    `<rect width="100%" height="100%" fill="${s.bg}"/>`,
    `<text x="4" y="15" fill="${s.fg}" font-size="12">${esc(title)}</text>`,
    `<g transform="translate(0 24)">`,
  ];
  for (const r of rects) {
    const y = r.depth * ICICLE_ROW;
    const fill = fillOf(r, s);
    const dim = s.searchActive && !r.matched;
    const op = dim ? ' opacity="0.28"' : "";
    const w = Math.max(0.5, r.w - (r.w > 3 ? 1 : 0));
    parts.push(
      `<g><title>${esc(`${r.node.name}: ${r.node.bytes} bytes, ${r.node.blocks} blocks`)}</title>` +
        `<rect x="${r.x.toFixed(2)}" y="${y}" width="${w.toFixed(2)}" height="${ICICLE_ROW - 1}" fill="${fill}"${op}${
          s.searchActive && r.node.match ? ` stroke="${s.fg}" stroke-width="2"` : ""
        }/>`,
    );
    if (r.w >= MIN_LABEL_PX && measure) {
      const t = fitText(measure, label(r.node, total), r.w - 6);
      if (t)
        parts.push(
          `<text x="${(r.x + 3).toFixed(2)}" y="${y + 14}" fill="${dim ? s.fg : textOn(fill)}"${dim ? ' opacity="0.6"' : ""}${r.node.own ? ' font-weight="600"' : ""}>${esc(t)}</text>`,
        );
    }
    parts.push("</g>");
  }
  parts.push("</g></svg>");
  return parts.join("\n");
}

export function Icicle({
  zoomPath,
  zoom,
  zoomMatched,
  total,
  colors,
  searchActive,
  selectedKey,
  onPick,
  onZoomOut,
  onWidth,
}: {
  zoomPath: string[];
  zoom: TreeNodeOut;
  zoomMatched: boolean;
  total: number;
  colors: string[];
  searchActive: boolean;
  selectedKey: string | null;
  onPick: (path: string[], node: TreeNodeOut) => void;
  onZoomOut: () => void;
  onWidth: (w: number) => void;
}) {
  const [width, setWidth] = useState(0);
  const [hover, setHover] = useState<{ x: number; y: number; r: IcicleRect } | null>(null);
  const lay = useMemo(
    () => (width > 0 ? icicleLayout(zoom, zoomPath, zoomMatched, width) : { rects: [], rows: 1 }),
    [zoom, zoomPath, zoomMatched, width],
  );
  const height = Math.max(1, lay.rows) * ICICLE_ROW;
  const draw: DrawFn = useCallback(
    (ctx) => {
      const t0 = performance.now();
      const th = themeColors();
      drawIcicle(ctx, lay.rects, total, {
        colors,
        searchActive,
        selectedKey,
        bg: th.bg,
        fg: th.fg,
        muted: th.inactive,
      });
      performance.measure("call-tree icicle", { start: t0 });
    },
    [lay, total, colors, searchActive, selectedKey],
  );
  const hit = (px: number, py: number): IcicleRect | null => {
    const depth = Math.floor(py / ICICLE_ROW);
    for (const r of lay.rects) if (r.depth === depth && px >= r.x && px < r.x + r.w) return r;
    return null;
  };
  return (
    <div className="canvas-box ct-icicle" style={{ height }} data-testid="icicle" data-rows={lay.rows}>
      <Canvas
        draw={draw}
        height={height}
        testId="icicle-canvas"
        ariaLabel="Icicle of the call tree: each node as wide as its live bytes; click to zoom in"
        onSize={(w) => {
          setWidth(w);
          onWidth(w);
        }}
        cursor="pointer"
        onPointerMove={(e) => {
          const r = hit(e.nativeEvent.offsetX, e.nativeEvent.offsetY);
          setHover(r ? { x: e.nativeEvent.offsetX, y: e.nativeEvent.offsetY, r } : null);
        }}
        onPointerLeave={() => setHover(null)}
        onClick={(e) => {
          const r = hit(e.nativeEvent.offsetX, e.nativeEvent.offsetY);
          if (!r) return;
          if (r.depth === 0 && zoomPath.length > 0) onZoomOut();
          else if (r.node.kind !== "more") onPick(r.path, r.node);
        }}
      />
      {hover && (
        <div
          className="tooltip"
          style={{
            left: hover.x + 14 + 360 > width ? Math.max(0, hover.x - 374) : hover.x + 14,
            top: hover.y + 14,
          }}
        >
          <div>
            <strong>{hover.r.node.name}</strong>
            {hover.r.node.detail ? <span className="muted"> ({hover.r.node.detail})</span> : null}
          </div>
          <div>
            {formatBytes(hover.r.node.bytes)} live
            {total > 0 ? ` · ${formatPercent(hover.r.node.bytes / total)} of all` : ""} · self{" "}
            {formatBytes(hover.r.node.selfBytes)} · {hover.r.node.blocks.toLocaleString("en-US")} blocks
          </div>
          <div className="muted small">
            {hover.r.depth === 0 && zoomPath.length > 0
              ? "Click to zoom out one level."
              : hover.r.node.kind === "more"
                ? "Small nodes summed together (each under the pruning threshold)."
                : "Click to zoom in and pin its stack."}
          </div>
        </div>
      )}
    </div>
  );
}
