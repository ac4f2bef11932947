// The state at any event: live allocations (from the nearest checkpoint plus at most
// checkpointEvery events), their placement in the reserved regions of that moment, fragmentation,
// and a cursor for cheap sequential stepping.

import { Action } from "../model/types";
import { formatBytes } from "../units";
import { intervalStateAt, type Regions, regionOf, regionsFromState } from "./extents";
import {
  addressOf,
  BEFORE_TRACE,
  type EventIndex,
  type IndexIntoAllocations,
  NEVER,
  type Replay,
  requestedOf,
  stackOf,
} from "./types";

function checkEvent(r: Replay, i: EventIndex): void {
  if (!Number.isInteger(i) || i < BEFORE_TRACE || i >= r.length) {
    throw new RangeError(
      `event ${i} is outside the trace of device ${r.device} (0 … ${r.length - 1}, or -1 for its start)`,
    );
  }
}

/**
 * Allocations active (allocated or pending free) after event `i` (-1: before the first event), in
 * no particular order. Cost: one checkpoint's live set plus fewer than checkpointEvery events.
 */
export function liveAllocationsAt(r: Replay, i: EventIndex): Int32Array {
  checkEvent(r, i);
  if (r.checkpointsBuilt === false) return liveByPass(r, i).slice();
  const K = r.checkpointEvery;
  const c = Math.min(Math.floor((i + 1) / K), r.checkpoints.length - 1);
  const base = r.checkpoints[c];
  const freeComp = r.allocations.freeCompletedEvent;
  const out = new Int32Array(base.length + Math.max(0, i + 1 - c * K));
  let n = 0;
  for (let j = 0; j < base.length; j++) {
    const k = base[j];
    if (freeComp[k] > i) out[n++] = k;
  }
  const trace = r.trace;
  if (trace) {
    const action = trace.action;
    const ev = r.eventAllocation;
    for (let e = c * K; e <= i; e++) {
      if (action[e] !== Action.alloc) continue;
      const k = ev[e];
      if (k >= 0 && freeComp[k] > i && !trace.isWorkspace[e]) out[n++] = k;
    }
  }
  return out.slice(0, n);
}

/**
 * The live sets asked for before the checkpoints exist, by event (the last few). A load asks for the
 * peak's and the end's only (the panel, the report), several times each: a pass over the allocations
 * for each of those costs a fraction of building the checkpoints (≈ 90 ms on 6.6 M events), which
 * then wait for the first query at another moment (the call tree, the map, a click on the timeline).
 */
const livePasses = new WeakMap<Replay, { event: EventIndex; ids: Int32Array }[]>();

function liveByPass(r: Replay, i: EventIndex): Int32Array {
  let seen = livePasses.get(r);
  if (!seen) livePasses.set(r, (seen = []));
  const hit = seen.find((s) => s.event === i);
  if (hit) return hit.ids;
  // allocated at or before i (BEFORE_TRACE: before the trace) and not yet returned to the pool after it
  const allocEvent = r.allocations.allocEvent;
  const freeComp = r.allocations.freeCompletedEvent;
  const count = r.allocations.length;
  let n = 0;
  for (let k = 0; k < count; k++) if (allocEvent[k] <= i && freeComp[k] > i) n++;
  const ids = new Int32Array(n);
  for (let k = 0, j = 0; j < n; k++) if (allocEvent[k] <= i && freeComp[k] > i) ids[j++] = k;
  if (seen.length === 4) seen.shift();
  seen.push({ event: i, ids });
  return ids;
}

/** Is allocation k allocated (not yet free-requested) after event i? */
export function isAllocatedAt(r: Replay, k: IndexIntoAllocations, i: EventIndex): boolean {
  const fr = r.allocations.freeRequestedEvent[k];
  return fr === NEVER || fr > i;
}

/** Reserved regions after event i. */
export function regionsAt(r: Replay, i: EventIndex): Regions {
  return regionsFromState(r.extents, intervalStateAt(r.extents, i));
}

export interface LiveBlocks {
  device: number;
  eventIndex: EventIndex;
  /** Allocation ids, sorted by address. */
  allocation: Int32Array;
  address: Float64Array;
  /** Rounded block bytes (see allocations.sizeSource for how each is known). */
  sizeBytes: Float64Array;
  requestedBytes: Float64Array;
  /** 1 when pending free (free requested, block not yet returned). */
  pendingFree: Uint8Array;
  category: Uint8Array;
  site: Int32Array;
  stack: Int32Array;
  stream: Int32Array;
  /** The reserved region (segment, or mapped run of an expandable segment) holding the block; -1 none. */
  region: Int32Array;
  regions: Regions;
}

