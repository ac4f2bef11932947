// One dump of a series (views/series): read a snapshot, summarise it (core summarizeDump: bytes per call site
// and category, its parameter blocks, its peak, the capacity it tells), and let the model go. The page asks
// for one file at a time per worker, two workers at a time, as the rank overview does (workers/ranks.ts), so
// memory stays bounded by the file being read, whatever the number of dumps.
// Pure TypeScript (no worker globals): vitest drives it with a Blob.

import { SnapshotReadError } from "../src/core/formats/errors";
import { readSnapshot } from "../src/core/formats/read";
import { type DumpSummary, summarizeDump } from "../src/core/leaks/index";
import type { CountersSidecar } from "../src/core/model/types";
import { parseCounters } from "../src/core/report/counters";
import { parallelBlobSource } from "./parallel-reader";

export type SeriesFileResult =
  | { ok: true; file: string; summary: DumpSummary; countersError: string | null; bytes: number; ms: number }
  | { ok: false; file: string; message: string; cancelled: boolean };

const message = (e: unknown) => (e instanceof Error ? e.message : String(e));

export async function summarizeSeriesFile(
  file: Blob,
  name: string,
  counters: { text: string; name: string } | null,
  opts: { signal?: AbortSignal } = {},
): Promise<SeriesFileResult> {
  const t0 = performance.now();
  let parsed: CountersSidecar | null = null;
  let rank: number | null = null;
  let countersError: string | null = null;
  if (counters) {
    try {
      parsed = parseCounters(counters.text, counters.name);
      const raw = JSON.parse(counters.text) as { rank?: unknown };
      if (typeof raw.rank === "number" && Number.isInteger(raw.rank)) rank = raw.rank;
    } catch (e) {
      countersError = message(e);
    }
  }
  const reader = parallelBlobSource(file, name);
  try {
    const model = await readSnapshot(reader.source, {
      signal: opts.signal,
      chunkBytes: 16 << 20,
      maxChunkBytes: 16 << 20,
      readAhead: 2,
    });
    const summary = summarizeDump(model, name, { counters: parsed, sidecarRank: rank });
    return { ok: true, file: name, summary, countersError, bytes: file.size, ms: performance.now() - t0 };
  } catch (e) {
    if (e instanceof SnapshotReadError)
      return { ok: false, file: name, message: e.message, cancelled: e.code === "cancelled" };
    if (opts.signal?.aborted)
      return { ok: false, file: name, message: "Reading was cancelled.", cancelled: true };
    return { ok: false, file: name, message: `${name} could not be read: ${message(e)}`, cancelled: false };
  } finally {
    reader.close();
  }
}
