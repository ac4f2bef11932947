// Worker thread of `peakscope ranks`: registers tsx (as bin/peakscope.mjs does) so it can load the TypeScript
// sources, then summarizes the files it is sent, one at a time: {id, file} in, {id, summary} or {id, error} out.
import { parentPort } from "node:worker_threads";
import { register } from "tsx/esm/api";

register();
const { summarizeFile } = await import("./ranks.ts");

parentPort.on("message", async ({ id, file }) => {
  try {
    parentPort.postMessage({ id, summary: await summarizeFile(file) });
  } catch (e) {
    parentPort.postMessage({ id, error: e instanceof Error ? e.message : String(e) });
  }
});
