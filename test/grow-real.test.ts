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
});
