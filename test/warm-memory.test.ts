// The trace's entry columns move into warm memory (another thread's, already faulted in) when it comes,
// mid-read. Whenever it comes — at once, after some pushes, never, or after the columns grew past the
// estimate — every entry must read as Python reads it, and the memory must really be used.

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readSnapshotFile } from "../src/cli/read-file";
import { nodeWarmMemory } from "../src/cli/warm-memory";
import { TraceColumns } from "../src/core/model/builder";
import { dropRecycledMemory, recycledBytes, takeFloat64 } from "../src/core/model/recycled-memory";
import { type PrefaultJob, prefaultInOrder, type WarmMemory } from "../src/core/model/warm-memory";
import { growReal, HAVE_REAL, python, pythonPickleJson } from "./helpers/python";

/** Warm memory that comes on the `after`-th look (never when null), as a zero-filled buffer. */
function fakeWarm(
  after: number | null,
): WarmMemory & { given: ArrayBuffer[]; asked: number[]; cancelled: number } {
  const given: ArrayBuffer[] = [];
  const asked: number[] = [];
  const fake = {
    given,
    asked,
    cancelled: 0,
    minBytes: 0,
    ask(bytes: number) {
      asked.push(bytes);
      let looks = 0;
      let done = false;
      return {
        take: () => {
          if (done || after === null || ++looks < after) return null;
          done = true;
          const buffer = new ArrayBuffer(bytes);
          given.push(buffer);
          return buffer;
        },
        cancel: () => {
          if (!done) fake.cancelled++;
          done = true;
        },
      };
    },
  };
  return fake;
}

