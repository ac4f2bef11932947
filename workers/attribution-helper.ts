// The attribution helper in the page: the worker's own script started again under another name (its
// entry then serves attributions and nothing else), started as the read begins so that it is up by its
// end. What it is given and how the answer is used: src/core/attribution/handoff.ts.

import {
  type HelperClient,
  type HelperMessage,
  type HelperReply,
  helperClient,
  helperServer,
} from "../src/core/attribution/handoff";
import { moduleHelperWorker } from "./parallel-reader";

/** The helper's worker name: its entry (peakscope.worker.ts) serves attributions under it. */
export const ATTRIBUTION_HELPER_NAME = "peakscope-attribution";

/** Whether this worker is an attribution helper. */
export function isAttributionHelper(): boolean {
  return (globalThis as { name?: string }).name === ATTRIBUTION_HELPER_NAME;
}

/** The helper's program: the rows paired as they are read, then one attribution per request. */
export function serveAttribution(): void {
  const scope = globalThis as unknown as {
    onmessage: ((e: MessageEvent<HelperMessage>) => void) | null;
    postMessage(m: HelperReply, transfer?: Transferable[]): void;
  };
  const serve = helperServer((reply, transfer) => scope.postMessage(reply, transfer));
  scope.onmessage = (e) => serve(e.data);
  scope.postMessage({ up: true });
}

/** Starts a helper from this worker's own script; null where none can start (Node, tests, a policy). */
export function startAttributionHelper(): HelperClient | null {
  const href = (globalThis as { location?: { href?: string } }).location?.href;
  const worker = href ? moduleHelperWorker(href, ATTRIBUTION_HELPER_NAME) : null;
  if (!worker) return null;
  const client = helperClient(
    (req) => worker.postMessage(req),
    () => worker.terminate(),
  );
  worker.onmessage = (e: MessageEvent<HelperReply>) => client.received(e.data);
  worker.onerror = (e) => {
    e.preventDefault();
    client.failed(e.message || "the attribution helper failed");
  };
  return client;
}
