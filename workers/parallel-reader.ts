// Reads a file's slices in a second, tiny worker and hands them over (transferred, not copied). A
// browser delivers a Blob read's bytes on the thread that asked for them, between that thread's tasks:
// asked from the parsing worker, the next slice would arrive only while parsing waits. Asked from here,
// reading the next slice overlaps parsing this one (on a 1 GB file, reading alone costs Chromium ≈ 2.5 s).
// Where a worker cannot start one (Node, tests, a stricter policy), reads go straight to the Blob.

import { type ByteSource, blobByteSource } from "../src/core/formats/byte-source";

/**
 * The reader's whole program: read the asked slices one after another (in the order asked, so that the
 * slice needed first is not slowed by those read ahead), send each one's bytes back. A slice that
 * continues the last one is read from one stream of the file (`Blob.stream()`, BYOB into the buffer the
 * asker sent, which comes back filled): on a 1 GB file in Chromium that is 0.6 s against 1.05 s for a
 * `slice().arrayBuffer()` each (and no fresh memory per slice). Any other offset starts a new stream
 * there; where streams fail, the slice is read with `slice().arrayBuffer()`.
 */
const READER_SCRIPT = `let queue = Promise.resolve();
let open = null; // { file, pos, reader }: the stream the last slice came from
const closeOpen = () => { if (open) { open.reader.cancel().catch(() => {}); open = null; } };
async function fromStream(file, blob, offset, length, buf) {
  if (!open || open.file !== file || open.pos !== offset) {
    closeOpen();
    open = { file, pos: offset, reader: blob.slice(offset).stream().getReader({ mode: "byob" }) };
  }
  let ab = buf && buf.byteLength >= length ? buf : new ArrayBuffer(length);
  let n = 0;
  while (n < length) {
    const { done, value } = await open.reader.read(new Uint8Array(ab, n, length - n));
    if (!value) throw new Error("the stream gave its buffer up");
    ab = value.buffer;
    n += value.byteLength;
    if (done) break;
  }
  open.pos += n;
  if (n < length) closeOpen();
  return { ab, n };
}
const downloads = new Map(); // id → { ac, credit, wake }
// A download (#src=): the body's chunks gathered into slices (first, then 4× up to max, and whatever
// is in after 200 ms) sent as they fill; how far it got every 50 ms. At most "window" bytes are out
// unacknowledged: the parser acknowledges the bytes it has let go, so the body waits in the network,
// not in memory, when it comes faster than it is parsed.
async function download(id, url, first, max, window) {
  const ac = new AbortController();
  const d = { ac, credit: window, wake: null, free: [] };
  // a slice's buffer: one the parser gave back (it has copied the bytes out), or a new one
  const fresh = (size) => {
    const i = d.free.findIndex((b) => b.byteLength >= size);
    return i >= 0 ? new Uint8Array(d.free.splice(i, 1)[0], 0, size) : new Uint8Array(size);
  };
  downloads.set(id, d);
  const room = () => d.credit > 0 || ac.signal.aborted ? null : new Promise((r) => { d.wake = r; });
  const post = (m, t) => { if (!ac.signal.aborted) postMessage(m, t); };
  try {
    let res;
    try {
      res = await fetch(url, { mode: "cors", credentials: "omit", cache: "no-store", signal: ac.signal });
    } catch (err) {
      post({ id, fail: "network" });
      return;
    }
    if (!res.ok || !res.body) {
      post({ id, fail: "status", status: res.status, statusText: res.statusText });
      return;
    }
    const length = Number(res.headers.get("Content-Length") || 0) || 0;
    post({ id, head: { length, encoded: !!res.headers.get("Content-Encoding") } });
    const rd = res.body.getReader();
    let size = first, buf = fresh(size), n = 0, total = 0, flushedAt = performance.now(), toldAt = 0;
    const flush = () => {
      if (n === 0) return;
      const ab = buf.buffer;
      d.credit -= n;
      post({ id, chunk: ab, n }, [ab]);
      size = Math.min(max, size * 4);
      buf = fresh(size);
      n = 0;
      flushedAt = performance.now();
    };
    try {
      for (;;) {
        const wait = room();
        if (wait) await wait;
        if (ac.signal.aborted) return;
        const { done, value } = await rd.read();
        if (done) break;
        for (let at = 0; at < value.length; ) {
          const take = Math.min(value.length - at, buf.length - n);
          buf.set(value.subarray(at, at + take), n);
          n += take;
          at += take;
          if (n === buf.length) flush();
        }
        total += value.length;
        const now = performance.now();
        if (now - flushedAt > 200) flush();
        if (now - toldAt > 50) { toldAt = now; post({ id, received: total }); }
      }
      flush();
      post({ id, end: true, received: total });
    } catch (err) {
      flush();
      post({ id, fail: "broke", bytes: total, message: String(err && err.message ? err.message : err) });
    }
  } finally {
    downloads.delete(id);
  }
}
// Each file's Blob, sent with its first slice only (a Blob posted costs the asker ≈ 0.6 ms a message).
const blobs = new Map();
// A slice asked into shared memory (sab, at) is read here first, into memory kept for the next one.
let scratch = null;
onmessage = (e) => {
  const { id, file, offset, length, buf, sab, at } = e.data;
  if (id === -1) { closeOpen(); blobs.delete(file); return; }
  if (e.data.url) { download(id, e.data.url, e.data.first, e.data.max, e.data.window); return; }
  if (e.data.ack !== undefined) {
    const d = downloads.get(id);
    if (d) {
      d.credit += e.data.ack;
      if (e.data.bufs) d.free.push(...e.data.bufs);
      d.wake?.();
      d.wake = null;
    }
    return;
  }
  if (e.data.stop) {
    const d = downloads.get(id);
    if (d) { d.ac.abort(); d.wake?.(); }
    downloads.delete(id);
    return;
  }
  if (e.data.blob) blobs.set(file, e.data.blob);
  const blob = blobs.get(file);
  queue = queue.then(async () => {
    try {
      let r;
      try {
        r = await fromStream(file, blob, offset, length, sab ? scratch : buf);
      } catch (streamError) {
        closeOpen();
        const ab = await blob.slice(offset, offset + length).arrayBuffer();
        r = { ab, n: ab.byteLength };
      }
      if (sab) {
        // (the asker's offset is a multiple of 8, as is 0: V8 then copies into shared memory a word at a time)
        new Uint8Array(sab, at, r.n).set(new Uint8Array(r.ab, 0, r.n));
        scratch = r.ab;
        postMessage({ id, n: r.n, inPlace: true });
      } else postMessage({ id, buf: r.ab, n: r.n }, [r.ab]);
    } catch (err) {
      postMessage({ id, error: String(err && err.message ? err.message : err) });
    }
  });
};`;

