// Replays one device's trace forwards from a reconstructed start state, so that it ends in exactly
// the snapshot's `segments` state. See README.md for the semantics.

import { dropRecycledMemory, takeFloat64, takeInt32 } from "../model/recycled-memory";
import { type TraceCounts, traceCounts } from "../model/trace-counts";
import {
  Action,
  BlockState,
  EMPTY_STACK,
  type IdColumn,
  idAt,
  KNOWN_ACTIONS,
  NO_STRING,
  type SnapshotModel,
  type TraceTable,
} from "../model/types";
import { lowerBoundFloat64 } from "../sorted";
import { exactBytesShort } from "../units";
import type { AddressMap } from "./addr-map";
import { type CategoryIndex, categoryColumns, categoryIndex } from "./categories";
import {
  applySegmentEvent,
  buildExtents,
  fitRegionEndAt,
  type IntervalState,
  initialIntervalState,
  intervalAt,
  type ReservedExtents,
} from "./extents";
import {
  countFinalBlocks,
  growAllocationTable,
  Kind,
  type Paired,
  pairEntries,
  takePairing,
} from "./pairing";
import {
  fittedBlockSize,
  fittedBlockSizeAtStart,
  MIN_BLOCK_BYTES,
  type RoundingSettings,
  roundingSettings,
  roundRequest,
  SMALL_SIZE_BYTES,
} from "./rounding";
import {
  type AllocationTable,
  type AnnotationSpan,
  addressOf,
  BEFORE_TRACE,
  type CheckResult,
  type EndStateComparison,
  NEVER,
  Origin,
  type PrepareOptions,
  type Replay,
  type ReplayAnomalies,
  type ReplayMarkers,
  type ReplayTotals,
  requestedOf,
  SITE_BEFORE_TRACE,
  SizeSource,
  type TextRegion,
} from "./types";

const DEFAULT_CHECKPOINT_EVERY = 1024;

/** Views of the first `length` rows (capacity is close to the length: no copy). */
function trimAllocationTable(t: AllocationTable): AllocationTable {
  const n = t.length;
  return {
    length: n,
    entries: t.entries,
    ownAddress: t.ownAddress.subarray(0, n),
    ownRequestedBytes: t.ownRequestedBytes.subarray(0, n),
    sizeBytes: t.sizeBytes.subarray(0, n),
    sizeSource: t.sizeSource.subarray(0, n),
    origin: t.origin.subarray(0, n),
    allocEvent: t.allocEvent.subarray(0, n),
    freeRequestedEvent: t.freeRequestedEvent.subarray(0, n),
    freeCompletedEvent: t.freeCompletedEvent.subarray(0, n),
    category: t.category.subarray(0, n),
    site: t.site.subarray(0, n),
    ownStack: t.ownStack.subarray(0, n),
    stream: t.stream.subarray(0, n),
    blockPlus1: t.blockPlus1.subarray(0, n),
  };
}

/**
 * Addresses of the active large (> 1 MiB) blocks, bucketed by the elementary reserved interval that
 * holds them: the next active block after an address within its segment is a scan of a few buckets.
 * Each bucket keeps which allocation holds each of its slots, and each allocation its slot: a free is
 * one swap, not a search of its bucket (which on a real training file had 120 addresses on average).
 */
class LargeBlocks {
  private readonly buckets: (number[] | null)[];
  /** The allocation in each slot of each bucket. */
  private readonly owners: (number[] | null)[];
  /** Interval of each allocation added (-1: outside every interval). */
  private readonly intervalOfAlloc: Int32Array;
  /** Slot of each allocation in its interval's bucket (-1: not there). */
  private readonly slotOfAlloc: Int32Array;
  constructor(
    private readonly bounds: Float64Array,
    allocations: number,
  ) {
    this.buckets = new Array(Math.max(0, bounds.length - 1)).fill(null);
    this.owners = new Array(this.buckets.length).fill(null);
    this.intervalOfAlloc = takeInt32(allocations);
    this.slotOfAlloc = takeInt32(allocations, -1);
  }
  /** Adds allocation k at `addr` in interval j (from intervalAt). */
  add(k: number, addr: number, j: number): void {
    this.intervalOfAlloc[k] = j;
    if (j < 0) return;
    let b = this.buckets[j];
    let o = this.owners[j];
    if (!b || !o) {
      this.buckets[j] = b = [];
      this.owners[j] = o = [];
    }
    this.slotOfAlloc[k] = b.length;
    b.push(addr);
    o.push(k);
  }
  /** Removes allocation k's address (or, where k holds no slot, one slot with its address). */
  remove(k: number, addr: number): void {
    const j = this.intervalOfAlloc[k];
    const b = j < 0 ? null : this.buckets[j];
    const o = j < 0 ? null : this.owners[j];
    if (!b || !o) return;
    let p = this.slotOfAlloc[k];
    // (a slot another allocation at the same address took over, or none: the address's first slot)
    if (p < 0 || p >= o.length || o[p] !== k) p = b.indexOf(addr);
    if (p < 0) return;
    this.slotOfAlloc[o[p]] = -1;
    const last = b.length - 1;
    b[p] = b[last];
    o[p] = o[last];
    if (p !== last) this.slotOfAlloc[o[p]] = p;
    b.pop();
    o.pop();
  }
  /** Smallest active large-block address above `addr` (in interval j) and below `end`; +Infinity if none. */
  after(addr: number, j: number, end: number): number {
    const bounds = this.bounds;
    let best = Number.POSITIVE_INFINITY;
    for (j = Math.max(0, j); j < this.buckets.length && bounds[j] < end; j++) {
      const b = this.buckets[j];
      if (b) for (let q = 0; q < b.length; q++) if (b[q] > addr && b[q] < best) best = b[q];
      if (best !== Number.POSITIVE_INFINITY) return best;
    }
    return best;
  }
}

function str(model: SnapshotModel, id: number): string | null {
  return id === NO_STRING || id < 0 ? null : (model.strings[id] ?? null);
}

/** Runs of consecutive events with the same string id (absent ids and skipped strings dropped). */
class RegionTracker {
  readonly regions: TextRegion[] = [];
  private cur = NO_STRING;
  private start = 0;
  private last = 0;
  constructor(
    private readonly model: SnapshotModel,
    private readonly skip: (s: string) => boolean,
  ) {}
  at(v: number, i: number): void {
    if (v !== this.cur) {
      this.flush();
      this.cur = v;
      this.start = i;
    }
    this.last = i;
  }
  private flush(): void {
    const s = str(this.model, this.cur);
    if (s !== null && !this.skip(s))
      this.regions.push({ text: s, startEvent: this.start, endEvent: this.last });
  }
  finish(): TextRegion[] {
    this.flush();
    this.cur = NO_STRING;
    return this.regions;
  }
}

/** First index i with x[i] >= t (x ascending), or null past the end. */
export function eventAtOrAfter(x: Float64Array, t: number): number | null {
  const i = lowerBoundFloat64(x, t);
  return i < x.length ? i : null;
}

