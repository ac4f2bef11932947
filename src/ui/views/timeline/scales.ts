// Coordinate spaces of the timeline: "axis" units (µs or event index) ↔ CSS pixels in the plot, and
// bytes ↔ CSS pixels. Ticks that read well on both axes.

import { scaleLinear } from "d3";
import { byteTicks, formatCount, formatDurationUs } from "../../format";

function formatTick(v: number): string {
  return Number.isInteger(v) ? String(v) : v.toFixed(2).replace(/0+$/, "").replace(/\.$/, "");
}

export const MARGIN = { left: 74, right: 14, top: 32, bottom: 26 };

export interface Plot {
  width: number;
  height: number;
  /** Plot area in CSS pixels. */
  left: number;
  top: number;
  plotWidth: number;
  plotHeight: number;
  x0: number;
  x1: number;
  yMax: number;
}

export function makePlot(width: number, height: number, x0: number, x1: number, yMax: number): Plot {
  return {
    width,
    height,
    left: MARGIN.left,
    top: MARGIN.top,
    plotWidth: Math.max(1, Math.floor(width - MARGIN.left - MARGIN.right)),
    plotHeight: Math.max(1, height - MARGIN.top - MARGIN.bottom),
    x0,
    x1,
    yMax: yMax > 0 ? yMax : 1,
  };
}

export const xToPx = (p: Plot, x: number) => p.left + ((x - p.x0) / (p.x1 - p.x0)) * p.plotWidth;
export const pxToX = (p: Plot, px: number) => p.x0 + ((px - p.left) / p.plotWidth) * (p.x1 - p.x0);
export const yToPx = (p: Plot, bytes: number) => p.top + p.plotHeight - (bytes / p.yMax) * p.plotHeight;

export interface Tick {
  at: number;
  label: string;
}

export function xTicks(p: Plot, axis: "time" | "event", t0: number): Tick[] {
  const n = Math.max(2, Math.floor(p.plotWidth / 110));
  if (axis === "time") {
    const s = scaleLinear().domain([p.x0 - t0, p.x1 - t0]);
    return s.ticks(n).map((v) => ({ at: v + t0, label: v === 0 ? "0" : formatDurationUs(v) }));
  }
  const s = scaleLinear().domain([p.x0, p.x1]);
  return s
    .ticks(n)
    .filter((v) => Number.isInteger(v))
    .map((v) => ({ at: v, label: `#${formatCount(v)}` }));
}

export function yTicks(p: Plot): Tick[] {
  const n = Math.max(2, Math.floor(p.plotHeight / 50));
  const ticks = byteTicks(p.yMax, n);
  // Every label in the unit of the step, so they read 500 MiB, 1000 MiB, 1500 MiB (not 1.46 GiB).
  const step = ticks[1] ?? ticks[0] ?? 1;
  let unit = 1;
  let u = 0;
  while (unit * 1024 <= step && u < 5) {
    unit *= 1024;
    u++;
  }
  const names = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
  return ticks.map((v) => ({ at: v, label: v === 0 ? "0" : `${formatTick(v / unit)} ${names[u]}` }));
}
