// Fragmentation at one event (the peak, each OOM): the largest free block against the request, free bytes
// split by reserved region (segment), and the live blocks pinning the most fragmented ones.

import { Action } from "../model/types";
import { roundRequest } from "../replay/rounding";
import { stateAt } from "../replay/state";
import { type EventIndex, type Replay, SITE_BEFORE_TRACE } from "../replay/types";
import { formatBytes } from "../units";

export interface FragmentationOptions {
  /** Call-site keys and category names by id (the attribution's), to name blocks. */
  siteKeys?: string[];
  categoryNames?: string[];
  /** Segments listed by free bytes (default 20). */
  topSegments?: number;
  /** Most fragmented held segments whose blocks are listed (default 5), and blocks per segment (default 10). */
  pinnedSegments?: number;
  blocksPerSegment?: number;
}

export interface SegmentFree {
  /** Index into the regions at that event (a segment, or a mapped run of an expandable segment). */
  region: number;
  address: number;
  sizeBytes: number;
  activeBytes: number;
  freeBytes: number;
  largestFreeBytes: number;
  liveBlocks: number;
  expandable: boolean;
}

export interface PinningBlock {
  allocation: number;
  address: number;
  sizeBytes: number;
  requestedBytes: number;
  category: string;
  siteId: number;
  site: string;
  stack: number;
  stream: number;
  pendingFree: boolean;
}

export interface PinnedSegment extends SegmentFree {
  /** Its live blocks, largest first (at most blocksPerSegment). */
  blocks: PinningBlock[];
}

export interface FragmentationDetail {
  device: number;
  eventIndex: EventIndex;
  kind: "peak" | "oom" | "event";
  timeUs: number | null;
  /** The request at that event (requested bytes): the OOM's, or the alloc's at the peak; null when none. */
  requestBytes: number | null;
  /** …rounded as the allocator does (round_size). */
  requestRoundedBytes: number | null;
  /** Whether the rounded request fits the largest free block (streams and pools aside). */
  fitsLargestFreeBlock: boolean | null;
  /** OOM only: what the device reported free. */
  deviceFreeBytes: number | null;
  reservedBytes: number;
  allocatedBytes: number;
  activeBytes: number;
  /** reserved − active. */
  freeInCachedSegmentsBytes: number;
  largestFreeBlockBytes: number;
  largestFreeBlockAddress: number | null;
  /** Free bytes in regions holding at least one active block (= the inactive-split curve at this event). */
  inactiveSplitBytes: number;
  regions: number;
  heldRegions: number;
  segmentsWithFree: number;
  /** Regions with free bytes, most free first (topSegments). */
  segments: SegmentFree[];
  /** The held regions with the most free bytes and the live blocks that keep them from being released. */
  pinned: PinnedSegment[];
  message: string;
}

function siteName(opts: FragmentationOptions, s: number): string {
  if (s === SITE_BEFORE_TRACE) return "(allocated before the trace: its stack is not in the trace)";
  if (s < 0) return "(no call site)";
  return opts.siteKeys?.[s] ?? `site ${s}`;
}

