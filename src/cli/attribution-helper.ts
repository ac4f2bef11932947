// The CLI's attribution helper: a worker thread that attributes a big file while the main thread replays
// it (core/attribution/handoff.ts, core/report/index.ts attributedReplays). Started before the read, so
// that it is up by the read's end; unref'd, so that it never keeps the process alive.

import { statSync } from "node:fs";
import { Worker } from "node:worker_threads";
import { type HelperClient, type HelperReply, helperClient } from "../core/attribution/handoff";
import { MIN_WARM_BYTES } from "../core/model/warm-memory";

/** Files from this size on have their trace columns in shared memory (formats/read.ts), as the helper needs. */
const HELPER_MIN_BYTES = 4 * MIN_WARM_BYTES;

/** A helper thread; null where none can start. */
export function startNodeAttributionHelper(): HelperClient | null {
  let worker: Worker;
  try {
    worker = new Worker(new URL("./attribution-worker.mjs", import.meta.url));
  } catch {
    return null;
  }
  const client = helperClient(
    (m) => {
      if ("model" in m) worker.ref(); // a request: the process waits for the answer
      worker.postMessage(m);
    },
    () => void worker.terminate(),
  );
  worker.on("message", (m: HelperReply) => {
    if ("ok" in m) worker.unref(); // answered (not "up", nor the streamed pairing before the answer)
    client.received(m);
  });
  worker.on("error", (e) => client.failed(e.message || "the attribution helper failed"));
  worker.on("exit", () => client.failed("the attribution helper stopped"));
  worker.unref(); // after the listeners: adding one refs the worker again
  return client;
}

/** A helper for the file at `path` where it is big enough to use one (else null). */
export function attributionHelperFor(path: string): HelperClient | null {
  let sizeBytes = 0;
  try {
    sizeBytes = statSync(path).size;
  } catch {
    return null; // (the read says what is wrong with the path)
  }
  return sizeBytes >= HELPER_MIN_BYTES ? startNodeAttributionHelper() : null;
}
