// Reserved address ranges over time, for one device: which bytes are cudaMalloc'd (or mapped, for
// expandable segments) at any event. Built from the final `segments` and the trace's segment_alloc /
// segment_free / segment_map / segment_unmap entries, cut into elementary intervals between every
// boundary either names. A range's state before its first trace event follows from that event
// (a segment_free or unmap means it was reserved before; an alloc or map that it was not); a range
// no event touches has its final state throughout.

import { Action, type SnapshotModel, type TraceTable } from "../model/types";
import { lowerBoundFloat64 } from "../sorted";

export interface ReservedExtents {
  /** Sorted boundaries; elementary interval j is [bounds[j], bounds[j+1]). */
  bounds: Float64Array;
  /** Per interval: 1 when it belongs to an expandable segment (mapped in pieces). */
  expandable: Uint8Array;
  /** Per interval: reserved before the first event. */
  initial: Uint8Array;
  /** Per interval: which segment holds it before the first event (see `owner`). */
  initialOwner: Int32Array;
  /** Per interval: reserved in the final `segments`. */
  final: Uint8Array;
  /** Segment events in trace order: event index, interval range [lo, hi), 1 = reserve / 0 = release. */
  eventIndex: Int32Array;
  lo: Int32Array;
  hi: Int32Array;
  target: Uint8Array;
  /** Segment identity a reserving event gives its intervals: adjacent intervals with the same owner
   * form one region (a block can span them). cudaMalloc'd segments get a unique id (final segment
   * index, or segments.length + event position); mapped pieces of expandable segments share
   * EXPANDABLE_OWNER, so adjacent mapped runs merge. */
  owner: Int32Array;
  /** Change of reserved bytes each segment event caused (0 when it was already in that state). */
  delta: Float64Array;
  initialReservedBytes: number;
  /** Reserved bytes at the end of the replay (after the last event). */
  endReservedBytes: number;
  /** Σ total_size of the device's final segments. */
  snapshotReservedBytes: number;
  /** Bytes whose replayed end state differs from the final segments. */
  mismatchBytes: number;
  /** Segment events that found their range already in the target state (partly or wholly). */
  redundantEvents: number;
  /** The interval of every page of the bounds' span, where they allow it (intervalPages); else null. */
  pages: IntervalPages | null;
}

/**
 * The interval of each `pageBytes` page from bounds[0] to the last bound: every bound is a multiple of
 * pageBytes from the first (cudaMalloc'd and mapped segments start and end on 2 MiB pages), so no page
 * straddles two intervals, and an address's interval is one read instead of a binary search (the replay
 * asks it at every large allocation: 12 % of its sweep on the real-shaped 1 GB file).
 */
export interface IntervalPages {
  base: number;
  /** 1 / pageBytes (a power of two: exact). */
  perByte: number;
  interval: Int32Array;
}

/** A table of at most this many pages (4 MiB) or none: 2 TiB of address space at 2 MiB a page. */
const MAX_PAGES = 1 << 20;
/** Pages are tried from 2 MiB down to this: below it the table would mostly be too long. */
const MIN_PAGE_BYTES = 64 << 10;

export function intervalPages(bounds: Float64Array): IntervalPages | null {
  if (bounds.length < 2) return null;
  const base = bounds[0];
  let page = 2 ** 21;
  for (let j = 1; j < bounds.length && page >= MIN_PAGE_BYTES; j++)
    while (page >= MIN_PAGE_BYTES && (bounds[j] - base) % page !== 0) page /= 2;
  if (page < MIN_PAGE_BYTES) return null;
  const count = (bounds[bounds.length - 1] - base) / page;
  if (count > MAX_PAGES) return null;
  const interval = new Int32Array(count);
  for (let j = 0; j + 1 < bounds.length; j++)
    interval.fill(j, (bounds[j] - base) / page, (bounds[j + 1] - base) / page);
  return { base, perByte: 1 / page, interval };
}

/** intervalOf(x.bounds, addr), from the page table where there is one. */
export function intervalAt(x: ReservedExtents, addr: number): number {
  const pages = x.pages;
  if (pages === null) return intervalOf(x.bounds, addr);
  const p = (addr - pages.base) * pages.perByte;
  // (also false for NaN)
  return p >= 0 && p < pages.interval.length ? pages.interval[p | 0] : -1;
}

export const EXPANDABLE_OWNER = -2;

function isSegmentAction(a: number): boolean {
  return (
    a === Action.segment_alloc ||
    a === Action.segment_free ||
    a === Action.segment_map ||
    a === Action.segment_unmap
  );
}

