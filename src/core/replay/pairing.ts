// Pass 1 of the replay: every alloc, free_requested and free_completed entry paired with the others at
// its address, by ordinal. Done once per trace: the attribution reads its lifetimes off it
// (attribution/trace-rules.ts, before any replay exists) and the replay then takes it over (prepare.ts),
// so the addresses of a trace are hashed once, not once for each.

import { takeFloat64, takeInt32, takeUint8 } from "../model/recycled-memory";
import { traceCounts } from "../model/trace-counts";
import { Action, BlockState, type SnapshotModel, type TraceTable } from "../model/types";
import { AddressMap, hashAddress } from "./addr-map";
import {
  type AllocationEntries,
  type AllocationTable,
  BEFORE_TRACE,
  NEVER,
  Origin,
  type ReplayAnomalies,
} from "./types";

/**
 * Where a pairing's columns come from, all zero-filled: `often` for those written for every allocation or
 * entry, `rarely` for the others (their pages, never written, stay unmapped).
 */
export interface ColumnSource {
  often: { f64(n: number): Float64Array; i32(n: number): Int32Array; u8(n: number): Uint8Array };
  rarely: { f64(n: number): Float64Array; i32(n: number): Int32Array; u8(n: number): Uint8Array };
}

/**
 * This thread's: the often written columns taken from the recycled memory (resident already: no page
 * faults), the others new arrays.
 */
export const RECYCLED_COLUMNS: ColumnSource = {
  often: { f64: (n) => takeFloat64(n), i32: (n) => takeInt32(n), u8: (n) => takeUint8(n) },
  rarely: { f64: (n) => new Float64Array(n), i32: (n) => new Int32Array(n), u8: (n) => new Uint8Array(n) },
};

/**
 * The columns every allocation writes are `often` ones (from the recycled memory unless told); those
 * written for a few (allocations made before the trace, blocks, other streams) `rarely` ones.
 */
export function newAllocationTable(
  cap: number,
  entries: AllocationEntries,
  from: ColumnSource = RECYCLED_COLUMNS,
): AllocationTable {
  const { often, rarely } = from;
  return {
    length: 0,
    entries,
    ownAddress: rarely.f64(cap),
    ownRequestedBytes: rarely.f64(cap),
    sizeBytes: often.f64(cap),
    sizeSource: rarely.u8(cap),
    origin: often.u8(cap),
    allocEvent: often.i32(cap),
    freeRequestedEvent: often.i32(cap),
    freeCompletedEvent: often.i32(cap),
    category: often.u8(cap),
    site: often.i32(cap),
    ownStack: rarely.i32(cap),
    stream: rarely.i32(cap),
    blockPlus1: rarely.i32(cap),
  };
}

export function growAllocationTable(
  t: AllocationTable,
  cap: number,
  from: ColumnSource = RECYCLED_COLUMNS,
): AllocationTable {
  const g = newAllocationTable(cap, t.entries, from);
  g.length = t.length;
  g.ownAddress.set(t.ownAddress);
  g.ownRequestedBytes.set(t.ownRequestedBytes);
  g.sizeBytes.set(t.sizeBytes);
  g.sizeSource.set(t.sizeSource);
  g.origin.set(t.origin);
  g.allocEvent.set(t.allocEvent);
  g.freeRequestedEvent.set(t.freeRequestedEvent);
  g.freeCompletedEvent.set(t.freeCompletedEvent);
  g.category.set(t.category);
  g.site.set(t.site);
  g.ownStack.set(t.ownStack);
  g.stream.set(t.stream);
  g.blockPlus1.set(t.blockPlus1);
  return g;
}

export interface Paired {
  table: AllocationTable;
  count: number;
  eventAllocation: Int32Array;
  /** What each event does to its allocation (Kind). */
  eventKind: Uint8Array;
  implicitCloses: Map<number, number>;
  map: AddressMap;
}

/** What an event does to its allocation, decided by pass 1. */
export const Kind = {
  none: 0,
  /** opens the allocation: allocated and active grow */
  alloc: 1,
  /** the user's free: allocated shrinks */
  freeRequested: 2,
  /** the block returns to the pool: active shrinks */
  freeCompleted: 3,
  /** free_completed with no free_requested before it: both shrink */
  freeBoth: 4,
} as const;

/** The trace columns pass 1 reads (its `entries`: addr, sizeBytes and stack). */
export interface PairingColumns extends AllocationEntries {
  action: Uint8Array;
  isWorkspace: Uint8Array;
}

/**
 * Pass 1 under way: the entries before `next` paired. Paired in one go after a read (pairEntries), or as
 * the read goes, on another thread (attribution/streamed-pairing.ts).
 */
export interface PairingRun extends Paired {
  next: number;
  columns: PairingColumns;
  anomalies: PairingAnomalies;
  from: ColumnSource;
}

/**
 * A pass 1 over `columns` with room for `rows` entries and about `capacity` allocations (the table grows
 * past it). `eventAllocation` needs no filling: every entry paired writes its own.
 */
