// The snapshot's segments as the WebAssembly scanner reads them (../wasm/assembly/trace-scan.ts
// scanSegments): their rows copied out of its memory, and the run that stands for them on the unpickling
// stack until assemble.ts adds them to the model (addScannedSegments), as it adds the segment dicts the
// generic path builds.

import type { Memo } from "../pickle/memo";

/**
 * Segment dicts of the root's "segments" list that the WebAssembly scanner read (scanSegments), as rows:
 * per segment SEGMENT_FIELDS numbers (the module's SEG_* order), per block BLOCK_FIELDS (BLK_*), the
 * blocks of each segment after the previous segment's. Its strs (segment_type, state) as text.
 */
export class ScannedSegments {
  constructor(
    readonly segments: Float64Array,
    readonly blocks: Float64Array,
    readonly segmentTypes: (string | undefined)[],
    readonly states: string[],
  ) {}

  /** The first block row of segment `i`. */
  firstBlock(i: number): number {
    let b = 0;
    for (let s = 0; s < i; s++) b += this.segments[s * SEGMENT_FIELDS + Seg.blocks];
    return b;
  }
}

/** Segments `first` … `first + count − 1` of `rows`, standing for as many segment dicts in a list. */
export class SegmentRun {
  constructor(
    readonly rows: ScannedSegments,
    readonly first: number,
    readonly count: number,
  ) {}
}

/** A segment row's fields (the module's SEG_*). */
export const Seg = {
  device: 0,
  address: 1,
  total: 2,
  allocated: 3,
  active: 4,
  requested: 5,
  stream: 6,
  poolA: 7,
  poolB: 8,
  type: 9,
  expandable: 10,
  stack: 11,
  blocks: 12,
  has: 13,
} as const;
/** A block row's fields (the module's BLK_*). */
export const Blk = { address: 0, size: 1, requested: 2, state: 3, stack: 4, has: 5 } as const;
/** Which optional keys a segment or block had (the module's HAS_*). */
export const Has = { address: 1, requested: 2, pool: 4 } as const;
export const SEGMENT_FIELDS = 14;
export const BLOCK_FIELDS = 6;

/** The module's SK_*: the keys of segment, block and frame dicts. */
const SEGMENT_KEYS = new Map<string, number>([
  ["device", 1],
  ["address", 2],
  ["total_size", 3],
  ["allocated_size", 4],
  ["active_size", 5],
  ["requested_size", 6],
  ["stream", 7],
  ["segment_type", 8],
  ["segment_pool_id", 9],
  ["is_expandable", 10],
  ["frames", 11],
  ["blocks", 12],
  ["size", 13],
  ["state", 14],
  ["filename", 15],
  ["line", 16],
  ["name", 17],
]);
/** Any other str (any key id the module does not handle). */
export const SK_OTHER = 255;

/** The module's SK_* of a str. */
export function segmentKeyId(key: string): number {
  return SEGMENT_KEYS.get(key) ?? SK_OTHER;
}

/** scanSegments()'s rows (`segments` and `blocks` of them at those addresses of `buffer`), copied out. */
export function copySegments(
  buffer: ArrayBufferLike,
  segmentRowsAddress: number,
  segments: number,
  blockRowsAddress: number,
  blocks: number,
  memo: Memo,
): ScannedSegments {
  const seg = new Float64Array(buffer, segmentRowsAddress, segments * SEGMENT_FIELDS).slice();
  const blk = new Float64Array(buffer, blockRowsAddress, blocks * BLOCK_FIELDS).slice();
  const types: (string | undefined)[] = [];
  for (let i = 0; i < segments; i++) {
    const code = seg[i * SEGMENT_FIELDS + Seg.type];
    types.push(code !== 0 ? (memo.valueOf(code) as string) : undefined);
  }
  const states: string[] = [];
  for (let i = 0; i < blocks; i++) {
    const code = blk[i * BLOCK_FIELDS + Blk.state];
    states.push(code !== 0 ? (memo.valueOf(code) as string) : "unknown");
  }
  return new ScannedSegments(seg, blk, types, states);
}

/** Rows of consecutive scanSegments() calls as one. */
export function joinSegments(parts: ScannedSegments[]): ScannedSegments {
  const join = (arrays: Float64Array[]) => {
    const out = new Float64Array(arrays.reduce((n, a) => n + a.length, 0));
    let at = 0;
    for (const a of arrays) {
      out.set(a, at);
      at += a.length;
    }
    return out;
  };
  return new ScannedSegments(
    join(parts.map((p) => p.segments)),
    join(parts.map((p) => p.blocks)),
    parts.flatMap((p) => p.segmentTypes),
    parts.flatMap((p) => p.states),
  );
}
