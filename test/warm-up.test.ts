// The spare worker's warm-up snapshot (workers/warm-up.ts) must be written exactly as CPython's pickler
// writes torch's snapshots, or the JIT compiles the app for paths a user's file does not take (and
// deoptimises in the middle of their load). Python is the independent source: re-pickling what it reads
// must give the same bytes. It must also read as a consistent snapshot, whole or in slices.
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it, vi } from "vitest";
import { bytesByteSource } from "../src/core/formats/byte-source";
import { readSnapshot } from "../src/core/formats/read";
import { summarize } from "../src/core/model/summary";
import { Engine } from "../workers/engine";
import { cancelWarmUp, WARM_UP_VARIANTS, warmUp, warmUpSlice, warmUpSnapshot } from "../workers/warm-up";
import { fingerprint } from "./helpers/model";
import { python } from "./helpers/python";

const dir = mkdtempSync(join(tmpdir(), "peakscope-warm-up-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe.each(WARM_UP_VARIANTS)("warm-up snapshot, %s", (variant) => {
  const path = join(dir, `warm-up-${variant}.pickle`);
  const bytes = warmUpSnapshot(variant);
  writeFileSync(path, bytes);

  it("is byte for byte what CPython's pickler writes for the same objects (protocol 4)", () => {
    const out = python([
      "-c",
      [
        "import pickle, pickletools, sys, collections, json",
        "b = open(sys.argv[1], 'rb').read()",
        "again = pickle.dumps(pickle.loads(b), protocol=4)",
        "ops = collections.Counter(op.name for op, _, _ in pickletools.genops(b))",
        "print(json.dumps({'same': again == b, 'ops': ops}))",
      ].join("\n"),
      path,
    ]);
    const r = JSON.parse(out) as { same: boolean; ops: Record<string, number> };
    expect(r.same).toBe(true);
    // the opcodes real torch files are made of (see ../shared/fixtures/real), each at least once
    for (const op of [
      "FRAME",
      "MEMOIZE",
      "BINGET",
      "LONG_BINGET",
      "BININT1",
      "BININT2",
      "BININT",
      "LONG1",
      "BINFLOAT",
      "NEWTRUE",
      "NEWFALSE",
      "SHORT_BINUNICODE",
      "BINUNICODE",
      "TUPLE2",
      "EMPTY_DICT",
      "SETITEMS",
      "EMPTY_LIST",
      "APPENDS",
      "APPEND",
    ]) {
      expect(r.ops[op] ?? 0, op).toBeGreaterThan(0);
    }
  });

  it("reads as Python reads it, and its trace replays to its segments", async () => {
    const py = JSON.parse(python(["test/tools/py_inspect.py", path]));
    const s = summarize(await readSnapshot(bytesByteSource(bytes, "warm-up.pickle")));
    expect(s.segments).toBe(py.segments);
    expect(s.blocks).toBe(py.blocks);
    expect(s.traceEntries).toBe(py.traceEntries);
    expect(s.actions).toEqual(py.actions);
    // what a real trace has: segments made and given back, frees of blocks older than the trace, an OOM
    for (const action of [
      "segment_alloc",
      "segment_free",
      "alloc",
      "free_requested",
      "free_completed",
      "oom",
    ]) {
      expect(py.actions[action] ?? 0, action).toBeGreaterThan(0);
    }
    const engine = new Engine();
    const opened = await engine.open(new Blob([bytes as Uint8Array<ArrayBuffer>]), "warm-up.pickle");
    expect(opened.ok).toBe(true);
    // (snapshot-vs-peak may fail: the snapshot is not taken at the peak, as in most real files)
    const checks = engine.panel(0).report?.checks ?? [];
    for (const id of ["block-tiling", "active-total", "trace-replay"]) {
      expect(checks.find((c) => c.id === id)?.status, id).toBe("pass");
    }
  });

  it("gives the same model in every slice size the warm-up reads it in", async () => {
    const whole = await readSnapshot(bytesByteSource(bytes, "w"), { chunkBytes: 1 << 30 });
    const firsts = new Set(
      Array.from({ length: 30 }, (_, i) => warmUpSlice(i)).filter((b) => b < bytes.length),
    );
    expect(firsts.size).toBeGreaterThan(10);
    for (const first of firsts) {
      const sliced = await readSnapshot(bytesByteSource(bytes, "w"), {
        chunkBytes: first,
        maxChunkBytes: first * 4,
      });
      expect(fingerprint(sliced)).toEqual(fingerprint(whole));
    }
  });
});

describe("warm-up rounds", () => {
  it("stop() ends them before the next round; a file arriving (as the worker does it) ends them early", async () => {
    let calls = 0;
    expect(await warmUp(50, () => ++calls > 3)).toBe(3);
    // the worker: a side opens a file, so stop() turns true and the round in progress is cancelled.
    // Deterministic: the file "arrives" just as the third round's open has begun (the real open, watched),
    // so rounds 1–2 completed and the third is cancelled in the middle.
    let inUse = false;
    let opens = 0;
    const open = Engine.prototype.open;
    const watch = vi.spyOn(Engine.prototype, "open").mockImplementation(function (this: Engine, ...args) {
      const reading = open.apply(this, args);
      if (++opens === 3) {
        inUse = true;
        cancelWarmUp();
      }
      return reading;
    });
    try {
      expect(await warmUp(50, () => inUse)).toBe(2);
      expect(opens).toBe(3);
    } finally {
      watch.mockRestore();
    }
  });
});
