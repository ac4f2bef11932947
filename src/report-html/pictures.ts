// The data behind the HTML report's two pictures, taken from core objects (pure: no DOM, no I/O):
// the timeline (allocated by category over the replayed trace, downsampled so that every bucket keeps its
// lowest and highest event: the peak is always a point) and the segment map at the snapshot (every
// segment of a device, its blocks by category or state).

import { BlockState, type SnapshotModel } from "../core/model/types";
import type { Replay } from "../core/replay/types";

export interface TimelinePicture {
  device: number;
  /** x is time_us (else the event index). */
  hasTime: boolean;
  /** Events in the device's trace. */
  events: number;
  /** Event index of each point; -1 is the state before the first event. */
  event: number[];
  x: number[];
  /** Category names, one series each (allocated bytes at each point, rounded block bytes). */
  categories: string[];
  series: number[][];
  allocated: number[];
  reserved: number[];
  /** The highest allocated over the whole trace (every event, not just the points) and its first event. */
  peakBytes: number;
  peakEvent: number | null;
  /** x of each OOM marker. */
  oomX: number[];
}

/**
 * The event indices to draw: the state before the trace, then per bucket of consecutive events the one
 * with the lowest and the one with the highest allocated (first of equals), then the last event; at most
 * maxPoints in all.
 */
export function samplePoints(allocated: ArrayLike<number>, n: number, maxPoints: number): number[] {
  const out: number[] = [-1];
  if (n === 0) return out;
  if (n + 1 <= maxPoints) {
    for (let i = 0; i < n; i++) out.push(i);
    return out;
  }
  const buckets = Math.max(1, Math.floor((maxPoints - 2) / 2));
  for (let b = 0; b < buckets; b++) {
    const lo = Math.floor((b * n) / buckets);
    const hi = Math.floor(((b + 1) * n) / buckets);
    if (hi <= lo) continue;
    let iMin = lo;
    let iMax = lo;
    for (let i = lo + 1; i < hi; i++) {
      if (allocated[i] < allocated[iMin]) iMin = i;
      if (allocated[i] > allocated[iMax]) iMax = i;
    }
    if (iMin === iMax) out.push(iMin);
    else out.push(Math.min(iMin, iMax), Math.max(iMin, iMax));
  }
  if (out[out.length - 1] !== n - 1) out.push(n - 1);
  return out;
}

export function timelinePicture(
  r: Replay,
  categoryNames: readonly string[],
  maxPoints = 2000,
): TimelinePicture {
  const n = r.length;
  const event = samplePoints(r.allocated, n, maxPoints);
  const at = (col: ArrayLike<number>, initial: number, e: number) => (e < 0 ? initial : col[e]);
  const byEvent = event.map((e) => r.categoriesAt(e));
  const x0 = n > 0 ? r.x[0] : 0;
  const categories: string[] = [];
  const series: number[][] = [];
  for (let c = 0; c < r.categoryCount; c++) {
    const ys = byEvent.map((v) => v[c]);
    // A category that holds nothing anywhere in the trace is left out of the picture (not of the legend).
    if (!(r.categoryMaxBytes[c] > 0)) continue;
    categories.push(categoryNames[c] ?? `category ${c}`);
    series.push(ys);
  }
  return {
    device: r.device,
    hasTime: r.hasTime,
    events: n,
    event,
    x: event.map((e) => (e < 0 ? x0 : r.x[e])),
    categories,
    series,
    allocated: event.map((e) => at(r.allocated, r.initial.allocatedBytes, e)),
    reserved: event.map((e) => at(r.reserved, r.initial.reservedBytes, e)),
    peakBytes: r.peakAllocatedBytes,
    peakEvent: r.peakEvent,
    oomX: r.markers.oom.map((o) => r.x[o.eventIndex] ?? x0),
  };
}

/** Block classes of the segment map beyond the categories: pending free, and free (inactive). */
export const PENDING_FREE = "(pending free)";
export const FREE = "(free)";

export interface SegmentPicture {
  address: number;
  sizeBytes: number;
  stream: number;
  /** Blocks in address order: offset from the segment's start, size, class (a category name, or
   * PENDING_FREE / FREE). */
  blocks: { offset: number; sizeBytes: number; cls: string }[];
}

export interface SegmentMapPicture {
  device: number;
  segments: SegmentPicture[];
  reservedBytes: number;
  /** Σ active_allocated block bytes. */
  allocatedBytes: number;
}

/** Every device's segments at the snapshot, in address order; blocks by category (or state). */
export function segmentMapPictures(
  model: SnapshotModel,
  blockCategory: ArrayLike<number>,
  categoryNames: readonly string[],
): SegmentMapPicture[] {
  const s = model.segments;
  const b = model.blocks;
  const byDevice = new Map<number, number[]>();
  for (let i = 0; i < s.length; i++) {
    const list = byDevice.get(s.device[i]) ?? [];
    list.push(i);
    byDevice.set(s.device[i], list);
  }
  const out: SegmentMapPicture[] = [];
  for (const device of [...byDevice.keys()].sort((x, y) => x - y)) {
    const segs = byDevice.get(device)!.sort((x, y) => s.address[x] - s.address[y]);
    let reservedBytes = 0;
    let allocatedBytes = 0;
    const segments: SegmentPicture[] = segs.map((i) => {
      reservedBytes += s.totalSizeBytes[i];
      const blocks: SegmentPicture["blocks"] = [];
      const first = s.firstBlock[i];
      for (let k = first; k < first + s.blockCount[i]; k++) {
        const st = b.state[k];
        const cls =
          st === BlockState.active_allocated
            ? (categoryNames[blockCategory[k]] ?? "unknown")
            : st === BlockState.active_pending_free
              ? PENDING_FREE
              : FREE;
        if (st === BlockState.active_allocated) allocatedBytes += b.sizeBytes[k];
        blocks.push({ offset: b.address[k] - s.address[i], sizeBytes: b.sizeBytes[k], cls });
      }
      blocks.sort((x, y) => x.offset - y.offset);
      return { address: s.address[i], sizeBytes: s.totalSizeBytes[i], stream: s.stream[i], blocks };
    });
    out.push({ device, segments, reservedBytes, allocatedBytes });
  }
  return out;
}
