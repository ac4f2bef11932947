// A ByteSource over bytes that are still arriving (a download): reads wait until their bytes are in,
// so the file is parsed while it downloads instead of after. Reads go forward (readChunks' order, plus
// the head read again at 0); a chunk no pending or later read can need is let go, so a big download
// is never held whole. A read behind what was let go fails with a message that says so.

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
    while (first < held.length && heldFrom + held[first].length <= keepFrom) {
      heldFrom += held[first].length;
      first++;
    }
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

  const copyOut = (offset: number, length: number): Uint8Array => {
    const end = Math.min(offset + length, received);
    if (end <= offset) return new Uint8Array(0);
    // find the chunk holding `offset`
    let at = heldFrom;
    let i = first;
    while (i < held.length && at + held[i].length <= offset) {
      at += held[i].length;
      i++;
    }
    const c0 = held[i];
    if (c0 !== undefined && end <= at + c0.length) return c0.subarray(offset - at, end - at);
    const out = new Uint8Array(end - offset);
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

  return {
    name,
    sizeBytes,
    get receivedBytes() {
      return received;
    },
    get ended() {
      return ended;
    },
    async read(offset, length) {
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
        return copyOut(offset, length);
      } finally {
        pending.splice(pending.indexOf(offset), 1);
        trim();
      }
    },
  };
}
