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
 * to `maxChunkBytes` (a small first slice gives a first picture soon). `readAhead` slices are already
 * being read while the caller parses this one.
 */
export async function* readChunks(
  src: ByteSource,
  chunkBytes: number,
  maxChunkBytes = chunkBytes,
  readAhead = 1,
): AsyncGenerator<Uint8Array> {
  let size = chunkBytes;
  let offset = 0;
  const queue: Promise<Uint8Array>[] = [];
  const fill = () => {
    while (queue.length <= readAhead && offset < src.sizeBytes) {
      const length = Math.min(size, src.sizeBytes - offset);
      const p = src.read(offset, length);
      p.catch(() => undefined); // an abandoned read-ahead must not be an unhandled rejection
      queue.push(p);
      offset += length;
      size = Math.min(maxChunkBytes, size * 4);
    }
  };
  fill();
  while (queue.length > 0) {
    const current = await (queue.shift() as Promise<Uint8Array>);
    if (current.length === 0) return; // the source ended early (a file cut short while open)
    fill();
    yield current;
  }
}
