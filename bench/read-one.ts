// Child process of read.bench.ts: reads one file once in a fresh process (as `peakscope report` does) and
// prints JSON: wall time, CPU time (all threads), and the growth of peak RSS over the RSS before reading.
// A second argument "js" reads with the JavaScript trace scanner alone (for A/B comparisons).
import { readSnapshotFile } from "../src/cli/read-file";

const path = process.argv[2];
const scanner = process.argv[3] === "js" ? "js" : "wasm";
globalThis.gc?.();
const rssBefore = process.memoryUsage().rss;
const cpu0 = process.cpuUsage();
const t0 = performance.now();
const model = await readSnapshotFile(path, { scanner });
const timeMs = performance.now() - t0;
const cpu = process.cpuUsage(cpu0);
const cpuMs = (cpu.user + cpu.system) / 1000;
const entries = model.traces.reduce((n, t) => n + t.length, 0);
const peakRss = process.resourceUsage().maxRSS * 1024;
console.log(JSON.stringify({ scanner, timeMs, cpuMs, entries, peakRssGrowthBytes: peakRss - rssBefore }));
