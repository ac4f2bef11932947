// The CLI's memory for a read's big columns (see src/core/model/warm-memory.ts). No thread faults it in
// ahead any more: the warmer thread that did made `report --json` on the 1.05 GB file slower once page
// faults got cheap on this project's machine (2.09 → 1.61 s, alternating; docs/speed.md). What is left
// is the shared columns themselves.

import { type WarmMemory, warmSession } from "../core/model/warm-memory";

/** Memory for one read: worker threads share memory, so the trace's columns are made in it. */
export function nodeWarmMemory(): WarmMemory & { release(): void } {
  // (for the attribution helper to pair as they are written: attribution/streamed-pairing.ts)
  return warmSession(() => null, { shared: true });
}
