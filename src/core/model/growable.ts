// Append-only typed-array columns that double when full; `trim()` returns an exact-length copy.

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
    const next = new this.ctor(this.data.length * 2);
    next.set(this.data as never);
    this.data = next;
  }

  trim(): T {
    return this.data.slice(0, this.length) as T;
  }
}
