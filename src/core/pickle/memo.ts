// The unpickler's memo: values stored by MEMOIZE / PUT and fetched by GET. A big snapshot stores
// millions of them (three per trace entry), so the memo keeps no JS reference per slot: each slot holds
// an Int32 code in fixed typed-array chunks (outside the garbage-collected heap, never copied as it
// grows). A code > 0 names a shared value (a str or marker that many slots hold, registered once with
// code()); a code < 0 names an object kept for that slot alone; 0 is an empty slot.

const SHIFT = 16;
const CHUNK = 1 << SHIFT;
const MASK = CHUNK - 1;

export class Memo {
  private readonly chunks: Int32Array[] = [];
  private readonly shared: unknown[] = [];
  private readonly sharedCodes = new Map<unknown, number>();
  private readonly objects: unknown[] = [];
  /** One past the highest slot stored. */
  length = 0;

  /** The value in `slot`, or undefined when nothing was stored there. */
  get(slot: number): unknown {
    const chunk = this.chunks[slot >>> SHIFT];
    if (chunk === undefined) return undefined;
    const code = chunk[slot & MASK];
    return code > 0 ? this.shared[code - 1] : code < 0 ? this.objects[-code - 1] : undefined;
  }

  /** The code of a value that many slots will hold (registered on first use). */
  code(value: unknown): number {
    let code = this.sharedCodes.get(value);
    if (code === undefined) {
      this.shared.push(value);
      code = this.shared.length;
      this.sharedCodes.set(value, code);
    }
    return code;
  }

  /** A code for an object that only this slot holds. */
  objectCode(value: unknown): number {
    this.objects.push(value);
    return -this.objects.length;
  }

  /** Stores at the next slot (MEMOIZE). */
  push(value: unknown): void {
    this.pushCode(this.objectCode(value));
  }

  pushCode(code: number): void {
    const slot = this.length;
    if ((slot & MASK) === 0 && this.chunks.length === slot >>> SHIFT) this.chunks.push(new Int32Array(CHUNK));
    this.chunks[slot >>> SHIFT][slot & MASK] = code;
    this.length = slot + 1;
  }

  /**
   * Stores at any slot (PUT); slots skipped over stay empty. What the slot held alone is released.
   * `shared`: the value is one that many slots hold (see code()).
   */
  set(slot: number, value: unknown, shared = false): void {
    this.release(this.codeAt(slot));
    this.setCode(slot, shared ? this.code(value) : this.objectCode(value));
  }

  private release(code: number): void {
    if (code < 0) this.objects[-code - 1] = undefined;
  }

  /** Stores a code at any slot; an object the slot held stays referenced (undo may restore it). */
  setCode(slot: number, code: number): void {
    while (this.chunks.length <= slot >>> SHIFT) this.chunks.push(new Int32Array(CHUNK));
    this.chunks[slot >>> SHIFT][slot & MASK] = code;
    if (slot >= this.length) this.length = slot + 1;
  }

  codeAt(slot: number): number {
    const chunk = this.chunks[slot >>> SHIFT];
    return chunk === undefined ? 0 : chunk[slot & MASK];
  }

  /** Empties every slot from `length` on, releasing what they held alone. */
  truncate(length: number): void {
    for (let slot = length; slot < this.length; slot++) {
      const chunk = this.chunks[slot >>> SHIFT];
      if (chunk === undefined) continue;
      this.release(chunk[slot & MASK]);
      chunk[slot & MASK] = 0;
    }
    this.length = Math.min(this.length, length);
  }
}
