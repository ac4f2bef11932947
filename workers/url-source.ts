// A snapshot from a URL (`#src=`), read while it downloads: the reader worker fetches the body and sends
// it in slices (workers/parallel-reader.ts readerDownload), this worker parses each as it comes (core
// streamByteSource). Where the size is not known up front (no Content-Length, or a compressed transfer
// whose length is not the file's), the whole body is gathered into a Blob first and read as a file.

import type { ByteSource } from "../src/core/formats/byte-source";
import {
  type DownloadFailure,
  downloadFailureMessage,
  type PageLocation,
} from "../src/core/formats/download-errors";
import { streamByteSource } from "../src/core/formats/stream-source";
import { type DownloadMessage, readerDownload } from "./parallel-reader";

/** A download that failed, with the message the page shows as it is. */
export class DownloadFailed extends Error {}

export type UrlSource =
  | { kind: "stream"; source: ByteSource; stop: () => void; overran: () => boolean }
  | { kind: "blob"; blob: Blob };

export interface UrlProgress {
  receivedBytes: number;
  /** 0 when the server did not say. */
  totalBytes: number;
  ended: boolean;
}

/** Chunks pushed from messages, taken by an async iterator. */
function chunkQueue() {
  const items: Uint8Array[] = [];
  let ended = false;
  let failure: Error | null = null;
  let wake: (() => void) | null = null;
  const poke = () => {
    wake?.();
    wake = null;
  };
  return {
    push(c: Uint8Array) {
      items.push(c);
      poke();
    },
    end() {
      ended = true;
      poke();
    },
    fail(e: Error) {
      failure = e;
      ended = true;
      poke();
    },
    async *[Symbol.asyncIterator](): AsyncGenerator<Uint8Array> {
      for (;;) {
        const c = items.shift();
        if (c !== undefined) {
          yield c;
          continue;
        }
        if (failure) throw failure;
        if (ended) return;
        await new Promise<void>((r) => {
          wake = r;
        });
      }
    },
  };
}

/**
 * Bytes a download may be ahead of the parser (sent, not yet let go). More than the reads the parser
 * has out at once (three 16 MiB slices), or it would wait for bytes the download waits to send.
 */
const WINDOW_BYTES = 96 << 20;

interface Download {
  stop: () => void;
  /** The parser let go of this many bytes (and these slices' buffers): that many more may come. */
  ack: (bytes: number, buffers?: ArrayBuffer[]) => void;
  /** Whether slices' buffers can be handed back to be filled again (the reader worker's can). */
  recycles: boolean;
}

/** The body's messages: from the reader worker, or (no reader) from a fetch made here. */
function startDownload(
  href: string,
  slices: { first: number; max: number },
  onMessage: (m: DownloadMessage) => void,
  signal: AbortSignal,
): Download {
  const inReader = readerDownload(href, { ...slices, windowBytes: WINDOW_BYTES }, onMessage);
  if (inReader) return { ...inReader, recycles: true };
  const ac = new AbortController();
  const abort = () => ac.abort();
  signal.addEventListener("abort", abort);
  let credit = WINDOW_BYTES;
  let wake: (() => void) | null = null;
  const ack = (n: number) => {
    credit += n;
    wake?.();
    wake = null;
  };
  void (async () => {
    let res: Response;
    try {
      res = await fetch(href, { mode: "cors", credentials: "omit", cache: "no-store", signal: ac.signal });
    } catch {
      if (!ac.signal.aborted) onMessage({ fail: "network" });
      return;
    }
    if (!res.ok || !res.body) {
      onMessage({ fail: "status", status: res.status, statusText: res.statusText });
      return;
    }
    const length = Number(res.headers.get("Content-Length") ?? 0) || 0;
    onMessage({ head: { length, encoded: !!res.headers.get("Content-Encoding") } });
    const rd = res.body.getReader();
    let total = 0;
    try {
      for (;;) {
        if (credit <= 0 && !ac.signal.aborted)
          await new Promise<void>((r) => {
            wake = r;
          });
        if (ac.signal.aborted) return;
        const r = await rd.read();
        if (r.done) break;
        total += r.value.length;
        const copy = r.value.byteOffset === 0 ? r.value : r.value.slice();
        credit -= copy.length;
        onMessage({ chunk: copy.buffer as ArrayBuffer, n: copy.length, received: total });
      }
      onMessage({ end: true, received: total });
    } catch (e) {
      if (!ac.signal.aborted)
        onMessage({ fail: "broke", bytes: total, message: e instanceof Error ? e.message : String(e) });
    }
  })();
  return {
    stop: () => {
      abort();
      ack(0);
    },
    ack,
    recycles: false,
  };
}

