// Timeline buckets: one per pixel, computed from a device's replay columns (state after each event).
// For each bucket: min and max of allocated over the bucket (including the state carried in from the
// left), the composition by category at the max, and reserved's max. Never one value per event to the page.

import type { Replay } from "../src/core/replay/types";
import { lowerBoundInt32 } from "../src/core/sorted";
import type { TimelineAnswer, TimelineQuery } from "./api";

/** The x of each event on an axis: the replay's x (time_us) for "time", the index for "event". */
export function axisX(replay: Replay, axis: "time" | "event"): (i: number) => number {
  if (axis === "time" && replay.hasTime) {
    const x = replay.x;
    return (i) => x[i];
  }
  return (i) => i;
}

/** First event index with x ≥ v (events sorted by x). */
export function lowerBound(n: number, x: (i: number) => number, v: number): number {
  let lo = 0;
  let hi = n;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (x(mid) < v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * The B pixel buckets of [x0, x1) over n events sorted by x (the per-pixel series of health, search and
 * what-if curves): `visit(b, prev, start, end)` for each bucket with something to draw — `prev` the last
 * event before it (-1: the initial state, carried in), events start … end − 1 in it. Buckets outside the
 * trace, and those before its first event, are skipped.
 */
export function forEachBucket(
  n: number,
  x: (i: number) => number,
  x0: number,
  x1: number,
  B: number,
  visit: (b: number, prev: number, start: number, end: number) => void,
): void {
  if (n === 0 || !(x1 > x0)) return;
  const w = (x1 - x0) / B;
  const xFirst = x(0);
  const xLast = x(n - 1);
  let i = lowerBound(n, x, x0);
  for (let b = 0; b < B; b++) {
    const bx0 = x0 + b * w;
    const bx1 = bx0 + w;
    if (bx1 <= xFirst || bx0 > xLast) continue;
    const prev = i - 1;
    const start = i;
    while (i < n && x(i) < bx1) i++;
    if (start === i && prev < 0) continue;
    visit(b, prev, start, i);
  }
}

export function computeTimeline(replay: Replay, q: TimelineQuery, yMax: number): TimelineAnswer {
  const B = Math.max(1, Math.min(20000, Math.floor(q.buckets)));
  const C = replay.categoryCount;
  const allocMin = new Float64Array(B).fill(Number.NaN);
  const allocMax = new Float64Array(B).fill(Number.NaN);
  const reservedMax = new Float64Array(B).fill(Number.NaN);
  const byCategory = new Float64Array(B * C).fill(Number.NaN);
  const firstEvent = new Int32Array(B).fill(-1);
  const lastEvent = new Int32Array(B).fill(-1);
  const n = replay.length;
  const answer: TimelineAnswer = {
    buckets: B,
    categories: C,
    allocMin,
    allocMax,
    reservedMax,
    byCategory,
    firstEvent,
    lastEvent,
    yMax,
  };
  if (n === 0 || !(q.x1 > q.x0)) return answer;
  const x = axisX(replay, q.axis);
  const { allocated } = replay;
  // Reserved from its steps (a few thousand), not the per-event column (made only when something reads it)
  const { eventIndex: stepEvent, bytes: stepBytes } = replay.reservedSteps;
  const steps = stepEvent.length;
  const at = new Float64Array(C);
  const w = (q.x1 - q.x0) / B;
  const xFirst = x(0);
  const xLast = x(n - 1);
  // Event index where the scan starts: the first event at or after x0.
  let i = lowerBound(n, x, q.x0);
  // sp: the steps at events before i; res: reserved after event i - 1
  let sp = lowerBoundInt32(stepEvent, i);
  let res = sp > 0 ? stepBytes[sp - 1] : replay.initial.reservedBytes;
  for (let b = 0; b < B; b++) {
    const bx0 = q.x0 + b * w;
    const bx1 = bx0 + w;
    // Outside the trace's extent: nothing to draw.
    if (bx1 <= xFirst || bx0 > xLast) continue;
    // The state carried into the bucket: after the last event before it (or the initial state).
    let min: number;
    let max: number;
    let rmax: number;
    let argmax: number; // event index of the max, -1 = initial state
    const prev = i - 1;
    if (prev >= 0) {
      min = max = allocated[prev];
      rmax = res;
      argmax = prev;
    } else {
      min = max = replay.initial.allocatedBytes;
      rmax = replay.initial.reservedBytes;
      argmax = -1;
    }
    let first = -1;
    let last = -1;
    while (i < n && x(i) < bx1) {
      const a = allocated[i];
      if (first < 0) first = i;
      last = i;
      if (a > max) {
        max = a;
        argmax = i;
      }
      if (a < min) min = a;
      while (sp < steps && stepEvent[sp] <= i) res = stepBytes[sp++];
      if (res > rmax) rmax = res;
      i++;
    }
    // Before the first event's bucket, draw nothing (prev < 0 and no event yet).
    if (first < 0 && prev < 0) continue;
    allocMin[b] = min;
    allocMax[b] = max;
    reservedMax[b] = rmax;
    firstEvent[b] = first;
    lastEvent[b] = last >= 0 ? last : prev;
    const row = b * C;
    byCategory.set(replay.categoriesAt(argmax, at), row);
  }
  return answer;
}

/** The y scale's top: the largest allocated or reserved value anywhere in the trace. */
export function timelineYMax(replay: Replay): number {
  // (the sweep kept both maxima: a pass over two columns of millions of events is tens of ms)
  const m = Math.max(replay.initial.allocatedBytes, replay.initial.reservedBytes);
  const peak = replay.peakEvent === null ? m : Math.max(m, replay.peakAllocatedBytes);
  return Math.max(peak, replay.maxReservedBytes);
}
