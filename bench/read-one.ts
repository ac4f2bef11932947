// Child process of read.bench.ts: reads one file `runs` times; prints JSON timings and peak RSS growth.
import { readSnapshotFile } from "../src/cli/read-file";

const [path, runsArg] = process.argv.slice(2);
const runs = Number(runsArg ?? 3);
globalThis.gc?.();
const rssBefore = process.memoryUsage().rss;
const timesMs: number[] = [];
let entries = 0;
for (let i = 0; i < runs; i++) {
  const t0 = performance.now();
  const model = await readSnapshotFile(path);
  timesMs.push(performance.now() - t0);
  entries = model.traces.reduce((n, t) => n + t.length, 0);
}
const peakRss = process.resourceUsage().maxRSS * 1024;
console.log(JSON.stringify({ timesMs, entries, peakRssGrowthBytes: peakRss - rssBefore }));