export function startPairing(
  columns: PairingColumns,
  rows: number,
  capacity: number,
  anomalies: PairingAnomalies,
  from: ColumnSource = RECYCLED_COLUMNS,
): PairingRun {
  // Addresses are reused heavily: start with the smallest table (cache-resident) and let it grow; the
  // warm-up file (workers/warm-up.ts) then makes it probe and grow too, before a user's file does.
  // (its second column: the last alloc entry at each address, which the attribution looks live blocks up by;
  // in shared memory where the columns are another thread's too)
  const shared = from !== RECYCLED_COLUMNS;
  return {
    next: 0,
    columns,
    anomalies,
    from,
    table: newAllocationTable(capacity, columns, from),
    count: 0,
    eventAllocation: from.often.i32(rows),
    eventKind: from.often.u8(rows),
    implicitCloses: new Map<number, number>(),
    map: new AddressMap(0, true, shared),
  };
}

/** Pairs the entries from `run.next` to `end`. */
export function pairUpTo(run: PairingRun, end: number): void {
  const { action, isWorkspace, addr: addrCol, sizeBytes: sizeCol } = run.columns;
  const { eventAllocation, eventKind, implicitCloses, map, anomalies, from } = run;
  let A = run.table;
  let pAddr = A.ownAddress;
  let pReq = A.ownRequestedBytes;
  let pFreeReq = A.freeRequestedEvent;
  let pFreeComp = A.freeCompletedEvent;
  let pAllocEv = A.allocEvent;
  let pOrigin = A.origin;
  let count = run.count;
  // The map's columns, read here rather than through a call per entry (the probe of an address seen
  // before, most entries', is inlined below; a new one is inserted by map.slot, which may grow them).
  let keys = map.keys;
  let values = map.values;
  let mask = map.mask;
  const FREE_COMPLETED = Action.free_completed;
  const ALLOC = Action.alloc;
  const FREE_REQUESTED = Action.free_requested;
  for (let i = run.next; i < end; i++) {
    const a = action[i];
    if (a > FREE_COMPLETED || isWorkspace[i]) {
      eventAllocation[i] = -1;
      continue;
    }
    const addr = addrCol[i];
    if (Number.isNaN(addr)) {
      eventAllocation[i] = -1;
      anomalies.entriesWithoutAddress++;
      continue;
    }
    let slot = hashAddress(addr) & mask;
    for (;;) {
      const key = keys[slot];
      if (key === addr) break;
      if (Number.isNaN(key)) {
        slot = map.slot(addr, -1);
        keys = map.keys;
        values = map.values;
        mask = map.mask;
        break;
      }
      slot = (slot + 1) & mask;
    }
    const open = values[slot];
    let k = open;
    if (a === ALLOC || open < 0) {
      // A new allocation: this alloc, or one made before the trace that this free reveals.
      if (count === pAddr.length) {
        A.length = count;
        A = growAllocationTable(A, Math.ceil(count * 1.5) + 1024, from);
        pAddr = A.ownAddress;
        pReq = A.ownRequestedBytes;
        pFreeReq = A.freeRequestedEvent;
        pFreeComp = A.freeCompletedEvent;
        pAllocEv = A.allocEvent;
        pOrigin = A.origin;
      }
      k = count++;
      pFreeReq[k] = NEVER;
      pFreeComp[k] = NEVER;
      eventAllocation[i] = k;
      if (a === ALLOC) {
        // (its address, size and stack are the entry's, read from the trace: see AllocationTable;
        // its origin, Origin.trace, is 0, what the new column holds)
        eventKind[i] = Kind.alloc;
        pAllocEv[k] = i;
        if (open >= 0) {
          anomalies.allocOverLive++;
          if (pFreeReq[open] === NEVER) pFreeReq[open] = i;
          pFreeComp[open] = i;
          implicitCloses.set(i, open);
        }
        values[slot] = k;
        (map.second as Int32Array)[slot] = i;
      } else if (a === FREE_REQUESTED) {
        pAddr[k] = addr;
        pReq[k] = sizeCol[i];
        eventKind[i] = Kind.freeRequested;
        pOrigin[k] = Origin.beforeTraceFreed;
        pAllocEv[k] = BEFORE_TRACE;
        pFreeReq[k] = i;
        values[slot] = k;
        anomalies.freesOfAllocationsBeforeTrace++;
      } else {
        pAddr[k] = addr;
        pReq[k] = sizeCol[i];
        eventKind[i] = Kind.freeCompleted;
        pOrigin[k] = Origin.beforeTracePending;
        pAllocEv[k] = BEFORE_TRACE;
        pFreeReq[k] = BEFORE_TRACE;
        pFreeComp[k] = i;
        anomalies.freesOfAllocationsBeforeTrace++;
      }
      continue;
    }
    eventAllocation[i] = k;
    if (a === FREE_REQUESTED) {
      if (pFreeReq[k] !== NEVER) anomalies.repeatedFreeRequested++;
      else {
        pFreeReq[k] = i;
        eventKind[i] = Kind.freeRequested;
      }
    } else {
      // free_completed
      if (pFreeReq[k] === NEVER) {
        pFreeReq[k] = i;
        anomalies.completedWithoutRequest++;
        eventKind[i] = Kind.freeBoth;
      } else eventKind[i] = Kind.freeCompleted;
      pFreeComp[k] = i;
      values[slot] = -1;
    }
  }
  A.length = count;
  run.table = A;
  run.count = count;
  if (end > run.next) run.next = end;
}

