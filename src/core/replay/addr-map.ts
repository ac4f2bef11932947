// Open-addressing hash map from a byte address (a float64 up to ~2^47) to an int32, for the hot
// replay loop: JS Maps keyed by non-Smi numbers box every key. No deletion: a key stays once seen
// (the replay stores -1 for "no allocation open there" and reads presence as "the trace touched it").

const EMPTY = Number.NaN;

/** Where a probe for `addr` starts (& mask). */
export function hashAddress(addr: number): number {
  // Addresses are 512-byte aligned and below 2^48: fold the high part in, then a murmur3 finalizer.
  const hi = (addr / 4294967296) | 0;
  let h = ((addr - hi * 4294967296) | 0) ^ Math.imul(hi, 0x9e3779b1);
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return h ^ (h >>> 16);
}

export class AddressMap {
  keys: Float64Array;
  values: Int32Array;
  /** A second int32 per address when asked for (-1 until written), e.g. the last alloc there. */
  second: Int32Array | null;
  /** The slots' count − 1 (a power of two's): hashAddress(addr) & mask is where a probe starts. */
  mask: number;
  size = 0;

  /** Whether its columns are made in shared memory (a map made on one thread and read on another). */
  private readonly shared: boolean;

  /** `expected`: a guess at the number of distinct addresses; the table grows past it. */
  constructor(expected: number, withSecond = false, shared = false) {
    let cap = 16;
    while (cap < expected * 2) cap *= 2;
    this.shared = shared;
    this.keys = this.f64(cap).fill(EMPTY);
    this.values = this.i32(cap);
    this.second = withSecond ? this.i32(cap) : null;
    this.mask = cap - 1;
  }

  /** The map whose columns another thread made (its keys, values, second and size), read as they are. */
  static of(keys: Float64Array, values: Int32Array, second: Int32Array | null, size: number): AddressMap {
    const map = new AddressMap(0, second !== null);
    map.keys = keys;
    map.values = values;
    map.second = second;
    map.mask = keys.length - 1;
    map.size = size;
    return map;
  }

  private f64(n: number): Float64Array {
    return this.shared ? new Float64Array(new SharedArrayBuffer(n * 8)) : new Float64Array(n);
  }

  private i32(n: number): Int32Array {
    return this.shared ? new Int32Array(new SharedArrayBuffer(n * 4)) : new Int32Array(n);
  }

  /** Slot holding `addr`, or -1. */
  find(addr: number): number {
    const keys = this.keys;
    let i = hashAddress(addr) & this.mask;
    for (;;) {
      const k = keys[i];
      if (k === addr) return i;
      if (Number.isNaN(k)) return -1; // NaN: empty
      i = (i + 1) & this.mask;
    }
  }

  /** Slot holding `addr`, inserting it with `initial` when absent. */
  slot(addr: number, initial: number): number {
    const keys = this.keys;
    let i = hashAddress(addr) & this.mask;
    for (;;) {
      const k = keys[i];
      if (k === addr) return i;
      if (Number.isNaN(k)) break;
      i = (i + 1) & this.mask;
    }
    if ((this.size + 1) * 2 > keys.length) {
      this.grow();
      return this.slot(addr, initial);
    }
    keys[i] = addr;
    this.values[i] = initial;
    if (this.second) this.second[i] = -1;
    this.size++;
    return i;
  }

  private grow(): void {
    const oldKeys = this.keys;
    const oldValues = this.values;
    const oldSecond = this.second;
    const cap = oldKeys.length * 2;
    this.keys = this.f64(cap).fill(EMPTY);
    this.values = this.i32(cap);
    if (oldSecond) this.second = this.i32(cap);
    this.mask = cap - 1;
    this.size = 0;
    for (let i = 0; i < oldKeys.length; i++) {
      const k = oldKeys[i];
      if (Number.isNaN(k)) continue;
      const j = this.slot(k, 0);
      this.values[j] = oldValues[i];
      if (oldSecond) (this.second as Int32Array)[j] = oldSecond[i];
    }
  }
}
