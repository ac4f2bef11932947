// Pinned host memory (`_record_memory_history(record_pinned_host_memory=True)`, torch 2.14): the host
// caching allocator's blocks (`host_segments`, one segment per block, device -1) and its flat trace
// (`host_traces`). Its own lane: never added to a device's totals. Sizes are the rounded block sizes the
// host allocator hands out (powers of two), so allocated and reserved here are in block bytes.
//
// The curve is replayed backwards from the final state (as MemoryViz's State History does), so a trace
// whose start was lost still ends exactly at the segments' totals: allocated moves at `alloc` (+) and at
// the user's free (`free_requested`, or `free_completed` when no `free_requested` came first: a file
// recorded with skip_actions); reserved moves at `segment_alloc` (+) and `segment_free` (−).

import type { Attribution } from "../attribution";
import { Action, type HostMemory, type SnapshotModel } from "../model/types";

export interface HostCallSite {
  site: string;
  label: string;
  bytes: number;
  blocks: number;
}

/** `report --json`'s `host` (null when the file has no pinned host memory). */
export interface HostJson {
  /** Pinned blocks at the snapshot (host_segments). */
  segments: number;
  reservedBytes: number;
  allocatedBytes: number;
  /** The highest allocated over the host trace (the snapshot's allocated when there is no trace). */
  peakAllocatedBytes: number;
  /** The host trace event at the peak (null: the peak is the snapshot itself or before the trace). */
  peakEventIndex: number | null;
  traceEntries: number;
  /** Allocated host blocks at the snapshot by call site (innermost own-code frame), largest first. */
  topCallSites: HostCallSite[];
  /**
   * The host lane's timeline for the page and the HTML report: allocated and reserved after host trace
   * entries, at most ~2 × HOST_TIMELINE_POINTS points (each stretch keeps its lowest and highest); x is
   * time_us when every entry has one, else the entry index. Empty without a host trace.
   */
  timeline: { hasTime: boolean; x: number[]; allocated: number[]; reserved: number[] };
  /** The pinned blocks at the snapshot in address order (the segment map), at most HOST_MAP_BLOCKS. */
  blocks: { address: number; sizeBytes: number; allocated: boolean }[];
}

export const HOST_TIMELINE_POINTS = 400;
export const HOST_MAP_BLOCKS = 4000;

export interface HostCurve {
  /** time_us where every entry has one, else the entry index. */
  x: Float64Array;
  hasTime: boolean;
  /** After each entry. */
  allocated: Float64Array;
  reserved: Float64Array;
  initialAllocatedBytes: number;
  initialReservedBytes: number;
}

export function hostOf(model: SnapshotModel): HostMemory | null {
  const h = model.host ?? null;
  return h && (h.segments.length > 0 || h.trace.length > 0) ? h : null;
}

/** Allocated and reserved after every host trace entry, anchored at the final segments. */
export function hostCurve(h: HostMemory): HostCurve {
  const t = h.trace;
  const n = t.length;
  const dAlloc = new Float64Array(n);
  const dReserved = new Float64Array(n);
  const requested = new Set<number>();
  for (let i = 0; i < n; i++) {
    const size = t.sizeBytes[i];
    const addr = t.addr[i];
    switch (t.action[i]) {
      case Action.alloc:
        dAlloc[i] = size;
        requested.delete(addr);
        break;
      case Action.free_requested:
        dAlloc[i] = -size;
        requested.add(addr);
        break;
      case Action.free_completed:
        if (!requested.delete(addr)) dAlloc[i] = -size;
        break;
      case Action.segment_alloc:
        dReserved[i] = size;
        break;
      case Action.segment_free:
        dReserved[i] = -size;
        break;
    }
  }
  let finalAlloc = 0;
  let finalReserved = 0;
  for (const s of h.segments) {
    finalAlloc += s.allocatedSizeBytes;
    finalReserved += s.totalSizeBytes;
  }
  let sumA = 0;
  let sumR = 0;
  for (let i = 0; i < n; i++) {
    sumA += dAlloc[i];
    sumR += dReserved[i];
  }
  const allocated = new Float64Array(n);
  const reserved = new Float64Array(n);
  let a = finalAlloc - sumA;
  let r = finalReserved - sumR;
  const initialAllocatedBytes = a;
  const initialReservedBytes = r;
  let hasTime = n > 0;
  for (let i = 0; i < n; i++) {
    a += dAlloc[i];
    r += dReserved[i];
    allocated[i] = a;
    reserved[i] = r;
    if (!Number.isFinite(t.timeUs[i])) hasTime = false;
  }
  const x = new Float64Array(n);
  for (let i = 0; i < n; i++) x[i] = hasTime ? t.timeUs[i] : i;
  return { x, hasTime, allocated, reserved, initialAllocatedBytes, initialReservedBytes };
}

