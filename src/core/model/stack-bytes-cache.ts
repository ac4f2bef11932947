// Recognises a frames list by its bytes. A list made only of memo references to frame dicts
// (MARK, BINGET / LONG_BINGET …, APPENDS) is the same stack whenever its bytes are the same, as long
// as those memo slots still hold the same frames; torch repeats the same stacks constantly (every free
// has its alloc's stack, loops allocate from the same lines). Comparing bytes four at a time is several
// times cheaper than decoding each reference, which is what makes big files fast.

const MARK = 0x28;
const APPENDS = 0x65;
const BINGET = 0x68;
const LONG_BINGET = 0x6a;

const TABLE_BITS = 16;
const TABLE_MASK = (1 << TABLE_BITS) - 1;
/** Lists longer than this are parsed each time (they are rare, and would bloat the pool). */
const MAX_LIST_BYTES = 4096;
/** Shorter lists are not cached (they cost little to parse). */
const MIN_LIST_BYTES = 12;
/**
 * A list of this many bytes or more is found by a hash of its first PREFIX_BYTES, a shorter one by a hash
 * of the whole list (stepped op by op). The first few bytes alone are not enough: with C++ frames
 * recorded, every stack starts with the same allocator frames (a real training file's 183 stacks had 2
 * distinct first 8 bytes; 93 distinct first 48), and a lookup walked most of the cache.
 */
const PREFIX_BYTES = 48;
/** Bounds the pool of cached bytes; past it nothing more is added (parsing stays correct). */
const MAX_POOL_BYTES = 64 << 20;

export class StackBytesCache {
  // Small to start with, so that the warm-up file (workers/warm-up.ts) grows them: V8 then has seen the
  // growing branches before a user's file reaches them (an unseen branch deoptimises the parse loop).
  private pool = new Uint8Array(1 << 10);
  private poolView: DataView<ArrayBufferLike> = new DataView(this.pool.buffer);
  private poolBytes = 0;
  /** Chains of the lists shorter than PREFIX_BYTES (by wholeKey), then of the others (by prefixKey). */
  private readonly heads = new Int32Array(2 << TABLE_BITS).fill(-1);
  private offset = new Int32Array(64);
  private length = new Int32Array(64);
  private stack = new Int32Array(64);
  private nextInChain = new Int32Array(64);
  private count = 0;
  /** Bytes the last hit covered. */
  matchedBytes = 0;

  /**
   * The stack id of the cached list whose bytes start at buf[start] (its MARK), or -1. On a hit,
   * `matchedBytes` is its length, up to and including its APPENDS.
   */
  match(buf: Uint8Array, view: DataView, start: number, end: number): number {
    if (start + PREFIX_BYTES <= end) {
      const hit = this.walk(buf, view, prefixKey(view, start), start, end, -1);
      if (hit >= 0) return hit;
    }
    const n = listBytes(buf, view, start, end);
    return n < 0 ? -1 : this.walk(buf, view, wholeKey, start, end, n);
  }

  /** The stack of the list in chain `bucket` whose bytes are those at buf[start] (of length n when n ≥ 0). */
  private walk(buf: Uint8Array, view: DataView, bucket: number, start: number, end: number, want: number) {
    const pool = this.poolView;
    let prev = -1;
    for (let e = this.heads[bucket]; e >= 0; prev = e, e = this.nextInChain[e]) {
      const n = this.length[e];
      if (want >= 0 ? n !== want : start + n > end) continue;
      const from = this.offset[e];
      // Eight bytes at a time, compared as doubles: equal doubles have equal bits except 0 and -0
      // (checked byte by byte below) and NaN (never equal: falls back to a parse, still correct).
      let i = 0;
      for (; i + 8 <= n; i += 8) {
        const x = view.getFloat64(start + i, true);
        if (
          x !== pool.getFloat64(from + i, true) ||
          (x === 0 && !sameBytes(buf, start + i, this.pool, from + i, 8))
        )
          break;
      }
      if (i + 8 <= n) continue;
      for (; i < n; i++) if (buf[start + i] !== this.pool[from + i]) break;
      if (i < n) continue;
      if (prev >= 0) {
        // move to the front: the stacks in use now are likely to be met again soon
        this.nextInChain[prev] = this.nextInChain[e];
        this.nextInChain[e] = this.heads[bucket];
        this.heads[bucket] = e;
      }
      this.matchedBytes = n;
      return this.stack[e];
    }
    return -1;
  }