function annotationSpans(
  model: SnapshotModel,
  device: number,
  x: Float64Array,
  hasTime: boolean,
): AnnotationSpan[] {
  const anns = model.annotations
    .map((a, i) => ({ a, i }))
    .filter(({ a }) => a.device === device)
    .sort((p, q) => (p.a.timeUs - q.a.timeUs || p.i - q.i) as number);
  const open = new Map<string, AnnotationSpan[]>();
  const spans: AnnotationSpan[] = [];
  const ev = (t: number) => (hasTime && Number.isFinite(t) ? eventAtOrAfter(x, t) : null);
  for (const { a } of anns) {
    const t = Number.isFinite(a.timeUs) ? a.timeUs : null;
    if (a.stage === "START") {
      const span: AnnotationSpan = {
        name: a.name,
        startUs: t,
        endUs: null,
        startEvent: ev(a.timeUs),
        endEvent: null,
      };
      spans.push(span);
      let stack = open.get(a.name);
      if (!stack) open.set(a.name, (stack = []));
      stack.push(span);
    } else {
      const span = open.get(a.name)?.pop();
      if (span) {
        span.endUs = t;
        span.endEvent = ev(a.timeUs);
      } else spans.push({ name: a.name, startUs: null, endUs: t, startEvent: null, endEvent: ev(a.timeUs) });
    }
  }
  return spans;
}

/**
 * torch_npu dumps: workspace entries in a trace, or torch_npu frames (its allocator rounds
 * request + 32 bytes).
 */
export function isNpuSnapshot(model: SnapshotModel, workspaceEntriesSeen = false): boolean {
  if (workspaceEntriesSeen) return true;
  let known = npuModels.get(model);
  if (known === undefined) {
    known = model.strings.some((s) => s.includes("torch_npu")) || model.traces.some(hasWorkspaceEntries);
    npuModels.set(model, known);
  }
  return known;
}

/** isNpuSnapshot's answer per model: asked per device and per report, each a pass over every entry. */
const npuModels = new WeakMap<SnapshotModel, boolean>();

function hasWorkspaceEntries(t: TraceTable): boolean {
  return traceCounts(t).workspaceEntries > 0;
}

interface Columns {
  n: number;
  action: Uint8Array;
  addr: Float64Array;
  size: Float64Array;
  isWorkspace: Uint8Array;
  time: Float64Array;
  compileContext: IdColumn;
  userMetadata: IdColumn;
  stack: Int32Array;
  /** null: every entry is on the default stream (TraceTable.defaultStreamOnly), the column not read */
  stream: Int32Array | null;
}

const NO_IDS: IdColumn = { diff: new Int32Array(0), base: NO_STRING, varies: false };

function columnsOf(trace: TraceTable | null): Columns {
  if (!trace) {
    return {
      n: 0,
      action: new Uint8Array(0),
      addr: new Float64Array(0),
      size: new Float64Array(0),
      isWorkspace: new Uint8Array(0),
      time: new Float64Array(0),
      compileContext: NO_IDS,
      userMetadata: NO_IDS,
      stack: new Int32Array(0),
      stream: new Int32Array(0),
    };
  }
  return {
    n: trace.length,
    action: trace.action,
    addr: trace.addr,
    size: trace.sizeBytes,
    isWorkspace: trace.isWorkspace,
    time: trace.timeUs,
    compileContext: trace.compileContext,
    userMetadata: trace.userMetadata,
    stack: trace.stack,
    stream: trace.defaultStreamOnly ? null : trace.stream,
  };
}

interface Scan {
  markers: ReplayMarkers;
  replayedEvents: number;
  allocEvents: number;
  /** Indices of snapshot / oom / annotate entries. */
  markerEvents: number[];
  segmentEvents: Int32Array;
  hasTime: boolean;
  x: Float64Array;
}

/**
 * Counts, workspace entries, unknown actions, time, text regions: off the trace's counts and the rarer
 * actions' entries where every entry is replayed and the text columns do not vary, else one pass.
 */
function prescan(model: SnapshotModel, c: Columns, counts: TraceCounts | null): Scan {
  const { n, action, isWorkspace } = c;
  let allocEvents = 0;
  let replayedEvents = 0;
  let timed = 0;
  const markerEventList: number[] = [];
  const unknown = new Map<number, { count: number; firstEvent: number }>();
  const markers: ReplayMarkers = {
    snapshot: [],
    oom: [],
    annotations: [],
    compileContexts: [],
    userMetadata: [],
    annotate: [],
    workspace: [],
    unknownActions: [],
  };
  const segmentEventList: number[] = [];
  const timeCol = c.time;
  // (a column that does not vary is not read: its pages were never written, and reading them costs too)
  const { diff: ccDiff, base: ccBase, varies: ccVaries } = c.compileContext;
  const { diff: umDiff, base: umBase, varies: umVaries } = c.userMetadata;
  const cc = new RegionTracker(model, (s) => s === "" || s === "N/A");
  const um = new RegionTracker(model, (s) => s === "");
  /** An entry of an action other than alloc and the frees (few on any file). */
  const rare = (a: number, i: number) => {
    if (a <= Action.segment_unmap) segmentEventList.push(i);
    else if (a === Action.snapshot || a === Action.oom || a === Action.annotate) markerEventList.push(i);
    else if (a >= KNOWN_ACTIONS.length) {
      const u = unknown.get(a);
      if (u) u.count++;
      else unknown.set(a, { count: 1, firstEvent: i });
    }
  };
  if (counts !== null && counts.workspaceEntries === 0 && !ccVaries && !umVaries) {
    // The usual file: every entry replayed, one compile context and one user metadata throughout. Its
    // counts say the rest; only the rarer actions' entries are looked for, where it has any.
    replayedEvents = n;
    timed = n - counts.untimedEntries;
    allocEvents = counts.actions[Action.alloc];
    if (n > 0) {
      cc.at(ccBase, 0);
      cc.at(ccBase, n - 1);
      um.at(umBase, 0);
      um.at(umBase, n - 1);
    }
    const frees = counts.actions[Action.free_requested] + counts.actions[Action.free_completed];
    if (allocEvents + frees < n) {
      for (let i = 0; i < n; i++) if (action[i] > Action.free_completed) rare(action[i], i);
    }
  } else {
    for (let i = 0; i < n; i++) {
      const a = action[i];
      if (isWorkspace[i] || a === Action.workspace_snapshot) {
        markers.workspace.push({
          eventIndex: i,
          action: model.actionNames[a] ?? String(a),
          addr: c.addr[i],
          sizeBytes: c.size[i],
        });
        continue;
      }
      replayedEvents++;
      if (!Number.isNaN(timeCol[i])) timed++;
      cc.at(ccVaries ? ccDiff[i] + ccBase : ccBase, i);
      um.at(umVaries ? umDiff[i] + umBase : umBase, i);
      if (a === Action.alloc) allocEvents++;
      else if (a > Action.free_completed) rare(a, i); // (frees: counted by pass 1)
    }
  }
  markers.compileContexts = cc.finish();
  markers.userMetadata = um.finish();
  markers.unknownActions = [...unknown].map(([a, u]) => ({
    action: model.actionNames[a] ?? String(a),
    count: u.count,
    firstEvent: u.firstEvent,
  }));
  const hasTime = replayedEvents > 0 && timed === replayedEvents;
  let x: Float64Array;
  if (hasTime && markers.workspace.length === 0) x = timeCol;
  else if (hasTime) {
    // Workspace entries carry no time: they take the next (else the previous) entry's.
    x = new Float64Array(n);
    let next = Number.NaN;
    for (let i = n - 1; i >= 0; i--) {
      if (!isWorkspace[i] && !Number.isNaN(timeCol[i])) next = timeCol[i];
      x[i] = next;
    }
    let prev = Number.NaN;
    for (let i = 0; i < n; i++) {
      if (!Number.isNaN(x[i])) prev = x[i];
      else x[i] = prev;
    }
  } else {
    x = new Float64Array(n);
    for (let i = 0; i < n; i++) x[i] = i;
  }
  return {
    markers,
    replayedEvents,
    allocEvents,
    markerEvents: markerEventList,
    segmentEvents: Int32Array.from(segmentEventList),
    hasTime,
    x,
  };
}

