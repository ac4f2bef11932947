// `npm run bench` (read part): generated snapshots of ~10 MB, ~100 MB and ~1 GB, and a real training
// snapshot grown to ~106 MB and ~1 GB (test/gen/memgen/growreal.py: the real-shaped input), read end to end
// into the finished model in Node. Prints MB/s (median of runs) and peak RSS growth over the file size.
//   BENCH_SIZES_MB=10,100,1000   generated sizes      BENCH_GROWN_MB=106,1050   real-shaped sizes
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, statSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { join } from "node:path";

const list = (v: string) => (v === "" ? [] : v.split(",").map(Number));
const sizesMb = list(process.env.BENCH_SIZES_MB ?? "10,100,1000");
const grownMb = list(process.env.BENCH_GROWN_MB ?? "106,1050");
const GROW_FROM = join(
  import.meta.dirname,
  "../../shared/fixtures/real/Wedsonlin__assignment2-systems__medium_256_training_memory_snapshot.pickle",
);
const dir = join(import.meta.dirname, "../.tmp/bench");
mkdirSync(dir, { recursive: true });

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

console.log("read: generated snapshot → finished model (Node, this machine)");
console.log(
  `load average ${loadavg()
    .map((x) => x.toFixed(1))
    .join(" ")}; ${cpus().length} CPUs`,
);
console.log(
  "input         size        entries    median ms   CPU ms    MB/s   peak RSS growth / file size (median)",
);
const inputs = [
  ...sizesMb.map((mb) => ({ kind: "generated", mb, file: join(dir, `big-${mb}mb.pickle`) })),
  ...grownMb.map((mb) => ({ kind: "real-shaped", mb, file: join(dir, `grown-${mb}mb.pickle`) })),
];
for (const { kind, mb, file } of inputs) {
  if (!existsSync(file))
    execFileSync(
      "python3",
      kind === "generated"
        ? ["test/gen/generate.py", "big", "--target-mb", String(mb), file]
        : ["test/gen/generate.py", "grow-real", "--from", GROW_FROM, "--target-mb", String(mb), file],
      { stdio: ["ignore", "ignore", "inherit"] },
    );
  const bytes = statSync(file).size;
  const runs = mb >= 1000 ? 3 : 5;
  // One read per fresh process: the time includes the JIT warming up, as for a CLI user.
  const results = Array.from({ length: runs }, () => {
    const out = execFileSync(
      process.execPath,
      ["--expose-gc", "--import", "tsx", join(import.meta.dirname, "read-one.ts"), file],
      { encoding: "utf8", maxBuffer: 1 << 20 },
    );
    return JSON.parse(out.trim().split("\n").at(-1) as string);
  });
  const r = {
    timesMs: results.map((x) => x.timeMs),
    cpuMs: median(results.map((x) => x.cpuMs)),
    entries: results[0].entries,
    peakRssGrowthBytes: median(results.map((x) => x.peakRssGrowthBytes)),
  };
  const ms = median(r.timesMs);
  console.log(
    `${kind.padEnd(11)} ${(bytes / 1e6).toFixed(0).padStart(5)} MB ${String(r.entries).padStart(12)} ${ms.toFixed(0).padStart(12)} ${r.cpuMs.toFixed(0).padStart(8)} ${(bytes / 1e6 / (ms / 1000)).toFixed(0).padStart(7)}   ${(r.peakRssGrowthBytes / 2 ** 20).toFixed(0)} MiB = ${(r.peakRssGrowthBytes / bytes).toFixed(2)}×`,
  );
}
