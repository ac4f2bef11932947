// The body of `peakscope ranks`'s worker threads: summarizes the files it is sent, one at a time:
// {id, file} in, {id, summary} or {id, error} out. In a clone it runs through ranks-worker.mjs (which
// registers tsx first); the compiled CLI bundles this file as lib/ranks-worker.mjs (scripts/build-cli.mjs).
import { parentPort } from "node:worker_threads";
import { summarizeFile } from "./ranks";

const port = parentPort;
if (!port) throw new Error("ranks-thread runs only as a worker thread");

port.on("message", async ({ id, file }: { id: number; file: string }) => {
  try {
    port.postMessage({ id, summary: await summarizeFile(file) });
  } catch (e) {
    port.postMessage({ id, error: e instanceof Error ? e.message : String(e) });
  }
});
