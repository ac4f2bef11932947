// Types of the replayed trace of one device. Byte measures are named by what they count:
// "allocated"/"active"/"reserved"/size = ROUNDED block bytes (what memory_allocated(), segment
// allocated_size and max_memory_allocated count); "requested" = the unrounded sizes trace entries carry.

import type { IndexIntoBlocks, IndexIntoStacks, TraceTable } from "../model/types";
import type { ReservedExtents } from "./extents";
import type { RoundingSettings } from "./rounding";

export type IndexIntoAllocations = number;
/** An event index: position in the device's trace list. */
export type EventIndex = number;

/** Event index meaning "before the first event of the trace". */
export const BEFORE_TRACE: EventIndex = -1;
/** Event index meaning "not within the trace" (still alive / never freed at the end). */
export const NEVER: EventIndex = 0x7fffffff;

/** Call-site id of allocations made before the trace whose allocation stack is not in it. */
export const SITE_BEFORE_TRACE = -3;

/** Where an allocation comes from. */
export const Origin = {
  /** Its `alloc` entry is in the trace. */
  trace: 0,
  /** Alive in `segments` and never touched by the trace: allocated before it began, alive throughout. */
  beforeTraceAlive: 1,
  /** Freed inside the trace (free_requested seen) but allocated before it began. */
  beforeTraceFreed: 2,
  /** Only its free_completed is in the trace: its free had been requested before it began (pending free). */
  beforeTracePending: 3,
} as const;

/** How an allocation's rounded block size is known. */
export const SizeSource = {
  /** The allocator's round_size of the requested size: exact up to 1 MiB (small pool, always split),
   * a lower bound above it (allocated before the trace, or no free run known). 0, the most common, so
   * that a new column already says it (see AllocationTable.blockPlus1). */
  rounded: 0,
  /** The final snapshot's block: exact. */
  block: 1,
  /** Large block freed inside the trace, sized from the free run the allocator carved it from
   * (it keeps a remainder of ≤ 1 MiB unsplit, else splits it off). */
  fitted: 2,
} as const;

/**
 * One row per allocation the replay knows of: an (address, ordinal) pair.
 *
 * An allocation made in the trace has its alloc entry's address, requested size and stack: they are read
 * from the trace's columns (`entries`), not copied (addressOf, requestedOf, stackOf), since writing fresh
 * memory is the costliest thing a big load does. The `own*` columns hold them for the allocations made
 * before the trace, and read 0 for the others.
 */
export interface AllocationTable {
  length: number;
  /** The trace's columns (all its entries), where the allocations made in it are read from. */
  entries: AllocationEntries;
  ownAddress: Float64Array;
  ownRequestedBytes: Float64Array;
  /** Rounded block bytes; see sizeSource. */
  sizeBytes: Float64Array;
  sizeSource: Uint8Array;
  origin: Uint8Array;
  /** Event of its alloc; BEFORE_TRACE when allocated before the trace. */
  allocEvent: Int32Array;
  /** Event of the user's free; BEFORE_TRACE if before the trace; NEVER if not freed. */
  freeRequestedEvent: Int32Array;
  /** Event the block really returned to the pool; NEVER if still active at the end. */
  freeCompletedEvent: Int32Array;
  category: Uint8Array;
  /** Call-site id from the attribution (index into siteKeys); -1 when none; SITE_BEFORE_TRACE for
   * allocations made before the trace and freed inside it whose free entries do not carry their stack. */
  site: Int32Array;
  ownStack: Int32Array; // IndexIntoStacks
  /** Display stream number (model.streams index). */
  stream: Int32Array;
  /**
   * The final snapshot's block + 1 for allocations alive at the end; 0 otherwise (read it with
   * blockOf). Stored + 1 so that the rows of the many allocations freed in the trace stay unwritten:
   * writing fresh memory is the costliest thing a big load does.
   */
  blockPlus1: Int32Array;
}

/** The trace columns an allocation table reads its allocations made in the trace from. */
export interface AllocationEntries {
  addr: Float64Array;
  sizeBytes: Float64Array;
  stack: Int32Array;
}

type OwnOrEntry = Pick<AllocationTable, "entries" | "origin" | "allocEvent">;

/** The address of allocation `k`. */
export function addressOf(A: OwnOrEntry & Pick<AllocationTable, "ownAddress">, k: number): number {
  return A.origin[k] === Origin.trace ? A.entries.addr[A.allocEvent[k]] : A.ownAddress[k];
}

/** The requested (unrounded) bytes of allocation `k`. */
export function requestedOf(A: OwnOrEntry & Pick<AllocationTable, "ownRequestedBytes">, k: number): number {
  return A.origin[k] === Origin.trace ? A.entries.sizeBytes[A.allocEvent[k]] : A.ownRequestedBytes[k];
}

