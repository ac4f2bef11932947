// memory_stats() verdicts: for the allocator counters a snapshot cannot show (they come from the counters
// sidecar), what each means in one line and what its value says about this run.

import type { CountersSidecar } from "../model/types";
import { formatBytes } from "../units";

export type VerdictLevel = "ok" | "info" | "warn" | "bad";

export interface StatVerdict {
  /** memory_stats() key (allocated / reserved also read the sidecar's memory_allocated etc. when absent). */
  key: string;
  /** The sidecar's number, exactly; null when the sidecar does not have it. */
  value: number | null;
  meaning: string;
  verdict: string;
  level: VerdictLevel;
  /** Other sidecar numbers the verdict used, by key. */
  numbers: Record<string, number>;
}

export const STAT_KEYS = [
  "num_alloc_retries",
  "num_ooms",
  "inactive_split_bytes.all.current",
  "oversize_allocations.current",
  "oversize_segments.current",
  "num_sync_all_streams",
  "num_device_alloc",
  "num_device_free",
  "allocated_bytes.all.current",
  "allocated_bytes.all.peak",
  "active_bytes.all.current",
  "active_bytes.all.peak",
  "reserved_bytes.all.current",
  "reserved_bytes.all.peak",
] as const;

const MEANING: Record<(typeof STAT_KEYS)[number], string> = {
  num_alloc_retries:
    "times a cudaMalloc failed and the allocator freed every unused cached segment (a full synchronize) to retry",
  num_ooms: "out-of-memory errors raised by the allocator",
  "inactive_split_bytes.all.current":
    "free bytes inside segments that also hold live blocks (split blocks): cached but stuck, empty_cache() cannot return them",
  "oversize_allocations.current":
    "live allocations larger than max_split_size_mb (never split, never carved from a bigger block)",
  "oversize_segments.current": "segments made for allocations larger than max_split_size_mb",
  num_sync_all_streams:
    "times the allocator synchronized every stream (synchronize_and_free_events: before a retry, in empty_cache)",
  num_device_alloc: "cudaMalloc calls: segments created",
  num_device_free: "cudaFree calls: segments released (empty_cache() or an allocation retry)",
  "allocated_bytes.all.current": "bytes in live tensors now (memory_allocated())",
  "allocated_bytes.all.peak": "the most bytes ever in live tensors (max_memory_allocated())",
  "active_bytes.all.current":
    "allocated plus pending frees (blocks freed by the program but still used by a stream)",
  "active_bytes.all.peak": "the most active bytes ever",
  "reserved_bytes.all.current": "bytes in segments the cache holds now (memory_reserved())",
  "reserved_bytes.all.peak": "the most bytes the cache ever held (max_memory_reserved())",
};

const pct = (a: number, b: number) => (b > 0 ? `${((100 * a) / b).toFixed(1)} %` : "n/a");

/** A memory_stats key's value, or the sidecar's top-level equivalent for the four byte counters. */
export function statValue(c: CountersSidecar, key: string): number | null {
  const v = c.memoryStats?.[key];
  if (typeof v === "number" && Number.isFinite(v)) return v;
  if (key === "allocated_bytes.all.current") return c.memoryAllocatedBytes;
  if (key === "allocated_bytes.all.peak") return c.maxMemoryAllocatedBytes;
  if (key === "reserved_bytes.all.current") return c.memoryReservedBytes;
  if (key === "reserved_bytes.all.peak") return c.maxMemoryReservedBytes;
  return null;
}

