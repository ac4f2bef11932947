// The five consistency checks. Each says pass / fail / skipped (with why) and carries both numbers: what
// the snapshot's blocks (or segment fields) give, and what it is checked against.

import { BlockState, type CountersSidecar, type SnapshotModel } from "../model/types";
import { exactBytesShort } from "../units";

export type CheckStatus = "pass" | "fail" | "skipped";
/**
 * What a fail means. `error`: the file's numbers disagree (blocks vs segments, vs the counters, vs the
 * replay): something is wrong. `info`: a fact about the moment of the dump — snapshot-vs-peak fails when
 * the dump was taken away from the peak (after the step, as nearly every real file is): shown as
 * information, never as a red failure, and not counted as a failure (ranks). The CLI's exit code still
 * counts every fail (exit 2, as the seed defines it).
 */
export type CheckSeverity = "error" | "info";
export type CheckId =
  | "block-tiling"
  | "active-total"
  | "reserved-counter"
  | "allocated-counter"
  | "snapshot-vs-peak"
  | "trace-replay";

export interface CheckResult {
  id: CheckId;
  title: string;
  status: CheckStatus;
  /** What a fail of this check means (`info`: snapshot-vs-peak; `error`: the others). */
  severity: CheckSeverity;
  /** One or two sentences with the numbers, in bytes (and MiB where it helps). */
  detail: string;
  /** The snapshot side of the comparison (re-summed blocks, or the segment-field total). */
  actualBytes: number | null;
  /** What it is checked against (segment fields, a counter, the peak). */
  expectedBytes: number | null;
  /** Every number the check looked at, by name. */
  numbers: Record<string, number | null>;
  /** block-tiling: the segments whose blocks do not add up to total_size. */
  failingSegments?: { device: number; address: number; totalSizeBytes: number; blockSumBytes: number }[];
}

export interface PeakInfo {
  bytes: number;
  /** Where the number came from, e.g. "replayed device_traces" (shown to the user). */
  source: string;
  /** Device the peak is for; default: the counters device, else the first device with segments. */
  device?: number;
  /**
   * false when the peak is only the highest of a recorded window (the trace began with memory already
   * allocated): the run's peak may be higher, so a snapshot close to it proves nothing.
   */
  isRunPeak?: boolean;
}

export interface CheckOptions {
  counters?: CountersSidecar | null;
  peak?: PeakInfo | null;
  /**
   * Per device: bytes of torch_npu workspace blocks in Σ allocated_size. The caching allocator's counters
   * (memory_allocated, max_memory_allocated) leave them out, so the checks compare like with like.
   */
  workspaceBytes?: Map<number, number>;
}

/** Relative tolerance of snapshot-vs-peak. */
export const PEAK_TOLERANCE = 0.02;

const bytes = exactBytesShort;
const mib = (n: number) => `${(n / 2 ** 20).toFixed(2)} MiB`;
const both = (n: number) => `${mib(n)} (${bytes(n)})`;
const hex = (n: number) => `0x${n.toString(16)}`;

/** The device a sidecar describes: its `device` field, else the only/first device with segments, else 0. */
export function countersDevice(model: SnapshotModel, counters: CountersSidecar | null | undefined): number {
  if (counters?.device !== null && counters?.device !== undefined) return counters.device;
  let first = Number.POSITIVE_INFINITY;
  for (let s = 0; s < model.segments.length; s++) first = Math.min(first, model.segments.device[s]);
  return Number.isFinite(first) ? first : 0;
}

function segmentSums(model: SnapshotModel, device: number | null) {
  let reserved = 0;
  let allocated = 0;
  let active = 0;
  const seg = model.segments;
  for (let s = 0; s < seg.length; s++) {
    if (device !== null && seg.device[s] !== device) continue;
    reserved += seg.totalSizeBytes[s];
    allocated += seg.allocatedSizeBytes[s];
    active += seg.activeSizeBytes[s];
  }
  return { reserved, allocated, active };
}