/** The allocation stack of allocation `k` (IndexIntoStacks). */
export function stackOf(A: OwnOrEntry & Pick<AllocationTable, "ownStack">, k: number): number {
  return A.origin[k] === Origin.trace ? A.entries.stack[A.allocEvent[k]] : A.ownStack[k];
}

/** The final snapshot's block of allocation `k` (IndexIntoBlocks); -1 when it is not alive at the end. */
export function blockOf(A: Pick<AllocationTable, "blockPlus1">, k: number): number {
  return A.blockPlus1[k] - 1;
}

export interface ReplayTotals {
  allocatedBytes: number;
  activeBytes: number;
  reservedBytes: number;
  requestedBytes: number;
  /** Allocated (rounded) bytes per category. */
  byCategory: Float64Array;
}

export interface SnapshotMarker {
  eventIndex: EventIndex;
  timeUs: number | null;
  /** The allocator's total active bytes when `_snapshot()` ran (what the entry's size holds). */
  recordedActiveBytes: number;
  replayedActiveBytes: number;
}

export interface OomMarker {
  eventIndex: EventIndex;
  timeUs: number | null;
  /** The request that failed (requested measure). */
  requestedBytes: number;
  /** What the device reported free (cudaMemGetInfo), NaN when absent. */
  deviceFreeBytes: number;
  stream: number;
  stack: IndexIntoStacks;
}

export interface AnnotationSpan {
  name: string;
  startUs: number | null;
  endUs: number | null;
  /** First event at or after the start / end time; null without times or when unpaired. */
  startEvent: EventIndex | null;
  endEvent: EventIndex | null;
}

/** A run of consecutive events with the same compile_context or user_metadata string. */
export interface TextRegion {
  text: string;
  startEvent: EventIndex;
  endEvent: EventIndex; // inclusive
}

export interface ReplayMarkers {
  snapshot: SnapshotMarker[];
  oom: OomMarker[];
  annotations: AnnotationSpan[];
  compileContexts: TextRegion[];
  userMetadata: TextRegion[];
  /** `annotate` entries (newest PyTorch). */
  annotate: { eventIndex: EventIndex; text: string | null }[];
  /** torch_npu workspace-allocator entries: state at dump time, not events; never replayed. */
  workspace: { eventIndex: EventIndex; action: string; addr: number; sizeBytes: number }[];
  /** Actions the replay does not know, by name: how many and the first event. */
  unknownActions: { action: string; count: number; firstEvent: EventIndex }[];
}

/** Things in the trace the replay had to interpret; none is fatal. */
export interface ReplayAnomalies {
  /** Frees whose allocation was made before the trace (ring buffer): normal. */
  freesOfAllocationsBeforeTrace: number;
  /** free_completed with no free_requested before it (the allocation counts as freed at once). */
  completedWithoutRequest: number;
  /** An alloc at an address whose previous allocation was never freed (closed at that event). */
  allocOverLive: number;
  /** A second free_requested for the same allocation (ignored). */
  repeatedFreeRequested: number;
  /** alloc / free entries without an address (ignored). */
  entriesWithoutAddress: number;
  /** Segment events whose range was already in that state. */
  redundantSegmentEvents: number;
  /** Large blocks freed inside the trace that the fitting gave an unsplit remainder (size > round_size). */
  fittedBlocks: number;
  /** Large (> 1 MiB) blocks freed inside the trace sized by round_size only, with no free run to fit
   * them to (allocated before the trace, or outside known segments): a lower bound. */
  roundedOnlyBlocks: number;
  /** Large blocks alive at the end (size known from the snapshot) where the fitting rule, applied as if
   * the size were unknown, gives exactly the block's size / another size. A measure of its accuracy. */
  fitAgreedWithBlock: number;
  fitDisagreedWithBlock: number;
}

export interface CheckResult {
  id: string;
  status: "pass" | "fail" | "skipped";
  detail: string;
}

/** How the replay's end state compares with the snapshot's `segments`. */
export interface EndStateComparison {
  /** Active blocks of this device in the snapshot. */
  snapshotLiveBlocks: number;
  /** …of which allocated inside the trace / before it. */
  matchedFromTrace: number;
  beforeTrace: number;
  /** Alive in the replay, absent (or inactive) in the snapshot. */
  aliveOnlyInReplay: number;
  aliveOnlyInReplayBytes: number;
  /** Active in the snapshot, but the trace freed it and never allocated it again. */
  aliveOnlyInSnapshot: number;
  aliveOnlyInSnapshotBytes: number;
  /** Both alive, but allocated vs pending-free differ. */
  stateDiffers: number;
  stateDiffersBytes: number;
  /** Both alive, but the trace's requested size differs from the block's requested_size. */
  sizeDiffers: number;
  sizeDiffersBytes: number;
  replayAllocatedBytes: number;
  /** Σ segment allocated_size of the device (torch_npu workspace included). */
  snapshotAllocatedBytes: number;
  /** Σ active_allocated block sizes of the device, workspace blocks left out: what the replay must end at. */
  snapshotBlockAllocatedBytes: number;
  /** torch_npu workspace blocks active in the snapshot (kept out of the replay). */
  workspaceBytes: number;
  replayActiveBytes: number;
  snapshotActiveBytes: number;
  replayReservedBytes: number;
  snapshotReservedBytes: number;
  reservedMismatchBytes: number;
}

