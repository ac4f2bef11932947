// The body of the CLI's attribution helper (attribution-helper.ts): one attribution per message, as the
// page's helper makes them (core/attribution/handoff.ts). In a clone it runs through
// attribution-worker.mjs (which registers tsx first); the compiled CLI bundles this file as
// lib/attribution-worker.mjs (scripts/build-cli.mjs).
import { parentPort } from "node:worker_threads";
import { answerRequest, type HelperRequest } from "../core/attribution/handoff";

const port = parentPort;
if (!port) throw new Error("attribution-thread runs only as a worker thread");

port.on("message", (req: HelperRequest) => {
  const { reply, transfer } = answerRequest(req);
  port.postMessage(reply, transfer);
});
port.postMessage({ up: true });