/** Fragmentation after event i. */
export function fragmentationDetail(
  r: Replay,
  i: EventIndex,
  opts: FragmentationOptions & {
    kind?: FragmentationDetail["kind"];
    requestBytes?: number | null;
    deviceFreeBytes?: number | null;
  } = {},
): FragmentationDetail {
  const state = stateAt(r, i);
  const regions = state.regions;
  const G = regions.length;
  const active = new Float64Array(G);
  const largest = new Float64Array(G);
  const count = new Int32Array(G);
  const members: number[][] = Array.from({ length: G }, () => []);
  let best = 0;
  let bestAddr: number | null = null;
  let j = 0;
  const n = state.address.length;
  for (let g = 0; g < G; g++) {
    let pos = regions.start[g];
    const end = regions.end[g];
    while (j < n && state.address[j] < pos) j++;
    for (; j < n && state.address[j] < end; j++) {
      const a = state.address[j];
      if (a - pos > largest[g]) largest[g] = a - pos;
      if (a - pos > best) {
        best = a - pos;
        bestAddr = pos;
      }
      active[g] += Math.min(end, a + state.sizeBytes[j]) - a;
      count[g]++;
      members[g].push(j);
      pos = Math.max(pos, a + state.sizeBytes[j]);
    }
    if (end - pos > largest[g]) largest[g] = end - pos;
    if (end - pos > best) {
      best = end - pos;
      bestAddr = pos;
    }
  }
  const segs: SegmentFree[] = [];
  let inactiveSplit = 0;
  let held = 0;
  for (let g = 0; g < G; g++) {
    const size = regions.end[g] - regions.start[g];
    const free = Math.max(0, size - active[g]);
    if (count[g] > 0) {
      held++;
      inactiveSplit += free;
    }
    segs.push({
      region: g,
      address: regions.start[g],
      sizeBytes: size,
      activeBytes: active[g],
      freeBytes: free,
      largestFreeBytes: largest[g],
      liveBlocks: count[g],
      expandable: regions.expandable[g] === 1,
    });
  }
  const byFree = (p: SegmentFree, q: SegmentFree) => q.freeBytes - p.freeBytes || p.address - q.address;
  const withFree = segs.filter((s) => s.freeBytes > 0).sort(byFree);
  const cat = (c: number) => opts.categoryNames?.[c] ?? `category ${c}`;
  const pinned: PinnedSegment[] = withFree
    .filter((s) => s.liveBlocks > 0)
    .slice(0, opts.pinnedSegments ?? 5)
    .map((s) => ({
      ...s,
      blocks: members[s.region]
        .map((q) => ({
          allocation: state.allocation[q],
          address: state.address[q],
          sizeBytes: state.sizeBytes[q],
          requestedBytes: state.requestedBytes[q],
          category: cat(state.category[q]),
          siteId: state.site[q],
          site: siteName(opts, state.site[q]),
          stack: state.stack[q],
          stream: state.stream[q],
          pendingFree: state.pendingFree[q] === 1,
        }))
        .sort((p, q) => q.sizeBytes - p.sizeBytes || p.address - q.address)
        .slice(0, opts.blocksPerSegment ?? 10),
    }));
  const totals =
    i < 0
      ? {
          reserved: r.initial.reservedBytes,
          allocated: r.initial.allocatedBytes,
          active: r.initial.activeBytes,
        }
      : { reserved: r.reserved[i], allocated: r.allocated[i], active: r.active[i] };
  const req = opts.requestBytes ?? null;
  const rounded = req !== null ? roundRequest(req, r.rounding) : null;
  const fits = rounded !== null ? rounded <= best : null;
  const free = totals.reserved - totals.active;
  let message =
    req !== null
      ? `asked for ${formatBytes(req)}; the largest free block was ${formatBytes(best)}${fits ? " (it fits)" : " (too small)"}; `
      : `largest free block ${formatBytes(best)}; `;
  message += `${formatBytes(free)} free in cached segments, ${formatBytes(inactiveSplit)} of it inside ${held} segment(s) that also hold live blocks`;
  if (pinned.length > 0) {
    const p = pinned[0];
    message += `; the most fragmented (${formatBytes(p.freeBytes)} free of ${formatBytes(p.sizeBytes)}) is pinned by ${p.liveBlocks} live block(s)${p.blocks[0] ? `, largest from ${p.blocks[0].site}` : ""}`;
  }
  if (opts.deviceFreeBytes !== undefined && opts.deviceFreeBytes !== null)
    message += `; the device reported ${formatBytes(opts.deviceFreeBytes)} free`;
  return {
    device: r.device,
    eventIndex: i,
    kind: opts.kind ?? "event",
    timeUs: r.hasTime && i >= 0 ? r.x[i] : null,
    requestBytes: req,
    requestRoundedBytes: rounded,
    fitsLargestFreeBlock: fits,
    deviceFreeBytes: opts.deviceFreeBytes ?? null,
    reservedBytes: totals.reserved,
    allocatedBytes: totals.allocated,
    activeBytes: totals.active,
    freeInCachedSegmentsBytes: free,
    largestFreeBlockBytes: best,
    largestFreeBlockAddress: bestAddr,
    inactiveSplitBytes: inactiveSplit,
    regions: G,
    heldRegions: held,
    segmentsWithFree: withFree.length,
    segments: withFree.slice(0, opts.topSegments ?? 20),
    pinned,
    message,
  };
}

/** At the replay's peak (request: the alloc that reached it); null without events. */
export function fragmentationAtPeak(r: Replay, opts: FragmentationOptions = {}): FragmentationDetail | null {
  const i = r.peakEvent;
  if (i === null) return null;
  const t = r.trace;
  const req = t && t.action[i] === Action.alloc ? t.sizeBytes[i] : null;
  return fragmentationDetail(r, i, { ...opts, kind: "peak", requestBytes: req });
}

/** At every oom entry of the trace: the state when the request failed. */
export function fragmentationAtOoms(r: Replay, opts: FragmentationOptions = {}): FragmentationDetail[] {
  return r.markers.oom.map((m) =>
    fragmentationDetail(r, m.eventIndex, {
      ...opts,
      kind: "oom",
      requestBytes: m.requestedBytes,
      deviceFreeBytes: Number.isFinite(m.deviceFreeBytes) ? m.deviceFreeBytes : null,
    }),
  );
}