/**
 * Stream and round_size of the allocations pass 1 created (`count` of them), from the entry that created
 * each. Returns whether free entries carry the allocation's stack.
 */
function assignFromEntries(
  A: AllocationTable,
  count: number,
  c: Columns,
  rounding: RoundingSettings,
): boolean {
  const stackCol = c.stack;
  const streamCol = c.stream;
  const freeReq = A.freeRequestedEvent;
  const allocEvent = A.allocEvent;
  const origin = A.origin;
  // Do free entries carry the allocation's stack (`_record_memory_history(context="alloc")`) or
  // their own (context="all", the default)? Compare on allocations whose alloc is in the trace; the
  // first 4096 informative pairs decide (it is one recording setting for the whole trace).
  let sameStack = 0;
  let otherStack = 0;
  for (let k = 0; k < count && sameStack + otherStack < 4096; k++) {
    const fr = freeReq[k];
    if (origin[k] !== Origin.trace || fr < 0 || fr === NEVER) continue;
    const sa = stackCol[allocEvent[k]];
    const sf = stackCol[fr];
    if (sa === EMPTY_STACK || sf === EMPTY_STACK) continue;
    if (sa === sf) sameStack++;
    else otherStack++;
  }
  // (the column is new, so 0: the default stream, most files' only one, is left unwritten and its
  // pages untouched; where the trace has no other, its column is not even read)
  if (streamCol !== null) {
    const stream = A.stream;
    for (let k = 0; k < count; k++) {
      const e = entryOf(A, k);
      if (streamCol[e] !== 0) stream[k] = streamCol[e];
    }
  }
  const sizes = A.sizeBytes;
  const extra = rounding.extraBytes;
  if (rounding.power2Divisions.length === 0 && !rounding.exact) {
    const ownReq = A.ownRequestedBytes;
    const entryReq = A.entries.sizeBytes;
    for (let k = 0; k < count; k++) {
      const r = (origin[k] === Origin.trace ? entryReq[allocEvent[k]] : ownReq[k]) + extra;
      sizes[k] = r < MIN_BLOCK_BYTES ? MIN_BLOCK_BYTES : Math.ceil(r / MIN_BLOCK_BYTES) * MIN_BLOCK_BYTES;
    }
  } else for (let k = 0; k < count; k++) sizes[k] = roundRequest(requestedOf(A, k), rounding);
  return sameStack > 0 && otherStack === 0;
}

/** The entry that created allocation k (one pass 1 created): its alloc, or (made before the trace) its first free. */
function entryOf(A: AllocationTable, k: number): number {
  const o = A.origin[k];
  return o === Origin.trace
    ? A.allocEvent[k]
    : o === Origin.beforeTraceFreed
      ? A.freeRequestedEvent[k]
      : A.freeCompletedEvent[k];
}

/**
 * Category, site and (made before the trace) stack of the allocations pass 1 created (`count` of them),
 * from the attribution of the entry that created each.
 */
function assignCategories(
  A: AllocationTable,
  count: number,
  c: Columns,
  opts: PrepareOptions,
  C: number,
  unknownCategory: number,
  freesCarryAllocationStack: boolean,
): void {
  const stackCol = c.stack;
  const origin = A.origin;
  const traceCategory = opts.traceCategory;
  const traceSite = opts.traceSite;
  const category = A.category;
  const site = A.site;
  const stack = A.ownStack;
  for (let k = 0; k < count; k++) {
    const e = entryOf(A, k);
    if (origin[k] !== Origin.trace) {
      const inferred = opts.traceBefore?.get(e);
      if (inferred !== undefined) {
        // Allocated before the trace; the attribution inferred what it was (sizes and lifetimes).
        category[k] = inferred.category < C ? inferred.category : unknownCategory;
        site[k] = inferred.site >= 0 ? inferred.site : SITE_BEFORE_TRACE;
        stack[k] = EMPTY_STACK;
        continue;
      }
      if (!freesCarryAllocationStack) {
        // Allocated before the trace, and its free's stack is where it was freed: no allocation stack.
        category[k] = unknownCategory;
        site[k] = SITE_BEFORE_TRACE;
        stack[k] = EMPTY_STACK;
        continue;
      }
    }
    const cat = traceCategory ? traceCategory[e] : unknownCategory;
    category[k] = cat < C ? cat : unknownCategory;
    site[k] = traceSite ? traceSite[e] : -1;
    // (an allocation made in the trace reads its stack from its alloc entry: see AllocationTable)
    if (origin[k] !== Origin.trace) stack[k] = stackCol[e];
  }
}

/**
 * Category and site of the allocations matched to a block of the snapshot (`matched`, matchEndState's)
 * and of those it added (from `added` on): the block's where the trace gave none.
 */
function assignBlockCategories(
  A: AllocationTable,
  matched: Int32Array,
  added: number,
  opts: PrepareOptions,
  unknownCategory: number,
): void {
  const { blockCategory, blockSite } = opts;
  for (let k = added; k < A.length; k++) {
    const b = A.blockPlus1[k] - 1;
    A.category[k] = blockCategory ? Math.min(blockCategory[b], unknownCategory) : unknownCategory;
    A.site[k] = blockSite ? blockSite[b] : -1;
  }
  for (let q = 0; q < matched.length; q++) {
    const k = matched[q];
    const b = A.blockPlus1[k] - 1;
    if (A.category[k] === unknownCategory && blockCategory && !opts.traceCategory) {
      A.category[k] = Math.min(blockCategory[b], unknownCategory);
    }
    if (A.site[k] < 0 && blockSite) A.site[k] = blockSite[b];
  }
}

function newEndState(finalBlocks: number): EndStateComparison {
  return {
    snapshotLiveBlocks: finalBlocks,
    matchedFromTrace: 0,
    beforeTrace: 0,
    aliveOnlyInReplay: 0,
    aliveOnlyInReplayBytes: 0,
    aliveOnlyInSnapshot: 0,
    aliveOnlyInSnapshotBytes: 0,
    stateDiffers: 0,
    stateDiffersBytes: 0,
    sizeDiffers: 0,
    sizeDiffersBytes: 0,
    replayAllocatedBytes: 0,
    snapshotAllocatedBytes: 0,
    snapshotBlockAllocatedBytes: 0,
    workspaceBytes: 0,
    replayActiveBytes: 0,
    snapshotActiveBytes: 0,
    replayReservedBytes: 0,
    snapshotReservedBytes: 0,
    reservedMismatchBytes: 0,
  };
}

