// Inline SVG for the HTML report (strings; pure). Colours are presentation attributes, never style
// attributes, so the report's Content-Security-Policy needs no 'unsafe-inline'.

import { MIB } from "../core/report/format";
import { exactBytesShort, formatCount } from "../core/units";
import { esc } from "./html";
import { FREE, PENDING_FREE, type SegmentMapPicture, type TimelinePicture } from "./pictures";

/** Category colours, as the page draws them (src/ui/palette.ts: Okabe–Ito; unknown neutral grey). */
export const CATEGORY_COLORS: Record<string, string> = {
  parameters: "#0072B2",
  gradients: "#E69F00",
  optimizer_state: "#009E73",
  activations: "#CC79A7",
  input: "#56B4E9",
  temporary: "#D55E00",
  workspace: "#332288",
  kv_cache: "#999933",
  other: "#DDCC77",
  unknown: "#8c8c8c",
  [PENDING_FREE]: "#5a5a5a",
  [FREE]: "#e4e4e4",
};
const EXTRA = ["#117733", "#882255", "#44AA99", "#AA4499", "#88CCEE", "#CC6677"];

export function colorOf(name: string): string {
  const c = CATEGORY_COLORS[name];
  if (c) return c;
  let h = 0;
  for (let i = 0; i < name.length; i++) h = (h * 31 + name.charCodeAt(i)) >>> 0;
  return EXTRA[h % EXTRA.length];
}

const r1 = (v: number) => String(Math.round(v * 10) / 10);

