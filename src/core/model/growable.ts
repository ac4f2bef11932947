// Append-only typed-array columns that grow by half when full (bounding the slack to 50% for the
// multi-million-row trace columns); `trim()` returns an exact-length copy, `release()` drops the data.

type TypedArray = Float64Array | Int32Array | Uint8Array;
type TypedArrayCtor<T extends TypedArray> = { new (length: number): T };

export class Growable<T extends TypedArray> {
  data: T;
  length = 0;
  private readonly ctor: TypedArrayCtor<T>;

  constructor(ctor: TypedArrayCtor<T>, initialCapacity = 1024) {
    this.ctor = ctor;
    this.data = new ctor(initialCapacity);
  }

  push(value: number): void {
    if (this.length === this.data.length) this.grow();
    this.data[this.length++] = value;
  }

  private grow(): void {
    const next = new this.ctor(Math.max(16, Math.ceil(this.data.length * 1.5)));
    next.set(this.data as never);
    this.data = next;
  }

  /** Frees the column (after its rows were copied elsewhere). */
  release(): void {
    this.data = new this.ctor(0);
    this.length = 0;
  }

  trim(): T {
    return this.data.slice(0, this.length) as T;
  }
}

/** Rows to take from staged columns: a list of row numbers, or a run of consecutive rows. */
export type RowSet = ArrayLike<number> | { readonly start: number; readonly count: number };

function isRowList(rows: RowSet): rows is ArrayLike<number> {
  return !("start" in rows);
}

const CHUNK_SHIFT = 16;
const CHUNK_ROWS = 1 << CHUNK_SHIFT;
export const CHUNK_MASK = CHUNK_ROWS - 1;

/**
 * An append-only column kept as fixed 64K-row chunks: growing never copies or abandons a buffer, so a
 * multi-million-row trace leaves no trail of discarded arrays for the garbage collector to catch up on.
 */
export class ChunkedColumn<T extends TypedArray> {
  private chunks: T[] = [];
  length = 0;
  /** The last chunk, where the next row goes (writers that fill several columns at once use it). */
  tail: T;
  private readonly ctor: TypedArrayCtor<T>;

  constructor(ctor: TypedArrayCtor<T>) {
    this.ctor = ctor;
    this.tail = new ctor(0);
  }

  push(value: number): void {
    const i = this.length & CHUNK_MASK;
    if (i === 0) this.openChunk();
    this.tail[i] = value;
    this.length++;
  }

  /** Starts a new chunk; call when `length` is a multiple of CHUNK_ROWS, before writing to `tail`. */
  openChunk(): void {
    this.tail = new this.ctor(CHUNK_ROWS);
    this.chunks.push(this.tail);
  }

  /** A new array holding the given rows, in the order given (a run of rows is copied chunk by chunk). */
  pick(rows: RowSet): T {
    if (!isRowList(rows)) return this.range(rows.start, rows.count);
    const out = new this.ctor(rows.length);
    const chunks = this.chunks;
    for (let i = 0; i < rows.length; i++) {
      const r = rows[i];
      out[i] = chunks[r >>> CHUNK_SHIFT][r & CHUNK_MASK];
    }
    return out;
  }

  private range(start: number, count: number): T {
    const out = new this.ctor(count);
    let done = 0;
    while (done < count) {
      const r = start + done;
      const offset = r & CHUNK_MASK;
      const n = Math.min(count - done, CHUNK_ROWS - offset);
      out.set(this.chunks[r >>> CHUNK_SHIFT].subarray(offset, offset + n) as never, done);
      done += n;
    }
    return out;
  }

  /** Every row, in order. */
  all(): T {
    const out = new this.ctor(this.length);
    this.chunks.forEach((c, k) => {
      const n = Math.min(CHUNK_ROWS, this.length - k * CHUNK_ROWS);
      out.set((n === CHUNK_ROWS ? c : c.subarray(0, n)) as never, k * CHUNK_ROWS);
    });
    return out;
  }

  release(): void {
    this.chunks = [];
    this.tail = new this.ctor(0);
    this.length = 0;
  }

  forEachChunk(fn: (chunk: T, firstRow: number, rows: number) => void): void {
    for (let k = 0; k < this.chunks.length; k++) {
      fn(this.chunks[k], k * CHUNK_ROWS, Math.min(CHUNK_ROWS, this.length - k * CHUNK_ROWS));
    }
  }
}
