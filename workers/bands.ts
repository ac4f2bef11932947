// Per-allocation bands (MemoryViz's "Active Memory Timeline", without its cap): every allocation is a
// band stacked on the allocations made before it that are still alive; when one below is freed, those
// above drop. Level of detail by pixel: bands under one pixel tall are not emitted (they show as the
// grey total behind the bands), offsets are sampled once per pixel column. The offset of an
// allocation = Σ sizes of live allocations with a lower stack rank, kept in a Fenwick tree.

import { addressOf, BEFORE_TRACE, NEVER, type Replay } from "../src/core/replay/types";
import type { BandsAnswer, BandsQuery } from "./api";
import { axisX, lowerBound } from "./timeline";

const MAX_BANDS = 30000;
const MAX_POINTS = 2_000_000;

/** Stack rank of each allocation: allocations alive before the trace first (by address), then by alloc event. */
export function stackRanks(replay: Replay): Int32Array {
  const A = replay.allocations;
  const n = A.length;
  const order = new Int32Array(n);
  for (let k = 0; k < n; k++) order[k] = k;
  const ev = A.allocEvent;
  order.sort((p, q) => ev[p] - ev[q] || (ev[p] === BEFORE_TRACE ? addressOf(A, p) - addressOf(A, q) : p - q));
  const rank = new Int32Array(n);
  for (let r = 0; r < n; r++) rank[order[r]] = r;
  return rank;
}

class Fenwick {
  private t: Float64Array;
  constructor(readonly n: number) {
    this.t = new Float64Array(n + 1);
  }
  add(i: number, v: number): void {
    for (i++; i <= this.n; i += i & -i) this.t[i] += v;
  }
  /** Σ of entries [0, i). */
  prefix(i: number): number {
    let s = 0;
    for (; i > 0; i -= i & -i) s += this.t[i];
    return s;
  }
}

