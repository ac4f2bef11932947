#!/usr/bin/env node
// `npm run build:cli` (part of `npm pack`'s prepack): compiles and bundles the CLI to plain JavaScript in
// lib/, so an installed peakscope runs on Node alone (no tsx, no TypeScript, no dependencies at run time).
//   lib/peakscope.mjs      the entry (src/cli/bin.ts), imported by bin/peakscope.mjs
//   lib/ranks-worker.mjs   the worker thread of `ranks` (src/cli/ranks-thread.ts)
//   lib/attribution-worker.mjs  the attribution helper thread of `report` (src/cli/attribution-thread.ts)
//   lib/chunk-*.mjs        code split out of the commands, loaded when a command runs (fast `--help`)
// Bundling starts from the CLI's entry, so every command main.ts imports is included as it is added.
// The version is baked in from package.json (`peakscope --version`, `report --json`'s `tool`).
import { readFileSync, rmSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { build } from "esbuild";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const outdir = resolve(root, "lib");
const { version } = JSON.parse(readFileSync(resolve(root, "package.json"), "utf8"));

rmSync(outdir, { recursive: true, force: true });
const result = await build({
  absWorkingDir: root,
  entryPoints: {
    peakscope: "src/cli/bin.ts",
    "ranks-worker": "src/cli/ranks-thread.ts",
    "attribution-worker": "src/cli/attribution-thread.ts",
  },
  outdir,
  // Flat: ranks.ts and attribution-helper.ts find their workers as new URL("./…-worker.mjs",
  // import.meta.url) from any chunk.
  entryNames: "[name]",
  chunkNames: "chunk-[hash]",
  outExtension: { ".js": ".mjs" },
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node20",
  define: { __PEAKSCOPE_VERSION__: JSON.stringify(version) },
  minifySyntax: true,
  minifyWhitespace: true,
  legalComments: "none",
  metafile: true,
  logLevel: "warning",
});
// Nothing outside Node's own modules may be left to load at run time: the package has no dependencies.
const external = new Set();
for (const out of Object.values(result.metafile.outputs))
  for (const i of out.imports) if (i.external && !i.path.startsWith("node:")) external.add(i.path);
if (external.size > 0) {
  console.error(`build-cli: the bundle still imports ${[...external].join(", ")}`);
  process.exit(1);
}
const files = Object.entries(result.metafile.outputs);
const bytes = files.reduce((n, [, o]) => n + o.bytes, 0);
console.log(
  `build-cli: lib/ (${files.length} files, ${(bytes / 1024).toFixed(0)} KiB), peakscope ${version}`,
);
