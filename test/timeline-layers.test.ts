// The timeline's layers in the worker (workers/timeline-layers.ts) on the generator's known run: the phase
// runs equal those Python reads from the stacks by the generator's documented train.py lines
// (e2e/tools/py_phases.py), and the allocation under the pointer in the stacked column is one of the
// blocks Python's replay finds live at that moment, inside the category the truth's bytes put at that
// height. Pure helpers of the layers (src/ui/views/timeline/phase-runs.ts) by hand-made runs.
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { gibLabel, phaseSummary, runAt } from "../src/ui/views/timeline/phase-runs";
import type { PhaseRun } from "../workers/api";
import { Engine } from "../workers/engine";
import { allocationOfBlock, blockAt, phaseRuns } from "../workers/timeline-layers";
import { python } from "./helpers/python";

interface Truth {
  peak: { allocatedBytes: number; eventIndex: number; categories: Record<string, number> };
  liveBlocks: { address: number; size: number; category: string; site: string | null; label: string }[];
}

describe("timeline layers in the worker (known run)", () => {
  let path = "";
  let truth: Truth;
  let engine: Engine;
  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), "tl-layers-"));
    path = join(dir, "known.pickle");
    python(["test/gen/generate.py", "known", path]);
    truth = JSON.parse(readFileSync(`${path}.truth.json`, "utf8"));
    engine = new Engine();
    const r = await engine.open(new Blob([readFileSync(path)]), "known.pickle");
    expect(r.ok).toBe(true);
  }, 60_000);

  it("phase runs equal Python's reading of the stacks", () => {
    const py = JSON.parse(python(["e2e/tools/py_phases.py", path])) as {
      events: number;
      runs: [string, number, number][];
    };
    expect(py.runs.length).toBeGreaterThan(3);
    const got = phaseRuns(engine, 0);
    expect(got.omitted).toBe(0);
    expect(got.runs.map((r) => [r.phase, r.startEvent, r.endEvent])).toEqual(py.runs);
    // Times: each run's start is its first event's time_us (the timeline's time axis).
    for (const r of got.runs) expect(Number.isFinite(r.startUs)).toBe(true);
  });

  it("the allocation under the pointer at the peak: live there, in the category the truth puts at that height", () => {
    const py = JSON.parse(python(["test/tools/replay.py", path])) as Record<
      string,
      { devices: { peakEvent: number; peakBytes: number; blocks: [number, number][] }[] }
    >;
    const dev = Object.values(py)[0].devices[0];
    expect(dev.peakEvent).toBe(truth.peak.eventIndex);
    const live = new Map(dev.blocks.map(([a, s]) => [a, s]));
    const names = engine.categoryNames();
    // The truth's bytes per category, stacked in the chart's order (category id from the bottom).
    const bands: { name: string; lo: number; hi: number }[] = [];
    let at = 0;
    for (const name of names) {
      const v = truth.peak.categories[name] ?? 0;
      if (v > 0) bands.push({ name, lo: at, hi: at + v });
      at += v;
    }
    expect(at).toBe(truth.peak.allocatedBytes);
    const q = { device: 0, axis: "event" as const, x0: dev.peakEvent, x1: dev.peakEvent + 1 };
    for (const band of bands) {
      for (const y of [band.lo + 1, (band.lo + band.hi) / 2, band.hi - 1]) {
        const hit = blockAt(engine, { ...q, yBytes: y });
        expect(hit?.event).toBe(dev.peakEvent);
        expect(hit?.category, `y=${y}`).toBe(band.name);
        expect(hit?.categoryBytes).toBe(band.hi - band.lo);
        const d = hit?.detail;
        expect(d, `y=${y}`).toBeTruthy();
        expect(live.get(d?.addr ?? -1), `block 0x${d?.addr.toString(16)} live at the peak`).toBe(
          d?.sizeBytes,
        );
      }
    }
    // The bottom of the column: the oldest parameter, W0 (the generator's first allocation), at train.py:43.
    const w0 = truth.liveBlocks.find((b) => b.label === "W0");
    const bottom = blockAt(engine, { ...q, yBytes: 1 });
    expect(bottom?.detail?.addr).toBe(w0?.address);
    expect(bottom?.detail?.sizeBytes).toBe(w0?.size);
    expect(bottom?.ownLine).toMatch(/train\.py:43/);
    // Above the stack: no allocation.
    const above = blockAt(engine, { ...q, yBytes: truth.peak.allocatedBytes + 1 });
    expect(above?.detail ?? null).toBeNull();
  });

  it("a snapshot block's replayed allocation has the block's address", () => {
    const map = engine.segmentMap({ device: 0, event: null });
    let checked = 0;
    for (let i = 0; i < map.blockRef.length && checked < 5; i++) {
      if (map.blockState[i] !== 1) continue;
      const k = allocationOfBlock(engine, 0, map.blockRef[i]);
      expect(k).toBeGreaterThanOrEqual(0);
      const block = engine.block({ device: 0, event: null }, map.blockRef[i]);
      expect(engine.allocation(0, k)?.addr).toBe(block?.address);
      checked++;
    }
    expect(checked).toBe(5);
  });
});

describe("phase-runs helpers", () => {
  const run = (phase: PhaseRun["phase"], a: number, b: number): PhaseRun => ({
    phase,
    startEvent: a,
    endEvent: b,
    startUs: Number.NaN,
    endUs: Number.NaN,
  });
  const runs = [
    run("parameters", 2, 6),
    run("forward", 6, 17),
    run("backward", 17, 61),
    run("forward", 61, 70),
  ];

  it("runAt finds the run holding an event, none before the first or past the last", () => {
    expect(runAt(runs, 0)).toBeNull();
    expect(runAt(runs, 2)?.phase).toBe("parameters");
    expect(runAt(runs, 16)?.phase).toBe("forward");
    expect(runAt(runs, 17)?.phase).toBe("backward");
    expect(runAt(runs, 69)?.startEvent).toBe(61);
    expect(runAt(runs, 70)).toBeNull();
    expect(runAt([], 3)).toBeNull();
  });

  it("phaseSummary counts runs per phase in words", () => {
    expect(phaseSummary(runs)).toBe("1 model set-up, 2 forward and 1 backward runs");
    expect(phaseSummary([run("optimizer", 0, 1)])).toBe("1 optimizer step run");
    expect(phaseSummary([])).toBe("no phases");
  });

  it("gibLabel always says GiB", () => {
    expect(gibLabel(80 * 1024 ** 3)).toBe("80.00 GiB");
    expect(gibLabel(0.1 * 1024 ** 3)).toBe("0.10 GiB");
    expect(gibLabel(1536 * 1024 ** 2)).toBe("1.50 GiB");
  });
});
