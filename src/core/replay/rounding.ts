// How the CUDA caching allocator turns a requested size into a block size, as far as a trace can tell.
// Constants and rules from c10/cuda/CUDACachingAllocator.cpp (round_size, should_split,
// roundup_power2_divisions). torch_npu's NPUCachingAllocator uses the same constants.

/** Blocks are multiples of this (kMinBlockSize). */
export const MIN_BLOCK_BYTES = 512;
/** Requests up to this go to the small pool (kSmallSize); larger blocks are split only above it. */
export const SMALL_SIZE_BYTES = 1 << 20;
/** With max_split_size set, an oversize request may take a cached block up to this much larger (kLargeBuffer). */
export const LARGE_BUFFER_BYTES = 20 << 20;

/** The allocator settings that change rounding and splitting, read from `allocator_settings`. */
export interface RoundingSettings {
  /** roundup_power2_divisions per power-of-two interval starting at 1 MiB (index 0 = [1 MiB, 2 MiB)). */
  power2Divisions: number[];
  /** Blocks at or above this are never split (max_split_size); Infinity when unset. */
  maxSplitBytes: number;
  /** expandable_segments: every block is split to the rounded size, no remainder. */
  expandableSegments: boolean;
  /** Bytes added to a request before rounding: 32 on torch_npu's NPUCachingAllocator, 0 on CUDA. */
  extraBytes: number;
  /** Sizes are the blocks' own (a profiler trace's Bytes, a memory timeline's rows): no rounding. */
  exact?: boolean;
}

export const DEFAULT_ROUNDING: RoundingSettings = {
  power2Divisions: [],
  maxSplitBytes: Number.POSITIVE_INFINITY,
  expandableSegments: false,
  extraBytes: 0,
};

/** Reads the rounding-relevant keys of a snapshot's `allocator_settings` (null → defaults). */
export function roundingSettings(settings: Record<string, unknown> | null, npu = false): RoundingSettings {
  const out: RoundingSettings = { ...DEFAULT_ROUNDING, power2Divisions: [], extraBytes: npu ? 32 : 0 };
  if (!settings) return out;
  const maxSplit = settings.max_split_size;
  if (typeof maxSplit === "number" && maxSplit > 0 && maxSplit < 2 ** 62) out.maxSplitBytes = maxSplit;
  out.expandableSegments = settings.expandable_segments === true;
  const div = settings.roundup_power2_divisions;
  if (div && typeof div === "object" && !Array.isArray(div)) {
    // Keys are interval starts in MiB ("1", "2", "4", …, "32768"); values the number of divisions.
    for (const [key, value] of Object.entries(div as Record<string, unknown>)) {
      const mib = Number(key);
      if (!Number.isFinite(mib) || mib < 1 || typeof value !== "number") continue;
      out.power2Divisions[Math.round(Math.log2(mib))] = value;
    }
  } else if (Array.isArray(div)) {
    div.forEach((v, i) => {
      if (typeof v === "number") out.power2Divisions[i] = v;
    });
  }
  // Recent torch dumps all sixteen intervals, 0 where none is configured: with no interval divided in
  // more than one, every request rounds to 512 bytes whatever its interval, as with none listed, and
  // the replay then rounds without a log2 per allocation (prepare.ts assignFromEntries).
  if (!out.power2Divisions.some((d) => d > 1)) out.power2Divisions = [];
  return out;
}

function floorLog2(n: number): number {
  return Math.floor(Math.log2(n));
}

/** Next multiple of size/2^k divisions above `size` (roundup_power2_next_division). */
function power2NextDivision(size: number, divisions: number): number {
  const log = floorLog2(size);
  const floor = 2 ** log;
  if (floor === size) return size;
  const division = floor / 2 ** floorLog2(divisions);
  if (division < 1) return floor * 2;
  const roundedFloor = Math.floor(size / division) * division;
  return roundedFloor === size ? size : roundedFloor + division;
}

/**
 * The allocator's round_size: what a request of `requested` bytes occupies at least. 512-byte
 * multiples (a 0–511 byte request takes 512); with roundup_power2_divisions configured, larger
 * requests round up to the next division of their power-of-two interval. torch_npu adds 32 bytes
 * to the request first.
 */
export function roundRequest(requested: number, s: RoundingSettings = DEFAULT_ROUNDING): number {
  if (s.exact) return requested;
  requested += s.extraBytes;
  if (requested < MIN_BLOCK_BYTES) return MIN_BLOCK_BYTES;
  if (s.power2Divisions.length > 0) {
    const index = Math.min(Math.max(0, floorLog2(requested) - 20), s.power2Divisions.length - 1);
    const divisions = s.power2Divisions[index] ?? 0;
    if (divisions > 1 && requested > MIN_BLOCK_BYTES * divisions)
      return power2NextDivision(requested, divisions);
  }
  return Math.ceil(requested / MIN_BLOCK_BYTES) * MIN_BLOCK_BYTES;
}

/**
 * The block the allocator hands out for a rounded request placed at the start of a free run of
 * `gapBytes` (the space up to the next active block or the end of the segment). The caching
 * allocator takes the front of the best-fitting free block and splits the rest off only when the
 * remainder exceeds 1 MiB (large pool, non-expandable; with max_split_size, requests at or above it
 * are never split and take blocks up to 20 MiB larger) — so a large block can carry up to 1 MiB
 * unsplit. Small-pool and expandable-segment blocks are always split to the rounded size.
 * Returns NaN when the gap cannot tell (unknown, or smaller than the request).
 */
export function fittedBlockSize(
  rounded: number,
  gapBytes: number,
  s: RoundingSettings = DEFAULT_ROUNDING,
): number {
  if (rounded <= SMALL_SIZE_BYTES || s.expandableSegments) return rounded;
  if (!(gapBytes >= rounded)) return Number.NaN;
  const remainder = gapBytes - rounded;
  if (rounded >= s.maxSplitBytes) return remainder < LARGE_BUFFER_BYTES ? gapBytes : Number.NaN;
  return remainder <= SMALL_SIZE_BYTES ? gapBytes : rounded;
}

/**
 * The block of an allocation made before the trace, seen at the trace's start with `gapBytes` up
 * to the next active block (or the end of its segment). Every free block of the (non-expandable)
 * large pool is larger than 1 MiB — it is a whole segment, a split-off remainder (> 1 MiB) or a freed
 * large block — so a run ≤ 1 MiB past the rounded size cannot be free: the block reaches the next
 * active block. A longer run leaves the size unknown (between rounded and rounded + 1 MiB): NaN.
 */
export function fittedBlockSizeAtStart(
  rounded: number,
  gapBytes: number,
  s: RoundingSettings = DEFAULT_ROUNDING,
): number {
  if (rounded <= SMALL_SIZE_BYTES || s.expandableSegments) return rounded;
  if (!(gapBytes >= rounded)) return Number.NaN;
  return gapBytes - rounded <= SMALL_SIZE_BYTES ? gapBytes : Number.NaN;
}
