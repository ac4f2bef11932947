// Per-event health columns of one device's replay: cached (reserved − allocated), pending (active −
// allocated) and inactive-split bytes (free bytes inside reserved regions that hold at least one active
// block). One forward sweep, exact at every event; see README.md for the definitions and the cost.

import { applySegmentEvent, type IntervalState, initialIntervalState } from "../replay/extents";
import { liveAllocationsAt } from "../replay/state";
import { addressOf, BEFORE_TRACE, type Replay } from "../replay/types";

export interface HealthCurves {
  device: number;
  /** Events (= replay.length); every column has one value per event: the state AFTER it. */
  length: number;
  /** The replay's x (time_us or the event index), shared, not copied. */
  x: Float64Array;
  /**
   * reserved − allocated: bytes the cache holds beyond live tensors (pending frees included). Made from
   * the replay's columns on first access (views read `cachedAt` instead and keep no column).
   */
  readonly cached: Float64Array;
  /** active − allocated: freed by the program, not yet returned to the pool (record_stream); as `cached`. */
  readonly pending: Float64Array;
  /** `cached` after event i, from the replay (no column). */
  cachedAt(i: number): number;
  /** `pending` after event i, from the replay (no column). */
  pendingAt(i: number): number;
  /** Free bytes inside reserved regions that hold at least one active block (what memory_stats calls
   * inactive_split_bytes for non-expandable segments): cached memory no empty_cache() can return. */
  inactiveSplit: Float64Array;
  /** Reserved regions holding at least one active block, after each event. */
  heldRegions: Int32Array;
  /** The same measures before the first event. */
  initial: { cached: number; pending: number; inactiveSplit: number; heldRegions: number };
}

/** Runs of reserved intervals (regions, as stateAt defines them) with their active bytes. */
class RunTable {
  start: number[] = [];
  end: number[] = [];
  size: number[] = [];
  active: number[] = [];
  held: number[] = [];
}

/** Builds the three health columns in one pass over the events: O(events + Σ intervals touched). */
export function healthCurves(r: Replay): HealthCurves {
  return sweep(r, true).curves as HealthCurves;
}

/**
 * The inactive-split curve's highest value (its first event) and its value after the last event, from
 * the same pass as healthCurves but keeping no column (a page's summary; 63 MiB less at 5 M events).
 */
export function inactiveSplitExtremes(r: Replay): {
  max: { value: number; eventIndex: number } | null;
  end: number | null;
} {
  const s = sweep(r, false);
  return { max: s.maxEvent >= 0 ? { value: s.maxValue, eventIndex: s.maxEvent } : null, end: s.endValue };
}

