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

/** The body's messages: from the reader worker, or (no reader) from a fetch made here. */
function startDownload(
  href: string,
  slices: { first: number; max: number },
  onMessage: (m: DownloadMessage) => void,
  signal: AbortSignal,
): () => void {
  const stop = readerDownload(href, slices, onMessage);
  if (stop) return stop;
  const ac = new AbortController();
  const abort = () => ac.abort();
  signal.addEventListener("abort", abort);
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
        const r = await rd.read();
        if (r.done) break;
        total += r.value.length;
        const copy = r.value.byteOffset === 0 ? r.value : r.value.slice();
        onMessage({ chunk: copy.buffer as ArrayBuffer, n: copy.length, received: total });
      }
      onMessage({ end: true, received: total });
    } catch (e) {
      if (!ac.signal.aborted)
        onMessage({ fail: "broke", bytes: total, message: e instanceof Error ? e.message : String(e) });
    }
  })();
  return abort;
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
    const stop = startDownload(
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
              source: streamByteSource(q, name, total),
              stop: () => stop(),
              overran: () => received > total,
            });
          } else {
            gatherBlob(q).then((blob) => resolve({ kind: "blob", blob }), reject);
          }
        }
        if (m.chunk) q.push(new Uint8Array(m.chunk, 0, m.n ?? m.chunk.byteLength));
        if (m.received !== undefined) received = m.received;
        if (m.end) q.end();
        if (m.received !== undefined || m.end)
          onProgress({ receivedBytes: received, totalBytes: total, ended: !!m.end });
      },
      signal,
    );
    signal.addEventListener("abort", () => {
      stop();
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
