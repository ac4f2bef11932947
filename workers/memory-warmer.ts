// Faults memory in on another thread, for the parsing worker's big columns (src/core/model/warm-memory.ts).
// A tiny worker of this worker's own writes one byte per page of a new buffer and sends the buffer back,
// transferred: its pages stay faulted in, so the columns made in it cost the parser no page faults. On
// this project's 2-core test machine a 1 GB file's trace columns (≈ 200 MB) cost the parsing thread
// about 1.3 s of faults written directly; the warmer takes them while the parser reads, and then 16 bytes
// an entry for the analysis's columns (ANALYSIS_WARM_BYTES_PER_ROW).

import {
  faultedBuffer,
  prefaultInOrder,
  WarmChannel,
  type WarmMemory,
  warmSession,
} from "../src/core/model/warm-memory";
import { helperWorker } from "./parallel-reader";

/** The warmer's whole program: each asked buffer (or shared columns to fault in), one after another. */
const WARMER_SCRIPT = `const faultedBuffer = ${faultedBuffer.toString()};
const prefaultInOrder = ${prefaultInOrder.toString()};
onmessage = (e) => {
  const { id, bytes, prefault } = e.data;
  if (prefault) return prefaultInOrder(prefault);
  const buf = faultedBuffer(bytes);
  if (buf === null) postMessage({ id });
  else postMessage({ id, buf }, [buf]);
};`;

interface Warmer {
  worker: Worker;
  channel: WarmChannel;
}

/** One warmer per worker, started on first use and kept (starting one costs tens of ms). */
let shared: Warmer | null | undefined;

function startWarmer(): Warmer | null {
  const worker = helperWorker(WARMER_SCRIPT);
  if (worker === null) return null;
  const channel = new WarmChannel(
    (id, bytes) => worker.postMessage({ id, bytes }),
    (prefault) => worker.postMessage({ prefault }),
  );
  worker.onmessage = (e: MessageEvent<{ id: number; buf?: ArrayBuffer }>) =>
    channel.deliver(e.data.id, e.data.buf ?? null);
  // The warmer could not start (or stopped): nothing more comes, and the columns stay in fresh memory.
  worker.onerror = (e) => {
    e.preventDefault();
    channel.clear();
  };
  return { worker, channel };
}

/** Ends the warmer (before the page ends this worker: see stopReader). A later request starts a new one. */
export function stopWarmer(): void {
  const w = shared;
  shared = undefined;
  if (!w) return;
  w.channel.clear();
  w.worker.terminate();
}

/** Warm memory for one load from this worker's warmer (started at the first request). */
export function warmMemory(): WarmMemory & { release(): void } {
  return warmSession(
    () => {
      if (shared === undefined) shared = startWarmer();
      return shared?.channel ?? null;
    },
    // a cross-origin isolated page (served with COOP and COEP, as scripts/serve.mjs and `peakscope view`
    // serve it) shares memory between its threads: the columns are faulted in ahead, in place
    { shared: (globalThis as { crossOriginIsolated?: boolean }).crossOriginIsolated === true },
  );
}