export function checkBlockTiling(model: SnapshotModel): CheckResult {
  const seg = model.segments;
  const failing: NonNullable<CheckResult["failingSegments"]> = [];
  let blockSum = 0;
  let reserved = 0;
  for (let s = 0; s < seg.length; s++) {
    let sum = 0;
    const first = seg.firstBlock[s];
    for (let b = first; b < first + seg.blockCount[s]; b++) sum += model.blocks.sizeBytes[b];
    blockSum += sum;
    reserved += seg.totalSizeBytes[s];
    if (sum !== seg.totalSizeBytes[s]) {
      failing.push({
        device: seg.device[s],
        address: seg.address[s],
        totalSizeBytes: seg.totalSizeBytes[s],
        blockSumBytes: sum,
      });
    }
  }
  const numbers = {
    blockSumBytes: blockSum,
    reservedBytes: reserved,
    segments: seg.length,
    failingSegments: failing.length,
  };
  const base = {
    id: "block-tiling" as const,
    title: "per-segment block tiling",
    actualBytes: blockSum,
    expectedBytes: reserved,
    numbers,
  };
  if (failing.length === 0) {
    return {
      ...base,
      severity: "error",
      status: "pass",
      detail:
        seg.length === 0
          ? "no segments: nothing to tile (0 B = 0 B)."
          : `all ${seg.length} segments tile: Σ block sizes ${bytes(blockSum)} = Σ total_size ${bytes(reserved)}.`,
    };
  }
  const shown = failing
    .slice(0, 5)
    .map(
      (f) =>
        `${hex(f.address)} (device ${f.device}): blocks ${bytes(f.blockSumBytes)} vs total_size ${bytes(f.totalSizeBytes)}`,
    )
    .join("; ");
  return {
    ...base,
    severity: "error",
    status: "fail",
    failingSegments: failing,
    detail:
      `${failing.length} of ${seg.length} segments do not tile: ${shown}${failing.length > 5 ? `; and ${failing.length - 5} more` : ""}. ` +
      `Σ block sizes ${bytes(blockSum)} vs Σ total_size ${bytes(reserved)}.`,
  };
}

export function checkActiveTotal(model: SnapshotModel): CheckResult {
  const { allocated, active } = segmentSums(model, null);
  let blockAllocated = 0;
  let blockActive = 0;
  for (let b = 0; b < model.blocks.length; b++) {
    const st = model.blocks.state[b];
    if (st === BlockState.active_allocated) {
      blockAllocated += model.blocks.sizeBytes[b];
      blockActive += model.blocks.sizeBytes[b];
    } else if (st === BlockState.active_pending_free) blockActive += model.blocks.sizeBytes[b];
  }
  const ok = blockActive === active && blockAllocated === allocated;
  const part = (what: string, blocks: number, field: string, total: number) =>
    blocks === total
      ? `${what} blocks ${bytes(blocks)} = Σ ${field} ${bytes(total)}`
      : `${what} blocks ${bytes(blocks)} ≠ Σ ${field} ${bytes(total)} (difference ${bytes(total - blocks)})`;
  return {
    id: "active-total",
    severity: "error",
    title: "global active and allocated totals",
    status: ok ? "pass" : "fail",
    actualBytes: blockActive,
    expectedBytes: active,
    numbers: {
      blockActiveBytes: blockActive,
      activeBytes: active,
      blockAllocatedBytes: blockAllocated,
      allocatedBytes: allocated,
    },
    detail: `${part("active", blockActive, "active_size", active)}; ${part("allocated", blockAllocated, "allocated_size", allocated)}.`,
  };
}

const NO_SIDECAR = "no counters sidecar: give --counters FILE or put FILE.counters.json beside the snapshot";

function counterCheck(
  id: "reserved-counter" | "allocated-counter",
  model: SnapshotModel,
  counters: CountersSidecar | null | undefined,
  workspaceBytes?: Map<number, number>,
): CheckResult {
  const reserved = id === "reserved-counter";
  const title = reserved ? "reserved total vs memory_reserved()" : "allocated total vs memory_allocated()";
  const field = reserved ? "total_size" : "allocated_size";
  const key = reserved ? "memory_reserved" : "memory_allocated";
  const counter = counters ? (reserved ? counters.memoryReservedBytes : counters.memoryAllocatedBytes) : null;
  if (!counters || counter === null) {
    return {
      id,
      severity: "error",
      title,
      status: "skipped",
      detail: counters ? `the counters sidecar has no ${key}.` : `${NO_SIDECAR}.`,
      actualBytes: null,
      expectedBytes: counter,
      numbers: { counterBytes: counter },
    };
  }
  const device = countersDevice(model, counters);
  const sums = segmentSums(model, device);
  const ws = reserved ? 0 : (workspaceBytes?.get(device) ?? 0);
  const snap = (reserved ? sums.reserved : sums.allocated) - ws;
  const ok = snap === counter;
  const what =
    ws > 0 ? `Σ ${field} − torch_npu workspace ${bytes(ws)} = ${bytes(snap)}` : `Σ ${field} ${bytes(snap)}`;
  return {
    id,
    severity: "error",
    title,
    status: ok ? "pass" : "fail",
    actualBytes: snap,
    expectedBytes: counter,
    numbers: { snapshotBytes: snap, counterBytes: counter, device, workspaceBytes: ws },
    detail: ok
      ? `device ${device}: ${what} = ${key} ${bytes(counter)}.`
      : `device ${device}: ${what} (${mib(snap)}) ≠ ${key} ${both(counter)} (difference ${bytes(counter - snap)}).`,
  };
}

