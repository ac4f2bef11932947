// The parsing worker's memory for a load's big columns (src/core/model/warm-memory.ts). No thread faults
// it in ahead any more: a warmer worker that wrote one byte per page ahead of the parser (and 16 bytes an
// entry for the analysis) made every big load slower once page faults got cheap on this project's
// machine (0.4–1 ms per MB, against 3–7 ms when the warmer came): cold 1.05 GB 2676 → 2073 ms, 2.0 GB
// 4933 → 3995 ms, alternating (docs/speed.md). What is left is the shared columns themselves.

import { type WarmMemory, warmSession } from "../src/core/model/warm-memory";

/** Memory for one load: where the page is cross-origin isolated, the columns in shared memory. */
export function warmMemory(): WarmMemory & { release(): void } {
  return warmSession(
    () => null,
    // a cross-origin isolated page (served with COOP and COEP, as scripts/serve.mjs and `peakscope view`
    // serve it) shares memory between its threads: the trace's columns are made in it, for the
    // attribution helper to pair as they are written (attribution/streamed-pairing.ts)
    { shared: (globalThis as { crossOriginIsolated?: boolean }).crossOriginIsolated === true },
  );
}