/** Index of the interval containing `addr` (largest j with bounds[j] ≤ addr), or -1. */
export function intervalOf(bounds: Float64Array, addr: number): number {
  let lo = 0;
  let hi = bounds.length - 1; // intervals 0 .. bounds.length-2
  if (hi <= 0 || !(addr >= bounds[0]) || addr >= bounds[hi]) return -1; // (NaN: -1)
  while (hi - lo > 1) {
    const mid = (lo + hi) >>> 1;
    if (bounds[mid] <= addr) lo = mid;
    else hi = mid;
  }
  return lo;
}

/**
 * `segmentEvents`: indices of the trace's segment entries, when the caller already has them (saves a
 * pass over the trace).
 */
export function buildExtents(
  model: SnapshotModel,
  device: number,
  trace: TraceTable | undefined,
  segmentEvents?: Int32Array,
): ReservedExtents {
  const segs = model.segments;
  const n = trace ? trace.length : 0;
  // Collect boundaries.
  let count = 0;
  for (let s = 0; s < segs.length; s++) if (segs.device[s] === device) count++;
  if (!segmentEvents) {
    const found: number[] = [];
    if (trace) {
      for (let i = 0; i < n; i++)
        if (!trace.isWorkspace[i] && isSegmentAction(trace.action[i])) found.push(i);
    }
    segmentEvents = Int32Array.from(found);
  }
  const segEventCount = segmentEvents.length;
  const raw = new Float64Array(2 * (count + segEventCount));
  let r = 0;
  let snapshotReservedBytes = 0;
  for (let s = 0; s < segs.length; s++) {
    if (segs.device[s] !== device) continue;
    raw[r++] = segs.address[s];
    raw[r++] = segs.address[s] + segs.totalSizeBytes[s];
    snapshotReservedBytes += segs.totalSizeBytes[s];
  }
  const evIndex = new Int32Array(segEventCount);
  let e = 0;
  if (trace) {
    for (let q = 0; q < segEventCount; q++) {
      const i = segmentEvents[q];
      const size = trace.sizeBytes[i];
      const addr = trace.addr[i];
      if (!(size > 0) || !Number.isFinite(addr)) continue;
      evIndex[e++] = i;
      raw[r++] = addr;
      raw[r++] = addr + size;
    }
  }
  const sorted = raw.subarray(0, r).sort();
  let u = 0;
  for (let i = 0; i < sorted.length; i++) if (u === 0 || sorted[i] !== sorted[u - 1]) sorted[u++] = sorted[i];
  const bounds = sorted.slice(0, u);
  const intervals = Math.max(0, u - 1);
  const expandable = new Uint8Array(intervals);
  const final = new Uint8Array(intervals);
  const finalOwner = new Int32Array(intervals).fill(-1);
  for (let s = 0; s < segs.length; s++) {
    if (segs.device[s] !== device) continue;
    const a = segs.address[s];
    const lo = lowerBoundFloat64(bounds, a);
    const hi = lowerBoundFloat64(bounds, a + segs.totalSizeBytes[s]);
    for (let j = lo; j < hi; j++) {
      final[j] = 1;
      if (segs.isExpandable[s]) expandable[j] = 1;
      finalOwner[j] = segs.isExpandable[s] ? EXPANDABLE_OWNER : s;
    }
  }
  const m = e;
  const eventIndex = evIndex.subarray(0, m);
  const loA = new Int32Array(m);
  const hiA = new Int32Array(m);
  const target = new Uint8Array(m);
  const owner = new Int32Array(m);
  const t = trace as TraceTable;
  for (let k = 0; k < m; k++) {
    const i = eventIndex[k];
    const a = t.action[i];
    const addr = t.addr[i];
    const lo = lowerBoundFloat64(bounds, addr);
    const hi = lowerBoundFloat64(bounds, addr + t.sizeBytes[i]);
    loA[k] = lo;
    hiA[k] = hi;
    target[k] = a === Action.segment_alloc || a === Action.segment_map ? 1 : 0;
    if (a === Action.segment_alloc || a === Action.segment_free) owner[k] = segs.length + k;
    else {
      owner[k] = EXPANDABLE_OWNER;
      for (let j = lo; j < hi; j++) expandable[j] = 1;
    }
  }
  // State before the first event touching each interval: a release says it was reserved (by the
  // segment that release frees), a reserve that it was not.
  const initial = final.slice();
  const initialOwner = finalOwner.slice();
  const touched = new Uint8Array(intervals);
  for (let k = 0; k < m; k++) {
    for (let j = loA[k]; j < hiA[k]; j++) {
      if (touched[j]) continue;
      touched[j] = 1;
      initial[j] = target[k] ? 0 : 1;
      initialOwner[j] = target[k] ? -1 : owner[k];
    }
  }
  let reserved = 0;
  for (let j = 0; j < intervals; j++) if (initial[j]) reserved += bounds[j + 1] - bounds[j];
  const initialReservedBytes = reserved;
  const state = initial.slice();
  const delta = new Float64Array(m);
  let redundantEvents = 0;
  for (let k = 0; k < m; k++) {
    let d = 0;
    let redundant = false;
    const want = target[k];
    for (let j = loA[k]; j < hiA[k]; j++) {
      if (state[j] === want) {
        redundant = true;
        continue;
      }
      state[j] = want;
      const len = bounds[j + 1] - bounds[j];
      d += want ? len : -len;
    }
    if (redundant) redundantEvents++;
    delta[k] = d;
    reserved += d;
  }
  let mismatchBytes = 0;
  for (let j = 0; j < intervals; j++) if (state[j] !== final[j]) mismatchBytes += bounds[j + 1] - bounds[j];
  return {
    bounds,
    expandable,
    initial,
    initialOwner,
    final,
    eventIndex,
    lo: loA,
    hi: hiA,
    target,
    owner,
    delta,
    initialReservedBytes,
    endReservedBytes: reserved,
    snapshotReservedBytes,
    mismatchBytes,
    redundantEvents,
    pages: intervalPages(bounds),
  };
}

