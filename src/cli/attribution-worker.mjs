// The CLI's attribution helper thread in a clone: registers tsx (as bin/peakscope.mjs does there) so it
// can load the TypeScript sources, then runs attribution-thread.ts. The compiled CLI has its own
// attribution-worker.mjs (lib/, bundled from attribution-thread.ts by scripts/build-cli.mjs).
import { register } from "tsx/esm/api";

register();
await import("./attribution-thread.ts");