/**
 * Matches the allocations open at the end with the snapshot's active blocks (sizes from the blocks),
 * and adds an allocation for every active block the trace never touches (alive since before it).
 * `A` has room for them. Returns the allocations matched (their categories come later:
 * assignBlockCategories).
 */
function matchEndState(
  model: SnapshotModel,
  device: number,
  A: AllocationTable,
  map: AddressMap,
  workspace: Uint8Array | undefined,
  rounding: RoundingSettings,
  end: EndStateComparison,
): Int32Array {
  const segs = model.segments;
  const blocks = model.blocks;
  const matched: number[] = [];
  for (let s = 0; s < segs.length; s++) {
    if (segs.device[s] !== device) continue;
    end.snapshotAllocatedBytes += segs.allocatedSizeBytes[s];
    end.snapshotActiveBytes += segs.activeSizeBytes[s];
    const last = segs.firstBlock[s] + segs.blockCount[s];
    for (let b = segs.firstBlock[s]; b < last; b++) {
      const st = blocks.state[b];
      if (st !== BlockState.active_allocated && st !== BlockState.active_pending_free) continue;
      if (workspace?.[b]) {
        // torch_npu's workspace: not the caching allocator's, no history; kept out of the replay.
        end.workspaceBytes += blocks.sizeBytes[b];
        continue;
      }
      if (st === BlockState.active_allocated) end.snapshotBlockAllocatedBytes += blocks.sizeBytes[b];
      const addr = blocks.address[b];
      const size = blocks.sizeBytes[b];
      const slot = map.find(addr);
      const pendingInSnapshot = st === BlockState.active_pending_free;
      if (slot < 0) {
        const req = blocks.requestedSizeBytes[b];
        const k = A.length++;
        A.ownAddress[k] = addr;
        A.ownRequestedBytes[k] = Number.isNaN(req) ? size : req;
        A.origin[k] = Origin.beforeTraceAlive;
        A.allocEvent[k] = BEFORE_TRACE;
        A.freeRequestedEvent[k] = pendingInSnapshot ? BEFORE_TRACE : NEVER;
        A.freeCompletedEvent[k] = NEVER;
        A.sizeBytes[k] = size;
        A.sizeSource[k] = SizeSource.block;
        A.blockPlus1[k] = b + 1;
        A.ownStack[k] = blocks.stack[b];
        A.stream[k] = segs.stream[s];
        end.beforeTrace++;
        continue;
      }
      const k = map.values[slot];
      if (k < 0) {
        end.aliveOnlyInSnapshot++;
        end.aliveOnlyInSnapshotBytes += size;
        continue;
      }
      A.blockPlus1[k] = b + 1;
      A.sizeBytes[k] = size;
      A.sizeSource[k] = SizeSource.block;
      if (A.origin[k] === Origin.trace) end.matchedFromTrace++;
      else end.beforeTrace++;
      matched.push(k);
      const pendingInReplay = A.freeRequestedEvent[k] !== NEVER;
      if (pendingInReplay !== pendingInSnapshot) {
        end.stateDiffers++;
        end.stateDiffersBytes += size;
      }
      const req = blocks.requestedSizeBytes[b];
      const traceReq = requestedOf(A, k);
      if (Number.isNaN(req) ? roundRequest(traceReq, rounding) > size : req !== traceReq) {
        end.sizeDiffers++;
        end.sizeDiffersBytes += size;
      }
    }
  }
  const freeComp = A.freeCompletedEvent;
  const blockPlus1 = A.blockPlus1;
  for (let k = 0; k < A.length; k++) {
    if (freeComp[k] === NEVER && blockPlus1[k] === 0) {
      end.aliveOnlyInReplay++;
      end.aliveOnlyInReplayBytes += A.sizeBytes[k];
    }
  }
  return Int32Array.from(matched);
}

interface StartState {
  /** Allocations active before the first event. */
  live: Int32Array;
  large: LargeBlocks;
  segState: IntervalState;
  initial: ReplayTotals;
}

/** The live set before the first event; large blocks made before the trace fitted to their free run. */
function startState(
  A: AllocationTable,
  extents: ReservedExtents,
  rounding: RoundingSettings,
  anomalies: ReplayAnomalies,
): StartState {
  const liveList: number[] = [];
  const large = new LargeBlocks(extents.bounds, A.length);
  const segState = initialIntervalState(extents);
  // From one allocation made before the trace to the next (indexOf): they are few, and a loop over every
  // allocation would only skip (and have V8 compile this whole function while it does).
  const allocEvent = A.allocEvent.subarray(0, A.length);
  for (let k = allocEvent.indexOf(BEFORE_TRACE); k >= 0; k = allocEvent.indexOf(BEFORE_TRACE, k + 1)) {
    liveList.push(k);
    const addr = addressOf(A, k);
    if (A.sizeBytes[k] > SMALL_SIZE_BYTES) large.add(k, addr, intervalAt(extents, addr));
  }
  const live = Int32Array.from(liveList);
  if (!rounding.expandableSegments) {
    for (let q = 0; q < live.length; q++) {
      const k = live[q];
      const rounded = roundRequest(requestedOf(A, k), rounding);
      if (rounded <= SMALL_SIZE_BYTES) continue;
      const addr = addressOf(A, k);
      const j = intervalAt(extents, addr);
      const regionEnd = fitRegionEndAt(extents, segState, j);
      const fitted =
        regionEnd === -1
          ? rounded
          : fittedBlockSizeAtStart(
              rounded,
              Math.min(regionEnd, large.after(addr, j, regionEnd)) - addr,
              rounding,
            );
      if (A.sizeSource[k] === SizeSource.block) {
        if (!Number.isNaN(fitted)) {
          if (fitted === A.sizeBytes[k]) anomalies.fitAgreedWithBlock++;
          else anomalies.fitDisagreedWithBlock++;
        }
      } else if (!Number.isNaN(fitted)) {
        A.sizeBytes[k] = fitted;
        A.sizeSource[k] = SizeSource.fitted;
        if (fitted !== rounded) anomalies.fittedBlocks++;
      } else anomalies.roundedOnlyBlocks++;
    }
  }
  let alloc = 0;
  let act = 0;
  let req = 0;
  for (let j = 0; j < live.length; j++) {
    const k = live[j];
    const size = A.sizeBytes[k];
    act += size;
    if (A.freeRequestedEvent[k] !== BEFORE_TRACE) {
      alloc += size;
      req += requestedOf(A, k);
    }
  }
  return {
    live,
    large,
    segState,
    initial: {
      allocatedBytes: alloc,
      activeBytes: act,
      reservedBytes: extents.initialReservedBytes,
      requestedBytes: req,
      // (by category once the categories are known: finishReplay)
      byCategory: new Float64Array(0),
    },
  };
}

interface Sweep {
  allocated: Float64Array;
  /** Active bytes after each of the marker events (in the order given). */
  activeAtMarkers: Float64Array;
  /** Active and reserved bytes after the last event. */
  finalActive: number;
  finalReserved: number;
  reservedSteps: { eventIndex: Int32Array; bytes: Float64Array };
  peakEvent: number;
  peak: number;
  /** The largest reserved after any event (−∞ without events). */
  reservedMax: number;
}

/** The allocations closed by an alloc over them (Paired.implicitCloses), by event, in event order. */
interface ClosesInOrder {
  at: Int32Array;
  old: Int32Array;
}