  /** Remembers buf[start..stop) (MARK … APPENDS) as `stack`, if it is a list of memo references. */
  add(buf: Uint8Array, view: DataView, start: number, stop: number, stack: number): void {
    const n = stop - start;
    if (n < MIN_LIST_BYTES || n > MAX_LIST_BYTES || !isReferencesOnly(buf, start, stop)) return;
    if (this.poolBytes + n > this.pool.length) {
      if (this.poolBytes + n > MAX_POOL_BYTES) return;
      const grown = new Uint8Array(
        Math.min(MAX_POOL_BYTES, Math.max(this.pool.length * 2, this.poolBytes + n)),
      );
      grown.set(this.pool.subarray(0, this.poolBytes));
      this.pool = grown;
      this.poolView = new DataView(grown.buffer);
    }
    if (this.count === this.offset.length) this.grow();
    this.pool.set(buf.subarray(start, stop), this.poolBytes);
    const e = this.count++;
    let bucket: number;
    if (n >= PREFIX_BYTES) bucket = prefixKey(view, start);
    else {
      listBytes(buf, view, start, stop);
      bucket = wholeKey;
    }
    this.offset[e] = this.poolBytes;
    this.length[e] = n;
    this.stack[e] = stack;
    this.nextInChain[e] = this.heads[bucket];
    this.heads[bucket] = e;
    this.poolBytes += n;
  }

  /** Forgets everything (a memo slot changed, so cached bytes may now mean other frames). */
  clear(): void {
    this.heads.fill(-1);
    this.count = 0;
    this.poolBytes = 0;
  }

  private grow(): void {
    const size = this.offset.length * 2;
    const copy = (a: Int32Array) => {
      const b = new Int32Array(size);
      b.set(a);
      return b;
    };
    this.offset = copy(this.offset);
    this.length = copy(this.length);
    this.stack = copy(this.stack);
    this.nextInChain = copy(this.nextInChain);
  }
}

/** The bucket (in the upper half) of the lists whose first PREFIX_BYTES are those at `start`. */
function prefixKey(view: DataView, start: number): number {
  let h = 0;
  for (let i = 0; i < PREFIX_BYTES; i += 4) h = Math.imul(h ^ view.getInt32(start + i, true), 0x9e3779b1) + i;
  h = Math.imul(h ^ (h >>> 15), 0x85ebca6b);
  return (1 << TABLE_BITS) + ((h >>> (32 - TABLE_BITS)) & TABLE_MASK);
}

/** The bucket (in the lower half) of the list listBytes() stepped over last. */
let wholeKey = 0;

/**
 * The length of the list at buf[start] (its MARK) up to and including its APPENDS, stepping over its
 * memo references; -1 if it holds anything else, is longer than MAX_LIST_BYTES or runs past `end`. Sets
 * wholeKey to a hash of its references (a Fletcher sum: two adds a reference).
 */
function listBytes(buf: Uint8Array, view: DataView, start: number, end: number): number {
  const lim = Math.min(end, start + MAX_LIST_BYTES);
  let p = start + 1;
  let a = 0;
  let b = 0;
  for (;;) {
    if (p >= lim) return -1;
    const op = buf[p];
    if (op === BINGET) {
      if (p + 2 > end) return -1;
      a = (a + buf[p + 1]) | 0;
      p += 2;
    } else if (op === LONG_BINGET) {
      if (p + 5 > end) return -1;
      a = (a + view.getInt32(p + 1, true)) | 0;
      p += 5;
    } else if (op === APPENDS) break;
    else return -1;
    b = (b + a) | 0;
  }
  const n = p + 1 - start;
  const h = Math.imul(Math.imul(b, 0x9e3779b1) + a, 0x85ebca6b) + n;
  wholeKey = (h >>> (32 - TABLE_BITS)) & TABLE_MASK;
  return n;
}

/** MARK, then only BINGET / LONG_BINGET, then APPENDS, exactly filling buf[start..stop)? */
function isReferencesOnly(buf: Uint8Array, start: number, stop: number): boolean {
  if (buf[start] !== MARK || buf[stop - 1] !== APPENDS) return false;
  let p = start + 1;
  while (p < stop - 1) {
    const op = buf[p];
    if (op === BINGET) p += 2;
    else if (op === LONG_BINGET) p += 5;
    else return false;
  }
  return p === stop - 1;
}

function sameBytes(a: Uint8Array, at: number, b: Uint8Array, bt: number, n: number): boolean {
  for (let i = 0; i < n; i++) if (a[at + i] !== b[bt + i]) return false;
  return true;
}
