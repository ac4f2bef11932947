// Worker thread of `peakscope ranks` in a clone: registers tsx (as bin/peakscope.mjs does there) so it can
// load the TypeScript sources, then runs ranks-thread.ts. The compiled CLI has its own ranks-worker.mjs
// (lib/, bundled from ranks-thread.ts by scripts/build-cli.mjs) and never loads this file.
import { register } from "tsx/esm/api";

register();
await import("./ranks-thread.ts");