/** `inferredRule`: per allocation, the inferred rule that named its category (-1: none), for `inferred`. */
export function computeBands(
  replay: Replay,
  rank: Int32Array,
  q: BandsQuery,
  inferredRule?: Int16Array,
): BandsAnswer {
  const A = replay.allocations;
  const n = replay.length;
  const W = Math.max(1, Math.min(8000, Math.floor(q.width)));
  const minBytes = q.yMax > 0 && q.height > 0 ? q.yMax / q.height : 0;
  const fen = new Fenwick(A.length);
  const x = axisX(replay, q.axis);
  const w = (q.x1 - q.x0) / W;

  // Output, grown as needed.
  let count = 0;
  let points = 0;
  let alloc = new Int32Array(1024);
  let category = new Int32Array(1024);
  let size = new Float64Array(1024);
  let pointStart = new Int32Array(1025);
  let px = new Float64Array(8192);
  let py = new Float64Array(8192);
  let truncated = false;
  let lumped = 0;
  let lumpedBytesMax = 0;

  // Open bands: allocation id → band index; last emitted offset.
  const openBand = new Map<number, number>();
  const lastY = new Map<number, number>();
  // Points are appended per band; bands interleave, so collect per band then pack.
  const bandPoints: number[][] = [];

  const isBig = (k: number) => A.sizeBytes[k] >= minBytes;
  const startBand = (k: number, col: number) => {
    if (count >= MAX_BANDS || points >= MAX_POINTS) {
      truncated = true;
      return;
    }
    if (count === alloc.length) {
      alloc = grow(alloc);
      category = grow(category);
      size = grow(size);
    }
    const b = count++;
    alloc[b] = k;
    category[b] = A.category[k];
    size[b] = A.sizeBytes[k];
    const y = fen.prefix(rank[k]);
    bandPoints[b] = [col, y];
    points++;
    openBand.set(k, b);
    lastY.set(k, y);
  };
  const endBand = (k: number, col: number) => {
    const b = openBand.get(k);
    if (b === undefined) return;
    bandPoints[b].push(col, lastY.get(k) ?? 0);
    points++;
    openBand.delete(k);
    lastY.delete(k);
  };

  // The live set before the first event.
  for (let k = 0; k < A.length; k++) {
    if (A.allocEvent[k] === BEFORE_TRACE && A.freeCompletedEvent[k] !== BEFORE_TRACE)
      fen.add(rank[k], A.sizeBytes[k]);
  }
  const trace = replay.trace;
  const apply = (e: number, col: number, emit: boolean) => {
    const k = replay.eventAllocation[e];
    if (k < 0 || trace?.isWorkspace[e]) return;
    if (A.allocEvent[k] === e) {
      const old = replay.implicitCloses.get(e);
      if (old !== undefined) {
        if (emit) endBand(old, col + 1);
        fen.add(rank[old], -A.sizeBytes[old]);
      }
      fen.add(rank[k], A.sizeBytes[k]);
      if (emit) {
        if (isBig(k)) startBand(k, col);
        else {
          lumped++;
          if (A.sizeBytes[k] > lumpedBytesMax) lumpedBytesMax = A.sizeBytes[k];
        }
      }
    } else if (A.freeCompletedEvent[k] === e) {
      if (emit) endBand(k, col + 1);
      fen.add(rank[k], -A.sizeBytes[k]);
    }
  };

  // Apply everything before the view without emitting.
  const firstInView = n > 0 ? lowerBound(n, x, q.x0) : 0;
  for (let e = 0; e < firstInView; e++) apply(e, 0, false);
  // Bands alive at the view's left edge start at column 0; when the view begins before the trace (the
  // default view has a margin), those alive before the trace start at its first event's column.
  if (n > 0 && (firstInView > 0 || x(0) < q.x1)) {
    const startCol = firstInView > 0 ? 0 : Math.max(0, Math.floor((x(0) - q.x0) / w));
    for (let k = 0; k < A.length; k++) {
      const alive = A.allocEvent[k] < firstInView && A.freeCompletedEvent[k] >= firstInView;
      if (alive && isBig(k)) startBand(k, startCol);
    }
  }
  let e = firstInView;
  let col = 0;
  if (n > 0 && firstInView === 0) col = Math.max(0, Math.floor((x(0) - q.x0) / w));
  for (; col < W && e < n; col++) {
    const colEnd = q.x0 + (col + 1) * w;
    if (e < n && x(e) >= colEnd) {
      // No events in this column: offsets cannot change.
      continue;
    }
    while (e < n && x(e) < colEnd) apply(e++, col, true);
    // Sample offsets of open bands at the column's end.
    for (const [k, b] of openBand) {
      const y = fen.prefix(rank[k]);
      if (y !== lastY.get(k)) {
        bandPoints[b].push(col + 1, y);
        points++;
        lastY.set(k, y);
      }
    }
  }
  // Bands still alive at the end of the trace (or the view) run to the trace's last column.
  const endCol = n > 0 ? Math.min(W, Math.max(0, Math.ceil((x(n - 1) - q.x0) / w))) : 0;
  for (const k of [...openBand.keys()]) endBand(k, Math.max(endCol, 0));

  // Pack.
  pointStart = new Int32Array(count + 1);
  let total = 0;
  for (let b = 0; b < count; b++) {
    pointStart[b] = total;
    total += bandPoints[b].length / 2;
  }
  pointStart[count] = total;
  px = new Float64Array(total);
  py = new Float64Array(total);
  let p = 0;
  for (let b = 0; b < count; b++) {
    const pts = bandPoints[b];
    for (let j = 0; j < pts.length; j += 2) {
      px[p] = q.x0 + pts[j] * w;
      py[p] = pts[j + 1];
      p++;
    }
  }
  const inferred = new Uint8Array(count);
  if (inferredRule) for (let b = 0; b < count; b++) inferred[b] = inferredRule[alloc[b]] >= 0 ? 1 : 0;
  return {
    count,
    alloc: alloc.slice(0, count),
    inferred,
    category: category.slice(0, count),
    sizeBytes: size.slice(0, count),
    pointStart,
    px,
    py,
    lumped,
    lumpedBytesMax,
    truncated,
  };
}

function grow<T extends Int32Array | Float64Array>(a: T): T {
  const b = new (a.constructor as { new (n: number): T })(a.length * 2);
  b.set(a);
  return b;
}

export { NEVER };
