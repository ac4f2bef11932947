// Memory a finished pass has written, handed to the next pass that needs a big column.
//
// Why: the first write to a page of fresh memory costs a page fault, and on the virtual machines these
// figures are measured on that is 2.5–3 ms per MB (10 µs a page, docs/speed.md) — on a 1 GB file, more
// than the arithmetic of the passes that fill the columns. Memory a pass is done with (the pickle
// scanner's memo, the file's slices, a pass's scratch column) is already resident: a column carved out
// of it costs a memset instead. A taken column is filled as asked (0 unless told), so it reads exactly
// as a `new Float64Array(n)` would; only a column meant to live on should be taken (its memory is kept
// by the whole buffer it came from).
//
// One pool per thread (the page reads each file in a worker of its own). What is not taken by the end
// of a load is let go (`dropRecycledMemory`), so that the pool never holds memory past it.

type Column = Uint8Array | Int32Array | Float64Array;

interface Region {
  buffer: ArrayBufferLike;
  /** The next free byte. */
  at: number;
  end: number;
  /** Set aside for one column of exactly this many bytes (setAside): no other take carves it. */
  onlyFor?: number;
}

/** Smaller columns and leftovers are not worth a region: `new` costs little for them. */
const MIN_BYTES = 1 << 20;
const MAX_REGIONS = 32;

let regions: Region[] = [];

/**
 * Gives memory back for the next columns. The caller must be done with every byte of it: nothing may
 * read or write it afterwards except through what `take*` hands out.
 */
export function recycleMemory(
  buffer: ArrayBufferLike,
  byteOffset = 0,
  byteLength = buffer.byteLength - byteOffset,
): void {
  if (byteLength < MIN_BYTES || buffer.byteLength === 0 || !isBuffer(buffer)) return;
  if (regions.length >= MAX_REGIONS) return;
  regions.push({ buffer, at: align8(byteOffset), end: byteOffset + byteLength });
}

/**
 * Carves `bytes` out of the recycled memory now, for the one later take of exactly that size. The
 * analysis takes its columns smallest pass first, and first fit had cut every big region down by the time
 * the last and biggest came (the replay's per-event total: 53 MB of fresh memory on the 1.05 GB file in
 * the page, beside 78 MB left in pieces); set aside first, it fits where it is cut from (first fit
 * decreasing).
 */
export function setAside(bytes: number): void {
  const got = carve(bytes);
  if (got === null) return;
  regions.unshift({ buffer: got.buffer, at: got.offset, end: got.offset + bytes, onlyFor: bytes });
}

/**
 * Puts the shared regions first, so that the next takes come out of shared memory while it lasts: columns
 * another thread is to read (workers/attribution-helper.ts).
 */
export function preferShared(): void {
  if (typeof SharedArrayBuffer !== "function") return;
  const shared = regions.filter((r) => r.buffer instanceof SharedArrayBuffer);
  regions = [...shared, ...regions.filter((r) => !(r.buffer instanceof SharedArrayBuffer))];
}

/** A piece of shared memory, handed from one thread's pool to another's (takeSharedRegions). */
export interface SharedRegion {
  buffer: SharedArrayBuffer;
  byteOffset: number;
  byteLength: number;
}

/**
 * Takes shared regions out of the pool, biggest first, until they hold `bytes` (or there are no more),
 * for another thread to recycle (workers/attribution-helper.ts): its memory, already faulted in, is then
 * that thread's, and this thread's takes never carve it again.
 */
export function takeSharedRegions(bytes: number): SharedRegion[] {
  const out: SharedRegion[] = [];
  if (typeof SharedArrayBuffer !== "function") return out;
  let got = 0;
  const shared = regions
    .filter((r) => r.buffer instanceof SharedArrayBuffer && r.onlyFor === undefined)
    .sort((p, q) => q.end - q.at - (p.end - p.at));
  for (const r of shared) {
    if (got >= bytes) break;
    out.push({ buffer: r.buffer as SharedArrayBuffer, byteOffset: r.at, byteLength: r.end - r.at });
    got += r.end - r.at;
    regions.splice(regions.indexOf(r), 1);
  }
  return out;
}

