// `npm run bench`: every benchmark in turn. Figures only; nothing here is a test.
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { join } from "node:path";

for (const name of [
  "startup.bench.ts",
  "read.bench.ts",
  "report.bench.ts",
  "artifacts.bench.ts",
  "attribution.bench.ts",
  "replay.bench.ts",
  "tree.bench.ts",
  "whatif.bench.ts",
  "leaks.bench.ts",
]) {
  const path = join(import.meta.dirname, name);
  if (!existsSync(path)) continue;
  console.log(`\n## ${name}`);
  execFileSync(process.execPath, ["--import", "tsx", path], { stdio: "inherit" });
}
