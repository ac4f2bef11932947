// `npm run bench` (artifacts part): a generated torch.profiler trace of ~50 MB and ~300 MB (uncompressed,
// with_stack on: cpu_op, user_annotation and python_function spans around every [memory] event) read
// into the finished model in Node, one read per fresh process (bench/read-one.ts). The trace is scanned
// as a stream (src/core/formats/artifacts/json-events.ts): the peak RSS growth shows it is not held whole.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, statSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { join } from "node:path";

const sizesMb = (process.env.BENCH_TRACE_MB ?? "50,300").split(",").map(Number);
const runs = Number(process.env.BENCH_TRACE_RUNS ?? 3);
const dir = join(import.meta.dirname, "../.tmp/bench");
mkdirSync(dir, { recursive: true });
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

console.log("read: generated profiler trace → finished model (Node, this machine)");
console.log(
  `load average ${loadavg()
    .map((x) => x.toFixed(1))
    .join(" ")}; ${cpus().length} CPUs; ${runs} runs each`,
);
console.log(
  "size     model entries   median ms (min–max)      MB/s   CPU ms (min–max)   peak RSS growth / file size (median)",
);
for (const mb of sizesMb) {
  const file = join(dir, `trace-${mb}mb.json`);
  if (!existsSync(file))
    execFileSync("python3", ["test/gen/generate.py", "big-trace", "--target-mb", String(mb), file], {
      stdio: ["ignore", "ignore", "inherit"],
    });
  const bytes = statSync(file).size;
  const results = Array.from({ length: runs }, () => {
    const out = execFileSync(
      process.execPath,
      ["--expose-gc", "--import", "tsx", join(import.meta.dirname, "read-one.ts"), file],
      { encoding: "utf8", maxBuffer: 1 << 20 },
    );
    return JSON.parse(out.trim().split("\n").at(-1) as string);
  });
  const times = results.map((x) => x.timeMs as number);
  const ms = median(times);
  const rss = median(results.map((x) => x.peakRssGrowthBytes as number));
  // CPU time (all threads of the reading process) is the figure to compare on a shared machine
  const cpu = results.map((x) => x.cpuMs as number);
  console.log(
    `${(bytes / 1e6).toFixed(0).padStart(4)} MB ${String(results[0].entries).padStart(15)} ${ms.toFixed(0).padStart(10)} (${Math.min(...times).toFixed(0)}–${Math.max(...times).toFixed(0)}) ${(bytes / 1e6 / (ms / 1000)).toFixed(0).padStart(9)}   ${median(cpu).toFixed(0).padStart(6)} (${Math.min(...cpu).toFixed(0)}–${Math.max(...cpu).toFixed(0)})   ${(rss / 2 ** 20).toFixed(0)} MiB = ${(rss / bytes).toFixed(2)}×`,
  );
}
