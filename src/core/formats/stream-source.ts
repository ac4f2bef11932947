// A ByteSource over bytes that are still arriving (a download): reads wait until their bytes are in,
// so the file is parsed while it downloads instead of after. Reads go forward (readChunks' order, plus
// the head read again at 0); a chunk no pending or later read can need is let go (and the sender told,
// so that it stays a few chunks ahead, not a file ahead), so a big download is never held whole. A read
// behind what was let go fails with a message that says so.

import type { ByteSource } from "./byte-source";

export interface StreamSource extends ByteSource {
  /** Bytes received so far. */
  readonly receivedBytes: number;
  /** Whether the stream has ended (all bytes in, or it failed). */
  readonly ended: boolean;
}

interface Waiter {
  end: number;
  wake: () => void;
}

/**
 * `chunks`: the bytes in order (a fetch body's reader, as an async iterable); `sizeBytes`: how many the
 * sender said there are (Content-Length). `onReceived` is told after every chunk. A stream that fails
 * fails every read waiting on bytes it did not deliver, with its error; one that ends short ends reads
 * short (the reader then reports the file as truncated).
 */
export function streamByteSource(
  chunks: AsyncIterable<Uint8Array>,
  name: string,
  sizeBytes: number,
  onReceived?: (receivedBytes: number, ended: boolean) => void,
  /**
   * Told how many bytes were let go, and the chunks (nothing here refers to them any more: a sender may
   * fill them again); the sender can send that many more bytes (flow control).
   */
  onLetGo?: (bytes: number, chunks: Uint8Array[]) => void,
): StreamSource {
  /** Chunks still held, in order, from `held[first]`, which starts at `heldFrom`. */
  let held: Uint8Array[] = [];
  let first = 0;
  let heldFrom = 0;
  let received = 0;
  let ended = false;
  let failure: Error | null = null;
  let waiters: Waiter[] = [];
  /** Offsets of reads not yet answered; nothing at or after the smallest is let go. */
  const pending: number[] = [];
  /** The furthest offset a read has started at: reads go forward, so nothing after it is let go either. */
  let lastStart = 0;

  const wakeReady = () => {
    const still: Waiter[] = [];
    for (const w of waiters) {
      if (ended || received >= w.end) w.wake();
      else still.push(w);
    }
    waiters = still;
  };

  // Lets go of the chunks that end before any read still to come can start.
  const trim = () => {
    let keepFrom = lastStart;
    for (const p of pending) keepFrom = Math.min(keepFrom, p);
    let dropped = 0;
    const gone: Uint8Array[] = [];
    while (first < held.length && heldFrom + held[first].length <= keepFrom) {
      heldFrom += held[first].length;
      dropped += held[first].length;
      gone.push(held[first]);
      first++;
    }
    if (dropped > 0) onLetGo?.(dropped, gone);
    // compact now and then, not per chunk (a download comes in thousands of chunks)
    if (first > 1024 && first * 2 > held.length) {
      held = held.slice(first);
      first = 0;
    }
  };

  void (async () => {
    try {
      for await (const chunk of chunks) {
        if (chunk.length === 0) continue;
        held.push(chunk);
        received += chunk.length;
        onReceived?.(received, false);
        wakeReady();
      }
    } catch (e) {
      failure = e instanceof Error ? e : new Error(String(e));
    }
    ended = true;
    onReceived?.(received, true);
    wakeReady();
  })();

  /**
   * The bytes [offset, offset + length) as far as received, copied into `dest` (from its start) or a new
   * array: never a view of a held chunk, so a chunk let go (and perhaps handed back to its sender to be
   * filled again) is referenced by nothing.
   */
  const copyOut = (offset: number, length: number, dest: Uint8Array | null): Uint8Array => {
    const end = Math.min(offset + length, received);
    if (end <= offset) return dest ? dest.subarray(0, 0) : new Uint8Array(0);
    // find the chunk holding `offset`
    let at = heldFrom;
    let i = first;
    while (i < held.length && at + held[i].length <= offset) {
      at += held[i].length;
      i++;
    }
    const out = dest ? dest.subarray(0, end - offset) : new Uint8Array(end - offset);
    let filled = 0;
    while (filled < out.length && i < held.length) {
      const c = held[i];
      const from = Math.max(0, offset + filled - at);
      const take = Math.min(c.length - from, out.length - filled);
      out.set(c.subarray(from, from + take), filled);
      filled += take;
      at += c.length;
      i++;
    }
    return out;
  };

  const take = async (offset: number, length: number, dest: Uint8Array | null): Promise<Uint8Array> => {
    if (offset < heldFrom) {
      throw new Error(
        `byte ${offset} of ${name} was asked for after the download had moved past it (only forward reads are possible while downloading)`,
      );
    }
    lastStart = Math.max(lastStart, offset);
    pending.push(offset);
    try {
      const end = Math.min(offset + length, sizeBytes);
      if (received < end && !ended) await new Promise<void>((wake) => waiters.push({ end, wake }));
      if (received < end && failure !== null) throw failure;
      return copyOut(offset, length, dest);
    } finally {
      pending.splice(pending.indexOf(offset), 1);
      trim();
    }
  };

  return {
    name,
    sizeBytes,
    get receivedBytes() {
      return received;
    },
    get ended() {
      return ended;
    },
    read: (offset, length) => take(offset, length, null),
    // the reader's recycled buffers: the chunks are copied out, and let go as soon as they are
    readInto: (offset, target) => take(offset, target.length, target),
  };
}