function implicitClosesInOrder(closes: Map<number, number>): ClosesInOrder {
  // (pass 1 adds them in event order, the order a Map keeps)
  return { at: Int32Array.from(closes.keys()), old: Int32Array.from(closes.values()) };
}

// What fitting a large block's size found (fitLargeBlocks: tallied into ReplayAnomalies after its loop).
const FIT_NONE = 0;
const FIT_AGREED = 1;
const FIT_DISAGREED = 2;
const FIT_CHANGED = 3;
const FIT_ROUNDED_ONLY = 4;
const FIT_OUTCOMES = 5;
const FITTED = SizeSource.fitted;
const BLOCK = SizeSource.block;

/**
 * Pass 2: the forward sweep — sizes of large blocks freed inside the trace (fitLargeBlocks), then the
 * columns and the peak over the final sizes (sums).
 */
function sweep(
  c: Columns,
  paired: Paired,
  A: AllocationTable,
  extents: ReservedExtents,
  start: StartState,
  rounding: RoundingSettings,
  anomalies: ReplayAnomalies,
  markerEvents: number[],
): Sweep {
  // (two loops, each small enough for V8 to have it compiled early: one loop doing both ran 40 ms of a
  // 101 MB file's load in code compiled for its first events, and TurboFan took 30 ms to compile it)
  const closes = implicitClosesInOrder(paired.implicitCloses);
  if (!rounding.expandableSegments) fitLargeBlocks(c, paired, A, extents, start, rounding, anomalies, closes);
  return sums(c, paired, A, extents, start, markerEvents, closes);
}

/**
 * The sizes of the large blocks allocated inside the trace, each fitted to the free run it was carved
 * from (the active large blocks and the reserved segments as they were then); sums() adds them up.
 */
function fitLargeBlocks(
  c: Columns,
  paired: Paired,
  A: AllocationTable,
  extents: ReservedExtents,
  start: StartState,
  rounding: RoundingSettings,
  anomalies: ReplayAnomalies,
  closes: ClosesInOrder,
): void {
  const { n } = c;
  const { eventAllocation, eventKind } = paired;
  const { large, segState } = start;
  const segEvents = extents.eventIndex;
  const segCount = segEvents.length;
  let nextSeg = segCount > 0 ? segEvents[0] : -1;
  let segPtr = 0;
  let closePtr = 0;
  let nextClose = closes.at.length > 0 ? closes.at[0] : -1;
  const aSize = A.sizeBytes;
  const aSrc = A.sizeSource;
  const addrCol = c.addr;
  const fits = new Int32Array(FIT_OUTCOMES);
  for (let i = 0; i < n; i++) {
    const kind = eventKind[i];
    if (kind === Kind.alloc) {
      const k = eventAllocation[i];
      if (i === nextClose) {
        const old = closes.old[closePtr++];
        nextClose = closePtr < closes.at.length ? closes.at[closePtr] : -1;
        if (aSize[old] > SMALL_SIZE_BYTES) large.remove(old, addrCol[i]);
      }
      const size = aSize[k];
      if (size > SMALL_SIZE_BYTES) {
        const addr = addrCol[i];
        const j = intervalAt(extents, addr);
        // (a known block of ≤ 1 MiB came from a request of ≤ 1 MiB: nothing to fit or score)
        const known = aSrc[k] === BLOCK;
        const rounded = known ? roundRequest(requestedOf(A, k), rounding) : size;
        if (rounded > SMALL_SIZE_BYTES) {
          const regionEnd = fitRegionEndAt(extents, segState, j);
          const fitted =
            regionEnd === -1
              ? rounded
              : fittedBlockSize(
                  rounded,
                  Math.min(regionEnd, large.after(addr, j, regionEnd)) - addr,
                  rounding,
                );
          // A known block scores the fitting rule against it; another takes the fitted size. Each
          // outcome is tallied at one site, its tests made for every block: an outcome first met late
          // in a long trace (a block of the snapshot, a size that could not be fitted) was a path V8's
          // code for this loop had no feedback for, and it was dropped and compiled again.
          const none = Number.isNaN(fitted);
          const same = fitted === size;
          const changed = fitted !== rounded;
          fits[
            known
              ? same
                ? FIT_AGREED
                : none
                  ? FIT_NONE
                  : FIT_DISAGREED
              : none
                ? FIT_ROUNDED_ONLY
                : changed
                  ? FIT_CHANGED
                  : FIT_NONE
          ]++;
          if (!known && !none) {
            aSize[k] = fitted;
            aSrc[k] = FITTED;
          }
        }
        large.add(k, addr, j);
      }
    } else if (kind === Kind.freeCompleted || kind === Kind.freeBoth) {
      const k = eventAllocation[i];
      if (aSize[k] > SMALL_SIZE_BYTES) large.remove(k, addrCol[i]);
    } else if (i === nextSeg) {
      applySegmentEvent(extents, segState, segPtr);
      segPtr++;
      nextSeg = segPtr < segCount ? segEvents[segPtr] : -1;
    }
  }
  anomalies.fitAgreedWithBlock += fits[FIT_AGREED];
  anomalies.fitDisagreedWithBlock += fits[FIT_DISAGREED];
  anomalies.fittedBlocks += fits[FIT_CHANGED];
  anomalies.roundedOnlyBlocks += fits[FIT_ROUNDED_ONLY];
}

/** Allocated bytes after every event (the column), active at the markers, reserved at its steps, the peak. */
function sums(
  c: Columns,
  paired: Paired,
  A: AllocationTable,
  extents: ReservedExtents,
  start: StartState,
  markerEvents: number[],
  closes: ClosesInOrder,
): Sweep {
  const { n } = c;
  const { eventAllocation, eventKind } = paired;
  // Only `allocated` is a column here: active and reserved are made when first read (activeColumn,
  // reservedColumn): the report and the first picture read them at a few events, if at all, and their
  // 16 bytes per event of fresh memory cost more than the pass (docs/speed.md).
  const allocated = takeFloat64(n);
  const activeAtMarkers = new Float64Array(markerEvents.length);
  let nextMarker = markerEvents.length > 0 ? markerEvents[0] : -1;
  let markerPtr = 0;
  let reservedAfterFirst = Number.NEGATIVE_INFINITY;
  const stepEvents: number[] = [];
  const stepBytes: number[] = [];
  const segEvents = extents.eventIndex;
  const segDelta = extents.delta;
  const segCount = segEvents.length;
  let nextSeg = segCount > 0 ? segEvents[0] : -1;
  let segPtr = 0;
  let peakEvent = -1;
  let peak = Number.NEGATIVE_INFINITY;
  let reservedMax = Number.NEGATIVE_INFINITY;
  let closePtr = 0;
  let nextClose = closes.at.length > 0 ? closes.at[0] : -1;
  const aSize = A.sizeBytes;
  const aFreeReq = A.freeRequestedEvent;
  let alloc = start.initial.allocatedBytes;
  let act = start.initial.activeBytes;
  let res = start.initial.reservedBytes;
  for (let i = 0; i < n; i++) {
    const kind = eventKind[i];
    if (kind === Kind.alloc) {
      if (i === nextClose) {
        const old = closes.old[closePtr++];
        nextClose = closePtr < closes.at.length ? closes.at[closePtr] : -1;
        const s = aSize[old];
        if (aFreeReq[old] === i) alloc -= s;
        act -= s;
      }
      const size = aSize[eventAllocation[i]];
      alloc += size;
      act += size;
    } else if (kind === Kind.freeRequested) {
      alloc -= aSize[eventAllocation[i]];
    } else if (kind !== Kind.none) {
      const s = aSize[eventAllocation[i]];
      if (kind === Kind.freeBoth) alloc -= s;
      act -= s;
    } else if (i === nextSeg) {
      res += segDelta[segPtr];
      if (res > reservedMax) reservedMax = res;
      stepEvents.push(i);
      stepBytes.push(res);
      segPtr++;
      nextSeg = segPtr < segCount ? segEvents[segPtr] : -1;
    }
    allocated[i] = alloc;
    if (i === nextMarker) {
      activeAtMarkers[markerPtr++] = act;
      nextMarker = markerPtr < markerEvents.length ? markerEvents[markerPtr] : -1;
    }
    if (i === 0) reservedAfterFirst = res;
    if (alloc > peak) {
      peak = alloc;
      peakEvent = i;
    }
  }
  // reserved changes only at segment events: its largest value is after one of them, or at the start
  if (n > 0 && reservedAfterFirst > reservedMax) reservedMax = reservedAfterFirst;
  return {
    allocated,
    activeAtMarkers,
    finalActive: act,
    finalReserved: res,
    reservedSteps: { eventIndex: Int32Array.from(stepEvents), bytes: Float64Array.from(stepBytes) },
    peakEvent,
    peak,
    reservedMax,
  };
}

