// One rank of a rank overview: read a snapshot, summarise it exactly as `peakscope ranks` does (core
// buildReport → summaryFromReport, with the counters sidecar when one was dropped with it), keep a compact
// curve of allocated (and reserved) over the trace, and let the model go. The page asks for one file at a
// time per worker, so memory stays bounded by the file being read, whatever the number of ranks.
// Pure TypeScript (no worker globals): vitest drives it with a Blob.

import { attribute } from "../src/core/attribution/index";
import { SnapshotReadError } from "../src/core/formats/errors";
import { readSnapshot } from "../src/core/formats/read";
import type { CountersSidecar } from "../src/core/model/types";
import { type RankSummary, summaryFromReport } from "../src/core/ranks/index";
import { prepareReplays, replayReport } from "../src/core/replay/report";
import type { Replay } from "../src/core/replay/types";
import { parseCounters } from "../src/core/report/counters";
import { buildReport, replayInputs } from "../src/core/report/index";
import { parallelBlobSource } from "./parallel-reader";

/** At most this many points per curve (the overview draws dozens of small multiples). */
export const RANK_CURVE_POINTS = 400;

/**
 * Allocated and reserved over one device's trace, max per bucket: bucket b covers
 * [b·span/points, (b+1)·span/points) from the trace's first event (µs on `byTime`, events on `byEvent`).
 */
export interface RankCurveSeries {
  points: number;
  span: number;
  allocated: Float64Array;
  reserved: Float64Array;
}

export interface RankCurve {
  device: number;
  /** null when the trace has no (ascending) times. */
  byTime: RankCurveSeries | null;
  byEvent: RankCurveSeries;
  events: number;
  peakBytes: number;
  /** Where the replayed peak is, from the trace's start: µs (null without times) and event index. */
  peakTimeUs: number | null;
  peakEvent: number;
}

export type RankFileResult =
  | {
      ok: true;
      file: string;
      summary: RankSummary;
      curve: RankCurve | null;
      /** The counters sidecar could not be used (the parser's message); the summary is without it. */
      countersError: string | null;
      bytes: number;
      ms: number;
    }
  | { ok: false; file: string; message: string; cancelled: boolean };

/** Max per bucket of allocated and reserved, carrying the state in from the left (as the timeline does). */
function series(r: Replay, xs: (i: number) => number, points: number): RankCurveSeries {
  const n = r.length;
  const x0 = xs(0);
  const span = Math.max(1, xs(n - 1) - x0);
  const B = Math.max(1, Math.min(points, n));
  const allocated = new Float64Array(B).fill(Number.NaN);
  const reserved = new Float64Array(B).fill(Number.NaN);
  let i = 0;
  let carryA = r.initial.allocatedBytes;
  let carryR = r.initial.reservedBytes;
  for (let b = 0; b < B; b++) {
    const end = b === B - 1 ? Number.POSITIVE_INFINITY : x0 + ((b + 1) * span) / B;
    let a = carryA;
    let v = carryR;
    while (i < n && xs(i) < end) {
      if (r.allocated[i] > a) a = r.allocated[i];
      if (r.reserved[i] > v) v = r.reserved[i];
      carryA = r.allocated[i];
      carryR = r.reserved[i];
      i++;
    }
    allocated[b] = a;
    reserved[b] = v;
  }
  return { points: B, span, allocated, reserved };
}

/** The curve of one device's replay, ≤ `points` per axis. */
export function rankCurve(r: Replay, points = RANK_CURVE_POINTS): RankCurve | null {
  const n = r.length;
  if (n === 0) return null;
  let monotone = r.hasTime;
  for (let i = 1; monotone && i < n; i++) if (r.x[i] < r.x[i - 1]) monotone = false;
  const peak = r.peakEvent ?? n - 1;
  return {
    device: r.device,
    byTime: monotone ? series(r, (i) => r.x[i], points) : null,
    byEvent: series(r, (i) => i, points),
    events: n,
    peakBytes: r.peakAllocatedBytes,
    peakTimeUs: monotone ? r.x[peak] - r.x[0] : null,
    peakEvent: peak,
  };
}

/** The device the peak is about, as the core's replayReport chooses it: the sidecar's, else the highest peak. */
function chosenReplay(replays: Map<number, Replay>, counters: CountersSidecar | null): Replay | null {
  if (counters?.device != null) return replays.get(counters.device) ?? null;
  let best: Replay | null = null;
  for (const r of replays.values()) {
    if (r.peakEvent === null) continue;
    if (!best || r.peakAllocatedBytes > best.peakAllocatedBytes) best = r;
  }
  return best ?? replays.values().next().value ?? null;
}

const message = (e: unknown) => (e instanceof Error ? e.message : String(e));

/**
 * Reads one rank's snapshot and summarises it (what `peakscope ranks FILE` computes for it), then drops
 * the model. `counters`: the text of its `.counters.json`, when one was dropped with it.
 */
export async function summarizeRankFile(
  file: Blob,
  name: string,
  counters: { text: string; name: string } | null,
  opts: { signal?: AbortSignal; points?: number } = {},
): Promise<RankFileResult> {
  const t0 = performance.now();
  let parsed: CountersSidecar | null = null;
  let raw: { rank?: unknown; world_size?: unknown } | null = null;
  let countersError: string | null = null;
  if (counters) {
    try {
      parsed = parseCounters(counters.text, counters.name);
      try {
        raw = JSON.parse(counters.text);
      } catch {
        raw = null;
      }
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
    const attribution = attribute(model);
    const inputs = replayInputs(attribution);
    const replays = prepareReplays(model, inputs);
    const replay = replayReport(model, inputs, parsed, { replays });
    const report = buildReport(model, { counters: parsed, attribution, replay });
    const summary = summaryFromReport(report, name, raw, "snapshot");
    const chosen = chosenReplay(replays, parsed);
    const curve = chosen ? rankCurve(chosen, opts.points) : null;
    return {
      ok: true,
      file: name,
      summary,
      curve,
      countersError,
      bytes: file.size,
      ms: performance.now() - t0,
    };
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

/** The typed arrays of a result, to transfer instead of copying. */
export function rankTransferables(r: RankFileResult): ArrayBuffer[] {
  if (!r.ok || !r.curve) return [];
  const out: ArrayBuffer[] = [];
  for (const s of [r.curve.byTime, r.curve.byEvent]) {
    if (s) out.push(s.allocated.buffer as ArrayBuffer, s.reserved.buffer as ArrayBuffer);
  }
  return out;
}