/** Lets go of what was not taken (the end of a load). */
export function dropRecycledMemory(): void {
  regions = [];
}

/** Bytes held for the next columns (tests, benchmarks). */
export function recycledBytes(): number {
  let sum = 0;
  for (const r of regions) sum += r.end - r.at;
  return sum;
}

/** Rounded up to a multiple of 8 (without `&`, which would cut offsets past 2 GiB to 32 bits). */
function align8(x: number): number {
  return Math.ceil(x / 8) * 8;
}

/**
 * An ArrayBuffer, or a SharedArrayBuffer (warm memory where threads share it, model/warm-memory.ts): a
 * column taken from one reads and writes as any other. Neither kind is ever transferred (a taken column's
 * buffer holds other columns: transferring it would take them along).
 */
function isBuffer(buffer: ArrayBufferLike): boolean {
  return (
    buffer instanceof ArrayBuffer ||
    (typeof SharedArrayBuffer === "function" && buffer instanceof SharedArrayBuffer)
  );
}

function carve(bytes: number): { buffer: ArrayBufferLike; offset: number } | null {
  if (bytes < MIN_BYTES) return null;
  for (let k = 0; k < regions.length; k++) {
    const r = regions[k];
    if (r.end - r.at < bytes || (r.onlyFor !== undefined && r.onlyFor !== bytes)) continue;
    const offset = r.at;
    r.at = align8(offset + bytes);
    if (r.end - r.at < MIN_BYTES) regions.splice(k, 1);
    return { buffer: r.buffer, offset };
  }
  return null;
}

function take<T extends Column>(
  make: (buffer: ArrayBufferLike, offset: number, n: number) => T,
  fresh: (n: number) => T,
  bytesPer: number,
  n: number,
  value: number,
): T {
  const got = carve(n * bytesPer);
  if (got === null) {
    const col = fresh(n);
    if (value !== 0) col.fill(value);
    return col;
  }
  return fillColumn(make(got.buffer, got.offset, n), value);
}

/**
 * `col.fill(value)`, 8 bytes at a time where it lives in shared memory: V8 fills a SharedArrayBuffer
 * element by element (in Node 20 a byte column at 0.46 ms per MiB, against 0.04 where not shared; 0.06
 * through a BigInt64Array), and the columns a helper thread reads are taken from shared memory.
 */
export function fillColumn<T extends Column>(col: T, value: number): T {
  if (
    typeof SharedArrayBuffer !== "function" ||
    !(col.buffer instanceof SharedArrayBuffer) ||
    col.length < 64
  )
    return col.fill(value) as T;
  const per = col.BYTES_PER_ELEMENT;
  // the value's bytes, repeated over 8 (as the column's own type writes them)
  const word = new (col.constructor as new (n: number) => T)(8 / per).fill(value);
  const bits = new BigInt64Array(word.buffer)[0];
  const start = col.byteOffset;
  const end = start + col.byteLength;
  const from = Math.ceil(start / 8) * 8;
  const to = Math.max(from, Math.floor(end / 8) * 8);
  new BigInt64Array(col.buffer, from, (to - from) / 8).fill(bits);
  col.fill(value, 0, (from - start) / per);
  col.fill(value, (to - start) / per);
  return col;
}

/** A column of n bytes, each `value`. */
export function takeUint8(n: number, value = 0): Uint8Array {
  return take(
    (b, o, k) => new Uint8Array(b, o, k),
    (k) => new Uint8Array(k),
    1,
    n,
    value,
  );
}

/** A column of n 32-bit integers, each `value`. */
export function takeInt32(n: number, value = 0): Int32Array {
  return take(
    (b, o, k) => new Int32Array(b, o, k),
    (k) => new Int32Array(k),
    4,
    n,
    value,
  );
}

/** A column of n doubles, each `value`. */
export function takeFloat64(n: number, value = 0): Float64Array {
  return take(
    (b, o, k) => new Float64Array(b, o, k),
    (k) => new Float64Array(k),
    8,
    n,
    value,
  );
}
