// Child process of read.bench.ts: reads one file once in a fresh process (as `memscope report` does) and
// prints JSON: wall time, and the growth of peak RSS over the RSS before reading.
import { readSnapshotFile } from "../src/cli/read-file";

const path = process.argv[2];
globalThis.gc?.();
const rssBefore = process.memoryUsage().rss;
const t0 = performance.now();
const model = await readSnapshotFile(path);
const timeMs = performance.now() - t0;
const entries = model.traces.reduce((n, t) => n + t.length, 0);
const peakRss = process.resourceUsage().maxRSS * 1024;
console.log(JSON.stringify({ timeMs, entries, peakRssGrowthBytes: peakRss - rssBefore }));
