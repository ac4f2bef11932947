// The unpickler's memo: values stored by MEMOIZE / PUT and fetched by GET. A big snapshot stores
// millions of them (three per trace entry), so the memo keeps no JS reference per slot: each slot holds
// an Int32 code in one typed array (outside the garbage-collected heap). A code > 0 names a shared value
// (a str or marker that many slots hold, registered once with code()); a code < 0 names an object kept
// for that slot alone; 0 is an empty slot. The codes may live in a WebAssembly memory (storeCodesIn()), so
// that the WebAssembly trace scanner reads and writes them where they are.

/** Where the codes live when they are not in a plain Int32Array: gives a view with room for `slots`. */
export type MemoStorage = (
  codes: Int32Array<ArrayBufferLike>,
  length: number,
  slots: number,
) => Int32Array<ArrayBufferLike>;

export class Memo {
  /** The codes of slots 0 … length − 1; its length is the capacity. */
  codes: Int32Array<ArrayBufferLike> = new Int32Array(1024);
  private storage: MemoStorage | null = null;
  private readonly shared: unknown[] = [];
  private readonly sharedCodes = new Map<unknown, number>();
  private readonly objects: unknown[] = [];
  /** One past the highest slot stored. */
  length = 0;

  /** Moves the codes to `storage` (which copies the first `length` of them). */
  storeCodesIn(storage: MemoStorage): void {
    this.storage = storage;
    this.codes = storage(this.codes, this.length, this.codes.length);
  }

  /** Makes room for slots up to `slots` − 1. */
  reserve(slots: number): void {
    if (slots > this.codes.length) this.grow(slots);
  }

  private grow(slots: number): void {
    const want = Math.max(slots, this.codes.length * 2);
    if (this.storage !== null) this.codes = this.storage(this.codes, this.length, want);
    else {
      const grown = new Int32Array(want);
      grown.set(this.codes.subarray(0, this.length));
      this.codes = grown;
    }
  }

  /** The value in `slot`, or undefined when nothing was stored there. */
  get(slot: number): unknown {
    if (slot >= this.length) return undefined;
    const code = this.codes[slot];
    return code > 0 ? this.shared[code - 1] : code < 0 ? this.objects[-code - 1] : undefined;
  }

  /** The value a code stands for. */
  valueOf(code: number): unknown {
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
    if (slot >= this.codes.length) this.grow(slot + 1);
    this.codes[slot] = code;
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
    if (slot >= this.codes.length) this.grow(slot + 1);
    this.codes[slot] = code;
    if (slot >= this.length) this.length = slot + 1;
  }

  codeAt(slot: number): number {
    return slot < this.length ? this.codes[slot] : 0;
  }

  /** Empties every slot from `length` on, releasing what they held alone. */
  truncate(length: number): void {
    const codes = this.codes;
    for (let slot = length; slot < this.length; slot++) {
      this.release(codes[slot]);
      codes[slot] = 0;
    }
    this.length = Math.min(this.length, length);
  }
}
