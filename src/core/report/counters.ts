// The counters sidecar (`<dump>.counters.json`): the process-side allocator counters read beside the dump,
// which a snapshot does not carry. Keys: memory_allocated, memory_reserved, max_memory_allocated,
// max_memory_reserved (bytes), memory_stats (torch.cuda.memory_stats()), device, tag, device_total_bytes
// (the device's total memory: with an oom entry's device_free it gives the memory outside the allocator).

import type { CountersSidecar } from "../model/types";

export class CountersParseError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "CountersParseError";
  }
}

const BYTE_KEYS = [
  "memory_allocated",
  "memory_reserved",
  "max_memory_allocated",
  "max_memory_reserved",
] as const;

function byteCount(obj: Record<string, unknown>, key: string, where: string): number | null {
  const v = obj[key];
  if (v === undefined || v === null) return null;
  if (typeof v !== "number" || !Number.isFinite(v) || v < 0) {
    throw new CountersParseError(
      `${where}: "${key}" must be a byte count (a non-negative number), got ${JSON.stringify(v)}.`,
    );
  }
  return v;
}

/** "cuda:1", "npu:0", 1, "1" → 1; absent → null. */
function deviceIndex(v: unknown, where: string): number | null {
  if (v === undefined || v === null) return null;
  if (typeof v === "number" && Number.isInteger(v) && v >= 0) return v;
  if (typeof v === "string") {
    const m = /^(?:[a-z_]+:)?(\d+)$/i.exec(v.trim());
    if (m) return Number(m[1]);
  }
  throw new CountersParseError(
    `${where}: "device" must be a device index like 0 or "cuda:0", got ${JSON.stringify(v)}.`,
  );
}

/**
 * Parses a counters sidecar. Throws CountersParseError with a message a user can act on when the text is
 * not JSON, not an object, or has none of the counter keys.
 */
export function parseCounters(text: string, name = "counters sidecar"): CountersSidecar {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (e) {
    throw new CountersParseError(
      `${name} is not JSON (${(e as Error).message}); expected an object with ${BYTE_KEYS.join(", ")}.`,
    );
  }
  if (typeof data !== "object" || data === null || Array.isArray(data)) {
    throw new CountersParseError(
      `${name} is not a counters sidecar: expected a JSON object with ${BYTE_KEYS.join(", ")}.`,
    );
  }
  const obj = data as Record<string, unknown>;
  const hasStats =
    typeof obj.memory_stats === "object" && obj.memory_stats !== null && !Array.isArray(obj.memory_stats);
  if (!BYTE_KEYS.some((k) => k in obj) && !hasStats) {
    throw new CountersParseError(
      `${name} is not a counters sidecar: none of ${BYTE_KEYS.join(", ")}, memory_stats is present.`,
    );
  }
  let memoryStats: Record<string, number> | null = null;
  if (hasStats) {
    memoryStats = {};
    for (const [k, v] of Object.entries(obj.memory_stats as Record<string, unknown>)) {
      if (typeof v === "number" && Number.isFinite(v)) memoryStats[k] = v;
    }
  }
  const stat = (k: string) => memoryStats?.[k] ?? null;
  const tag = obj.tag;
  return {
    // memory_stats() carries the same numbers; use them when the top-level keys are absent.
    memoryAllocatedBytes: byteCount(obj, "memory_allocated", name) ?? stat("allocated_bytes.all.current"),
    memoryReservedBytes: byteCount(obj, "memory_reserved", name) ?? stat("reserved_bytes.all.current"),
    maxMemoryAllocatedBytes: byteCount(obj, "max_memory_allocated", name) ?? stat("allocated_bytes.all.peak"),
    maxMemoryReservedBytes: byteCount(obj, "max_memory_reserved", name) ?? stat("reserved_bytes.all.peak"),
    device: deviceIndex(obj.device, name),
    tag: typeof tag === "string" ? tag : tag === undefined || tag === null ? null : String(tag),
    memoryStats,
    deviceTotalBytes: byteCount(obj, "device_total_bytes", name),
  };
}
