#!/usr/bin/env node
// `npm test`: lint + typecheck, the fixture generator's self-check (Python), unit and corpus tests
// (vitest), e2e (Playwright on the built site).
// Ends with one line "N passed, N failed" totalling every suite; exit 1 when anything failed.
import { spawnSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync } from "node:fs";

const results = [];
const run = (name, cmd, args, env = {}) => {
  console.log(`\n=== ${name}: ${cmd} ${args.join(" ")}`);
  const r = spawnSync(cmd, args, { stdio: "inherit", env: { ...process.env, ...env } });
  return r.status ?? 1;
};
const readJson = (path) => (existsSync(path) ? JSON.parse(readFileSync(path, "utf8")) : null);

mkdirSync("test-results", { recursive: true });

// Lint/format and typecheck count as one check each.
results.push({ suite: "lint (biome)", passed: run("lint", "npx", ["biome", "check", "."]) === 0 ? 1 : 0 });
results.at(-1).failed = 1 - results.at(-1).passed;
results.push({
  suite: "typecheck (tsc)",
  passed: run("typecheck", "npx", ["tsc", "-p", "tsconfig.json", "--noEmit"]) === 0 ? 1 : 0,
});
results.at(-1).failed = 1 - results.at(-1).passed;

// The fixture generator checked against the independent Python inspector: each "ok " / "FAIL " line it
// prints is one check; a crash (non-zero exit with no FAIL line) counts as one failure.
console.log("\n=== generator self-check: python3 test/gen/selfcheck.py");
const self = spawnSync("python3", ["test/gen/selfcheck.py"], { encoding: "utf8", maxBuffer: 1 << 28 });
process.stdout.write(self.stdout ?? "");
process.stderr.write(self.stderr ?? "");
const selfLines = (self.stdout ?? "").split("\n");
const selfOk = selfLines.filter((l) => l.startsWith("ok ")).length;
const selfFail = selfLines.filter((l) => l.startsWith("FAIL ")).length;
results.push({
  suite: "generator self-check (python)",
  passed: selfOk,
  failed: selfFail + (self.status !== 0 && selfFail === 0 ? 1 : 0),
});

rmSync("test-results/unit.json", { force: true });
const unitStatus = run("unit + corpus", "npx", [
  "vitest",
  "run",
  "--reporter=default",
  "--reporter=json",
  "--outputFile.json=test-results/unit.json",
]);
const unit = readJson("test-results/unit.json");
results.push({
  suite: "unit + corpus (vitest)",
  passed: unit?.numPassedTests ?? 0,
  failed: unit ? unit.numFailedTests + (unitStatus !== 0 && unit.numFailedTests === 0 ? 1 : 0) : 1,
  skipped: unit?.numPendingTests ?? 0,
});

rmSync("test-results/e2e.json", { force: true });
const buildStatus = run("build", "npx", ["vite", "build"]);
if (buildStatus !== 0) results.push({ suite: "e2e (build)", passed: 0, failed: 1 });
else {
  const e2eStatus = run("e2e", "npx", ["playwright", "test"], {
    PLAYWRIGHT_JSON_OUTPUT_NAME: "test-results/e2e.json",
  });
  const e2e = readJson("test-results/e2e.json");
  const stats = e2e?.stats;
  results.push({
    suite: "e2e (playwright)",
    passed: stats ? stats.expected + stats.flaky : 0,
    failed: stats ? stats.unexpected + (e2eStatus !== 0 && stats.unexpected === 0 ? 1 : 0) : 1,
    skipped: stats?.skipped ?? 0,
  });
}

console.log("\n=== summary");
for (const r of results)
  console.log(
    `${r.suite}: ${r.passed} passed, ${r.failed} failed${r.skipped ? `, ${r.skipped} skipped` : ""}`,
  );
const passed = results.reduce((n, r) => n + r.passed, 0);
const failed = results.reduce((n, r) => n + r.failed, 0);
const skipped = results.reduce((n, r) => n + (r.skipped ?? 0), 0);
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ""}`);
process.exit(failed > 0 ? 1 : 0);