export function checkSnapshotVsPeak(model: SnapshotModel, opts: CheckOptions): CheckResult {
  const title = `snapshot allocated within ${PEAK_TOLERANCE * 100}% of the peak`;
  const fromCounters = opts.counters?.maxMemoryAllocatedBytes ?? null;
  let peak: number | null = null;
  let source = "";
  let device: number;
  if (fromCounters !== null) {
    peak = fromCounters;
    source = "the counters sidecar's max_memory_allocated";
    device = countersDevice(model, opts.counters);
  } else if (opts.peak) {
    peak = opts.peak.bytes;
    source = opts.peak.source;
    device = opts.peak.device ?? countersDevice(model, opts.counters);
  } else {
    return {
      id: "snapshot-vs-peak",
      severity: "info",
      title,
      status: "skipped",
      detail: opts.counters
        ? "the counters sidecar has no max_memory_allocated, and no replayed peak was given."
        : "no peak known: needs max_memory_allocated from a counters sidecar (--counters FILE, or FILE.counters.json beside the snapshot) or a peak from the replayed trace.",
      actualBytes: null,
      expectedBytes: null,
      numbers: { peakBytes: null },
    };
  }
  const ws = opts.workspaceBytes?.get(device) ?? 0;
  const snap = segmentSums(model, device).allocated - ws;
  const gap = peak - snap;
  const rel = peak === 0 ? (snap === 0 ? 0 : Number.POSITIVE_INFINITY) : Math.abs(gap) / peak;
  const ok = rel <= PEAK_TOLERANCE;
  const pct = Number.isFinite(rel) ? `${(rel * 100).toFixed(2)}%` : "∞";
  const lowerBound = fromCounters === null && opts.peak?.isRunPeak === false;
  const wsNote =
    ws > 0 ? ` (torch_npu workspace ${bytes(ws)} left out, as max_memory_allocated leaves it out)` : "";
  const numbers = {
    snapshotAllocatedBytes: snap,
    peakBytes: peak,
    gapBytes: gap,
    device,
    workspaceBytes: ws,
  };
  if (lowerBound && (ok || gap < 0)) {
    // The replayed peak is only the highest of the recorded window: the run's peak may be higher, so a
    // snapshot close to it proves nothing. (Beyond the tolerance the gap is real: that still fails.)
    return {
      id: "snapshot-vs-peak",
      severity: "info",
      title,
      status: "skipped",
      actualBytes: snap,
      expectedBytes: null,
      numbers,
      detail:
        `device ${device}: the run's peak is not in this file — the trace begins with memory already allocated ` +
        `(recording started late, or the ring buffer dropped older entries), so ${source}, ${both(peak)}, is only ` +
        `a lower bound; the snapshot holds ${both(snap)}${wsNote}. To check it: write a counters sidecar with ` +
        `max_memory_allocated beside the dump, or record from the start with a larger max_entries.`,
    };
  }
  return {
    id: "snapshot-vs-peak",
    severity: "info",
    title,
    status: ok ? "pass" : "fail",
    actualBytes: snap,
    expectedBytes: peak,
    numbers,
    detail:
      `device ${device}: snapshot allocated ${both(snap)}${wsNote} vs peak ${both(peak)} from ${source}${lowerBound ? " (a lower bound of the run's peak)" : ""}: ` +
      `gap ${mib(gap)} (${pct})${ok ? "" : `, beyond ${PEAK_TOLERANCE * 100}%: the snapshot is not the peak; see the timeline for what the peak held`}.`,
  };
}

/** All five checks, in order. */
export function runChecks(model: SnapshotModel, opts: CheckOptions = {}): CheckResult[] {
  return [
    checkBlockTiling(model),
    checkActiveTotal(model),
    counterCheck("reserved-counter", model, opts.counters, opts.workspaceBytes),
    counterCheck("allocated-counter", model, opts.counters, opts.workspaceBytes),
    checkSnapshotVsPeak(model, opts),
  ];
}

/** The severity of a check by id (also for report JSON written before `severity` existed). */
export function checkSeverity(id: string): CheckSeverity {
  return id === "snapshot-vs-peak" ? "info" : "error";
}

/** Any fail, of either severity: the CLI's exit code 2. */
export function anyFailed(checks: CheckResult[]): boolean {
  return checks.some((c) => c.status === "fail");
}

/** The real failures: fails of severity `error` (what the page shows red and the rank overview counts). */
export function realFailures<C extends { id: string; status: string; severity?: CheckSeverity }>(
  checks: readonly C[],
): C[] {
  return checks.filter((c) => c.status === "fail" && (c.severity ?? checkSeverity(c.id)) === "error");
}

/** Fails that are information (snapshot-vs-peak: the dump is not the peak). */
export function infoFailures<C extends { id: string; status: string; severity?: CheckSeverity }>(
  checks: readonly C[],
): C[] {
  return checks.filter((c) => c.status === "fail" && (c.severity ?? checkSeverity(c.id)) === "info");
}