/** Pass 1: pairs alloc / free_requested / free_completed entries by (address, ordinal). */
export function pairEntries(
  n: number,
  action: Uint8Array,
  isWorkspace: Uint8Array,
  addrCol: Float64Array,
  sizeCol: Float64Array,
  stackCol: Int32Array,
  capacity: number,
  anomalies: PairingAnomalies,
): Paired {
  const columns = { action, isWorkspace, addr: addrCol, sizeBytes: sizeCol, stack: stackCol };
  const run = startPairing(columns, n, capacity, anomalies);
  pairUpTo(run, n);
  const { table, count, eventAllocation, eventKind, implicitCloses, map } = run;
  return { table, count, eventAllocation, eventKind, implicitCloses, map };
}

/** The anomalies pass 1 counts (the replay adds them to its own). */
export type PairingAnomalies = Pick<
  ReplayAnomalies,
  | "entriesWithoutAddress"
  | "allocOverLive"
  | "freesOfAllocationsBeforeTrace"
  | "repeatedFreeRequested"
  | "completedWithoutRequest"
>;

interface KeptPairing {
  paired: Paired;
  anomalies: PairingAnomalies;
}

/** Pass 1 of each trace the attribution paired, until its replay takes it (once: the replay writes on it). */
const kept = new WeakMap<TraceTable, KeptPairing>();

function pairTrace(model: SnapshotModel, trace: TraceTable): KeptPairing {
  const n = trace.length;
  const { action, isWorkspace } = trace;
  // (from the counts the summary and the replay read too: one pass over the actions, not two; a
  // torch_npu trace's workspace allocs are counted as well, a few rows of room to spare)
  const allocEvents = traceCounts(trace).actions[Action.alloc];
  const anomalies = noAnomalies();
  // room for the blocks of the snapshot the trace never touches too (added by the replay)
  const capacity = allocEvents + countFinalBlocks(model, trace.device) + 1024 + (allocEvents >> 4);
  const paired = pairEntries(
    n,
    action,
    isWorkspace,
    trace.addr,
    trace.sizeBytes,
    trace.stack,
    capacity,
    anomalies,
  );
  return { paired, anomalies };
}

/** Pass 1 of `trace`, kept for its replay (the attribution's call). Read it, do not write on it. */
export function tracePairing(model: SnapshotModel, trace: TraceTable): Paired {
  let k = kept.get(trace);
  if (!k) kept.set(trace, (k = pairTrace(model, trace)));
  return k.paired;
}

/**
 * Keeps `paired` as pass 1 of `trace` (tracePairing's answer): another thread's pairing. On the helper, whose
 * attribution reads it there (workers/attribution-helper.ts), its anomalies are the replay's, not counted;
 * where the replay is to take it, they come with it.
 */
export function keepPairing(
  trace: TraceTable,
  paired: Paired,
  anomalies: PairingAnomalies = noAnomalies(),
): void {
  kept.set(trace, { paired, anomalies });
}

export function noAnomalies(): PairingAnomalies {
  return {
    entriesWithoutAddress: 0,
    allocOverLive: 0,
    freesOfAllocationsBeforeTrace: 0,
    repeatedFreeRequested: 0,
    completedWithoutRequest: 0,
  };
}

/** Pass 1 of `trace` for its replay: the kept one (handed over once), else paired now; counts anomalies. */
export function takePairing(model: SnapshotModel, trace: TraceTable, anomalies: ReplayAnomalies): Paired {
  const k = kept.get(trace) ?? pairTrace(model, trace);
  kept.delete(trace);
  for (const key of Object.keys(k.anomalies) as (keyof PairingAnomalies)[])
    anomalies[key] += k.anomalies[key];
  return k.paired;
}

/** Active blocks of the device at the snapshot: each becomes an allocation if the trace never made it. */
export function countFinalBlocks(model: SnapshotModel, device: number): number {
  const segs = model.segments;
  const state = model.blocks.state;
  let finalBlocks = 0;
  for (let s = 0; s < segs.length; s++) {
    if (segs.device[s] !== device) continue;
    const end = segs.firstBlock[s] + segs.blockCount[s];
    for (let b = segs.firstBlock[s]; b < end; b++) {
      const st = state[b];
      if (st === BlockState.active_allocated || st === BlockState.active_pending_free) finalBlocks++;
    }
  }
  return finalBlocks;
}
