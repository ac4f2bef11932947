// A first picture while a big file is still being read: memory over the trace entries read so far.
// Rows are staged in file order before their device is known, so this is the running sum of the staged
// entries (alloc +size, free_completed −size) in requested bytes, relative to where the trace began.
// The accumulator only ever reads each staged row once (a preview is asked for every few hundred ms
// while millions of rows arrive), keeping the running maximum per block of rows.

import type { TraceColumns } from "./builder";
import { Growable } from "./growable";
import { Action } from "./types";

export interface LoadPreview {
  /** Trace entries read so far. */
  entries: number;
  /** Running allocated change at the end of each bucket (max within the bucket), requested bytes. */
  allocatedBytes: Float64Array;
  /** The lowest running value: the curve is shifted by it so that it never goes below zero. */
  baselineBytes: number;
}

const BLOCK_ROWS = 1024;

export class PreviewAccumulator {
  private rows = 0;
  private running = 0;
  private lowest = 0;
  /** Highest running value within each block of BLOCK_ROWS rows (the last block may be partial). */
  private readonly blockMax = new Growable(Float64Array);

  /** Takes in the rows staged since the last call. */
  update(staging: TraceColumns): void {
    const n = staging.length;
    const actions = staging.action;
    const sizes = staging.sizeBytes;
    const blockMax = this.blockMax;
    let running = this.running;
    let lowest = this.lowest;
    // block by block: no division and no push per row (millions of rows on the way to the first picture)
    for (let row = this.rows; row < n; ) {
      const k = Math.floor(row / BLOCK_ROWS);
      const end = Math.min(n, (k + 1) * BLOCK_ROWS);
      let max = k < blockMax.length ? blockMax.data[k] : Number.NEGATIVE_INFINITY;
      for (; row < end; row++) {
        const a = actions[row];
        if (a === Action.alloc) running += sizes[row];
        else if (a === Action.free_completed) running -= sizes[row];
        if (running < lowest) lowest = running;
        if (running > max) max = running;
      }
      if (k === blockMax.length) blockMax.push(max);
      else blockMax.data[k] = max;
    }
    this.rows = n;
    this.running = running;
    this.lowest = lowest;
  }

  /** The preview in at most `buckets` buckets. */
  preview(buckets: number): LoadPreview {
    const blocks = this.blockMax.length;
    const out = new Float64Array(Math.max(1, Math.min(buckets, blocks)));
    for (let b = 0; b < out.length && blocks > 0; b++) {
      const from = Math.floor((b * blocks) / out.length);
      const to = Math.max(from + 1, Math.floor(((b + 1) * blocks) / out.length));
      let max = Number.NEGATIVE_INFINITY;
      for (let k = from; k < to; k++) if (this.blockMax.data[k] > max) max = this.blockMax.data[k];
      out[b] = max - this.lowest;
    }
    return { entries: this.rows, allocatedBytes: out, baselineBytes: this.lowest };
  }
}
