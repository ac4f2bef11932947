// `npm run bench` (attribution part): attribute() — stack rules, the lifetime rules over the trace and the
// inference of pre-trace memory — on the generated ~200 MB training-like snapshot (about 1 M trace
// entries). Each run is a fresh Node process (cold JIT, as a CLI user has it) that reads the file, then
// times attribute() once. Prints the median and range, and per 1 M trace events. Figures only.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";

const mb = Number(process.env.BENCH_ATTRIBUTION_MB ?? "200");
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
const model = await readSnapshotFile(process.argv[1]);
const events = model.traces.reduce((n, t) => n + t.length, 0);
const t0 = performance.now();
attribute(model);
console.log(JSON.stringify({ ms: performance.now() - t0, events }));
`;
const results = Array.from({ length: runs }, () => {
  const out = execFileSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", child, file], {
    encoding: "utf8",
  });
  return JSON.parse(out.trim().split("\n").at(-1) as string) as { ms: number; events: number };
});
const ms = results.map((r) => r.ms).sort((a, b) => a - b);
const events = results[0].events;
const perM = (x: number) => (x / events) * 1e6;
console.log(
  `attribution (attribute(): stack rules + lifetime rules + pre-trace inference), ${mb} MB generated file, ` +
    `${events.toLocaleString("en")} trace events, ${runs} fresh processes; load average ${loadavg()[0].toFixed(1)}`,
);
console.log(
  `  median ${ms[ms.length >> 1].toFixed(0)} ms (range ${ms[0].toFixed(0)}–${ms.at(-1)?.toFixed(0)} ms) = ` +
    `${perM(ms[ms.length >> 1]).toFixed(0)} ms per 1 M trace events (range ${perM(ms[0]).toFixed(0)}–${perM(ms.at(-1) ?? 0).toFixed(0)})`,
);