/** 1, 2 or 5 × 10^k, the smallest ≥ raw. */
function niceStep(raw: number): number {
  if (!(raw > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(raw));
  for (const m of [1, 2, 5, 10]) if (m * p >= raw) return m * p;
  return 10 * p;
}

function trim(v: number): string {
  return String(Number(v.toFixed(6)));
}

const W = 1000;

export function timelineSvg(p: TimelinePicture): string {
  const H = 260;
  const ML = 78;
  const MR = 14;
  const MT = 16;
  const MB = 34;
  const pw = W - ML - MR;
  const ph = H - MT - MB;
  const n = p.x.length;
  const xmin = p.x[0] ?? 0;
  let xmax = p.x[n - 1] ?? 1;
  if (!(xmax > xmin)) xmax = xmin + 1;
  let top = p.peakBytes;
  for (const v of p.reserved) if (v > top) top = v;
  for (const v of p.allocated) if (v > top) top = v;
  const stepMiB = niceStep(top / MIB / 4 || 1);
  const ymax = Math.max(stepMiB * MIB, Math.ceil(top / MIB / stepMiB) * stepMiB * MIB);
  const px = (x: number) => ML + ((x - xmin) / (xmax - xmin)) * pw;
  const py = (y: number) => MT + ph - (y / ymax) * ph;
  const out: string[] = [];
  const label = `Allocated memory by category over the trace of device ${p.device}`;
  out.push(
    `<svg class="chart" data-testid="timeline-${p.device}" data-device="${p.device}" data-points="${n}" data-events="${p.events}" data-peak="${p.peakBytes}" viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" role="img" aria-label="${esc(label)}" xmlns="http://www.w3.org/2000/svg">`,
    `<title>${esc(label)}</title>`,
  );
  // grid and y axis
  for (let v = 0; v <= ymax / MIB + 1e-9; v += stepMiB) {
    const y = r1(py(v * MIB));
    out.push(
      `<line class="grid" x1="${ML}" x2="${W - MR}" y1="${y}" y2="${y}" stroke="#d0d0d0" stroke-width="1"/>`,
      `<text class="axis" x="${ML - 6}" y="${y}" dy="4" text-anchor="end" font-size="11" fill="#555">${trim(v)} MiB</text>`,
    );
  }
  // x axis ticks: seconds from the first event, or event indices
  const span = p.hasTime ? (xmax - xmin) / 1e6 : xmax - xmin;
  const xStep = niceStep(span / 6 || 1);
  for (let t = 0; t <= span + 1e-9; t += xStep) {
    const x = r1(px(xmin + (p.hasTime ? t * 1e6 : t)));
    out.push(
      `<line class="grid" x1="${x}" x2="${x}" y1="${MT + ph}" y2="${MT + ph + 4}" stroke="#888" stroke-width="1"/>`,
      `<text class="axis" x="${x}" y="${MT + ph + 17}" text-anchor="middle" font-size="11" fill="#555">${p.hasTime ? `${trim(t)} s` : formatCount(t)}</text>`,
    );
  }
  out.push(
    `<text class="axis" x="${W - MR}" y="${H - 2}" text-anchor="end" font-size="11" fill="#555">${p.hasTime ? "time since the first recorded event" : "trace event (no time_us in this file)"}</text>`,
  );
  // stacked areas: cumulative from the bottom category up, drawn top-down so each covers the rest
  const cum: number[][] = [];
  let acc = new Array<number>(n).fill(0);
  for (const s of p.series) {
    acc = acc.map((v, i) => v + s[i]);
    cum.push(acc);
  }
  const base = r1(py(0));
  for (let c = cum.length - 1; c >= 0; c--) {
    const pts: string[] = [];
    for (let i = 0; i < n; i++) pts.push(`${r1(px(p.x[i]))},${r1(py(cum[c][i]))}`);
    pts.push(`${r1(px(p.x[n - 1]))},${base}`, `${r1(px(p.x[0]))},${base}`);
    out.push(
      `<polygon data-category="${esc(p.categories[c])}" fill="${colorOf(p.categories[c])}" points="${pts.join(" ")}"><title>${esc(p.categories[c])}</title></polygon>`,
    );
  }
  // reserved
  const res = p.reserved.map((v, i) => `${r1(px(p.x[i]))},${r1(py(v))}`).join(" ");
  out.push(
    `<polyline class="reserved" fill="none" stroke="#333" stroke-width="1.2" stroke-dasharray="4 3" points="${res}"><title>reserved</title></polyline>`,
  );
  for (const x of p.oomX) {
    const xx = r1(px(x));
    out.push(
      `<line x1="${xx}" x2="${xx}" y1="${MT}" y2="${MT + ph}" stroke="#c00" stroke-width="2"><title>out of memory</title></line>`,
      `<text x="${xx}" y="${MT - 4}" text-anchor="middle" font-size="11" fill="#c00">OOM</text>`,
    );
  }
  const k = p.peakEvent === null ? -1 : p.event.indexOf(p.peakEvent);
  if (k >= 0) {
    const xx = r1(px(p.x[k]));
    const anchor = px(p.x[k]) > W - 200 ? "end" : "start";
    out.push(
      `<line x1="${xx}" x2="${xx}" y1="${MT}" y2="${MT + ph}" stroke="#000" stroke-width="1" stroke-dasharray="2 2" class="mark"/>`,
      `<text class="mark" x="${xx}" dx="${anchor === "end" ? -4 : 4}" y="${MT + 10}" text-anchor="${anchor}" font-size="11" fill="#000">peak ${(p.peakBytes / MIB).toFixed(2)} MiB (event ${formatCount(p.peakEvent as number)})</text>`,
    );
  }
  out.push(
    `<line x1="${ML}" x2="${ML}" y1="${MT}" y2="${MT + ph}" stroke="#888"/><line x1="${ML}" x2="${W - MR}" y1="${MT + ph}" y2="${MT + ph}" stroke="#888"/>`,
    "</svg>",
  );
  return out.join("");
}

const ROW_H = 22;
const ROW_GAP = 8;
const SEG_GAP = 3;
const MIN_SEG_PX = 3;

/**
 * The segment map of one device: every segment to scale, packed left to right into rows (a segment wider
 * than a row wraps), its blocks tiled inside; where several blocks share a pixel, the class with the most
 * bytes there is drawn.
 */
export function segmentMapSvg(m: SegmentMapPicture): string {
  const nseg = m.segments.length;
  const total = m.reservedBytes;
  const targetRows = Math.min(14, Math.max(2, Math.ceil(Math.sqrt(nseg) / 1.5)));
  const bpp = total / Math.max(1, W * targetRows - nseg * (SEG_GAP + 1)) || 1;
  interface Piece {
    seg: number;
    row: number;
    x: number;
    w: number;
    b0: number;
    b1: number;
  }
  const pieces: Piece[] = [];
  let row = 0;
  let x = 0;
  m.segments.forEach((s, i) => {
    let need = Math.max(MIN_SEG_PX, s.sizeBytes / bpp);
    const perPx = s.sizeBytes / need;
    if (x > 0 && x + Math.min(need, W) > W) {
      row++;
      x = 0;
    }
    let b0 = 0;
    while (need > 0) {
      const w = Math.min(need, W - x);
      const b1 = Math.min(s.sizeBytes, b0 + w * perPx);
      pieces.push({ seg: i, row, x, w, b0, b1: need - w <= 1e-9 ? s.sizeBytes : b1 });
      need -= w;
      b0 = b1;
      x += w;
      if (need > 1e-9) {
        row++;
        x = 0;
      }
    }
    x += SEG_GAP;
  });
  const rows = pieces.length ? row + 1 : 0;
  const H = Math.max(ROW_H, rows * (ROW_H + ROW_GAP));
  const out: string[] = [];
  const label = `Segments and blocks of device ${m.device} at the snapshot`;
  out.push(
    `<svg class="map" data-testid="segments-${m.device}" data-device="${m.device}" data-segments="${nseg}" data-reserved="${m.reservedBytes}" data-allocated="${m.allocatedBytes}" viewBox="0 0 ${W} ${H}" width="${W}" height="${H}" role="img" aria-label="${esc(label)}" xmlns="http://www.w3.org/2000/svg">`,
    `<title>${esc(label)}</title>`,
  );
  for (const p of pieces) {
    const s = m.segments[p.seg];
    const y = p.row * (ROW_H + ROW_GAP);
    const cols = Math.max(1, Math.round(p.w));
    const colW = p.w / cols;
    const span = (p.b1 - p.b0) / cols;
    // majority class per column
    const classes: string[] = new Array(cols);
    let k = 0;
    const blocks = s.blocks;
    for (let c = 0; c < cols; c++) {
      const lo = p.b0 + c * span;
      const hi = c === cols - 1 ? p.b1 : lo + span;
      while (k < blocks.length && blocks[k].offset + blocks[k].sizeBytes <= lo) k++;
      const bytes = new Map<string, number>();
      for (let j = k; j < blocks.length && blocks[j].offset < hi; j++) {
        const o = Math.min(hi, blocks[j].offset + blocks[j].sizeBytes) - Math.max(lo, blocks[j].offset);
        if (o > 0) bytes.set(blocks[j].cls, (bytes.get(blocks[j].cls) ?? 0) + o);
      }
      let best = FREE;
      let bestBytes = 0;
      for (const [cls, v] of bytes) if (v > bestBytes) [best, bestBytes] = [cls, v];
      classes[c] = best;
    }
    for (let c = 0; c < cols; ) {
      let e = c + 1;
      while (e < cols && classes[e] === classes[c]) e++;
      const cls = classes[c];
      out.push(
        `<rect${cls === FREE ? ' class="f"' : ""} x="${r1(p.x + c * colW)}" y="${y}" width="${r1((e - c) * colW)}" height="${ROW_H}" fill="${colorOf(cls)}"/>`,
      );
      c = e;
    }
    const live = s.blocks.filter((b) => b.cls !== FREE && b.cls !== PENDING_FREE);
    const liveBytes = live.reduce((a, b) => a + b.sizeBytes, 0);
    out.push(
      `<rect class="seg" x="${r1(p.x)}" y="${y}" width="${r1(p.w)}" height="${ROW_H}" fill="none" stroke="#666" stroke-width="0.6"><title>segment 0x${s.address.toString(16)}: ${(s.sizeBytes / MIB).toFixed(2)} MiB (${exactBytesShort(s.sizeBytes)}), ${s.blocks.length} block${s.blocks.length === 1 ? "" : "s"}, ${(liveBytes / MIB).toFixed(2)} MiB allocated, stream ${s.stream}</title></rect>`,
    );
  }
  out.push("</svg>");
  return out.join("");
}