/** The host lane's summary for the report; null when the file has no pinned host memory. */
export function hostSummary(model: SnapshotModel, a: Attribution | null, top = 10): HostJson | null {
  const h = hostOf(model);
  if (!h) return null;
  let allocatedBytes = 0;
  let reservedBytes = 0;
  const sites = new Map<string, HostCallSite>();
  for (const s of h.segments) {
    allocatedBytes += s.allocatedSizeBytes;
    reservedBytes += s.totalSizeBytes;
    if (s.allocatedSizeBytes <= 0) continue;
    const site = a ? a.sites[a.stackSite[s.stack]] : null;
    const key = site?.key ?? "no stack recorded";
    let row = sites.get(key);
    if (!row) sites.set(key, (row = { site: key, label: site?.label ?? key, bytes: 0, blocks: 0 }));
    row.bytes += s.allocatedSizeBytes;
    row.blocks++;
  }
  const curve = hostCurve(h);
  // without a trace the snapshot is all there is; with one, the curve ends at the snapshot's allocated
  let peak = curve.allocated.length > 0 ? curve.initialAllocatedBytes : allocatedBytes;
  let peakEventIndex: number | null = null;
  for (let i = 0; i < curve.allocated.length; i++) {
    if (curve.allocated[i] > peak) {
      peak = curve.allocated[i];
      peakEventIndex = i;
    }
  }
  const timeline = {
    hasTime: curve.hasTime,
    x: [] as number[],
    allocated: [] as number[],
    reserved: [] as number[],
  };
  const n = curve.allocated.length;
  const step = Math.max(1, Math.ceil(n / HOST_TIMELINE_POINTS));
  for (let from = 0; from < n; from += step) {
    const to = Math.min(n, from + step);
    let lo = from;
    let hi = from;
    for (let i = from; i < to; i++) {
      if (curve.allocated[i] < curve.allocated[lo]) lo = i;
      if (curve.allocated[i] > curve.allocated[hi]) hi = i;
    }
    for (const i of lo === hi ? [lo] : [Math.min(lo, hi), Math.max(lo, hi)]) {
      timeline.x.push(curve.x[i]);
      timeline.allocated.push(curve.allocated[i]);
      timeline.reserved.push(curve.reserved[i]);
    }
  }
  const blocks = [...h.segments]
    .sort((x, y) => x.address - y.address)
    .slice(0, HOST_MAP_BLOCKS)
    .map((s) => ({ address: s.address, sizeBytes: s.totalSizeBytes, allocated: s.allocatedSizeBytes > 0 }));
  return {
    segments: h.segments.length,
    reservedBytes,
    allocatedBytes,
    peakAllocatedBytes: peak,
    peakEventIndex,
    traceEntries: h.trace.length,
    topCallSites: [...sites.values()]
      .sort((x, y) => y.bytes - x.bytes || x.site.localeCompare(y.site))
      .slice(0, top),
    timeline,
    blocks,
  };
}
