// Pending frees: allocations whose free_completed came long after free_requested — the block stayed
// active_pending_free because another stream still used it (record_stream, or an event recorded for a
// cross-stream use), so the allocator could not hand it out again.

import type { SnapshotModel } from "../model/types";
import { addressOf, BEFORE_TRACE, NEVER, type Replay, requestedOf, stackOf } from "../replay/types";
import { formatBytes } from "../units";

export interface PendingFreeOptions {
  /** A gap of at least this many events counts (default 2: anything not completed right away). */
  minGapEvents?: number;
  /** …or at least this many microseconds, when the trace has times (default 1000). */
  minGapUs?: number;
  /** How many to list, largest gaps first (default 50). */
  top?: number;
  /** Call-site keys by id (the attribution's sites), to name `site`. */
  siteKeys?: string[];
}

export interface PendingFree {
  /** Allocation id in replay.allocations. */
  allocation: number;
  address: number;
  /** Rounded block bytes the pending free kept out of reuse. */
  sizeBytes: number;
  requestedBytes: number;
  /** Display stream number of the allocation, and the raw id from the file. */
  stream: number;
  streamRaw: number | null;
  /** Event of free_requested; null when it was requested before the trace. */
  freeRequestedEvent: number | null;
  /** Event of free_completed; null when still pending at the end of the trace (the snapshot). */
  freeCompletedEvent: number | null;
  gapEvents: number;
  /** time_us between the two; null without times or with an open end. */
  gapUs: number | null;
  /** Still active_pending_free at the end of the trace. */
  open: boolean;
  /** Call-site id (attribution), -1 none; its key when siteKeys were given. */
  siteId: number;
  site: string | null;
  /** Stack id (model.stacks) of the allocation. */
  stack: number;
  category: number;
  meaning: string;
}

export interface PendingFreesReport {
  device: number;
  /** Every allocation meeting the threshold (before `top`), and their bytes. */
  count: number;
  bytes: number;
  /** The largest pending bytes at once (max of active − allocated over the events). */
  maxPendingBytes: number;
  maxPendingEvent: number | null;
  minGapEvents: number;
  minGapUs: number;
  items: PendingFree[];
}

export function pendingFrees(
  r: Replay,
  model: SnapshotModel,
  opts: PendingFreeOptions = {},
): PendingFreesReport {
  const minEvents = opts.minGapEvents ?? 2;
  const minUs = opts.minGapUs ?? 1000;
  const A = r.allocations;
  const last = r.length - 1;
  const out: PendingFree[] = [];
  let bytes = 0;
  for (let k = 0; k < A.length; k++) {
    const fr = A.freeRequestedEvent[k];
    const fc = A.freeCompletedEvent[k];
    if (fr === NEVER) continue; // still allocated
    if (fc !== NEVER && fc <= fr) continue; // completed with the request
    const open = fc === NEVER;
    const from = fr === BEFORE_TRACE ? 0 : fr;
    const to = open ? last : fc;
    const gapEvents = Math.max(0, to - from);
    const gapUs =
      r.hasTime && fr !== BEFORE_TRACE && !open && fr >= 0 ? Math.max(0, r.x[fc] - r.x[fr]) : null;
    const long = gapEvents >= minEvents || (gapUs !== null && gapUs >= minUs) || open || fr === BEFORE_TRACE;
    if (!long) continue;
    bytes += A.sizeBytes[k];
    const stream = A.stream[k];
    const streamRaw = model.streams[stream] ?? null;
    const siteId = A.site[k];
    const site = siteId >= 0 && opts.siteKeys ? (opts.siteKeys[siteId] ?? null) : null;
    const size = formatBytes(A.sizeBytes[k]);
    const when = open
      ? fr === BEFORE_TRACE
        ? "its free was requested before the trace and it is still pending at the snapshot"
        : `freed by the program at event ${fr} and still pending at the snapshot (${gapEvents} events later)`
      : fr === BEFORE_TRACE
        ? `its free was requested before the trace; returned to the pool at event ${fc}`
        : `freed by the program at event ${fr}, returned to the pool at event ${fc} (${gapEvents} events${gapUs !== null ? `, ${formatUs(gapUs)}` : ""} later)`;
    out.push({
      allocation: k,
      address: addressOf(A, k),
      sizeBytes: A.sizeBytes[k],
      requestedBytes: requestedOf(A, k),
      stream,
      streamRaw,
      freeRequestedEvent: fr === BEFORE_TRACE ? null : fr,
      freeCompletedEvent: open ? null : fc,
      gapEvents,
      gapUs,
      open,
      siteId,
      site,
      stack: stackOf(A, k),
      category: A.category[k],
      meaning: `${size} on stream ${streamRaw ?? stream} ${when}: it was used on another stream (record_stream or cross-stream use), so the allocator waited for that stream before reusing it — the delay keeps ${size} out of reuse and can force new segments.`,
    });
  }
  // Largest gap first (in events: defined for every item, open ones counted to the end of the trace).
  out.sort((p, q) => q.gapEvents - p.gapEvents || q.sizeBytes - p.sizeBytes || p.allocation - q.allocation);
  let maxPending = 0;
  let maxEvent: number | null = null;
  for (let i = 0; i < r.length; i++) {
    const p = r.active[i] - r.allocated[i];
    if (p > maxPending) {
      maxPending = p;
      maxEvent = i;
    }
  }
  return {
    device: r.device,
    count: out.length,
    bytes,
    maxPendingBytes: maxPending,
    maxPendingEvent: maxEvent,
    minGapEvents: minEvents,
    minGapUs: minUs,
    items: out.slice(0, opts.top ?? 50),
  };
}

function formatUs(us: number): string {
  if (us < 1000) return `${us} µs`;
  if (us < 1e6) return `${(us / 1000).toFixed(1)} ms`;
  return `${(us / 1e6).toFixed(2)} s`;
}
