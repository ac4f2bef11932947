// Append-only typed-array columns that grow by half when full (frames, stacks, segments, blocks, the
// preview's blocks); `trim()` returns an exact-length copy, `release()` drops the data.

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
