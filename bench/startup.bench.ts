// `npm run bench` (start-up part): how long the compiled CLI takes to start, against `node -e ""` on the
// same machine (the goal: `peakscope --help` within 3 × that, median of 5), and `report` on a ~1 MB real
// file split into start-up and work. The CLI is compiled first (scripts/build-cli.mjs → lib/), as
// `npm pack` does; the clone's tsx entry (bin/peakscope.mjs) is timed beside it for comparison.
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { join, resolve } from "node:path";

const ROOT = resolve(import.meta.dirname, "..");
const RUNS = Number(process.env.BENCH_STARTUP_RUNS ?? 5);
const FILE =
  process.env.BENCH_STARTUP_FILE ??
  resolve(ROOT, "../shared/fixtures/real/JasperSolt__EoR_NN__snapshot.pickle");

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1];

/** Wall-clock ms of one fresh process (stdout discarded); throws when it fails. */
function timeOnce(args: string[]): number {
  const t0 = performance.now();
  const r = spawnSync(process.execPath, args, { cwd: ROOT, stdio: ["ignore", "ignore", "pipe"] });
  const ms = performance.now() - t0;
  // report exits 2 when a check fails: still a finished run.
  if (r.status !== 0 && r.status !== 2)
    throw new Error(`node ${args.join(" ")}: exit ${r.status}: ${r.stderr}`);
  return ms;
}

function medianMs(args: string[]): { medianMs: number; runsMs: number[] } {
  timeOnce(args); // one unmeasured run: the file cache warm, as on the second call of a user
  const runsMs = Array.from({ length: RUNS }, () => timeOnce(args));
  return { medianMs: median(runsMs), runsMs };
}

const fmt = (ms: number) => `${ms.toFixed(0).padStart(6)} ms`;
const runs = (r: { runsMs: number[] }) => `(${r.runsMs.map((x) => x.toFixed(0)).join(", ")})`;

execFileSync(process.execPath, [join(ROOT, "scripts/build-cli.mjs")], {
  stdio: ["ignore", "ignore", "inherit"],
});

console.log(`start-up: fresh processes, median of ${RUNS} wall-clock runs (this machine)`);
console.log(
  `load average ${loadavg()
    .map((x) => x.toFixed(1))
    .join(" ")}; ${cpus().length} CPUs`,
);
const node = medianMs(["-e", ""]);
const help = medianMs([join(ROOT, "lib/peakscope.mjs"), "--help"]);
const devHelp = medianMs([join(ROOT, "bin/peakscope.mjs"), "--help"]);
console.log(`node -e ""                          ${fmt(node.medianMs)}  ${runs(node)}`);
console.log(
  `peakscope --help (compiled, lib/)   ${fmt(help.medianMs)}  ${runs(help)}  ${(help.medianMs / node.medianMs).toFixed(2)} × node (goal ≤ 3 ×)`,
);
console.log(
  `peakscope --help (clone, tsx)       ${fmt(devHelp.medianMs)}  ${runs(devHelp)}  ${(devHelp.medianMs / node.medianMs).toFixed(2)} × node`,
);

if (existsSync(FILE)) {
  const report = medianMs([join(ROOT, "lib/peakscope.mjs"), "report", FILE, "--json"]);
  const mb = statSync(FILE).size / 1e6;
  console.log(
    `peakscope report (compiled) on ${mb.toFixed(2)} MB  ${fmt(report.medianMs)}  ${runs(report)}: start-up ${fmt(help.medianMs)} (--help), work ${fmt(report.medianMs - help.medianMs)}`,
  );
} else console.log(`(no ${FILE}: report not timed)`);