/** The live blocks after event i with their placement, categories and stacks. */
export function stateAt(r: Replay, i: EventIndex): LiveBlocks {
  const live = liveAllocationsAt(r, i);
  const A = r.allocations;
  const n = live.length;
  // each live allocation's address read once (addressOf may look in the trace), then sorted by it
  const liveAddress = new Float64Array(n);
  for (let j = 0; j < n; j++) liveAddress[j] = addressOf(A, live[j]);
  const order = new Int32Array(n);
  for (let j = 0; j < n; j++) order[j] = j;
  order.sort((p, q) => liveAddress[p] - liveAddress[q] || p - q);
  const ids = new Int32Array(n);
  for (let j = 0; j < n; j++) ids[j] = live[order[j]];
  const out: LiveBlocks = {
    device: r.device,
    eventIndex: i,
    allocation: ids,
    address: new Float64Array(n),
    sizeBytes: new Float64Array(n),
    requestedBytes: new Float64Array(n),
    pendingFree: new Uint8Array(n),
    category: new Uint8Array(n),
    site: new Int32Array(n),
    stack: new Int32Array(n),
    stream: new Int32Array(n),
    region: new Int32Array(n),
    regions: regionsAt(r, i),
  };
  const regions = out.regions;
  let g = 0;
  for (let j = 0; j < n; j++) {
    const k = ids[j];
    const a = liveAddress[order[j]];
    out.address[j] = a;
    out.sizeBytes[j] = A.sizeBytes[k];
    out.requestedBytes[j] = requestedOf(A, k);
    out.pendingFree[j] = isAllocatedAt(r, k, i) ? 0 : 1;
    out.category[j] = A.category[k];
    out.site[j] = A.site[k];
    out.stack[j] = stackOf(A, k);
    out.stream[j] = A.stream[k];
    // Blocks and regions are both in address order: advance the region pointer.
    while (g < regions.length && regions.end[g] <= a) g++;
    out.region[j] = g < regions.length && regions.start[g] <= a ? g : regionOf(regions, a);
  }
  return out;
}

export interface Fragmentation {
  eventIndex: EventIndex;
  reservedBytes: number;
  allocatedBytes: number;
  activeBytes: number;
  /** reserved − allocated: what the cache holds beyond live tensors (pending frees included). */
  reservedMinusAllocatedBytes: number;
  /** reserved − active: free bytes inside cached segments, usable by new allocations. */
  freeInCachedSegmentsBytes: number;
  /** The largest contiguous free run inside one reserved region (the biggest block a request could get
   * without a new cudaMalloc, streams and pools aside). */
  largestFreeBlockBytes: number;
  largestFreeBlockAddress: number | null;
}

// (not `requested`: reading it would build its whole column, 40 MiB at 5 M events, for one number)
function totalsAt(r: Replay, i: EventIndex) {
  if (i < 0) {
    return {
      allocated: r.initial.allocatedBytes,
      active: r.initial.activeBytes,
      reserved: r.initial.reservedBytes,
    };
  }
  return {
    allocated: r.allocated[i],
    active: r.active[i],
    reserved: r.reserved[i],
  };
}

/** Fragmentation after event i. */
export function fragmentationAt(r: Replay, i: EventIndex, state: LiveBlocks = stateAt(r, i)): Fragmentation {
  const t = totalsAt(r, i);
  const regions = state.regions;
  let best = 0;
  let bestAddr: number | null = null;
  let j = 0;
  const n = state.address.length;
  for (let g = 0; g < regions.length; g++) {
    let pos = regions.start[g];
    const end = regions.end[g];
    while (j < n && state.address[j] < pos) j++;
    for (; j < n && state.address[j] < end; j++) {
      const a = state.address[j];
      if (a - pos > best) {
        best = a - pos;
        bestAddr = pos;
      }
      pos = Math.max(pos, a + state.sizeBytes[j]);
    }
    if (end - pos > best) {
      best = end - pos;
      bestAddr = pos;
    }
  }
  return {
    eventIndex: i,
    reservedBytes: t.reserved,
    allocatedBytes: t.allocated,
    activeBytes: t.active,
    reservedMinusAllocatedBytes: t.reserved - t.allocated,
    freeInCachedSegmentsBytes: t.reserved - t.active,
    largestFreeBlockBytes: best,
    largestFreeBlockAddress: bestAddr,
  };
}