interface Pending {
  resolve: (bytes: Uint8Array) => void;
  /** The slice was read into the shared memory it was asked into: `n` bytes of it. */
  inPlace?: (n: number) => void;
  reject: (e: Error) => void;
  /** Reads the slice directly instead (the reader stopped). */
  retry: () => void;
}

export interface ParallelSource {
  source: ByteSource;
  /** Whether every slice so far came from the reader worker. */
  parallel(): boolean;
  close(): void;
}

interface TrustedTypesLike {
  createPolicy(
    name: string,
    rules: { createScriptURL(url: string): string },
  ): {
    createScriptURL(url: string): unknown;
  };
}

/** The blob: URLs of the helper workers this worker made: the only script URLs its policy will make. */
const ownScriptUrls = new Set<string>();
let policy: { createScriptURL(url: string): unknown } | null | undefined;

/** Trusted Types, where the page's policy applies here too: one policy, for the helpers' URLs only. */
function scriptPolicy(): { createScriptURL(url: string): unknown } | null {
  if (policy === undefined) {
    const tt = (globalThis as { trustedTypes?: TrustedTypesLike }).trustedTypes;
    policy = tt
      ? tt.createPolicy("peakscope-worker", {
          createScriptURL: (u) => {
            if (!ownScriptUrls.has(u)) throw new Error(`refusing to start a worker from ${u}`);
            return u;
          },
        })
      : null;
  }
  return policy;
}