/**
 * The live set before event c·every for every c (c = 0 … ⌊n/every⌋): allocation k is in checkpoint c
 * when allocEvent < c·every ≤ freeCompletedEvent. `every` doubles until the ids stored fit `budget`.
 */
function buildCheckpoints(A: AllocationTable, n: number, every: number, budget: number) {
  const allocEvent = A.allocEvent;
  const freeComp = A.freeCompletedEvent;
  let K = Math.max(1, Math.floor(every));
  for (;;) {
    const last = Math.floor(n / K);
    let total = 0;
    for (let k = 0; k < A.length; k++) {
      const lo = Math.floor(allocEvent[k] / K) + 1;
      const hi = freeComp[k] === NEVER ? last : Math.min(last, Math.floor(freeComp[k] / K));
      if (hi >= lo) total += hi - lo + 1;
    }
    if (total > budget && last > 0) {
      K *= 2;
      continue;
    }
    const counts = new Int32Array(last + 2);
    for (let k = 0; k < A.length; k++) {
      const lo = Math.floor(allocEvent[k] / K) + 1;
      const hi = freeComp[k] === NEVER ? last : Math.min(last, Math.floor(freeComp[k] / K));
      if (hi >= lo) {
        counts[lo]++;
        counts[hi + 1]--;
      }
    }
    const offsets = new Int32Array(last + 2);
    let run = 0;
    for (let cp = 0; cp <= last; cp++) {
      run += counts[cp];
      offsets[cp + 1] = offsets[cp] + run;
    }
    const ids = new Int32Array(offsets[last + 1]);
    const fill = offsets.slice(0, last + 1);
    for (let k = 0; k < A.length; k++) {
      const lo = Math.floor(allocEvent[k] / K) + 1;
      const hi = freeComp[k] === NEVER ? last : Math.min(last, Math.floor(freeComp[k] / K));
      for (let cp = lo; cp <= hi; cp++) ids[fill[cp]++] = k;
    }
    const list: Int32Array[] = [];
    for (let cp = 0; cp <= last; cp++) list.push(ids.subarray(offsets[cp], offsets[cp + 1]));
    return { list, every: K };
  }
}

/** Snapshot, oom and annotate markers (they need the active column). */
function eventMarkers(
  model: SnapshotModel,
  trace: TraceTable,
  events: number[],
  markers: ReplayMarkers,
  /** Active bytes after each of `events`. */
  activeAt: Float64Array,
  x: Float64Array,
  hasTime: boolean,
): void {
  const { action, sizeBytes } = trace;
  for (let m = 0; m < events.length; m++) {
    const i = events[m];
    const a = action[i];
    const timeUs = hasTime ? x[i] : Number.isFinite(trace.timeUs[i]) ? trace.timeUs[i] : null;
    if (a === Action.snapshot) {
      markers.snapshot.push({
        eventIndex: i,
        timeUs,
        recordedActiveBytes: sizeBytes[i],
        replayedActiveBytes: activeAt[m],
      });
    } else if (a === Action.oom) {
      markers.oom.push({
        eventIndex: i,
        timeUs,
        requestedBytes: sizeBytes[i],
        deviceFreeBytes: trace.deviceFreeBytes[i],
        stream: trace.stream[i],
        stack: trace.stack[i],
      });
    } else markers.annotate.push({ eventIndex: i, text: str(model, idAt(trace.userMetadata, i)) });
  }
}

export function prepareReplay(model: SnapshotModel, device: number, opts: PrepareOptions): Replay {
  return finishReplay(startReplay(model, device, opts), opts);
}

/** The options a replay needs before its categories (startReplay): none of them the attribution's judgement. */
export type StartOptions = Pick<
  PrepareOptions,
  "blockWorkspace" | "categoryCount" | "unknownCategory" | "checkpointEvery"
>;

/**
 * A replay swept through, its allocations not yet given categories, sites and (made before the trace)
 * stacks: finishReplay gives them from the attribution. Everything else (the pairing, the sizes, the
 * sweep, the peak, the end-state check) needs none of it, so it can run while the attribution does.
 */
export interface StartedReplay {
  readonly fields: ReplayFields;
  readonly cols: Columns;
  readonly A: AllocationTable;
  /** The allocations pass 1 created (rows 0 … pairedCount − 1); matchEndState added the rest. */
  readonly pairedCount: number;
  /** The allocations matchEndState matched to a block of the snapshot. */
  readonly matched: Int32Array;
  /** Allocations allocated (not pending free) before the first event, and their sizes then. */
  readonly allocatedAtStart: Int32Array;
  readonly allocatedAtStartBytes: Float64Array;
  readonly checkpointEvery: number;
  readonly eventKind: Uint8Array;
}

