// A file read in Node where threads share memory: its slices are read into the WebAssembly scanner's own
// (shared) memory and scanned where they are, without the copy into the scanner's window
// (WasmTraceScanner.sliceMemory, ByteSource.readsInPlace). The report is the same as a read that copies,
// its event count Python's, and the slices did go into shared memory: slices of several sizes, more of
// them than the region holds at once (the region's slices recycled), with slice boundaries inside entries.

import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { readSnapshotFile, withFileSource } from "../src/cli/read-file";
import { nodeWarmMemory } from "../src/cli/warm-memory";
import type { ByteSource } from "../src/core/formats/byte-source";
import { type ReadOptions, readSnapshot } from "../src/core/formats/read";
import { growReal, HAVE_REAL } from "./helpers/python";
import { pythonTraceEntries, reportJson } from "./helpers/report-json";

const TRAINING = "Wedsonlin__assignment2-systems__medium_256_training_memory_snapshot.pickle";
const tmp = mkdtempSync(join(tmpdir(), "peakscope-in-place-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** The source, with a count of the slices read into shared memory and into other memory. */
function counted(src: ByteSource, seen: { shared: number; other: number }): ByteSource {
  const readInto = src.readInto?.bind(src);
  return {
    ...src,
    readInto: readInto
      ? (offset, target) => {
          if (target.buffer instanceof SharedArrayBuffer) seen.shared++;
          else seen.other++;
          return readInto(offset, target);
        }
      : undefined,
  };
}

describe.skipIf(!HAVE_REAL)("slices read into the scanner's memory and scanned in place (Node)", () => {
  const file = join(tmp, "grown-in-place.pickle");
  growReal(TRAINING, 8, file);
  const sizeBytes = statSync(file).size;

  const cases: [string, ReadOptions][] = [
    ["the CLI's 4 MiB slices", {}],
    [
      "256 KiB slices growing to 1 MiB, two read ahead",
      { chunkBytes: 256 << 10, maxChunkBytes: 1 << 20, readAhead: 2 },
    ],
    ["64 KiB slices, one read ahead", { chunkBytes: 64 << 10, readAhead: 1 }],
  ];

  for (const [what, opts] of cases) {
    it(`${what}: the report of a read that copies, Python's event count`, async () => {
      const copied = await reportJson(file, { readSnapshot: (p) => readSnapshotFile(p, opts) });
      const warm = nodeWarmMemory();
      const seen = { shared: 0, other: 0 };
      const inPlace = await reportJson(file, {
        // the CLI's warmer, asked for this small file too: its memory shared as a file's of ≥ 128 MB is
        readSnapshot: (p) =>
          withFileSource(p, (src) =>
            readSnapshot(counted(src, seen), {
              chunkBytes: 4 << 20,
              ...opts,
              warmMemory: { ...warm, minBytes: 0 },
            }),
          ),
      });
      warm.release();
      const first = opts.chunkBytes ?? 4 << 20;
      // every slice after the first (read before the scanner exists) went into shared memory
      expect(seen.other).toBe(1);
      expect(seen.shared).toBeGreaterThan(0);
      const max = opts.maxChunkBytes ?? first;
      expect(seen.shared).toBeGreaterThanOrEqual(Math.floor((sizeBytes - first) / max));
      expect(inPlace.code).toBe(copied.code);
      expect(inPlace.json).toEqual(copied.json);
      expect(inPlace.json.timeline.events).toBe(pythonTraceEntries(file));
    });
  }
});
