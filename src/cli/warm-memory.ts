// The CLI's warmer: a worker thread that faults in memory for the trace's columns and for the analysis's
// while the main thread parses (see src/core/model/warm-memory.ts). Unref'd, so that it never keeps the
// process alive.

import { Worker } from "node:worker_threads";
import {
  faultedBuffer,
  prefaultInOrder,
  WarmChannel,
  type WarmMemory,
  warmSession,
} from "../core/model/warm-memory";

const WARMER_SCRIPT = `const { parentPort } = require("node:worker_threads");
const faultedBuffer = ${faultedBuffer.toString()};
const prefaultInOrder = ${prefaultInOrder.toString()};
parentPort.on("message", ({ id, bytes, prefault }) => {
  if (prefault) return prefaultInOrder(prefault);
  const buf = faultedBuffer(bytes);
  if (buf === null) parentPort.postMessage({ id });
  else parentPort.postMessage({ id, buf }, [buf]);
});`;

let shared: WarmChannel | null | undefined;

function startWarmer(): WarmChannel | null {
  let worker: Worker;
  try {
    worker = new Worker(WARMER_SCRIPT, { eval: true });
  } catch {
    return null;
  }
  const channel = new WarmChannel(
    (id, bytes) => worker.postMessage({ id, bytes }),
    (prefault) => worker.postMessage({ prefault }),
  );
  worker.on("message", (m: { id: number; buf?: ArrayBuffer }) => channel.deliver(m.id, m.buf ?? null));
  worker.on("error", () => {
    channel.clear();
    shared = null;
  });
  worker.unref(); // after the listeners: adding one refs the worker again
  return channel;
}

/** Warm memory for one read from the process's warmer thread (started at the first request). */
export function nodeWarmMemory(): WarmMemory & { release(): void } {
  // worker threads share memory: the trace's columns are faulted in ahead of the parser, in place
  return warmSession(
    () => {
      if (shared === undefined) shared = startWarmer();
      return shared;
    },
    { shared: true },
  );
}
