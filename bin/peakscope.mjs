#!/usr/bin/env node
// Entry point for `npx peakscope`: runs the TypeScript CLI through tsx, so no build step is needed.
import { register } from "tsx/esm/api";

register();
const { main } = await import("../src/cli/main.ts");
process.exitCode = await main(process.argv.slice(2));
