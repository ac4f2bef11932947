// `npm run bench` (read part): generated snapshots of ~10 MB, ~100 MB and ~1 GB read end to end into the
// finished model in Node. Prints MB/s (median of runs) and peak RSS growth relative to the file size.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, statSync } from "node:fs";
import { join } from "node:path";

const sizesMb = (process.env.BENCH_SIZES_MB ?? "10,100,1000").split(",").map(Number);
const dir = join(import.meta.dirname, "../.tmp/bench");
mkdirSync(dir, { recursive: true });

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

console.log("read: generated snapshot → finished model (Node, this machine)");
console.log("size        entries    median ms    MB/s   peak RSS growth / file size");
for (const mb of sizesMb) {
  const file = join(dir, `big-${mb}mb.pickle`);
  if (!existsSync(file)) execFileSync("python3", ["test/gen/generate.py", "big", "--target-mb", String(mb), file], { stdio: ["ignore", "ignore", "inherit"] });
  const bytes = statSync(file).size;
  const runs = mb >= 1000 ? 3 : 5;
  const out = execFileSync(process.execPath, ["--expose-gc", "--import", "tsx", join(import.meta.dirname, "read-one.ts"), file, String(runs)], {
    encoding: "utf8",
    maxBuffer: 1 << 20,
  });
  const r = JSON.parse(out.trim().split("\n").at(-1) as string);
  const ms = median(r.timesMs);
  console.log(
    `${(bytes / 1e6).toFixed(0).padStart(5)} MB ${String(r.entries).padStart(12)} ${ms.toFixed(0).padStart(12)} ${(bytes / 1e6 / (ms / 1000)).toFixed(0).padStart(7)}   ${(r.peakRssGrowthBytes / 2 ** 20).toFixed(0)} MiB = ${(r.peakRssGrowthBytes / bytes).toFixed(2)}×`,
  );
}
