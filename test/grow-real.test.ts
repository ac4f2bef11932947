// The real-shaped benchmark input (test/gen/memgen/growreal.py, `generate.py grow-real`): with nothing
// added it writes every real dict-snapshot fixture opcode for opcode as the original file (CPython's memo
// layout, FRAME aside); grown, the file reads with no entry left out and its peak, the peak's event and
// the blocks live at it equal test/tools/replay.py's independent replay, in both address schemes.
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { readSnapshotFile } from "../src/cli/read-file";
import { prepareReplay, stateAt } from "../src/core/replay";
import { buildReport } from "../src/core/report";
import { growReal, HAVE_REAL, python, REAL_DIR } from "./helpers/python";

const TRAINING = "Wedsonlin__assignment2-systems__medium_256_training_memory_snapshot.pickle";
const tmp = mkdtempSync(join(tmpdir(), "peakscope-grow-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

interface PyDevice {
  device: number;
  events: number;
  peakBytes: number;
  peakEvent: number;
  blocks: [number, number][];
}

describe.skipIf(!HAVE_REAL)("grow-real", () => {
  it("writes each real dict snapshot exactly as CPython did when nothing is added", () => {
    const files = readdirSync(REAL_DIR).filter((f) => f.endsWith(".pickle"));
    const out = python([
      "-c",
      `import sys; sys.path.insert(0, "test/gen")
from memgen import growreal
for f in sys.argv[1:]:
    print(growreal.verify(f))`,
      ...files.map((f) => join(REAL_DIR, f)),
    ]);
    const counts = out.trim().split("\n").map(Number);
    expect(counts).toHaveLength(files.length);
    for (const c of counts) expect(c).toBeGreaterThan(0);
  });

  for (const addresses of ["banks", "unique"]) {
    it(`grows a training window ×3 (${addresses} addresses): read whole, peak as Python replays it`, async () => {
      const file = join(tmp, `grown-${addresses}.pickle`);
      const truth = JSON.parse(growReal(TRAINING, 8, file, ["--addresses", addresses]));
      expect(truth.repetitions).toBeGreaterThanOrEqual(3);
      const py: PyDevice = JSON.parse(python(["test/tools/replay.py", file]))[`grown-${addresses}.pickle`]
        .devices[0];
      const model = await readSnapshotFile(file);
      expect(model.traces[0].length).toBe(truth.entries);
      expect(py.events).toBe(truth.entries);
      const r = buildReport(model);
      expect(r.peak?.allocatedBytes).toBe(py.peakBytes);
      expect(r.peak?.eventIndex).toBe(py.peakEvent);
      // the peak is in a repetition, not the original window: the window's first optimizer step made
      // AdamW's state, which every later step holds
      expect(py.peakEvent).toBeGreaterThan(model.traces[0].length / truth.repetitions);
      expect(r.checks.find((c) => c.id === "trace-replay")?.status).toBe("pass");
      expect(r.checks.find((c) => c.id === "block-tiling")?.status).toBe("pass");
      const replay = prepareReplay(model, 0, { categoryCount: 1 });
      const live = stateAt(replay, py.peakEvent);
      const blocks: [number, number][] = [];
      for (let k = 0; k < live.address.length; k++) {
        if (!live.pendingFree[k]) blocks.push([live.address[k], live.sizeBytes[k]]);
      }
      blocks.sort((x, y) => x[0] - y[0]);
      expect(blocks).toEqual([...py.blocks].sort((x, y) => x[0] - y[0]));
    });
  }

  it("grows with pinned host memory (--host-pins): the host lane is the generator's allocator's, the device as without it", async () => {
    const plain = join(tmp, "grown-plain.pickle");
    const pinned = join(tmp, "grown-host.pickle");
    const plainTruth = JSON.parse(growReal(TRAINING, 8, plain, []));
    const truth = JSON.parse(growReal(TRAINING, 8, pinned, ["--host-pins", "12"]));
    expect(truth.repetitions).toBe(plainTruth.repetitions);
    // every step pins 12 tensors and frees the 12 of the step before (each free is two events)
    expect(truth.host.traceEntries).toBeGreaterThan(12 * truth.repetitions);
    const model = await readSnapshotFile(pinned);
    const r = buildReport(model);
    expect(r.host).not.toBeNull();
    expect({
      segments: r.host?.segments,
      reservedBytes: r.host?.reservedBytes,
      allocatedBytes: r.host?.allocatedBytes,
      peakAllocatedBytes: r.host?.peakAllocatedBytes,
      traceEntries: r.host?.traceEntries,
    }).toEqual(truth.host);
    // An id column varies in a table only where that table's entries differ (Python's reading): the host
    // entries' compile_context ("") differs from the device's ("N/A"), and must not make the device's vary.
    const ids = JSON.parse(
      python([
        "-c",
        `import pickle, sys, json
s = pickle.load(open(sys.argv[1], "rb"))
d, h = s["device_traces"][0], s["host_traces"]
same = lambda es, k: len({e.get(k) for e in es}) <= 1
print(json.dumps({"cc": not same(d, "compile_context"), "um": not same(d, "user_metadata"),
                  "hostCc": not same(d[:1] + h, "compile_context")}))`,
        pinned,
      ]),
    );
    expect(ids.hostCc).toBe(true);
    expect(model.traces[0].compileContext.varies).toBe(ids.cc);
    expect(model.traces[0].userMetadata.varies).toBe(ids.um);
    expect(model.host?.trace.compileContext.varies).toBe(true);
    // the device's trace and peak are those of the same growth without host memory (Python's replay)
    const py: PyDevice = JSON.parse(python(["test/tools/replay.py", plain]))["grown-plain.pickle"].devices[0];
    expect(model.traces[0].length).toBe(plainTruth.entries);
    expect(r.peak?.allocatedBytes).toBe(py.peakBytes);
    expect(r.peak?.eventIndex).toBe(py.peakEvent);
  });
});
