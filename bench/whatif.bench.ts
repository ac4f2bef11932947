// `npm run bench` (what-if part): 20 random what-ifs — remove or scale a category, remove or scale a call
// site — on the generated ~200 MB training-like snapshot (about 1 M trace events), cached under .tmp/bench/
// like attribution.bench.ts. Prints the median and the max per what-if, the one-time preparation and the
// ranked suggestions. Figures only; the target (issue 13) is ≤ 200 ms for any what-if.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import { readSnapshotFile } from "../src/cli/read-file";
import { attribute } from "../src/core/attribution";
import { mulberry32 } from "../src/core/random";
import { prepareReplays } from "../src/core/replay/report";
import { replayInputs } from "../src/core/report/index";
import { prepareWhatIf, type Selection, suggest, type Transform, whatIf } from "../src/core/whatif";

const mb = Number(process.env.BENCH_WHATIF_MB ?? "200");
const dir = join(import.meta.dirname, "../.tmp/bench");
mkdirSync(dir, { recursive: true });
const file = join(dir, `big-${mb}mb.pickle`);
if (!existsSync(file))
  execFileSync("python3", ["test/gen/generate.py", "big", "--target-mb", String(mb), file], {
    stdio: ["ignore", "ignore", "inherit"],
  });

const model = await readSnapshotFile(file);
const a = attribute(model);
const replays = prepareReplays(model, replayInputs(a));
const r = [...replays.values()].sort((x, y) => y.length - x.length)[0];
const t0 = performance.now();
const ctx = prepareWhatIf(model, r, a);
const prepMs = performance.now() - t0;

// Candidates: the categories present, and the call sites holding allocations.
const A = r.allocations;
const catCounts = new Map<number, number>();
const siteCounts = new Map<number, number>();
for (let k = 0; k < A.length; k++) {
  catCounts.set(A.category[k], (catCounts.get(A.category[k]) ?? 0) + 1);
  if (A.site[k] >= 0) siteCounts.set(A.site[k], (siteCounts.get(A.site[k]) ?? 0) + 1);
}
const cats = [...catCounts.keys()].map((c) => a.categoryNames[c]);
const sites = [...siteCounts.keys()].map((s) => a.sites[s]).filter((s) => s.line > 0 && s.filename);
const rand = mulberry32(13);
const pick = <T>(xs: T[]) => xs[Math.floor(rand() * xs.length)];
const whatIfs: Transform[][] = [];
for (let i = 0; i < 20; i++) {
  const site = pick(sites);
  const select: Selection =
    i % 2 === 0 || !site
      ? { kind: "category", category: pick(cats) }
      : { kind: "site", file: site.filename, line: site.line };
  whatIfs.push([rand() < 0.5 ? { op: "remove", select } : { op: "scale", select, factor: 0.5 }]);
}

const ms: number[] = [];
for (const w of whatIfs) {
  const s = performance.now();
  whatIf(ctx, w);
  ms.push(performance.now() - s);
}
const sorted = [...ms].sort((x, y) => x - y);
const s0 = performance.now();
const sug = suggest(ctx);
const suggestMs = performance.now() - s0;
console.log(
  `what-if on the ${mb} MB generated file: ${r.length.toLocaleString("en")} events, ` +
    `${A.length.toLocaleString("en")} allocations; load average ${loadavg()[0].toFixed(1)}`,
);
console.log(`  prepareWhatIf (phases, per-allocation phase): ${prepMs.toFixed(1)} ms, once per device`);
console.log(
  `  20 random what-ifs (remove / scale ×0.5 of a category or a call site): median ` +
    `${sorted[sorted.length >> 1].toFixed(1)} ms, max ${sorted.at(-1)?.toFixed(1)} ms (first ${ms[0].toFixed(1)} ms)`,
);
console.log(`  suggest(): ${sug.length} suggestions in ${suggestMs.toFixed(0)} ms`);