export interface Replay {
  device: number;
  trace: TraceTable | null;
  /** Number of events (trace entries, workspace entries included as no-ops). */
  length: number;
  /** Events that change or mark state (workspace entries excluded). */
  replayedEvents: number;
  /** Every replayed entry has a time_us. */
  hasTime: boolean;
  /** X coordinate per event: time_us where hasTime (workspace entries take their neighbour's), else the index. */
  x: Float64Array;
  /** State after each event, rounded bytes. */
  allocated: Float64Array;
  active: Float64Array;
  reserved: Float64Array;
  /** Allocated bytes in requested (unrounded) sizes after each event; computed on first access. */
  readonly requested: Float64Array;
  /**
   * Allocated bytes per category after each event (one column per category: C × events numbers);
   * computed on first access. For tests and small traces: views use `categoriesAt`.
   */
  readonly allocatedByCategory: Float64Array[];
  /**
   * Allocated bytes per category after event i (i < 0: the initial state), written into `out` (one
   * per category) and returned; from checkpoints every 1024 events (src/core/replay/categories.ts).
   */
  categoriesAt(i: number, out?: Float64Array): Float64Array;
  /** The most each category held at any moment of the trace (the initial state included). */
  readonly categoryMaxBytes: Float64Array;
  categoryCount: number;
  unknownCategory: number;
  /** State before the first event. */
  initial: ReplayTotals;
  allocations: AllocationTable;
  /** Allocation each alloc / free_requested / free_completed event acts on; -1 otherwise. */
  eventAllocation: Int32Array;
  /** Allocations closed by an alloc over a live address, by event. Usually empty. */
  implicitCloses: Map<EventIndex, IndexIntoAllocations>;
  /** Built on the first state query (not needed for the columns or the peak's event). */
  readonly checkpointEvery: number;
  /** checkpoints[c]: allocations active before event c·checkpointEvery; built on first access. */
  readonly checkpoints: Int32Array[];
  /** False until `checkpoints` is first read (state queries before that pass over the allocations). */
  readonly checkpointsBuilt?: boolean;
  extents: ReservedExtents;
  markers: ReplayMarkers;
  anomalies: ReplayAnomalies;
  /**
   * Whether free entries carry the allocation's stack (recorded with context="alloc"): then
   * allocations made before the trace take category and site from their free entry. Otherwise (the
   * default context="all" records where the free happened) they get the unknown category, no site and
   * an empty stack: their allocation stack was never in the trace.
   */
  freesCarryAllocationStack: boolean;
  /** Highest allocated over the events (first such event); null without events. */
  peakEvent: EventIndex | null;
  peakAllocatedBytes: number;
  /** Highest reserved over the events (−∞ without events). */
  maxReservedBytes: number;
  /**
   * Reserved as steps: the events where it changed (ascending) and its value after each; before the
   * first, initial.reservedBytes. What `reserved` is made of (a few thousand steps against millions of
   * events): a pass that only needs reserved per range reads these instead.
   */
  reservedSteps: { eventIndex: Int32Array; bytes: Float64Array };
  end: EndStateComparison;
  check: CheckResult;
  rounding: RoundingSettings;
}

/** What the attribution inferred of an allocation made before the trace (attribution/before-trace.ts). */
export interface InferredBefore {
  category: number;
  rule: number;
  site: number;
}

export interface PrepareOptions {
  /** Category per trace entry of this device (attribution's traceCategory[device]). */
  traceCategory?: Uint8Array;
  /** Call-site id per trace entry of this device; -1 none. */
  traceSite?: Int32Array;
  /** Category per block of the model. */
  blockCategory?: Uint8Array;
  blockSite?: Int32Array;
  /**
   * The free entries (of this device's trace) that close an allocation made before the trace, each with
   * what the attribution inferred of that allocation (attribution's traceBefore).
   */
  traceBefore?: ReadonlyMap<number, InferredBefore>;
  /** Per block: 1 for torch_npu workspace blocks, which the caching allocator's totals leave out. */
  blockWorkspace?: Uint8Array;
  categoryCount: number;
  /** Category for allocations without one; default categoryCount - 1 ("unknown" is last). */
  unknownCategory?: number;
  /** Events between checkpoints of the live set (doubled when the checkpoints outgrow their budget). */
  checkpointEvery?: number;
}

export type { IndexIntoBlocks };
