// A first picture while a big file is still being read: memory over the trace entries read so far.
// Rows are staged in file order before their device is known, so this is the running sum of the staged
// entries (alloc +size, free_completed −size) in requested bytes, relative to where the trace began.

import type { TraceColumns } from "./builder";
import { Action } from "./types";

export interface LoadPreview {
  /** Trace entries read so far. */
  entries: number;
  /** Running allocated change at the end of each bucket (max within the bucket), requested bytes. */
  allocatedBytes: Float64Array;
  /** The lowest running value: the curve is shifted by it so that it never goes below zero. */
  baselineBytes: number;
}

export function previewOf(staging: TraceColumns, buckets: number): LoadPreview {
  const n = staging.length;
  const out = new Float64Array(Math.max(1, Math.min(buckets, n)));
  const perBucket = n / out.length;
  let running = 0;
  let lowest = 0;
  const actions = staging.action;
  const sizes = staging.sizeBytes;
  for (let row = 0; row < n; row++) {
    const a = actions[row];
    if (a === Action.alloc) running += sizes[row];
    else if (a === Action.free_completed) running -= sizes[row];
    if (running < lowest) lowest = running;
    const b = Math.min(out.length - 1, Math.floor(row / perBucket));
    if (running > out[b] || row === Math.ceil(b * perBucket)) out[b] = running;
  }
  for (let b = 0; b < out.length; b++) out[b] -= lowest;
  return { entries: n, allocatedBytes: out, baselineBytes: lowest };
}