/** One verdict per STAT_KEYS entry (value null and level "info" for keys the sidecar lacks); [] without a sidecar. */
export function memoryStatsVerdicts(counters: CountersSidecar | null): StatVerdict[] {
  if (!counters) return [];
  const get = (k: string) => statValue(counters, k);
  const allocated = get("allocated_bytes.all.current");
  const allocatedPeak = get("allocated_bytes.all.peak");
  const reserved = get("reserved_bytes.all.current");
  const maxSplit = get("max_split_size");
  const maxSplitSet = maxSplit !== null && maxSplit > 0 && maxSplit < Number.MAX_SAFE_INTEGER;
  const out: StatVerdict[] = [];
  for (const key of STAT_KEYS) {
    const value = get(key);
    const numbers: Record<string, number> = {};
    const use = (k: string, v: number | null) => {
      if (v !== null) numbers[k] = v;
      return v;
    };
    let verdict: string;
    let level: VerdictLevel = "ok";
    if (value === null) {
      out.push({ key, value, meaning: MEANING[key], verdict: "not in the sidecar", level: "info", numbers });
      continue;
    }
    switch (key) {
      case "num_alloc_retries":
        if (value > 0) {
          level = "warn";
          verdict = `the allocator flushed its cache ${value} time(s): a cudaMalloc failed and it released every unused cached segment to retry — slow, and a sign the device was full or fragmented: see fragmentation`;
        } else verdict = "no cudaMalloc ever failed: the cache never had to be flushed";
        break;
      case "num_ooms":
        if (value > 0) {
          level = "bad";
          verdict = `the process hit out-of-memory ${value} time(s): see the fragmentation at each OOM (largest free block vs the request)`;
        } else verdict = "no out-of-memory error";
        break;
      case "inactive_split_bytes.all.current": {
        use("reserved_bytes.all.current", reserved);
        if (value > 0) {
          const share = reserved ? value / reserved : 0;
          level = share >= 0.2 ? "warn" : "info";
          verdict = `${formatBytes(value)} free but stuck between live blocks (${pct(value, reserved ?? 0)} of reserved): fragmentation — no empty_cache() returns it and a request bigger than its pieces needs a new segment; expandable_segments:True or max_split_size_mb reduce it`;
        } else verdict = "no free space stuck inside partly used segments";
        break;
      }
      case "oversize_allocations.current":
      case "oversize_segments.current": {
        if (maxSplit !== null) numbers.max_split_size = maxSplit;
        const what = key === "oversize_allocations.current" ? "allocation(s)" : "segment(s)";
        if (value > 0) {
          level = "info";
          verdict = `${value} oversize ${what} now (above max_split_size_mb): served whole, never split — by design of that setting`;
        } else
          verdict = maxSplitSet
            ? `no oversize ${what}`
            : "max_split_size_mb is not set: nothing counts as oversize";
        break;
      }
      case "num_sync_all_streams":
        if (value > 0) {
          level = "warn";
          verdict = `every stream was synchronized ${value} time(s) by the allocator — a stall each time (retries, or empty_cache() with cross-stream frees pending)`;
        } else verdict = "the allocator never had to synchronize all streams";
        break;
      case "num_device_alloc": {
        const freed = use("num_device_free", get("num_device_free"));
        if (freed !== null && freed > 0) {
          level = "info";
          verdict = `${value} cudaMalloc call(s), ${freed} segment(s) released on the way: memory went back to the device and was asked for again (each call is slow)`;
        } else verdict = `${value} cudaMalloc call(s), none released: the cache only grew`;
        break;
      }
      case "num_device_free":
        if (value > 0) {
          level = "info";
          verdict = `${value} segment(s) released (empty_cache() or an allocation retry): each is a device synchronize, and reallocating costs a cudaMalloc`;
        } else verdict = "no segment was ever released (no empty_cache(), no retry)";
        break;
      case "allocated_bytes.all.current":
        verdict = `${formatBytes(value)} in live tensors at the dump`;
        break;
      case "allocated_bytes.all.peak": {
        use("allocated_bytes.all.current", allocated);
        if (allocated !== null && value > 0 && allocated < 0.9 * value) {
          level = "info";
          verdict = `peak ${formatBytes(value)}; the dump holds ${pct(allocated, value)} of it: the snapshot was taken away from the peak — look at the replayed peak, not the snapshot`;
        } else
          verdict = `peak ${formatBytes(value)}${allocated !== null ? `; the dump holds ${pct(allocated, value)} of it` : ""}`;
        break;
      }
      case "active_bytes.all.current": {
        use("allocated_bytes.all.current", allocated);
        const pending = allocated !== null ? value - allocated : null;
        if (pending !== null && pending > 0) {
          level = "info";
          verdict = `${formatBytes(pending)} freed by the program but pending on another stream (record_stream): not reusable until that stream catches up`;
        } else verdict = "no pending frees at the dump";
        break;
      }
      case "active_bytes.all.peak":
        use("allocated_bytes.all.peak", allocatedPeak);
        verdict =
          allocatedPeak !== null && value > allocatedPeak
            ? `peak ${formatBytes(value)}, ${formatBytes(value - allocatedPeak)} above allocated's peak: pending frees raised the high-water mark`
            : `peak ${formatBytes(value)}`;
        break;
      case "reserved_bytes.all.current": {
        use("allocated_bytes.all.current", allocated);
        const cached = allocated !== null ? value - allocated : null;
        if (cached !== null && value > 0 && cached / value >= 0.25) {
          level = "info";
          verdict = `${formatBytes(cached)} cached beyond live tensors (${pct(cached, value)} of reserved): memory other processes cannot use; see inactive_split for how much of it is stuck`;
        } else
          verdict = `${formatBytes(value)} reserved${cached !== null ? `, ${formatBytes(cached)} of it cached beyond live tensors (${pct(cached, value)})` : ""}`;
        break;
      }
      case "reserved_bytes.all.peak": {
        use("allocated_bytes.all.peak", allocatedPeak);
        const over = allocatedPeak !== null ? value - allocatedPeak : null;
        if (over !== null && value > 0 && over / value >= 0.25) {
          level = "info";
          verdict = `reserved peaked at ${formatBytes(value)}, ${formatBytes(over)} above allocated's peak (${pct(over, value)} of it): cache overhead — fragmentation or freed segments' sizes not reused`;
        } else
          verdict = `reserved peaked at ${formatBytes(value)}${over !== null ? `, ${formatBytes(over)} above allocated's peak` : ""}`;
        break;
      }
      default:
        verdict = "";
    }
    out.push({ key, value, meaning: MEANING[key], verdict, level, numbers });
  }
  return out;
}