const TRAINING = "Wedsonlin__assignment2-systems__medium_256_training_memory_snapshot.pickle";
const tmp = mkdtempSync(join(tmpdir(), "peakscope-warm-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

type Entry = [string, number, number, number];

describe.runIf(HAVE_REAL)("warm memory for the trace's columns (a real-shaped file, against Python)", () => {
  // a real training snapshot grown to 16 MB (≈ 100 000 entries): more than the columns first make room
  // for, so that the read sizes them from its estimate and asks for warm memory
  const path = join(tmp, "grown.pickle");
  let expected: Entry[][] = [];
  /** The memo slots the pickle stores (MEMOIZE / BINPUT / LONG_BINPUT ops), by Python's pickletools. */
  let memoSlots = 0;
  beforeAll(() => {
    growReal(TRAINING, 16, path);
    expected = pythonPickleJson<Entry[][]>(
      path,
      "[[[e['action'], e.get('addr', 0), e.get('size', 0), e.get('time_us', 0)] for e in t] for t in d['device_traces']]",
    );
    memoSlots = Number(
      python([
        "-c",
        "import pickletools,sys; print(sum(1 for op,a,p in pickletools.genops(open(sys.argv[1],'rb').read()) if op.name in ('MEMOIZE','BINPUT','LONG_BINPUT')))",
        path,
      ]),
    );
  });

  it("reads every entry as Python does with the CLI's memory, its columns and memo shared", async () => {
    // the file is under the size whose columns are shared by default: minBytes 0 shares them anyway
    const warm = nodeWarmMemory();
    let shared: SharedArrayBuffer[] = [];
    let perRow: number[] = [];
    let at: number[] = [];
    let jobRows = 0;
    const model = await readSnapshotFile(path, {
      warmMemory: {
        ...warm,
        minBytes: 0,
        prefaultShared(buffers, bytesPerRow, rows, offsets) {
          shared = buffers;
          perRow = bytesPerRow;
          at = offsets ?? [];
          jobRows = rows;
          const prefault = warm.prefaultShared as NonNullable<typeof warm.prefaultShared>;
          return prefault(buffers, bytesPerRow, rows, offsets);
        },
      },
    });
    warm.release();
    // the five entry columns and isWorkspace, and the scanner's memo (in its WebAssembly memory); no
    // analysis's memory (ANALYSIS_WARM_BYTES_PER_ROW is 0)
    expect(shared.length).toBe(7);
    const t = model.traces[0];
    for (const c of [t.action, t.isWorkspace, t.addr, t.sizeBytes, t.timeUs, t.stack])
      expect(shared).toContain(c.buffer);
    expect(shared.slice(0, 6)).toEqual(
      [t.action, t.isWorkspace, t.stack, t.addr, t.sizeBytes, t.timeUs].map((c) => c.buffer),
    );
    expect(at.slice(0, 6)).toEqual([0, 0, 0, 0, 0, 0]);
    // the memo: its bytes per entry as Python counts the file's memo slots (4 bytes each), within the
    // estimate's error (it is measured on the first rows), and room for all of the job's rows
    const entries = expected.reduce((n, e) => n + e.length, 0);
    expect(perRow[6] / ((4 * memoSlots) / entries)).toBeGreaterThan(0.8);
    expect(perRow[6] / ((4 * memoSlots) / entries)).toBeLessThan(1.25);
    expect(at[6]).toBeGreaterThan(0);
    expect(at[6] + jobRows * perRow[6]).toBeLessThanOrEqual(shared[6].byteLength);
    expect(t.length).toBe(expected[0].length);
    for (const [d, entries] of expected.entries()) {
      const t = model.traces[d];
      for (let i = 0; i < entries.length; i++) {
        const [action, addr, size, timeUs] = entries[i];
        const got = [model.actionNames[t.action[i]], t.addr[i], t.sizeBytes[i], t.timeUs[i]];
        if (got[0] !== action || got[1] !== addr || got[2] !== size || got[3] !== timeUs)
          expect(got, `device ${d} entry ${i}`).toEqual(entries[i]);
      }
    }
  });

  for (const after of [1, 3, 40, null]) {
    it(`reads every entry as Python does, warm memory coming on look ${after ?? "never"}`, async () => {
      const warm = fakeWarm(after);
      const model = await readSnapshotFile(path, { warmMemory: warm });
      expect(warm.asked.length, "warm memory is asked for, one buffer per entry column").toBe(6);
      if (after !== null) {
        // every buffer given is what a column now lives in
        expect(warm.given.length).toBe(6);
        const used = new Set(
          model.traces
            .flatMap((t) => [t.action, t.isWorkspace, t.addr, t.sizeBytes, t.timeUs, t.stack])
            .map((c) => c.buffer),
        );
        for (const b of warm.given) expect(used.has(b)).toBe(true);
      } else expect(warm.given.length).toBe(0);
      expect(model.traces.length).toBe(expected.length);
      expect(expected[0].length).toBeGreaterThan(65_536);
      for (const [d, entries] of expected.entries()) {
        const t = model.traces[d];
        expect(t.length, `device ${d}`).toBe(entries.length);
        for (let i = 0; i < entries.length; i++) {
          const [action, addr, size, timeUs] = entries[i];
          const got = [model.actionNames[t.action[i]], t.addr[i], t.sizeBytes[i], t.timeUs[i]];
          // (one expect per mismatch only: the file holds about 100 000 entries)
          if (got[0] !== action || got[1] !== addr || got[2] !== size || got[3] !== timeUs)
            expect(got, `device ${d} entry ${i}`).toEqual(entries[i]);
        }
      }
    });
  }
});

describe("warm memory and the staging columns", () => {
  const row = (c: TraceColumns, i: number) =>
    c.pushRow(1 + (i % 3), 4096 * i, 512 + i, 0, 0, 1000 + 7 * i, i % 5, 0, 0, 0, 0);

  it("moves each column as its own buffer comes, keeping the rows written before", () => {
    const c = new TraceColumns();
    const warm = fakeWarm(2);
    c.warmMemory = warm;
    for (let i = 0; i < 10; i++) row(c, i);
    c.reserve(100_000);
    expect(warm.asked).toEqual([100_000, 100_000, 400_000, 800_000, 800_000, 800_000]);
    for (let i = 10; i < 90_000; i++) row(c, i);
    expect(warm.given.length).toBe(6);
    expect(c.addr.buffer).toBe(warm.given[3]);
    for (let i = 0; i < 90_000; i++) {
      if (c.addr[i] !== 4096 * i || c.sizeBytes[i] !== 512 + i || c.timeUs[i] !== 1000 + 7 * i)
        expect([i, c.addr[i], c.sizeBytes[i], c.timeUs[i]]).toEqual([i, 4096 * i, 512 + i, 1000 + 7 * i]);
      if (c.action[i] !== 1 + (i % 3) || c.stack[i] !== i % 5)
        expect([i, c.action[i], c.stack[i]]).toEqual([i, 1 + (i % 3), i % 5]);
    }
  });

  it("hands the warm columns' unused rows on to the recycled memory once the read is over", () => {
    dropRecycledMemory();
    const c = new TraceColumns();
    const warm = fakeWarm(1);
    c.warmMemory = warm;
    c.reserve(1_000_000);
    for (let i = 0; i < 700_000; i++) row(c, i);
    expect(warm.given.length).toBe(6);
    c.handOnWarmMemory();
    // 300 000 unused rows a column: stack 1.2 MB, addr, size and time 2.4 MB each; action's and
    // isWorkspace's 0.3 MB are under the pool's 1 MiB floor
    expect(recycledBytes()).toBe(300_000 * (4 + 8 + 8 + 8));
    // a column carved from them lies in a warm buffer past the rows, and writing it changes no row
    const carved = takeFloat64(300_000, -1);
    expect(warm.given).toContain(carved.buffer);
    const rowBytes = carved.buffer.byteLength / 1_000_000;
    expect(carved.byteOffset).toBeGreaterThanOrEqual(700_000 * rowBytes);
    // a row pushed afterwards goes to new memory, not into what was handed on
    row(c, 700_000);
    expect(carved.every((v) => v === -1)).toBe(true);
    for (let i = 0; i <= 700_000; i++) {
      if (c.addr[i] !== 4096 * i || c.sizeBytes[i] !== 512 + i || c.timeUs[i] !== 1000 + 7 * i)
        expect([i, c.addr[i], c.sizeBytes[i], c.timeUs[i]]).toEqual([i, 4096 * i, 512 + i, 1000 + 7 * i]);
      if (c.action[i] !== 1 + (i % 3) || c.stack[i] !== i % 5)
        expect([i, c.action[i], c.stack[i]]).toEqual([i, 1 + (i % 3), i % 5]);
    }
    dropRecycledMemory();
  });

  it("asks for the analysis's warm memory last, and hands it to the recycled memory after the read", () => {
    dropRecycledMemory();
    const c = new TraceColumns();
    const warm = Object.assign(fakeWarm(1), { analysisBytesPerRow: 16 });
    c.warmMemory = warm;
    c.reserve(200_000);
    // the five entry columns and isWorkspace first (they are needed from the next row on), then 16 bytes
    // a row
    expect(warm.asked).toEqual([200_000, 200_000, 800_000, 1_600_000, 1_600_000, 1_600_000, 3_200_000]);
    for (let i = 0; i < 200_000; i++) row(c, i);
    c.handOnWarmMemory();
    // all of it (the columns are full: no unused rows to hand on)
    expect(recycledBytes()).toBe(3_200_000);
    const carved = takeFloat64(400_000);
    expect(carved.buffer).toBe(warm.given[6]);
    dropRecycledMemory();
  });

  it("gives up warm memory asked for an estimate the columns grew past before it came", () => {
    const c = new TraceColumns();
    // it would come on the 30th look (a look every 4096 rows): after the growth at row 70 000
    const warm = fakeWarm(30);
    c.warmMemory = warm;
    c.reserve(70_000);
    for (let i = 0; i < 200_000; i++) row(c, i);
    expect(warm.cancelled).toBe(6);
    expect(warm.given.length).toBe(0);
    for (let i = 0; i < 80_000; i++)
      if (c.addr[i] !== 4096 * i || c.stack[i] !== i % 5)
        expect([i, c.addr[i], c.stack[i]]).toEqual([i, 4096 * i, i % 5]);
  });

  it("where threads share memory, the entry columns live in shared buffers the warmer faults in row by row", () => {
    dropRecycledMemory();
    const c = new TraceColumns();
    const jobs: { buffers: SharedArrayBuffer[]; bytesPerRow: number[]; rows: number }[] = [];
    let stops = 0;
    c.warmMemory = {
      minBytes: 0,
      analysisBytesPerRow: 16,
      ask: () => {
        throw new Error("nothing is asked for whole where the columns are shared");
      },
      prefaultShared(buffers, bytesPerRow, rows) {
        jobs.push({ buffers, bytesPerRow, rows });
        return () => stops++;
      },
    };
    for (let i = 0; i < 10; i++) row(c, i);
    c.reserve(100_000);
    expect(jobs.length).toBe(1);
    const [job] = jobs;
    // the five entry columns (action, stack, addr, size, time) and isWorkspace, then 16 bytes a row for
    // the analysis
    expect(job.bytesPerRow).toEqual([1, 1, 4, 8, 8, 8, 16]);
    expect(job.rows).toBe(100_000);
    expect(job.buffers.map((b) => b.byteLength)).toEqual([
      100_000, 100_000, 400_000, 800_000, 800_000, 800_000, 1_600_000,
    ]);
    expect(
      [c.action, c.isWorkspace, c.stack, c.addr, c.sizeBytes, c.timeUs].map((col) => col.buffer),
    ).toEqual(job.buffers.slice(0, 6));
    for (let i = 10; i < 90_000; i++) row(c, i);
    c.handOnWarmMemory();
    // the analysis's memory and the columns' 10 000 unused rows (action's 10 KB is under the 1 MiB floor;
    // so is each other column's, alone)
    expect(recycledBytes()).toBe(1_600_000);
    expect(takeFloat64(200_000).buffer).toBe(job.buffers[6]);
    dropRecycledMemory();
    for (let i = 0; i < 90_000; i++) {
      if (c.addr[i] !== 4096 * i || c.sizeBytes[i] !== 512 + i || c.timeUs[i] !== 1000 + 7 * i)
        expect([i, c.addr[i], c.sizeBytes[i], c.timeUs[i]]).toEqual([i, 4096 * i, 512 + i, 1000 + 7 * i]);
      if (c.action[i] !== 1 + (i % 3) || c.stack[i] !== i % 5)
        expect([i, c.action[i], c.stack[i]]).toEqual([i, 1 + (i % 3), i % 5]);
    }
    expect(stops).toBe(0);
  });

  it("stops the warmer when the shared columns are left for bigger ones", () => {
    const c = new TraceColumns();
    let stops = 0;
    c.warmMemory = {
      minBytes: 0,
      ask: () => ({ take: () => null, cancel: () => undefined }),
      prefaultShared: () => () => stops++,
    };
    c.reserve(70_000);
    for (let i = 0; i < 200_000; i++) row(c, i);
    expect(stops).toBe(1);
    for (let i = 0; i < 200_000; i++)
      if (c.addr[i] !== 4096 * i || c.stack[i] !== i % 5)
        expect([i, c.addr[i], c.stack[i]]).toEqual([i, 4096 * i, i % 5]);
  });
});

describe("the warmer's work on shared columns (prefaultInOrder)", () => {
  const job = (rows: number, stopped: boolean): PrefaultJob & { copies: Buffer[] } => {
    const bytesPerRow = [1, 8, 16];
    const buffers = bytesPerRow.map((b) => new SharedArrayBuffer(rows * b));
    // every byte its own value: the parser writes the same pages while the warmer touches them
    const copies = buffers.map((b, k) => {
      const u8 = new Uint8Array(b);
      for (let i = 0; i < u8.length; i++) u8[i] = (i * 7 + k) & 255;
      return Buffer.from(u8);
    });
    const stop = new SharedArrayBuffer(4);
    if (stopped) new Int32Array(stop)[0] = 1;
    return { buffers, bytesPerRow, rows, stop, copies };
  };

  /** Runs it with Atomics.add counted: which column (by byte length) and offset each touch was. */
  const touches = (j: PrefaultJob): [number, number][] => {
    const real = Atomics.add;
    const seen: [number, number][] = [];
    (Atomics as { add: unknown }).add = (a: Uint8Array, i: number, v: number) => {
      seen.push([j.buffers.indexOf(a.buffer as SharedArrayBuffer), i]);
      return real(a, i, v);
    };
    try {
      prefaultInOrder(j);
    } finally {
      (Atomics as { add: unknown }).add = real;
    }
    return seen;
  };

  it("touches one byte of every page, a block of rows of every column after another, and changes none", () => {
    const rows = 300_001; // 4 blocks of 65 536 rows and a part
    const j = job(rows, false);
    const seen = touches(j);
    // every page of every column once (4096-byte pages from each buffer's start)
    for (const [k, b] of j.bytesPerRow.entries()) {
      const offsets = seen.filter(([c]) => c === k).map(([, p]) => p);
      const pages = Math.ceil((rows * b) / 4096);
      expect(offsets, `column ${k}`).toEqual(Array.from({ length: pages }, (_, i) => i * 4096));
    }
    // in row order: column 2 (16 bytes a row) reaches the second block's rows before column 0 does
    const firstOfBlock1 = (k: number) =>
      seen.findIndex(([c, p]) => c === k && p >= 65_536 * j.bytesPerRow[k]);
    expect(firstOfBlock1(0)).toBeLessThan(firstOfBlock1(1));
    expect(firstOfBlock1(1)).toBeLessThan(firstOfBlock1(2));
    expect(seen.findIndex(([c]) => c === 2)).toBeLessThan(firstOfBlock1(0));
    j.buffers.forEach((b, k) => {
      expect(Buffer.from(new Uint8Array(b)).equals(j.copies[k]), `column ${k} unchanged`).toBe(true);
    });
  });

  it("starts each column's row 0 at its offset, and touches its pages from there on", () => {
    const rows = 70_000;
    const j = job(rows, false);
    // column 1 starts 10 000 bytes into its buffer (the memo in a WebAssembly memory), 12 bytes a row
    const buffer = new SharedArrayBuffer(10_000 + rows * 12);
    j.buffers[1] = buffer;
    j.bytesPerRow[1] = 12;
    j.offsets = [0, 10_000, 0];
    const seen = touches(j).filter(([c]) => c === 1);
    // the pages that start at or after the offset (the one holding it is the parser's already)
    const first = Math.ceil(10_000 / 4096) * 4096;
    const pages = Math.ceil((10_000 + rows * 12 - first) / 4096);
    expect(seen.map(([, p]) => p)).toEqual(Array.from({ length: pages }, (_, i) => first + i * 4096));
  });

  it("touches nothing once told to stop", () => {
    expect(touches(job(1000, true))).toEqual([]);
  });
});
