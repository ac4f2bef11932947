// Pass 1 made by the attribution helper as the file is read (src/core/attribution/streamed-pairing.ts):
// the rows paired in the pieces the read says are written, into shared memory, give exactly the pairing
// made in one go after the read; the pairing itself is checked against Python through the replays
// (replay-real.test.ts). Then the whole path on a real worker thread: `report --json` the same as without
// a helper, with the helper's pairing taken by the replays.

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { startNodeAttributionHelper } from "../src/cli/attribution-helper";
import { readSnapshotFile } from "../src/cli/read-file";
import { nodeWarmMemory } from "../src/cli/warm-memory";
import type { AttributionHelper } from "../src/core/attribution/handoff";
import {
  pairedFrom,
  StreamedPairing,
  StreamFeed,
  sharedPaired,
} from "../src/core/attribution/streamed-pairing";
import { Action, type TraceTable } from "../src/core/model/types";
import { noAnomalies, type Paired, type PairingColumns, pairEntries } from "../src/core/replay/pairing";
import { growReal, HAVE_REAL } from "./helpers/python";
import { pythonTraceEntries, reportJson } from "./helpers/report-json";
import { rng } from "./replay-sim";

const TRAINING = "Wedsonlin__assignment2-systems__medium_256_training_memory_snapshot.pickle";
const tmp = mkdtempSync(join(tmpdir(), "peakscope-streamed-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** Everything a pairing says, as plain values. */
function facts(p: Paired) {
  const n = p.count;
  const t = p.table;
  const map: [number, number, number][] = [];
  for (let s = 0; s < p.map.keys.length; s++) {
    const k = p.map.keys[s];
    if (!Number.isNaN(k)) map.push([k, p.map.values[s], p.map.second ? p.map.second[s] : -2]);
  }
  map.sort((a, b) => a[0] - b[0]);
  return {
    count: n,
    eventAllocation: Array.from(p.eventAllocation.subarray(0, p.eventAllocation.length)),
    eventKind: Array.from(p.eventKind),
    ownAddress: Array.from(t.ownAddress.subarray(0, n)),
    ownRequestedBytes: Array.from(t.ownRequestedBytes.subarray(0, n)),
    origin: Array.from(t.origin.subarray(0, n)),
    allocEvent: Array.from(t.allocEvent.subarray(0, n)),
    freeRequestedEvent: Array.from(t.freeRequestedEvent.subarray(0, n)),
    freeCompletedEvent: Array.from(t.freeCompletedEvent.subarray(0, n)),
    implicitCloses: [...p.implicitCloses],
    map,
  };
}

/** Where two pairings' facts differ: each fact's first differing element (an empty list when none). */
function differences(a: ReturnType<typeof facts>, b: ReturnType<typeof facts>): unknown[] {
  const out: unknown[] = [];
  for (const key of Object.keys(a) as (keyof typeof a)[]) {
    const x = a[key];
    const y = b[key];
    if (!Array.isArray(x) || !Array.isArray(y)) {
      if (x !== y) out.push([key, x, y]);
      continue;
    }
    if (x.length !== y.length) out.push([key, "length", x.length, y.length]);
    const i = x.findIndex((v, j) => JSON.stringify(v) !== JSON.stringify(y[j]));
    if (i >= 0) out.push([key, i, x[i], y[i]]);
  }
  return out;
}

/** Pass 1 in one go, as the reading thread makes it without a helper. */
function whole(c: PairingColumns, n: number) {
  const anomalies = noAnomalies();
  const paired = pairEntries(n, c.action, c.isWorkspace, c.addr, c.sizeBytes, c.stack, 16, anomalies);
  return { paired, anomalies };
}

/** Pass 1 as the helper makes it: the rows said written in pieces of `pieces` rows, then the rest. */
function streamed(c: PairingColumns, n: number, pieces: number[], analysisBytes: number) {
  const helper = new StreamedPairing();
  const analysis = new SharedArrayBuffer(analysisBytes);
  helper.receive({
    stream: { columns: c, rows: n, analysis: { buffer: analysis, byteOffset: 0, byteLength: analysisBytes } },
  });
  let at = 0;
  for (const k of pieces) {
    at = Math.min(n, at + k);
    helper.receive({ streamRows: at });
  }
  const run = helper.finish(n);
  expect(run).not.toBeNull();
  // across to the reading thread: the shared columns shared, the rest copied (as postMessage does)
  const crossed = structuredClone(sharedPaired(run as NonNullable<typeof run>));
  expect(crossed.eventAllocation.buffer).toBeInstanceOf(SharedArrayBuffer);
  expect(crossed.table.allocEvent.buffer).toBeInstanceOf(SharedArrayBuffer);
  const trace = { addr: c.addr, sizeBytes: c.sizeBytes, stack: c.stack } as TraceTable;
  return { paired: pairedFrom(crossed, trace), anomalies: crossed.anomalies };
}

/** Columns of `n` entries in shared memory, filled by `fill`. */
function sharedColumns(n: number): PairingColumns {
  return {
    action: new Uint8Array(new SharedArrayBuffer(n)),
    isWorkspace: new Uint8Array(new SharedArrayBuffer(n)),
    addr: new Float64Array(new SharedArrayBuffer(n * 8)),
    sizeBytes: new Float64Array(new SharedArrayBuffer(n * 8)),
    stack: new Int32Array(new SharedArrayBuffer(n * 4)),
  };
}

describe("the helper's pass 1, paired as the rows are written", () => {
  it("every kind of entry pass 1 tells apart: the same as in one go, the anomalies counted as written", () => {
    const A = Action;
    // [action, address, size]: frees of memory allocated before the trace (one requested, one only
    // completed), an alloc over a live one, a repeated free_requested, a free_completed without its
    // request, an entry without an address, a segment entry, and a workspace entry
    const rows: [number, number, number][] = [
      [A.free_requested, 0x1000, 512],
      [A.free_completed, 0x1000, 512],
      [A.free_completed, 0x2000, 1024],
      [A.alloc, 0x3000, 512],
      [A.alloc, 0x3000, 512],
      [A.free_requested, 0x3000, 512],
      [A.free_requested, 0x3000, 512],
      [A.free_completed, 0x3000, 512],
      [A.alloc, 0x4000, 2048],
      [A.free_completed, 0x4000, 2048],
      [A.alloc, Number.NaN, 512],
      [A.segment_alloc, 0x10000, 1 << 20],
      [A.alloc, 0x5000, 512],
    ];
    const n = rows.length;
    const c = sharedColumns(n);
    rows.forEach(([a, addr, size], i) => {
      c.action[i] = a;
      c.addr[i] = addr;
      c.sizeBytes[i] = size;
      c.stack[i] = i;
    });
    c.isWorkspace[n - 1] = 1;
    const one = whole(c, n);
    for (const pieces of [[1], [3, 1, 4, 1, 5], [n]]) {
      const got = streamed(c, n, pieces, 4096);
      expect(differences(facts(got.paired), facts(one.paired))).toEqual([]);
      expect(got.anomalies).toEqual(one.anomalies);
    }
    // counted from the rows above, by hand
    expect(one.anomalies).toEqual({
      entriesWithoutAddress: 1,
      allocOverLive: 1,
      freesOfAllocationsBeforeTrace: 2,
      repeatedFreeRequested: 1,
      completedWithoutRequest: 1,
    });
    // the segment entry, the entry without an address and the workspace entry belong to no allocation
    expect([10, 11, 12].map((i) => one.paired.eventAllocation[i])).toEqual([-1, -1, -1]);
  });

  it("200 000 random entries over few addresses, in random pieces, out of memory too small: the same", () => {
    const n = 200_000;
    const c = sharedColumns(n);
    const r = rng(25);
    for (let i = 0; i < n; i++) {
      const u = r();
      c.action[i] =
        u < 0.4
          ? Action.alloc
          : u < 0.7
            ? Action.free_requested
            : u < 0.97
              ? Action.free_completed
              : Action.segment_map;
      c.addr[i] = 512 * Math.floor(r() * 5000);
      c.sizeBytes[i] = 512 * (1 + Math.floor(r() * 8));
      c.stack[i] = Math.floor(r() * 100);
    }
    const one = whole(c, n);
    const pieces = Array.from({ length: 60 }, () => Math.floor(r() * 8000));
    // (64 KB of analysis memory: most columns fall back to fresh shared memory, and the table grows)
    const got = streamed(c, n, pieces, 1 << 16);
    expect(differences(facts(got.paired), facts(one.paired))).toEqual([]);
    expect(got.anomalies).toEqual(one.anomalies);
  });

  it("a pairing told to stop (the columns grew), or past the rows it was given, is not used", () => {
    const c = sharedColumns(10);
    const helper = new StreamedPairing();
    helper.receive({ stream: { columns: c, rows: 10, analysis: null } });
    helper.receive({ streamRows: 5 });
    helper.receive({ streamStop: true });
    expect(helper.finish(5)).toBeNull();
    helper.receive({ stream: { columns: c, rows: 10, analysis: null } });
    expect(helper.finish(11)).toBeNull();
    helper.receive({ stream: { columns: c, rows: 10, analysis: null } });
    helper.receive({ streamRows: 8 });
    expect(helper.finish(6)).toBeNull(); // paired past the trace's end
  });
});

describe("which trace the helper's pairing is of (the reading thread's check at the read's end)", () => {
  /** A trace of `n` rows viewing `c` from row `from`. */
  const view = (c: PairingColumns, from: number, n: number) =>
    ({
      length: n,
      action: c.action.subarray(from, from + n),
      addr: c.addr.subarray(from, from + n),
      sizeBytes: c.sizeBytes.subarray(from, from + n),
      isWorkspace: c.isWorkspace.subarray(from, from + n),
      stack: c.stack.subarray(from, from + n),
    }) as unknown as TraceTable;
  const empty = { length: 0 } as TraceTable;
  const fed = (c: PairingColumns, rows: number) => {
    const sent: unknown[] = [];
    const feed = new StreamFeed((m) => sent.push(m), 10);
    feed.start({ columns: c, rows: 1000, analysis: null });
    feed.rows(rows);
    return { feed, sent };
  };

  it("the one trace with entries, all the staged rows from the first: the helper's", () => {
    const c = sharedColumns(1000);
    const { feed, sent } = fed(c, 600);
    expect(sent).toEqual([expect.objectContaining({ stream: expect.anything() }), { streamRows: 600 }]);
    expect(feed.streamedTrace([empty, view(c, 0, 640), empty])).toBe(1);
  });

  it("two traces with entries, a trace not from the first row, other columns, fewer rows than told: not", () => {
    const c = sharedColumns(1000);
    expect(fed(c, 600).feed.streamedTrace([view(c, 0, 300), view(c, 300, 340)])).toBe(-1);
    expect(fed(c, 600).feed.streamedTrace([view(c, 8, 632)])).toBe(-1);
    expect(fed(c, 600).feed.streamedTrace([view(sharedColumns(1000), 0, 640)])).toBe(-1);
    expect(fed(c, 600).feed.streamedTrace([view(c, 0, 500)])).toBe(-1);
    // told to stop (the columns grew): not
    const stopped = fed(c, 600).feed;
    stopped.stop();
    expect(stopped.streamedTrace([view(c, 0, 640)])).toBe(-1);
  });
});

describe.skipIf(!HAVE_REAL)(
  "the helper pairing a real file's trace as it is read (a real worker thread)",
  () => {
    it("report --json is the same as without a helper, the replays on the helper's pairing", async () => {
      const out = join(tmp, "grown-streamed.pickle");
      growReal(TRAINING, 16, out);
      const alone = await reportJson(out, { readSnapshot: (p) => readSnapshotFile(p) });
      const thread = startNodeAttributionHelper();
      expect(thread).not.toBeNull();
      if (!thread) return;
      await thread.up;
      const seen = { columns: 0, rows: 0, kept: null as boolean | null, answered: 0 };
      const spy: AttributionHelper = {
        attribute(model) {
          const p = thread.attribute(model);
          p?.then(() => seen.answered++);
          return p;
        },
        async paired() {
          seen.kept = await thread.paired();
          return seen.kept;
        },
        streamColumns(start) {
          seen.columns++;
          thread.streamColumns(start);
        },
        streamRows(rows) {
          seen.rows++;
          thread.streamRows(rows);
        },
        streamStop: () => thread.streamStop(),
        close: () => thread.close(),
      };
      // the CLI's warmer, asked for this small file too: its columns shared as a file of ≥ 128 MB has them
      const warm = nodeWarmMemory();
      const helped = await reportJson(out, {
        readSnapshot: (p, helper) => readSnapshotFile(p, { warmMemory: { ...warm, minBytes: 0 } }, helper),
        attributionHelper: () => spy,
      });
      warm.release();
      expect(seen.columns).toBe(1);
      expect(seen.rows).toBeGreaterThan(1);
      expect(seen.kept).toBe(true);
      expect(seen.answered).toBe(1);
      expect(helped.code).toBe(alone.code);
      expect(helped.json).toEqual(alone.json);
      const entries = pythonTraceEntries(out);
      expect(helped.json.timeline.events).toBe(entries);
    });
  },
);
