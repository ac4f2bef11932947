// Allocated bytes per category over a replayed trace. Only one allocation's category changes per
// event, so the value of every category after any event is the state at the checkpoint before it plus
// at most CHECKPOINT_EVERY events' changes: a checkpoint every 1024 events keeps C × n / 1024 numbers
// (a few hundred KiB for 5 M events), where full columns would keep C × n (≈ 380 MiB for 9 categories).

import { Action } from "../model/types";
import type { Replay } from "./types";

const CHECKPOINT_EVERY = 1024;

/** The replay as the category bookkeeping reads it (no index of its own yet). */
type ReplayColumns = Omit<Replay, "allocatedByCategory" | "categoriesAt" | "categoryMaxBytes">;

/** Calls `change(category, deltaBytes)` for what event i does to the categories (0, 1 or 2 calls). */
function eachChange(r: ReplayColumns, i: number, change: (c: number, delta: number) => void): void {
  const trace = r.trace;
  if (!trace) return;
  const k = r.eventAllocation[i];
  if (k < 0 || trace.isWorkspace[i]) return;
  const A = r.allocations;
  const a = trace.action[i];
  if (a === Action.alloc) {
    const old = r.implicitCloses.size > 0 ? r.implicitCloses.get(i) : undefined;
    if (old !== undefined && A.freeRequestedEvent[old] === i) change(A.category[old], -A.sizeBytes[old]);
    change(A.category[k], A.sizeBytes[k]);
  } else if (a === Action.free_requested) {
    if (A.freeRequestedEvent[k] === i) change(A.category[k], -A.sizeBytes[k]);
  } else if (a === Action.free_completed) {
    if (A.freeCompletedEvent[k] === i && A.freeRequestedEvent[k] === i)
      change(A.category[k], -A.sizeBytes[k]);
  }
}

export interface CategoryIndex {
  /** Writes allocated bytes per category after event i (i < 0: before the first) into `out`. */
  at(i: number, out: Float64Array): Float64Array;
  /** The most each category held at any moment (the initial state included). */
  maxBytes: Float64Array;
}

export function categoryIndex(r: ReplayColumns): CategoryIndex {
  const n = r.length;
  const C = r.categoryCount;
  const every = CHECKPOINT_EVERY;
  // checkpoint j: the state before event j × every
  const states = new Float64Array((Math.floor(n / every) + 1) * C);
  const cur = Float64Array.from({ length: C }, (_, c) => r.initial.byCategory[c] ?? 0);
  const maxBytes = cur.slice();
  const bump = (c: number, delta: number) => {
    cur[c] += delta;
    if (cur[c] > maxBytes[c]) maxBytes[c] = cur[c];
  };
  for (let i = 0; i < n; i++) {
    if (i % every === 0) states.set(cur, (i / every) * C);
    eachChange(r, i, bump);
  }
  // The last state asked for, so a caller walking forward (one query per timeline pixel, each a little
  // after the one before) continues from it instead of from the checkpoint: the same numbers, each event's
  // change applied once per walk instead of up to `every` times per query.
  const state = new Float64Array(C);
  let pos = -2; // state holds the categories after event pos; -2: nothing held
  const add = (c: number, delta: number) => {
    state[c] += delta;
  };
  return {
    maxBytes,
    at(i, out) {
      if (i < 0 || n === 0) {
        for (let c = 0; c < C; c++) out[c] = r.initial.byCategory[c] ?? 0;
        return out;
      }
      const last = Math.min(i, n - 1);
      const start = Math.floor(last / every) * every;
      if (pos < start - 1 || pos > last) {
        for (let c = 0; c < C; c++) state[c] = states[(start / every) * C + c];
        pos = start - 1;
      }
      for (let e = pos + 1; e <= last; e++) eachChange(r, e, add);
      pos = last;
      out.set(state);
      return out;
    },
  };
}

/**
 * Allocated bytes per category after every event, one Float64Array per category (C × n numbers: for
 * tests and small traces; the page and the report read `categoriesAt`). Written as constant runs.
 */
export function categoryColumns(r: ReplayColumns): Float64Array[] {
  const n = r.length;
  const C = r.categoryCount;
  const cols: Float64Array[] = [];
  for (let c = 0; c < C; c++) cols.push(new Float64Array(n));
  const cur = Float64Array.from({ length: C }, (_, c) => r.initial.byCategory[c] ?? 0);
  const from = new Int32Array(C);
  let at = 0;
  const bump = (c: number, delta: number) => {
    if (from[c] < at) cols[c].fill(cur[c], from[c], at);
    from[c] = at;
    cur[c] += delta;
  };
  for (let i = 0; i < n; i++) {
    at = i;
    eachChange(r, i, bump);
  }
  for (let c = 0; c < C; c++) if (from[c] < n) cols[c].fill(cur[c], from[c], n);
  return cols;
}
