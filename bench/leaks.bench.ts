// `npm run bench` (leaks part): `peakscope leaks FILE`'s analysis on the generated ~200 MB training-like
// snapshot (about 1 M trace entries, no step annotations: the steps come from the optimizer's repetition).
// Each run is a fresh Node process (cold JIT, as a CLI user has it) that reads the file, then times
// traceLeaks() whole (attribution + replay + steps + growth) and the leaks part alone (steps, the per-step
// measures and the verdict, given the attribution and the replay). Figures only.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";

const mb = Number(process.env.BENCH_LEAKS_MB ?? "200");
const runs = Number(process.env.BENCH_RUNS ?? "5");
const dir = join(import.meta.dirname, "../.tmp/bench");
mkdirSync(dir, { recursive: true });
const file = join(dir, `big-${mb}mb.pickle`);
if (!existsSync(file))
  execFileSync("python3", ["test/gen/generate.py", "big", "--target-mb", String(mb), file], {
    stdio: ["ignore", "ignore", "inherit"],
  });

const child = `
import { readSnapshotFile } from "./src/cli/read-file";
import { attribute } from "./src/core/attribution";
import { traceLeaks } from "./src/core/leaks";
import { prepareReplays } from "./src/core/replay/report";
import { replayInputs } from "./src/core/report";
const model = await readSnapshotFile(process.argv[1]);
const events = model.traces.reduce((n, t) => n + t.length, 0);
const t0 = performance.now();
const whole = traceLeaks(model);
const wholeMs = performance.now() - t0;
const attribution = attribute(model);
const replays = prepareReplays(model, replayInputs(attribution));
const t1 = performance.now();
traceLeaks(model, { attribution, replays });
const partMs = performance.now() - t1;
console.log(JSON.stringify({ wholeMs, partMs, events, steps: whole.steps.length, verdict: whole.verdict,
  source: whole.stepSource.kind, confidence: whole.stepSource.confidence }));
`;
const results = Array.from({ length: runs }, () => {
  const out = execFileSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", child, file], {
    encoding: "utf8",
  });
  return JSON.parse(out.trim().split("\n").at(-1) as string) as {
    wholeMs: number;
    partMs: number;
    events: number;
    steps: number;
    verdict: string;
    source: string;
    confidence: string;
  };
});
const fmt = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return `median ${s[s.length >> 1].toFixed(0)} ms (range ${s[0].toFixed(0)}–${s.at(-1)?.toFixed(0)} ms)`;
};
const r0 = results[0];
console.log(
  `leaks (traceLeaks), ${mb} MB generated file, ${r0.events.toLocaleString("en")} trace events, ${r0.steps} steps ` +
    `(${r0.source}, ${r0.confidence}), verdict ${r0.verdict}; ${runs} fresh processes; load average ${loadavg()[0].toFixed(1)}`,
);
console.log(`  whole (attribution + replay + steps + growth): ${fmt(results.map((r) => r.wholeMs))}`);
console.log(`  leaks part (steps + per-step measures + verdict): ${fmt(results.map((r) => r.partMs))}`);
