#!/usr/bin/env node
// For the e2e tests: reads each file given with the CLI's own reader (src/cli/read-file.ts, what
// `peakscope inspect` uses) in one process, and prints {path: the reader's error message, or null} as JSON.
import { register } from "tsx/esm/api";

register();
const { readSnapshotFile } = await import("../../src/cli/read-file.ts");
const out = {};
for (const path of process.argv.slice(2)) {
  try {
    await readSnapshotFile(path);
    out[path] = null;
  } catch (e) {
    out[path] = e instanceof Error ? e.message : String(e);
  }
}
process.stdout.write(JSON.stringify(out));