/** Reserved state and owner of every interval; mutate with `applySegmentEvent`. */
export interface IntervalState {
  reserved: Uint8Array;
  owner: Int32Array;
}

export function initialIntervalState(x: ReservedExtents): IntervalState {
  return { reserved: x.initial.slice(), owner: x.initialOwner.slice() };
}

/** Applies segment event k (position in x.eventIndex). */
export function applySegmentEvent(x: ReservedExtents, st: IntervalState, k: number): void {
  const want = x.target[k];
  const own = want ? x.owner[k] : -1;
  for (let j = x.lo[k]; j < x.hi[k]; j++) {
    st.reserved[j] = want;
    st.owner[j] = own;
  }
}

/** Reserved state of every interval after event `eventIndex` (-1: before the first event). */
export function intervalStateAt(x: ReservedExtents, eventIndex: number): IntervalState {
  const st = initialIntervalState(x);
  for (let k = 0; k < x.eventIndex.length && x.eventIndex[k] <= eventIndex; k++) applySegmentEvent(x, st, k);
  return st;
}

/** Contiguous reserved regions (segments, or mapped runs of an expandable segment), address order. */
export interface Regions {
  length: number;
  start: Float64Array;
  end: Float64Array;
  expandable: Uint8Array;
}

export function regionsFromState(x: ReservedExtents, st: IntervalState): Regions {
  const E = st.reserved.length;
  const start = new Float64Array(E);
  const end = new Float64Array(E);
  const expandable = new Uint8Array(E);
  let n = 0;
  let j = 0;
  while (j < E) {
    if (!st.reserved[j]) {
      j++;
      continue;
    }
    const own = st.owner[j];
    let k = j + 1;
    while (k < E && st.reserved[k] && st.owner[k] === own) k++;
    start[n] = x.bounds[j];
    end[n] = x.bounds[k];
    expandable[n] = x.expandable[j];
    n++;
    j = k;
  }
  return { length: n, start: start.slice(0, n), end: end.slice(0, n), expandable: expandable.slice(0, n) };
}

/**
 * End of the cudaMalloc'd segment holding `addr` in the given state; NaN when no reserved segment
 * holds it; -1 when an expandable segment does (its blocks are split exactly, nothing to fit).
 */
export function fitRegionEnd(x: ReservedExtents, st: IntervalState, addr: number): number {
  return fitRegionEndAt(x, st, intervalAt(x, addr));
}

/** fitRegionEnd for the interval `j` (from intervalOf) holding the address. */
export function fitRegionEndAt(x: ReservedExtents, st: IntervalState, j: number): number {
  if (j < 0 || !st.reserved[j]) return Number.NaN;
  if (x.expandable[j]) return -1;
  const own = st.owner[j];
  const E = st.reserved.length;
  let k = j + 1;
  while (k < E && st.reserved[k] && st.owner[k] === own) k++;
  return x.bounds[k];
}

/** Index of the region holding `addr`, or -1. */
export function regionOf(regions: Regions, addr: number): number {
  let lo = 0;
  let hi = regions.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    if (regions.start[mid] <= addr) lo = mid + 1;
    else hi = mid - 1;
  }
  const k = lo - 1;
  return k >= 0 && addr < regions.end[k] ? k : -1;
}