/** The replay up to its categories (see StartedReplay). `opts.blockWorkspace`: attribution's blockWorkspaceOf(model). */
export function startReplay(model: SnapshotModel, device: number, opts: StartOptions): StartedReplay {
  const trace = model.traces[device] ?? null;
  const cols = columnsOf(trace);
  const n = cols.n;
  const C = Math.max(1, opts.categoryCount);
  const unknownCategory = opts.unknownCategory ?? C - 1;
  const scan = prescan(model, cols, trace ? traceCounts(trace) : null);
  const rounding = roundingSettings(
    model.allocatorSettings,
    isNpuSnapshot(model, scan.markers.workspace.length > 0),
  );
  if (model.source.exactSizes) rounding.exact = true;
  const { markers, hasTime, x } = scan;
  const finalBlocks = countFinalBlocks(model, device);
  const anomalies: ReplayAnomalies = {
    freesOfAllocationsBeforeTrace: 0,
    completedWithoutRequest: 0,
    allocOverLive: 0,
    repeatedFreeRequested: 0,
    entriesWithoutAddress: 0,
    redundantSegmentEvents: 0,
    fittedBlocks: 0,
    roundedOnlyBlocks: 0,
    fitAgreedWithBlock: 0,
    fitDisagreedWithBlock: 0,
  };

  // Pass 1: pair allocs and frees by (address, ordinal). Allocations: one per alloc entry, per free of
  // an allocation made before the trace, and (added next) per active block the trace never touches.
  // (paired already when the attribution read its lifetimes off it on this thread: pairing.ts)
  const paired = trace
    ? takePairing(model, trace, anomalies)
    : pairEntries(
        0,
        cols.action,
        cols.isWorkspace,
        cols.addr,
        cols.size,
        cols.stack,
        finalBlocks + 1024,
        anomalies,
      );
  const A =
    paired.table.ownAddress.length >= paired.count + finalBlocks
      ? paired.table
      : growAllocationTable(paired.table, paired.count + finalBlocks);
  const pairedCount = A.length;
  const freesCarryAllocationStack = assignFromEntries(A, pairedCount, cols, rounding);

  const end = newEndState(finalBlocks);
  const matched = matchEndState(model, device, A, paired.map, opts.blockWorkspace, rounding, end);

  const extents = buildExtents(model, device, trace ?? undefined, scan.segmentEvents);
  anomalies.redundantSegmentEvents = extents.redundantEvents;

  const start = startState(A, extents, rounding, anomalies);
  const allocatedAtStart = start.live.filter((k) => A.freeRequestedEvent[k] !== BEFORE_TRACE);
  const allocatedAtStartBytes = Float64Array.from(allocatedAtStart, (k) => A.sizeBytes[k]);
  const swept = sweep(cols, paired, A, extents, start, rounding, anomalies, scan.markerEvents);
  if (trace) eventMarkers(model, trace, scan.markerEvents, markers, swept.activeAtMarkers, x, hasTime);
  markers.annotations = annotationSpans(model, device, x, hasTime);

  end.replayAllocatedBytes = n > 0 ? swept.allocated[n - 1] : start.initial.allocatedBytes;
  end.replayActiveBytes = n > 0 ? swept.finalActive : start.initial.activeBytes;
  end.replayReservedBytes = n > 0 ? swept.finalReserved : start.initial.reservedBytes;
  end.snapshotReservedBytes = extents.snapshotReservedBytes;
  end.reservedMismatchBytes = extents.mismatchBytes;

  const check = traceReplayCheckFor(device, scan.replayedEvents, end, anomalies);
  dropRecycledMemory(); // the load's big columns are made: what is left of the recycled memory goes

  return {
    fields: {
      device,
      trace,
      length: n,
      replayedEvents: scan.replayedEvents,
      hasTime,
      x,
      allocated: swept.allocated,
      categoryCount: C,
      unknownCategory,
      initial: start.initial,
      allocations: trimAllocationTable(A),
      eventAllocation: paired.eventAllocation,
      implicitCloses: paired.implicitCloses,
      extents,
      markers,
      anomalies,
      freesCarryAllocationStack,
      peakEvent: swept.peakEvent >= 0 ? swept.peakEvent : null,
      peakAllocatedBytes: swept.peakEvent >= 0 ? swept.peak : Number.NaN,
      maxReservedBytes: swept.reservedMax,
      reservedSteps: swept.reservedSteps,
      end,
      check,
      rounding,
    },
    cols,
    A,
    pairedCount,
    matched,
    allocatedAtStart,
    allocatedAtStartBytes,
    checkpointEvery: opts.checkpointEvery ?? DEFAULT_CHECKPOINT_EVERY,
    eventKind: paired.eventKind,
  };
}

/**
 * The replay, its allocations given their categories, sites and stacks from the attribution (`opts`:
 * the same category count as startReplay's). Call once per StartedReplay: it writes on its table.
 */
export function finishReplay(started: StartedReplay, opts: PrepareOptions): Replay {
  const { fields, cols, A, allocatedAtStart, allocatedAtStartBytes } = started;
  const C = fields.categoryCount;
  const unknownCategory = fields.unknownCategory;
  assignCategories(A, started.pairedCount, cols, opts, C, unknownCategory, fields.freesCarryAllocationStack);
  assignBlockCategories(A, started.matched, started.pairedCount, opts, unknownCategory);
  const byCategory = new Float64Array(C);
  for (let j = 0; j < allocatedAtStart.length; j++) {
    byCategory[A.category[allocatedAtStart[j]]] += allocatedAtStartBytes[j];
  }
  const n = fields.length;
  const makeCheckpoints = () => buildCheckpoints(A, n, started.checkpointEvery, 4 * n + (1 << 20));
  return new PreparedReplay(
    { ...fields, initial: { ...fields.initial, byCategory } },
    makeCheckpoints,
    started.eventKind,
  );
}

/** What a replay holds as plain values (the columns and facts), before its lazily computed parts. */
type ReplayFields = Omit<
  Replay,
  | "active"
  | "reserved"
  | "requested"
  | "allocatedByCategory"
  | "categoriesAt"
  | "categoryMaxBytes"
  | "checkpointEvery"
  | "checkpoints"
  | "checkpointsBuilt"
>;

/**
 * A prepared replay. A class, not an object literal: V8 keeps an object literal with getters in
 * dictionary mode, where every `replay.x` / `replay.allocated` read is a hash lookup (≈ 4 × slower in
 * the loops over events that read them); a class instance has fast properties, its getters on the
 * prototype. The lazily computed parts (requested bytes, per-category columns and index, checkpoints)
 * are built on first access.
 */
class PreparedReplay implements Replay {
  device!: number;
  trace!: TraceTable | null;
  length!: number;
  replayedEvents!: number;
  hasTime!: boolean;
  x!: Float64Array;
  allocated!: Float64Array;
  categoryCount!: number;
  unknownCategory!: number;
  initial!: Replay["initial"];
  allocations!: AllocationTable;
  eventAllocation!: Int32Array;
  implicitCloses!: Map<number, number>;
  extents!: ReservedExtents;
  markers!: ReplayMarkers;
  anomalies!: ReplayAnomalies;
  freesCarryAllocationStack!: boolean;
  peakEvent!: number | null;
  peakAllocatedBytes!: number;
  maxReservedBytes!: number;
  reservedSteps!: Replay["reservedSteps"];
  end!: EndStateComparison;
  check!: CheckResult;
  rounding!: RoundingSettings;
  #requestedColumn: Float64Array | null = null;
  #byCategory: Float64Array[] | null = null;
  #byCategoryIndex: CategoryIndex | null = null;
  #cps: { list: Int32Array[]; every: number } | null = null;
  #active: Float64Array | null = null;
  #reserved: Float64Array | null = null;

  /** Builds the checkpoints of the live set (on the first state query: the columns do not need them). */
  readonly #makeCheckpoints: () => { list: Int32Array[]; every: number };
  /** What each event did to its allocation (the pairing's), for the active and reserved columns. */
  readonly #eventKind: Uint8Array;

  constructor(
    fields: ReplayFields,
    makeCheckpoints: () => { list: Int32Array[]; every: number },
    eventKind: Uint8Array,
  ) {
    Object.assign(this, fields);
    this.#makeCheckpoints = makeCheckpoints;
    this.#eventKind = eventKind;
  }

