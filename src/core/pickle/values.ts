// The values the unpickler builds. Dicts and lists are small classes rather than plain objects so that
// keys from a file can never reach Object.prototype, and so readers can tag them (memo slot, frame id).

/** Shared by every empty dict and list until its first item: most never get one (see assemble.ts). */
const NONE: unknown[] = Object.freeze([]) as unknown as unknown[];

export class PyDict {
  k: unknown[] = NONE;
  v: unknown[] = NONE;
  /** Memo slot this dict was stored in, or -1. Lets a reader release the memo's reference. */
  memo = -1;
  /** Free for a reader's use (e.g. the frame id of a frame dict); -1 when unset. */
  tag = -1;
  /** Set by a reader that wrote this dict straight into columns (its row there); -1 when unset. */
  row = -1;

  /** The value of `key`; searched from the end so that, as in Python, a repeated key's last value wins. */
  get(key: string): unknown {
    const k = this.k;
    for (let i = k.length - 1; i >= 0; i--) if (k[i] === key) return this.v[i];
    return undefined;
  }

  has(key: string): boolean {
    return this.k.lastIndexOf(key) >= 0;
  }

  set(key: unknown, value: unknown): void {
    const i = this.k.lastIndexOf(key);
    if (i >= 0) this.v[i] = value;
    else this.add(key, value);
  }

  /** Appends a pair without looking for the key (the unpickler's SETITEMS; see get()). */
  add(key: unknown, value: unknown): void {
    if (this.k === NONE) {
      this.k = [];
      this.v = [];
    }
    this.k.push(key);
    this.v.push(value);
  }
}

export class PyList {
  items: unknown[] = NONE;
  memo = -1;
  /** Set by a reader that took the list's content (e.g. a frame list's stack id); -1 when unset. */
  tag = -1;
  /** Rows a reader consumed from this list instead of storing them (see UnpickleHooks.consume). */
  rowStart = -1;
  rowCount = 0;
  /** Rows that were not contiguous with rowStart..rowStart+rowCount (never seen in real files). */
  extraRows: number[] | null = null;

  push(item: unknown): void {
    if (this.items === NONE) this.items = [];
    this.items.push(item);
  }

  addRow(row: number): void {
    if (this.rowStart < 0) {
      this.rowStart = row;
      this.rowCount = 1;
    } else if (row === this.rowStart + this.rowCount && this.extraRows === null) this.rowCount++;
    else (this.extraRows ??= []).push(row);
  }

  /** addRow() for rows start … start + count − 1. */
  addRows(start: number, count: number): void {
    if (this.rowStart < 0) {
      this.rowStart = start;
      this.rowCount = count;
    } else if (start === this.rowStart + this.rowCount && this.extraRows === null) this.rowCount += count;
    else for (let i = 0; i < count; i++) this.addRow(start + i);
  }

  /** Every consumed row, in order. */
  rows(): number[] {
    const out: number[] = [];
    for (let i = 0; i < this.rowCount; i++) out.push(this.rowStart + i);
    // a loop, not push(...): a spread of millions of rows overflows the stack
    if (this.extraRows) for (const r of this.extraRows) out.push(r);
    return out;
  }
}

export class PySet {
  constructor(
    readonly items: unknown[],
    readonly frozen: boolean,
  ) {}
}

/** Python tuples are plain frozen-by-convention arrays. */
export type PyTuple = readonly unknown[];

export function isSequence(v: unknown): v is PyList | PyTuple {
  return v instanceof PyList || Array.isArray(v);
}

export function sequenceItems(v: PyList | PyTuple): readonly unknown[] {
  return v instanceof PyList ? v.items : v;
}

/** A short description of a value's type, for error messages ("found a str, expected a dict"). */
export function describeValue(v: unknown): string {
  if (v === null) return "None";
  if (v instanceof PyDict) {
    const keys = v.k.slice(0, 6).map((k) => (typeof k === "string" ? JSON.stringify(k) : String(k)));
    return `a dict with keys ${keys.join(", ")}${v.k.length > 6 ? ", …" : ""}`;
  }
  if (v instanceof PyList) return `a list of ${v.items.length + v.rowCount} items`;
  if (Array.isArray(v)) return `a tuple of ${v.length} items`;
  if (v instanceof PySet) return v.frozen ? "a frozenset" : "a set";
  if (v instanceof Uint8Array) return `${v.length} bytes`;
  if (typeof v === "string") return "a str";
  if (typeof v === "boolean") return "a bool";
  if (typeof v === "number" || typeof v === "bigint") return "a number";
  return typeof v;
}
