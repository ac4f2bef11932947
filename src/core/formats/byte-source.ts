// Where bytes come from: a Blob/File in the browser, a file descriptor in Node, an array in tests.
// Readers take slices; nothing requires the whole file as one contiguous buffer.

import { recycleMemory } from "../model/recycled-memory";

export interface ByteSource {
  readonly name: string;
  readonly sizeBytes: number;
  read(offset: number, length: number): Promise<Uint8Array>;
  /**
   * Optional: reads from `offset` into `target`'s memory (from its start), resolving with the bytes
   * read: a view at the start of `target`'s buffer, or of the buffer that replaced it (a source that
   * transfers the buffer to another thread and back gets it back as a new ArrayBuffer; `target` is then
   * detached). The reader then reuses a few buffers instead of a fresh one per slice: fresh memory costs
   * a page fault per 4 KiB (≈ 0.3 s of CPU per GB read on a 2-core VM).
   */
  readInto?(offset: number, target: Uint8Array): Promise<Uint8Array>;
  /**
   * Whether readInto() writes into `target` itself where `target` is a view of shared memory (a shared
   * WebAssembly memory's): a file read in Node, or the page's reader worker, which copies the slice into
   * it. The bytes resolved are then `target`'s own (unless the read fell back to another way).
   */
  readonly readsInPlace?: boolean;
}

export function bytesByteSource(bytes: Uint8Array, name = "bytes"): ByteSource {
  return {
    name,
    sizeBytes: bytes.length,
    read: async (offset, length) => bytes.subarray(offset, Math.min(bytes.length, offset + length)),
  };
}

export function blobByteSource(blob: Blob, name: string): ByteSource {
  return {
    name,
    sizeBytes: blob.size,
    read: async (offset, length) => new Uint8Array(await blob.slice(offset, offset + length).arrayBuffer()),
  };
}

/** A file's first slice, read before its kind is known (the kind is sniffed from its first bytes). */
export interface FirstSlice {
  bytes: Uint8Array;
  /** In memory read into for it (readInto), which nothing else holds: it may be read into again. */
  own: boolean;
}

/**
 * Reads the first slice (`chunkBytes`, or the whole of a smaller source) in one request: the format is
 * sniffed from its first bytes, and parsing starts on it without a second request to the start of the
 * file (≈ 15 ms in Chromium, where each new read of a Blob opens a stream).
 */
export async function readFirstSlice(src: ByteSource, chunkBytes: number): Promise<FirstSlice> {
  const length = Math.min(chunkBytes, src.sizeBytes);
  if (src.readInto) return { bytes: await src.readInto(0, new Uint8Array(length)), own: true };
  return { bytes: await src.read(0, length), own: false };
}

/**
 * Yields the source's bytes in slices: the first of `chunkBytes`, each next one four times the last, up
 * to `maxChunkBytes` (a small first slice gives a first picture soon). `readAhead` slices are already
 * being read while the caller parses this one. `reuse`: the caller is done with a slice when it asks for
 * the next one (it keeps no reference to it), so a source with readInto() reads into recycled buffers.
 * `first`: the first slice, already read (readFirstSlice); the rest follows it.
 */
export async function* readChunks(
  src: ByteSource,
  chunkBytes: number,
  maxChunkBytes = chunkBytes,
  readAhead = 1,
  reuse = false,
  first: FirstSlice | null = null,
  /** Memory for a new slice (else a new array), as long as it has some (readsInPlace sources). */
  alloc: ((length: number) => Uint8Array | null) | null = null,
): AsyncGenerator<Uint8Array> {
  const readInto = reuse && src.readInto ? src.readInto.bind(src) : null;
  const free: Uint8Array[] = [];
  let size = first === null ? chunkBytes : Math.min(maxChunkBytes, chunkBytes * 4);
  let offset = first === null ? 0 : first.bytes.length;
  /** A slice being read; `buffer`: its whole memory, recycled once the caller is done with it. */
  type Slot = { bytes: Promise<Uint8Array> | null; buffer: Uint8Array | null };
  const queue: Slot[] = [];
  const fill = () => {
    while (queue.length <= readAhead && offset < src.sizeBytes) {
      const length = Math.min(size, src.sizeBytes - offset);
      let p: Promise<Uint8Array>;
      const entry: Slot = { bytes: null, buffer: null };
      if (readInto !== null) {
        const spare = free.pop();
        const b =
          spare !== undefined && spare.length >= length ? spare : (alloc?.(length) ?? new Uint8Array(length));
        p = readInto(offset, b.subarray(0, length)).then((bytes) => {
          // the memory the bytes are in (b's, or the buffer that replaced it) is what recycles
          entry.buffer = bytes.buffer === b.buffer ? b : new Uint8Array(bytes.buffer);
          return bytes;
        });
      } else p = src.read(offset, length);
      p.catch(() => undefined); // an abandoned read-ahead must not be an unhandled rejection
      entry.bytes = p;
      queue.push(entry);
      offset += length;
      size = Math.min(maxChunkBytes, size * 4);
    }
  };
  fill();
  let previous: Uint8Array | null = null;
  if (first !== null && first.bytes.length > 0) {
    yield first.bytes;
    // read into memory of our own (readFirstSlice): it serves the next slices like theirs (not where
    // `alloc` gives them memory: theirs is scanned in place)
    if (readInto !== null && first.own && alloc === null) previous = new Uint8Array(first.bytes.buffer);
  }
  while (queue.length > 0) {
    const next = queue.shift() as Slot;
    const current = await (next.bytes as Promise<Uint8Array>);
    if (current.length === 0) return; // the source ended early (a file cut short while open)
    // the caller came back for more: the slice it had is free
    if (previous !== null) free.push(previous);
    previous = next.buffer;
    fill();
    yield current;
  }
  // the caller came back after the last slice: the slices' memory (ours when read into) serves the next columns
  if (readInto !== null) {
    if (previous !== null) free.push(previous);
    for (const b of free) recycleMemory(b.buffer as ArrayBuffer, b.byteOffset, b.byteLength);
  }
}
