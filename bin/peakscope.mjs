#!/usr/bin/env node
// Entry point of the `peakscope` command.
// Installed (npm i -g peakscope, npx): runs the compiled CLI in ../lib (plain JavaScript, built at pack time).
// In a clone (src/ is there): runs the TypeScript sources through tsx, so an edit shows at once and no build
// step is needed; `node lib/peakscope.mjs` runs the compiled one there (`npm run build:cli` makes it).
import { existsSync } from "node:fs";

if (existsSync(new URL("../src/cli/main.ts", import.meta.url))) {
  const { register } = await import("tsx/esm/api");
  register();
  const { main } = await import("../src/cli/main.ts");
  process.exitCode = await main(process.argv.slice(2));
} else {
  await import("../lib/peakscope.mjs");
}
