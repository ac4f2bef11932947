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

const CHUNK_SHIFT = 16;
const CHUNK_ROWS = 1 << CHUNK_SHIFT;
const CHUNK_MASK = CHUNK_ROWS - 1;

/**
 * An append-only column kept as fixed 64K-row chunks: growing never copies or abandons a buffer, so a
 * multi-million-row trace leaves no trail of discarded arrays for the garbage collector to catch up on.
 */
export class ChunkedColumn<T extends TypedArray> {
  private chunks: T[] = [];
  length = 0;
  private readonly ctor: TypedArrayCtor<T>;

  constructor(ctor: TypedArrayCtor<T>) {
    this.ctor = ctor;
  }

  push(value: number): void {
    const i = this.length & CHUNK_MASK;
    if (i === 0) this.chunks.push(new this.ctor(CHUNK_ROWS));
    this.chunks[this.chunks.length - 1][i] = value;
    this.length++;
  }

  /** A new array holding the given rows, in the order given. */
  pick(rows: ArrayLike<number>): T {
    const out = new this.ctor(rows.length);
    const chunks = this.chunks;
    for (let i = 0; i < rows.length; i++) {
      const r = rows[i];
      out[i] = chunks[r >>> CHUNK_SHIFT][r & CHUNK_MASK];
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
    this.length = 0;
  }

  forEachChunk(fn: (chunk: T, firstRow: number, rows: number) => void): void {
    for (let k = 0; k < this.chunks.length; k++) {
      fn(this.chunks[k], k * CHUNK_ROWS, Math.min(CHUNK_ROWS, this.length - k * CHUNK_ROWS));
    }
  }
}