/**
 * Starts a helper worker from a script of this file's own (the reader, workers/memory-warmer.ts' warmer);
 * null where none can start (Node, tests, a stricter policy).
 */
export function helperWorker(script: string): Worker | null {
  if (typeof Worker === "undefined" || typeof URL.createObjectURL !== "function") return null;
  try {
    const url = URL.createObjectURL(new Blob([script], { type: "text/javascript" }));
    ownScriptUrls.add(url);
    return new Worker((scriptPolicy()?.createScriptURL(url) ?? url) as string);
  } catch {
    return null;
  }
}

/**
 * Starts a helper worker from a module script of this page's own (this worker's own, under another name:
 * workers/attribution-helper.ts); null where none can start.
 */
export function moduleHelperWorker(url: string, name: string): Worker | null {
  if (typeof Worker === "undefined") return null;
  try {
    ownScriptUrls.add(url);
    return new Worker((scriptPolicy()?.createScriptURL(url) ?? url) as string, { type: "module", name });
  } catch {
    return null;
  }
}

interface Reader {
  worker: Worker;
  pending: Map<number, Pending>;
  /** Downloads in progress: where their messages go. */
  downloads: Map<number, (m: DownloadMessage) => void>;
  nextId: number;
  failed: boolean;
}

/** One reader per worker, started on first use and kept (starting one costs tens of ms). */
let shared: Reader | null | undefined;

function startReader(): Reader | null {
  const worker = helperWorker(READER_SCRIPT);
  if (worker === null) return null;
  const r: Reader = { worker, pending: new Map(), downloads: new Map(), nextId: 0, failed: false };
  worker.onmessage = (
    e: MessageEvent<{ id: number; buf?: ArrayBuffer; n?: number; inPlace?: boolean; error?: string }>,
  ) => {
    const d = r.downloads.get(e.data.id);
    if (d) {
      d(e.data as unknown as DownloadMessage);
      return;
    }
    const p = r.pending.get(e.data.id);
    if (!p) return;
    r.pending.delete(e.data.id);
    if (e.data.buf) p.resolve(new Uint8Array(e.data.buf, 0, e.data.n ?? e.data.buf.byteLength));
    else if (e.data.inPlace && p.inPlace) p.inPlace(e.data.n ?? 0);
    else p.reject(new Error(e.data.error ?? "the file could not be read"));
  };
  // The reader could not start (or stopped): what it was asked for, and everything after, is read here.
  worker.onerror = (e) => {
    e.preventDefault();
    r.failed = true;
    for (const p of r.pending.values()) p.retry();
    r.pending.clear();
    for (const d of r.downloads.values()) d({ fail: "network" });
    r.downloads.clear();
  };
  return r;
}

/**
 * Ends this worker's reader (and fails what it was asked), before the page ends this worker. In Chromium a
 * worker ended by terminate() while it still had a nested worker sometimes never finished ending: its
 * reader ended, it answered nothing more and held its memory until the tab closed (e2e/memory.spec.ts saw
 * it about once in 40 loads). Ended here first, the reader's thread is gone while this worker still runs.
 * A later read starts a new reader.
 */
export function stopReader(): void {
  const r = shared;
  shared = undefined;
  if (!r) return;
  for (const p of r.pending.values()) p.reject(new Error("reading was stopped"));
  r.pending.clear();
  for (const d of r.downloads.values()) d({ fail: "broke", bytes: 0, message: "reading was stopped" });
  r.downloads.clear();
  r.worker.terminate();
}

/**
 * Starts this worker's reader now, if it has none: called as the worker starts, so that a file picked as
 * the page loads does not wait for the reader's start (tens of ms) before its first slice is read.
 */
export function startReaderNow(): void {
  if (shared === undefined) shared = startReader();
}

function isShared(buffer: ArrayBufferLike): boolean {
  return typeof SharedArrayBuffer === "function" && buffer instanceof SharedArrayBuffer;
}

/** Tells the reader's streams of one file from another's (a Blob posted twice arrives as two objects). */
let nextFileKey = 0;

