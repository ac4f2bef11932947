// `npm run bench` (report part): `peakscope report FILE --json` end to end in a fresh process (read,
// attribution, replay, checks, the JSON), with the compiled CLI (lib/, as installed), on the generated
// ~1 GB snapshot and on a real training snapshot grown to ~1 GB (test/gen/memgen/growreal.py). Prints the
// median wall time with the range and the process's peak RSS. Figures only; nothing here is a test.
//   BENCH_REPORT_FILES=gen1000,grown1050   which inputs (genN: `generate.py big`, grownN: `grow-real`)
//   BENCH_REPORT_RUNS=3
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, mkdirSync, statSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { join, resolve } from "node:path";

const ROOT = resolve(import.meta.dirname, "..");
const TMP = join(ROOT, ".tmp/bench");
const RUNS = Number(process.env.BENCH_REPORT_RUNS ?? 3);
const GROW_FROM = resolve(
  ROOT,
  "../shared/fixtures/real/Wedsonlin__assignment2-systems__medium_256_training_memory_snapshot.pickle",
);
const keys = (process.env.BENCH_REPORT_FILES ?? "gen1000,grown1050").split(",").filter(Boolean);

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

function input(key: string): { label: string; file: string } | null {
  const m = /^(gen|grown)(\d+)$/.exec(key);
  if (!m) return null;
  const mb = m[2];
  const file = join(TMP, m[1] === "gen" ? `big-${mb}mb.pickle` : `grown-${mb}mb.pickle`);
  if (!existsSync(file)) {
    mkdirSync(TMP, { recursive: true });
    const args =
      m[1] === "gen"
        ? ["test/gen/generate.py", "big", "--target-mb", mb, file]
        : ["test/gen/generate.py", "grow-real", "--from", GROW_FROM, "--target-mb", mb, file];
    execFileSync("python3", args, { cwd: ROOT, stdio: ["ignore", "ignore", "inherit"] });
  }
  return { label: m[1] === "gen" ? "generated" : "real-shaped", file };
}

/** Wall ms and peak RSS (KiB, from GNU time) of one fresh `report --json`. */
function once(file: string): { ms: number; rssKiB: number } {
  const t0 = performance.now();
  const r = spawnSync(
    "/usr/bin/time",
    ["-f", "%M", process.execPath, join(ROOT, "lib/peakscope.mjs"), "report", file, "--json"],
    { cwd: ROOT, stdio: ["ignore", "ignore", "pipe"], maxBuffer: 1 << 24 },
  );
  const ms = performance.now() - t0;
  if (r.status !== 0 && r.status !== 2) throw new Error(`report ${file}: exit ${r.status}: ${r.stderr}`);
  const rss = Number(/(\d+)\s*$/.exec(String(r.stderr))?.[1] ?? Number.NaN);
  return { ms, rssKiB: rss };
}

execFileSync(process.execPath, [join(ROOT, "scripts/build-cli.mjs")], {
  stdio: ["ignore", "ignore", "inherit"],
});
console.log("report --json end to end (compiled CLI, fresh process each run)");
console.log(
  `load average ${loadavg()
    .map((x) => x.toFixed(1))
    .join(" ")}; ${cpus().length} CPUs; ${RUNS} runs each after one unmeasured`,
);
if (!existsSync("/usr/bin/time")) console.log("(no /usr/bin/time: peak RSS is not shown)");
for (const key of keys) {
  const inp = input(key);
  if (!inp) {
    console.log(`skip ${key}: not genN or grownN`);
    continue;
  }
  const mb = statSync(inp.file).size / 1e6;
  once(inp.file);
  const runs = Array.from({ length: RUNS }, () => once(inp.file));
  const ms = runs.map((r) => r.ms);
  console.log(
    `${inp.label.padEnd(11)} ${mb.toFixed(0).padStart(5)} MB  median ${(median(ms) / 1000).toFixed(2)} s ` +
      `(${(Math.min(...ms) / 1000).toFixed(2)}–${(Math.max(...ms) / 1000).toFixed(2)})  ` +
      `peak RSS ${(median(runs.map((r) => r.rssKiB)) / 2 ** 20).toFixed(2)} GiB`,
  );
}
