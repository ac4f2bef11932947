// The unpickler's memo: values stored by MEMOIZE / PUT and fetched by GET. A big snapshot stores
// millions (three per trace entry), so slots live in fixed chunks: growing never copies what is
// stored, which a single JS array does at every doubling, at a cost that showed in profiles.

const SHIFT = 14;
const CHUNK = 1 << SHIFT;
const MASK = CHUNK - 1;

export class Memo {
  private readonly chunks: unknown[][] = [];
  /** One past the highest slot stored. */
  length = 0;

  /** The value in `slot`, or undefined when nothing was stored there. */
  get(slot: number): unknown {
    const chunk = this.chunks[slot >>> SHIFT];
    return chunk === undefined ? undefined : chunk[slot & MASK];
  }

  /** Stores at the next slot (MEMOIZE). */
  push(value: unknown): void {
    const slot = this.length;
    if ((slot & MASK) === 0) this.chunks.push(new Array(CHUNK).fill(undefined));
    this.chunks[slot >>> SHIFT][slot & MASK] = value;
    this.length = slot + 1;
  }

  /** Stores at any slot (PUT); slots skipped over stay empty. */
  set(slot: number, value: unknown): void {
    while (this.chunks.length <= slot >>> SHIFT) this.chunks.push(new Array(CHUNK).fill(undefined));
    this.chunks[slot >>> SHIFT][slot & MASK] = value;
    if (slot >= this.length) this.length = slot + 1;
  }

  /** Empties every slot from `length` on. */
  truncate(length: number): void {
    for (let slot = length; slot < this.length; slot++) {
      const chunk = this.chunks[slot >>> SHIFT];
      if (chunk !== undefined) chunk[slot & MASK] = undefined;
    }
    this.length = Math.min(this.length, length);
  }
}
