// A dropped file's content hash, for links: a link never carries a dropped file, only its name and this
// hash, so whoever opens the link can be told whether the file they drop is the same one.
//
// The hash: SHA-256 over the SHA-256 digests of each 4 MiB piece of the file, in order (the file is never
// held whole), written as the first 32 hex digits (128 bits). WebCrypto exists only in secure contexts
// (https, localhost); elsewhere there is no hash and the link carries the name alone.

const PIECE = 4 << 20;

export function canHash(): boolean {
  return typeof crypto !== "undefined" && !!crypto.subtle;
}

export async function contentHash(blob: Blob, signal?: { stale(): boolean }): Promise<string | null> {
  if (!canHash()) return null;
  const pieces: Uint8Array[] = [];
  const digest = async (bytes: Uint8Array) =>
    pieces.push(new Uint8Array(await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>)));
  // One 4 MiB buffer read into again and again (BYOB): a fresh one per piece would leave the page
  // holding a file's worth of garbage buffers until the next collection.
  let reader: ReadableStreamBYOBReader | null = null;
  try {
    reader = blob.stream().getReader({ mode: "byob" });
  } catch {
    reader = null;
  }
  if (reader) {
    let buf = new ArrayBuffer(PIECE);
    for (let ended = false; !ended; ) {
      if (signal?.stale()) {
        void reader.cancel().catch(() => {});
        return null;
      }
      let n = 0;
      while (n < PIECE) {
        const r = await reader.read(new Uint8Array(buf, n, PIECE - n));
        if (!r.value) return null;
        buf = r.value.buffer as ArrayBuffer;
        n += r.value.byteLength;
        if (r.done) {
          ended = true;
          break;
        }
      }
      // the last piece is the one that reaches the end (an empty file is one empty piece)
      if (n > 0 || pieces.length === 0) await digest(new Uint8Array(buf, 0, n));
    }
  } else {
    for (let at = 0; at < blob.size || at === 0; at += PIECE) {
      if (signal?.stale()) return null;
      await digest(new Uint8Array(await blob.slice(at, Math.min(blob.size, at + PIECE)).arrayBuffer()));
      if (blob.size === 0) break;
    }
  }
  const all = new Uint8Array(pieces.length * 32);
  pieces.forEach((p, i) => {
    all.set(p, i * 32);
  });
  const top = new Uint8Array(await crypto.subtle.digest("SHA-256", all));
  return Array.from(top.subarray(0, 16), (b) => b.toString(16).padStart(2, "0")).join("");
}
