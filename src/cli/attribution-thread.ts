// The body of the CLI's attribution helper (attribution-helper.ts): one attribution per request, as the
// page's helper makes them (core/attribution/handoff.ts). In a clone it runs through
// attribution-worker.mjs (which registers tsx first); the compiled CLI bundles this file as
// lib/attribution-worker.mjs (scripts/build-cli.mjs).
import { parentPort } from "node:worker_threads";
import { type HelperMessage, helperServer } from "../core/attribution/handoff";

const port = parentPort;
if (!port) throw new Error("attribution-thread runs only as a worker thread");

const serve = helperServer((reply, transfer) => port.postMessage(reply, transfer));
port.on("message", (m: HelperMessage) => serve(m));
port.postMessage({ up: true });