function sweep(
  r: Replay,
  keep: boolean,
): { curves: HealthCurves | null; maxValue: number; maxEvent: number; endValue: number | null } {
  const n = r.length;
  const x = r.extents;
  const bounds = x.bounds;
  const E = Math.max(0, bounds.length - 1);
  const st: IntervalState = initialIntervalState(x);
  const cnt = new Int32Array(E); // active blocks overlapping each interval
  const bytesIn = new Float64Array(E); // their bytes inside it
  const runOf = new Int32Array(E).fill(-1);
  const runs = new RunTable();
  let total = 0; // Σ over held runs of (size − active)
  let heldRuns = 0;

  const contribution = (id: number) => (runs.held[id] > 0 ? runs.size[id] - runs.active[id] : 0);

  /** Assigns fresh runs to the reserved intervals of [a, b), which must start and end on run edges. */
  const buildRuns = (a: number, b: number) => {
    let j = a;
    while (j < b) {
      if (!st.reserved[j]) {
        runOf[j] = -1;
        j++;
        continue;
      }
      const own = st.owner[j];
      let k = j + 1;
      while (k < b && st.reserved[k] && st.owner[k] === own) k++;
      const id = runs.start.length;
      let active = 0;
      let held = 0;
      for (let q = j; q < k; q++) {
        runOf[q] = id;
        active += bytesIn[q];
        if (cnt[q] > 0) held++;
      }
      runs.start.push(j);
      runs.end.push(k);
      runs.size.push(bounds[k] - bounds[j]);
      runs.active.push(active);
      runs.held.push(held);
      total += contribution(id);
      if (held > 0) heldRuns++;
      j = k;
    }
  };

  /** First interval whose end is past addr. */
  const firstInterval = (addr: number) => {
    let lo = 0;
    let hi = E;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (bounds[mid + 1] <= addr) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };

  const A = r.allocations;
  const touch = (k: number, sign: 1 | -1) => {
    const addr = addressOf(A, k);
    const end = addr + A.sizeBytes[k];
    for (let j = firstInterval(addr); j < E && bounds[j] < end; j++) {
      const overlap = Math.min(end, bounds[j + 1]) - Math.max(addr, bounds[j]);
      if (overlap <= 0) continue;
      const before = cnt[j];
      cnt[j] += sign;
      bytesIn[j] += sign * overlap;
      const id = runOf[j];
      if (id < 0) continue;
      total -= contribution(id);
      if (runs.held[id] > 0) heldRuns--;
      runs.active[id] += sign * overlap;
      if (before === 0 && sign > 0) runs.held[id]++;
      else if (before === 1 && sign < 0) runs.held[id]--;
      total += contribution(id);
      if (runs.held[id] > 0) heldRuns++;
    }
  };

  const live0 = liveAllocationsAt(r, BEFORE_TRACE);
  for (let j = 0; j < live0.length; j++) touch(live0[j], 1);
  buildRuns(0, E);

  const initialState = {
    cached: r.initial.reservedBytes - r.initial.allocatedBytes,
    pending: r.initial.activeBytes - r.initial.allocatedBytes,
    inactiveSplit: total,
    heldRegions: heldRuns,
  };

  const seen = new Set<number>();
  const segmentEvent = (q: number) => {
    const lo = x.lo[q];
    const hi = x.hi[q];
    let a = lo;
    let b = hi;
    seen.clear();
    for (let j = Math.max(0, lo - 1); j <= Math.min(hi, E - 1); j++) {
      const id = runOf[j];
      if (id < 0 || seen.has(id)) continue;
      seen.add(id);
      total -= contribution(id);
      if (runs.held[id] > 0) heldRuns--;
      a = Math.min(a, runs.start[id]);
      b = Math.max(b, runs.end[id]);
    }
    applySegmentEvent(x, st, q);
    for (let j = a; j < b; j++) runOf[j] = -1;
    buildRuns(a, b);
  };

  const inactiveSplit = new Float64Array(keep ? n : 0);
  const heldRegions = new Int32Array(keep ? n : 0);
  let maxValue = Number.NEGATIVE_INFINITY;
  let maxEvent = -1;
  const ev = r.eventAllocation;
  const segEvents = x.eventIndex;
  const hasImplicit = r.implicitCloses.size > 0;
  let q = 0;
  for (let e = 0; e < n; e++) {
    while (q < segEvents.length && segEvents[q] === e) segmentEvent(q++);
    const k = ev[e];
    if (k >= 0) {
      if (A.allocEvent[k] === e) {
        const old = hasImplicit ? r.implicitCloses.get(e) : undefined;
        if (old !== undefined) touch(old, -1);
        touch(k, 1);
      } else if (A.freeCompletedEvent[k] === e) touch(k, -1);
    }
    if (keep) {
      inactiveSplit[e] = total;
      heldRegions[e] = heldRuns;
    }
    if (total > maxValue) {
      maxValue = total;
      maxEvent = e;
    }
  }
  const endValue = n > 0 ? total : null;
  if (!keep) return { curves: null, maxValue, maxEvent, endValue };
  const cachedAt = (i: number) => r.reserved[i] - r.allocated[i];
  const pendingAt = (i: number) => r.active[i] - r.allocated[i];
  let cached: Float64Array | null = null;
  let pending: Float64Array | null = null;
  const curves: HealthCurves = {
    device: r.device,
    length: n,
    x: r.x,
    get cached() {
      cached ??= Float64Array.from({ length: n }, (_, i) => cachedAt(i));
      return cached;
    },
    get pending() {
      pending ??= Float64Array.from({ length: n }, (_, i) => pendingAt(i));
      return pending;
    },
    cachedAt,
    pendingAt,
    inactiveSplit,
    heldRegions,
    initial: initialState,
  };
  return { curves, maxValue, maxEvent, endValue };
}

/** Max of a column and its first event (null when empty): what a page shows next to the curve. */
export function columnMax(col: Float64Array): { value: number; eventIndex: number } | null {
  return maxOf(col.length, (i) => col[i]);
}

/** Max of `value(i)` over i < n and its first i (null when n = 0). */
export function maxOf(n: number, value: (i: number) => number): { value: number; eventIndex: number } | null {
  if (n === 0) return null;
  let best = 0;
  let bestValue = value(0);
  for (let i = 1; i < n; i++) {
    const v = value(i);
    if (v > bestValue) {
      best = i;
      bestValue = v;
    }
  }
  return { value: bestValue, eventIndex: best };
}
