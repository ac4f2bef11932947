// Composition of the allocated bytes at an event (the peak, or any other): by category and by call
// site, summing exactly to the allocated column at that event.

import { isAllocatedAt, liveAllocationsAt } from "./state";
import type { EventIndex, Replay } from "./types";

export interface SiteShare {
  /** Call-site id (index into siteKeys); -1 = no call site; -2 = the remainder beyond the top N. */
  site: number;
  category: number;
  bytes: number;
  count: number;
  /** The forward stack (forward_frames) of these allocations; absent when they have none. */
  forward?: number;
}

export interface Composition {
  eventIndex: EventIndex;
  /** Rounded bytes allocated (not pending free) after the event. */
  allocatedBytes: number;
  byCategory: Float64Array;
  /** Live allocation counts per category. */
  countByCategory: Int32Array;
  /** (site, category) pairs by bytes, largest first; with `top`, a last row site -2 holds the rest. */
  sites: SiteShare[];
  /** Allocations alive since before the trace, and their bytes. */
  beforeTraceCount: number;
  beforeTraceBytes: number;
}

/** Allocated bytes at event i by category and (call site, category). */
export function compositionAt(r: Replay, i: EventIndex, top = Number.POSITIVE_INFINITY): Composition {
  const ids = liveAllocationsAt(r, i);
  const A = r.allocations;
  const byCategory = new Float64Array(r.categoryCount);
  const countByCategory = new Int32Array(r.categoryCount);
  const bySite = new Map<number | string, SiteShare>();
  // forward_frames split a site's row by the forward stack that made it (only files that carry them)
  const fwd = r.trace?.forwardStack;
  let total = 0;
  let beforeTraceCount = 0;
  let beforeTraceBytes = 0;
  for (let j = 0; j < ids.length; j++) {
    const k = ids[j];
    if (!isAllocatedAt(r, k, i)) continue;
    const size = A.sizeBytes[k];
    const c = A.category[k];
    total += size;
    byCategory[c] += size;
    countByCategory[c]++;
    if (A.allocEvent[k] < 0) {
      beforeTraceCount++;
      beforeTraceBytes += size;
    }
    const site = A.site[k];
    const e = A.allocEvent[k];
    const forward = fwd && e >= 0 ? fwd[e] : 0;
    const key = forward ? `${site}:${c}:${forward}` : site * 256 + c;
    let s = bySite.get(key);
    if (!s) {
      s = { site, category: c, bytes: 0, count: 0 };
      if (forward) s.forward = forward;
      bySite.set(key, s);
    }
    s.bytes += size;
    s.count++;
  }
  let sites = [...bySite.values()].sort(
    (p, q) => q.bytes - p.bytes || p.site - q.site || p.category - q.category,
  );
  if (sites.length > top) {
    const rest = sites.slice(top);
    sites = sites.slice(0, top);
    const other: SiteShare = { site: -2, category: r.unknownCategory, bytes: 0, count: 0 };
    for (const s of rest) {
      other.bytes += s.bytes;
      other.count += s.count;
    }
    sites.push(other);
  }
  return {
    eventIndex: i,
    allocatedBytes: total,
    byCategory,
    countByCategory,
    sites,
    beforeTraceCount,
    beforeTraceBytes,
  };
}

/** The composition at the replay's peak (highest allocated, first event reaching it); null without events. */
export function peakComposition(r: Replay, top?: number): Composition | null {
  return r.peakEvent === null ? null : compositionAt(r, r.peakEvent, top);
}