  get active(): Float64Array {
    this.#active ??= activeColumn(this, this.#eventKind);
    return this.#active;
  }

  get reserved(): Float64Array {
    this.#reserved ??= reservedColumn(this);
    return this.#reserved;
  }

  get requested(): Float64Array {
    this.#requestedColumn ??= requestedBytesColumn(this);
    return this.#requestedColumn;
  }

  get allocatedByCategory(): Float64Array[] {
    this.#byCategory ??= categoryColumns(this);
    return this.#byCategory;
  }

  categoriesAt(i: number, out = new Float64Array(this.categoryCount)): Float64Array {
    return this.#categoriesNow().at(i, out);
  }

  get categoryMaxBytes(): Float64Array {
    return this.#categoriesNow().maxBytes;
  }

  get checkpointEvery(): number {
    return this.#checkpointsNow().every;
  }

  get checkpoints(): Int32Array[] {
    return this.#checkpointsNow().list;
  }

  get checkpointsBuilt(): boolean {
    return this.#cps !== null;
  }

  #checkpointsNow(): { list: Int32Array[]; every: number } {
    this.#cps ??= this.#makeCheckpoints();
    return this.#cps;
  }

  #categoriesNow(): CategoryIndex {
    this.#byCategoryIndex ??= categoryIndex(this);
    return this.#byCategoryIndex;
  }
}

/**
 * Active bytes after every event: the sweep's sums again (the same additions in the same order, over the
 * allocations' final sizes, which the sweep fitted before any event that reads them).
 */
function activeColumn(r: Replay, eventKind: Uint8Array): Float64Array {
  const n = r.length;
  const col = new Float64Array(n);
  const size = r.allocations.sizeBytes;
  const ev = r.eventAllocation;
  const implicitCloses = r.implicitCloses;
  const hasImplicit = implicitCloses.size > 0;
  let act = r.initial.activeBytes;
  for (let i = 0; i < n; i++) {
    const kind = eventKind[i];
    if (kind === Kind.alloc) {
      if (hasImplicit) {
        const old = implicitCloses.get(i);
        if (old !== undefined) act -= size[old];
      }
      act += size[ev[i]];
    } else if (kind !== Kind.none && kind !== Kind.freeRequested) act -= size[ev[i]];
    col[i] = act;
  }
  return col;
}

/** Reserved bytes after every event, from its steps. */
function reservedColumn(r: Replay): Float64Array {
  const col = new Float64Array(r.length);
  const { eventIndex, bytes } = r.reservedSteps;
  let from = 0;
  let res = r.initial.reservedBytes;
  for (let s = 0; s < eventIndex.length; s++) {
    col.fill(res, from, eventIndex[s]);
    from = eventIndex[s];
    res = bytes[s];
  }
  col.fill(res, from);
  return col;
}

/** Allocated bytes in requested (unrounded) sizes after every event. */
function requestedBytesColumn(r: Replay): Float64Array {
  const n = r.length;
  const col = new Float64Array(n);
  if (!r.trace) return col;
  const A = r.allocations;
  const req = (k: number) => requestedOf(A, k);
  const freeReq = A.freeRequestedEvent;
  const freeComp = A.freeCompletedEvent;
  const action = r.trace.action;
  const isWorkspace = r.trace.isWorkspace;
  const ev = r.eventAllocation;
  let cur = r.initial.requestedBytes;
  for (let i = 0; i < n; i++) {
    const k = ev[i];
    if (k >= 0 && !isWorkspace[i]) {
      const a = action[i];
      if (a === Action.alloc) {
        const old = r.implicitCloses.size > 0 ? r.implicitCloses.get(i) : undefined;
        if (old !== undefined && freeReq[old] === i) cur -= req(old);
        cur += req(k);
      } else if (a === Action.free_requested) {
        if (freeReq[k] === i) cur -= req(k);
      } else if (a === Action.free_completed) {
        if (freeComp[k] === i && freeReq[k] === i) cur -= req(k);
      }
    }
    col[i] = cur;
  }
  return col;
}

const fmt = exactBytesShort;

function traceReplayCheckFor(
  device: number,
  replayedEvents: number,
  e: EndStateComparison,
  an: ReplayAnomalies,
): CheckResult {
  if (replayedEvents === 0) {
    return { id: "trace-replay", status: "skipped", detail: `device ${device}: no trace entries to replay` };
  }
  const problems: string[] = [];
  const mismatched = e.aliveOnlyInReplay + e.aliveOnlyInSnapshot + e.stateDiffers + e.sizeDiffers;
  const mismatchedBytes =
    e.aliveOnlyInReplayBytes + e.aliveOnlyInSnapshotBytes + e.stateDiffersBytes + e.sizeDiffersBytes;
  if (mismatched > 0) {
    const parts: string[] = [];
    if (e.aliveOnlyInReplay)
      parts.push(
        `${e.aliveOnlyInReplay} alive after the trace but not in segments (${fmt(e.aliveOnlyInReplayBytes)})`,
      );
    if (e.aliveOnlyInSnapshot)
      parts.push(
        `${e.aliveOnlyInSnapshot} active in segments but freed by the trace (${fmt(e.aliveOnlyInSnapshotBytes)})`,
      );
    if (e.stateDiffers)
      parts.push(`${e.stateDiffers} allocated vs pending-free differ (${fmt(e.stateDiffersBytes)})`);
    if (e.sizeDiffers) parts.push(`${e.sizeDiffers} requested sizes differ (${fmt(e.sizeDiffersBytes)})`);
    problems.push(`${mismatched} mismatched blocks, ${fmt(mismatchedBytes)}: ${parts.join("; ")}`);
  }
  // Against the snapshot's blocks: a segment whose allocated_size disagrees with its own blocks is the
  // active-total check's finding, not the replay's.
  if (e.replayAllocatedBytes !== e.snapshotBlockAllocatedBytes) {
    problems.push(
      `replayed allocated ${fmt(e.replayAllocatedBytes)} ≠ the snapshot's active_allocated blocks ${fmt(e.snapshotBlockAllocatedBytes)}`,
    );
  }
  if (e.reservedMismatchBytes > 0) {
    problems.push(
      `reserved ranges differ by ${fmt(e.reservedMismatchBytes)} (replayed ${fmt(e.replayReservedBytes)}, segments ${fmt(e.snapshotReservedBytes)})`,
    );
  }
  const summary =
    `${replayedEvents} events; ${e.snapshotLiveBlocks} active blocks in segments ` +
    `(${e.matchedFromTrace} allocated in the trace, ${e.beforeTrace} before it)` +
    (an.freesOfAllocationsBeforeTrace
      ? `; ${an.freesOfAllocationsBeforeTrace} frees of allocations made before the trace`
      : "");
  if (problems.length > 0) {
    return {
      id: "trace-replay",
      status: "fail",
      detail: `device ${device}: ${problems.join("; ")}; ${summary}`,
    };
  }
  return {
    id: "trace-replay",
    status: "pass",
    detail: `device ${device}: replay ends in the snapshot state: ${summary}; allocated ${fmt(e.replayAllocatedBytes)}, reserved ${fmt(e.replayReservedBytes)}`,
  };
}