export function parallelBlobSource(blob: Blob, name: string): ParallelSource {
  if (shared === undefined) shared = startReader();
  const r = shared;
  const file = nextFileKey++;
  const mine = new Set<number>();
  const directly = blobByteSource(blob, name);
  let direct = !r;
  /** Whether the reader has this file's Blob (sent with the first slice asked). */
  let blobSent = false;
  /**
   * `into`: memory to read into: from its buffer's start, transferred to the reader and back; or shared
   * memory (the scanner's, WasmTraceScanner.sliceMemory), which the reader writes the slice into.
   */
  const ask = (offset: number, length: number, into: Uint8Array | null): Promise<Uint8Array> => {
    if (!r || r.failed) {
      direct = true;
      return directly.read(offset, length);
    }
    return new Promise((resolve, reject) => {
      const id = r.nextId++;
      mine.add(id);
      const done = () => mine.delete(id);
      r.pending.set(id, {
        resolve: (b) => {
          done();
          resolve(b);
        },
        reject: (e) => {
          done();
          reject(e);
        },
        retry: () => {
          done();
          direct = true;
          directly.read(offset, length).then(resolve, reject);
        },
        inPlace:
          into === null
            ? undefined
            : (n) => {
                done();
                resolve(into.subarray(0, n));
              },
      });
      const sent = blobSent ? undefined : blob;
      blobSent = true;
      if (into !== null && isShared(into.buffer) && into.byteOffset % 8 === 0) {
        r.worker.postMessage({ id, file, blob: sent, offset, length, sab: into.buffer, at: into.byteOffset });
        return;
      }
      const buf = into !== null && into.byteOffset === 0 ? (into.buffer as ArrayBuffer) : null;
      if (buf) r.worker.postMessage({ id, file, blob: sent, offset, length, buf }, [buf]);
      else r.worker.postMessage({ id, file, blob: sent, offset, length });
    });
  };
  return {
    source: {
      name,
      sizeBytes: blob.size,
      read: (offset, length) => ask(offset, length, null),
      // only with a reader: read directly, a Blob gives fresh memory anyway
      readInto: r ? (offset, target) => ask(offset, target.length, target) : undefined,
      // (the reader writes a slice asked into shared memory there: the scanner then reads it in place)
      readsInPlace: r !== null,
    },
    parallel: () => !direct,
    // Reads still in flight for this file are dropped (their answers are ignored when they come), and
    // the reader's stream of it is closed.
    close: () => {
      for (const id of mine) {
        r?.pending.get(id)?.reject(new Error("reading was stopped"));
        r?.pending.delete(id);
      }
      mine.clear();
      if (r && !r.failed) r.worker.postMessage({ id: -1, file });
    },
  };
}

/** What the reader says about a download (see READER_SCRIPT's download()). */
export interface DownloadMessage {
  head?: { length: number; encoded: boolean };
  chunk?: ArrayBuffer;
  n?: number;
  received?: number;
  end?: boolean;
  fail?: "network" | "status" | "broke";
  status?: number;
  statusText?: string;
  bytes?: number;
  message?: string;
}

/**
 * Downloads `href` in the reader worker (so that the body is taken in while this worker parses),
 * sending its messages to `onMessage`, at most `slices.windowBytes` ahead of the acknowledgements
 * (`ack`); null where there is no reader (the caller fetches itself).
 */
export function readerDownload(
  href: string,
  slices: { first: number; max: number; windowBytes: number },
  onMessage: (m: DownloadMessage) => void,
): { stop: () => void; ack: (bytes: number, buffers?: ArrayBuffer[]) => void } | null {
  if (shared === undefined) shared = startReader();
  const r = shared;
  if (!r || r.failed) return null;
  const id = r.nextId++;
  r.downloads.set(id, (m) => {
    if (m.end || m.fail) r.downloads.delete(id);
    onMessage(m);
  });
  r.worker.postMessage({ id, url: href, first: slices.first, max: slices.max, window: slices.windowBytes });
  return {
    stop: () => {
      if (!r.downloads.delete(id)) return;
      r.worker.postMessage({ id, stop: true });
    },
    // `buffers`: slices the parser is done with, sent back to be filled again
    ack: (bytes, buffers = []) => {
      if (r.downloads.has(id)) r.worker.postMessage({ id, ack: bytes, bufs: buffers }, buffers);
    },
  };
}