export interface OomSummary {
  eventIndex: EventIndex;
  timeUs: number | null;
  requestedBytes: number;
  deviceFreeBytes: number | null;
  freeInCachedSegmentsBytes: number;
  largestFreeBlockBytes: number;
  reservedBytes: number;
  allocatedBytes: number;
  message: string;
}

export { formatBytes };

/** "asked for X, Y free in cached segments, largest free block Z" for every oom entry. */
export function oomSummaries(r: Replay): OomSummary[] {
  return r.markers.oom.map((m) => {
    const f = fragmentationAt(r, m.eventIndex);
    const dev = Number.isFinite(m.deviceFreeBytes) ? m.deviceFreeBytes : null;
    const message =
      `asked for ${formatBytes(m.requestedBytes)}, ${formatBytes(f.freeInCachedSegmentsBytes)} free in cached segments, ` +
      `largest free block ${formatBytes(f.largestFreeBlockBytes)}` +
      (dev !== null ? `; the device reported ${formatBytes(dev)} free` : "") +
      ` (reserved ${formatBytes(f.reservedBytes)}, allocated ${formatBytes(f.allocatedBytes)})`;
    return {
      eventIndex: m.eventIndex,
      timeUs: m.timeUs,
      requestedBytes: m.requestedBytes,
      deviceFreeBytes: dev,
      freeInCachedSegmentsBytes: f.freeInCachedSegmentsBytes,
      largestFreeBlockBytes: f.largestFreeBlockBytes,
      reservedBytes: f.reservedBytes,
      allocatedBytes: f.allocatedBytes,
      message,
    };
  });
}

/**
 * Steps through the events one at a time, keeping the live set: O(1) per step forwards or
 * backwards. `seek` jumps through a checkpoint.
 */
export class ReplayCursor {
  /** The state is the one after this event (-1: before the first). */
  index: EventIndex = BEFORE_TRACE;
  private ids: Int32Array;
  private pos: Int32Array;
  private count = 0;

  constructor(private readonly r: Replay) {
    this.ids = new Int32Array(r.allocations.length);
    this.pos = new Int32Array(r.allocations.length).fill(-1);
    this.seek(BEFORE_TRACE);
  }

  /** Allocations active now (a view; valid until the next step). */
  live(): Int32Array {
    return this.ids.subarray(0, this.count);
  }

  get liveCount(): number {
    return this.count;
  }

  private add(k: number): void {
    if (this.pos[k] >= 0) return;
    this.pos[k] = this.count;
    this.ids[this.count++] = k;
  }

  private remove(k: number): void {
    const p = this.pos[k];
    if (p < 0) return;
    const last = this.ids[--this.count];
    this.ids[p] = last;
    this.pos[last] = p;
    this.pos[k] = -1;
  }

  seek(i: EventIndex): void {
    const next = liveAllocationsAt(this.r, i);
    for (let j = 0; j < this.count; j++) this.pos[this.ids[j]] = -1;
    this.count = 0;
    for (let j = 0; j < next.length; j++) this.add(next[j]);
    this.index = i;
  }

  /** Applies the next event; false at the end. */
  next(): boolean {
    const e = this.index + 1;
    if (e >= this.r.length) return false;
    const k = this.r.eventAllocation[e];
    if (k >= 0) {
      const A = this.r.allocations;
      if (A.allocEvent[k] === e) {
        const old = this.r.implicitCloses.get(e);
        if (old !== undefined) this.remove(old);
        this.add(k);
      } else if (A.freeCompletedEvent[k] === e) this.remove(k);
    }
    this.index = e;
    return true;
  }

  /** Undoes the current event; false at the start. */
  prev(): boolean {
    const e = this.index;
    if (e < 0) return false;
    const k = this.r.eventAllocation[e];
    if (k >= 0) {
      const A = this.r.allocations;
      if (A.allocEvent[k] === e) {
        this.remove(k);
        const old = this.r.implicitCloses.get(e);
        if (old !== undefined) this.add(old);
      } else if (A.freeCompletedEvent[k] === e) this.add(k);
    }
    this.index = e - 1;
    return true;
  }
}