/**
 * Starts downloading `href`; resolves once the server has answered (or rejects with DownloadFailed and
 * the page's message for it). `whole`: gather the body into a Blob even when its size is known.
 */
export function urlByteSource(
  href: string,
  name: string,
  page: PageLocation,
  signal: AbortSignal,
  onProgress: (p: UrlProgress) => void,
  opts: { slices: { first: number; max: number }; whole?: boolean },
): Promise<UrlSource> {
  return new Promise<UrlSource>((resolve, reject) => {
    const q = chunkQueue();
    let total = 0;
    let received = 0;
    let settled = false;
    const failWith = (f: DownloadFailure) => {
      const e = new DownloadFailed(downloadFailureMessage(href, page, f));
      if (!settled) {
        settled = true;
        reject(e);
      } else q.fail(e);
    };
    /** A Blob gathers everything: each slice is taken at once. */
    let gathering = false;
    /** Slices that are a whole buffer of the reader's (it can fill them again). */
    const recyclable = new WeakSet<Uint8Array>();
    const dl = startDownload(
      href,
      opts.slices,
      (m) => {
        if (signal.aborted) return;
        if (m.fail === "network") failWith({ kind: "network" });
        else if (m.fail === "status")
          failWith({ kind: "status", status: m.status ?? 0, statusText: m.statusText ?? "" });
        else if (m.fail === "broke")
          failWith({ kind: "broke", bytes: m.bytes ?? received, message: m.message ?? "" });
        if (m.fail) return;
        if (m.head) {
          total = m.head.length;
          settled = true;
          if (total > 0 && !m.head.encoded && !opts.whole) {
            resolve({
              kind: "stream",
              // slices let go go back to the reader to be filled again (they came whole from it)
              source: streamByteSource(q, name, total, undefined, (bytes, chunks) =>
                dl.ack(
                  bytes,
                  chunks.filter((c) => recyclable.has(c)).map((c) => c.buffer as ArrayBuffer),
                ),
              ),
              stop: dl.stop,
              overran: () => received > total,
            });
          } else {
            gathering = true;
            gatherBlob(q).then((blob) => resolve({ kind: "blob", blob }), reject);
          }
        }
        if (m.chunk) {
          const bytes = new Uint8Array(m.chunk, 0, m.n ?? m.chunk.byteLength);
          if (dl.recycles) recyclable.add(bytes);
          q.push(bytes);
          if (gathering) dl.ack(bytes.length);
        }
        if (m.received !== undefined) received = m.received;
        if (m.end) q.end();
        if (m.received !== undefined || m.end)
          onProgress({ receivedBytes: received, totalBytes: total, ended: !!m.end });
      },
      signal,
    );
    signal.addEventListener("abort", () => {
      dl.stop();
      q.fail(new Error("the download was cancelled"));
      if (!settled) {
        settled = true;
        reject(new DownloadFailed("Loading was cancelled."));
      }
    });
  });
}

async function gatherBlob(chunks: AsyncIterable<Uint8Array>): Promise<Blob> {
  const parts: Uint8Array[] = [];
  for await (const c of chunks) parts.push(c);
  return new Blob(parts as BlobPart[]);
}
