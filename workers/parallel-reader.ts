// Reads a file's slices in a second, tiny worker and hands them over (transferred, not copied). A
// browser delivers a Blob read's bytes on the thread that asked for them, between that thread's tasks:
// asked from the parsing worker, the next slice would arrive only while parsing waits. Asked from here,
// reading the next slice overlaps parsing this one (on a 1 GB file, reading alone costs Chromium ≈ 2.5 s).
// Where a worker cannot start one (Node, tests, a stricter policy), reads go straight to the Blob.

import { type ByteSource, blobByteSource } from "../src/core/formats/byte-source";

/**
 * The reader's whole program: read the asked slices one after another (in the order asked, so that the
 * slice needed first is not slowed by those read ahead), send each one's bytes back.
 */
const READER_SCRIPT = `let queue = Promise.resolve();
onmessage = (e) => {
  const { id, blob, offset, length } = e.data;
  queue = queue.then(async () => {
    try {
      const buf = await blob.slice(offset, offset + length).arrayBuffer();
      postMessage({ id, buf }, [buf]);
    } catch (err) {
      postMessage({ id, error: String(err && err.message ? err.message : err) });
    }
  });
};`;

interface Pending {
  resolve: (bytes: Uint8Array) => void;
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

/** The blob: URL of the reader this worker made: the only script URL its policy will make. */
const readerUrls = new Set<string>();
let policy: { createScriptURL(url: string): unknown } | null | undefined;

/** Trusted Types, where the page's policy applies here too: one policy, for the readers' URLs only. */
function scriptPolicy(): { createScriptURL(url: string): unknown } | null {
  if (policy === undefined) {
    const tt = (globalThis as { trustedTypes?: TrustedTypesLike }).trustedTypes;
    policy = tt
      ? tt.createPolicy("memscope-worker", {
          createScriptURL: (u) => {
            if (!readerUrls.has(u)) throw new Error(`refusing to start a worker from ${u}`);
            return u;
          },
        })
      : null;
  }
  return policy;
}

interface Reader {
  worker: Worker;
  pending: Map<number, Pending>;
  nextId: number;
  failed: boolean;
}

/** One reader per worker, started on first use and kept (starting one costs tens of ms). */
let shared: Reader | null | undefined;

function startReader(): Reader | null {
  if (typeof Worker === "undefined" || typeof URL.createObjectURL !== "function") return null;
  let worker: Worker;
  try {
    const url = URL.createObjectURL(new Blob([READER_SCRIPT], { type: "text/javascript" }));
    readerUrls.add(url);
    worker = new Worker((scriptPolicy()?.createScriptURL(url) ?? url) as string);
  } catch {
    return null;
  }
  const r: Reader = { worker, pending: new Map(), nextId: 0, failed: false };
  worker.onmessage = (e: MessageEvent<{ id: number; buf?: ArrayBuffer; error?: string }>) => {
    const p = r.pending.get(e.data.id);
    if (!p) return;
    r.pending.delete(e.data.id);
    if (e.data.buf) p.resolve(new Uint8Array(e.data.buf));
    else p.reject(new Error(e.data.error ?? "the file could not be read"));
  };
  // The reader could not start (or stopped): what it was asked for, and everything after, is read here.
  worker.onerror = (e) => {
    e.preventDefault();
    r.failed = true;
    for (const p of r.pending.values()) p.retry();
    r.pending.clear();
  };
  return r;
}

export function parallelBlobSource(blob: Blob, name: string): ParallelSource {
  if (shared === undefined) shared = startReader();
  const r = shared;
  const mine = new Set<number>();
  const directly = blobByteSource(blob, name);
  let direct = !r;
  const read = (offset: number, length: number): Promise<Uint8Array> => {
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
      });
      r.worker.postMessage({ id, blob, offset, length });
    });
  };
  return {
    source: { name, sizeBytes: blob.size, read },
    parallel: () => !direct,
    // Reads still in flight for this file are dropped (their answers are ignored when they come).
    close: () => {
      for (const id of mine) {
        r?.pending.get(id)?.reject(new Error("reading was stopped"));
        r?.pending.delete(id);
      }
      mine.clear();
    },
  };
}
