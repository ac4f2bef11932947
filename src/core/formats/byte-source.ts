// Where bytes come from: a Blob/File in the browser, a file descriptor in Node, an array in tests.
// Readers take slices; nothing requires the whole file as one contiguous buffer.

export interface ByteSource {
  readonly name: string;
  readonly sizeBytes: number;
  read(offset: number, length: number): Promise<Uint8Array>;
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

/**
 * Yields the source's bytes in slices: the first of `chunkBytes`, each next one four times the last, up
 * to `maxChunkBytes` (a small first slice gives a first picture soon; big ones cost fewer round trips
 * to a browser's file reader). The next slice is already being read while the caller parses this one.
 */
export async function* readChunks(
  src: ByteSource,
  chunkBytes: number,
  maxChunkBytes = chunkBytes,
): AsyncGenerator<Uint8Array> {
  let size = chunkBytes;
  const readAt = (offset: number, length: number): Promise<Uint8Array> | null => {
    if (offset >= src.sizeBytes) return null;
    const p = src.read(offset, Math.min(length, src.sizeBytes - offset));
    p.catch(() => undefined); // an abandoned read-ahead must not be an unhandled rejection
    return p;
  };
  let offset = 0;
  let next = readAt(0, size);
  while (next !== null) {
    const current = await next;
    offset += current.length;
    size = Math.min(maxChunkBytes, size * 4);
    next = current.length > 0 ? readAt(offset, size) : null;
    yield current;
  }
}
