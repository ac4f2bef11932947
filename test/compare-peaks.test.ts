// Two files compared at their peaks (core compare/peaks.ts, `report A --compare B --json` → compare.atPeaks).
// Expected values: test/tools/py_peak_sites.py (Python replays each real pickle to its peak and groups what is
// live there by the innermost own-code line), the generator's truth (its simulation's own bookkeeping of the
// peak), and plain sums in the test — never the code under test.

import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readSnapshotFile } from "../src/cli/read-file";
import { attribute, CATEGORY_NAMES } from "../src/core/attribution";
import { comparePeaks, peakSide } from "../src/core/compare/peaks";
import type { SnapshotModel } from "../src/core/model/types";
import { prepareReplays } from "../src/core/replay/report";
import { buildReport, replayInputs } from "../src/core/report";
import { renderReportText } from "../src/core/report/text";
import { REAL_STACKS } from "./attribution-real-stacks";
import { HAVE_REAL, python, REAL_DIR, REPO } from "./helpers/python";
import { buildModel, type Frames, MiB } from "./report-fixtures";

interface PyPeakSites {
  device: number;
  peakBytes: number;
  peakEvent: number;
  snapshotAllocatedBytes: number;
  ownLines: Record<string, number>;
  otherBytes: number;
}

const TRAINING_A = "Wedsonlin__assignment2-systems__medium_256_training_memory_snapshot.pickle";
const TRAINING_B = "kkaitlyn111__cs336-a2-systems__memory_ctx128_fullstep.pickle";

const sumOf = (r: Record<string, number>) => Object.values(r).reduce((a, b) => a + b, 0);

describe.skipIf(!HAVE_REAL)("compare at the peaks: two real training files", () => {
  const py: Record<string, PyPeakSites> = HAVE_REAL
    ? JSON.parse(
        python(["test/tools/py_peak_sites.py", join(REAL_DIR, TRAINING_A), join(REAL_DIR, TRAINING_B)]),
      )
    : {};

  it("compare.atPeaks: each moment is Python's peak; B − A is Python's peak of B minus its peak of A", async () => {
    const [a, b] = [py[TRAINING_A], py[TRAINING_B]];
    const [ma, mb] = await Promise.all(
      [TRAINING_A, TRAINING_B].map((f) => readSnapshotFile(join(REAL_DIR, f))),
    );
    const c = buildReport(ma, { other: mb }).compare;
    const p = c?.atPeaks;
    expect(p?.basePeak).toMatchObject({
      device: a.device,
      eventIndex: a.peakEvent,
      allocatedBytes: a.peakBytes,
    });
    expect(p?.otherPeak).toMatchObject({
      device: b.device,
      eventIndex: b.peakEvent,
      allocatedBytes: b.peakBytes,
    });
    expect(p?.totalDeltaBytes).toBe(b.peakBytes - a.peakBytes);
    // The categories add up to it exactly, in CATEGORY_NAMES order.
    expect(Object.keys(p?.categories ?? {})).toEqual([...CATEGORY_NAMES]);
    expect(sumOf(p?.categories ?? {})).toBe(b.peakBytes - a.peakBytes);
    // Both files were dumped after the step: the snapshot comparison (unchanged) answers something else.
    expect(c?.totalDeltaBytes).toBe(b.snapshotAllocatedBytes - a.snapshotAllocatedBytes);
    expect(p?.totalDeltaBytes).not.toBe(c?.totalDeltaBytes);
    // The text report says it too.
    const text = renderReportText(buildReport(ma, { other: mb }));
    expect(text).toContain("at the peaks (what each held at its highest allocated moment)");
    expect(text).toContain(`after event ${a.peakEvent} of device ${a.device}`);
  });

  it("per own-code line: B − A at the peaks equals Python's grouping of what is live at each peak", async () => {
    const [a, b] = [py[TRAINING_A], py[TRAINING_B]];
    const sides = await Promise.all(
      [TRAINING_A, TRAINING_B].map(async (f) => {
        const model = await readSnapshotFile(join(REAL_DIR, f));
        const attribution = attribute(model);
        return peakSide(prepareReplays(model, replayInputs(attribution)), attribution);
      }),
    );
    expect(sides[0] && sides[1]).toBeTruthy();
    const all = comparePeaks(sides[0]!, sides[1]!, Number.POSITIVE_INFINITY);
    const lines = new Set([...Object.keys(a.ownLines), ...Object.keys(b.ownLines)]);
    expect(lines.size).toBeGreaterThan(10);
    const bySite = new Map(all.callSites.map((s) => [s.site, s.deltaBytes]));
    for (const line of lines) {
      const delta = (b.ownLines[line] ?? 0) - (a.ownLines[line] ?? 0);
      expect(bySite.get(line) ?? 0, line).toBe(delta);
    }
    // Every other site (library, native, no stack) adds up to Python's remainder.
    let rest = 0;
    for (const s of all.callSites) if (!lines.has(s.site)) rest += s.deltaBytes;
    expect(rest).toBe(b.otherBytes - a.otherBytes);
    // The report lists the 20 largest of them, in order.
    const [ma, mb] = await Promise.all(
      [TRAINING_A, TRAINING_B].map((f) => readSnapshotFile(join(REAL_DIR, f))),
    );
    const listed = buildReport(ma, { other: mb }).compare?.atPeaks?.callSites ?? [];
    expect(listed.map((s) => [s.site, s.deltaBytes])).toEqual(
      all.callSites.slice(0, 20).map((s) => [s.site, s.deltaBytes]),
    );
  });

  it("a file without a trace: no peak to compare (atPeaks null), the snapshots still compared", async () => {
    const [ma, none] = await Promise.all(
      [TRAINING_A, "Muduard__LayoutEditing__memory_snapshot.pkl"].map((f) =>
        readSnapshotFile(join(REAL_DIR, f)),
      ),
    );
    const c = buildReport(ma, { other: none }).compare;
    expect(c?.atPeaks).toBeNull();
    expect(typeof c?.totalDeltaBytes).toBe("number");
    expect(renderReportText(buildReport(ma, { other: none }))).toContain("at the peaks: not compared");
  });
});

describe("compare at the peaks: the generator's known run (truth from its simulation)", () => {
  const dir = mkdtempSync(join(tmpdir(), "cmp-peaks-"));
  const gen = (name: string, args: string[]) => {
    const out = join(dir, name);
    execFileSync("python3", [join(REPO, "test/gen/generate.py"), "known", ...args, out], { stdio: "pipe" });
    return out;
  };
  const truth = (f: string) => JSON.parse(readFileSync(`${f}.truth.json`, "utf8"));
  const step3 = gen("step3.pickle", ["--moment", "step3"]);
  const midWindows = gen("mid-windows.pickle", ["--moment", "mid_backward", "--paths", "windows"]);
  const npu = gen("npu.pickle", ["--moment", "step3", "--layout", "npu"]);

  const compareFiles = async (fa: string, fb: string) => {
    const [ma, mb] = await Promise.all([fa, fb].map((f) => readSnapshotFile(f)));
    return buildReport(ma, { other: mb }).compare;
  };

  it("dumped mid-backward on Windows vs after step 3 on Linux: the same peak (no change), snapshots +10 MiB", async () => {
    const [ta, tb] = [truth(step3), truth(midWindows)];
    const c = await compareFiles(step3, midWindows);
    const p = c?.atPeaks;
    // The truth's peak: its event and bytes, and B − A per category at the peaks.
    expect(p?.basePeak).toMatchObject({
      eventIndex: ta.peak.eventIndex,
      allocatedBytes: ta.peak.allocatedBytes,
    });
    expect(p?.otherPeak).toMatchObject({
      eventIndex: tb.peak.eventIndex,
      allocatedBytes: tb.peak.allocatedBytes,
    });
    for (const name of CATEGORY_NAMES) {
      expect(p?.categories[name], name).toBe(
        (tb.peak.categories[name] ?? 0) - (ta.peak.categories[name] ?? 0),
      );
    }
    expect(p?.totalDeltaBytes).toBe(0);
    // The same lines of train.py on both machines: no call site changed at the peaks.
    expect(p?.callSites).toEqual([]);
    expect(p?.verdict).toBe("no change: +0.00 MiB in every category");
    // At the snapshots the mid-backward dump holds 10 MiB more (the truth's snapshot bytes).
    expect(c?.totalDeltaBytes).toBe(tb.snapshot.allocatedBytes - ta.snapshot.allocatedBytes);
    expect(c?.totalDeltaBytes).toBe(10 * MiB);
  });

  it("torch_npu's +32 bytes per request: B − A per category at the peaks is the truth's", async () => {
    const [ta, tb] = [truth(step3), truth(npu)];
    const p = (await compareFiles(step3, npu))?.atPeaks;
    let moved = 0;
    for (const name of CATEGORY_NAMES) {
      const delta = (tb.peak.categories[name] ?? 0) - (ta.peak.categories[name] ?? 0);
      if (delta !== 0) moved++;
      expect(p?.categories[name], name).toBe(delta);
    }
    expect(moved).toBeGreaterThan(2);
    expect(p?.totalDeltaBytes).toBe(tb.peak.allocatedBytes - ta.peak.allocatedBytes);
  });
});

describe("compare at the peaks: unknown blocks matched to the other file's parameters (MATCH_RULE)", () => {
  const S = REAL_STACKS;
  const BASE = 0x10000000;
  const activation: Frames = S.windowsPythonOnlyForward.frames;
  /**
   * Two 6 MiB weights, then a 10 MiB activation allocated and freed (the peak: 22 MiB). `recorded`: the
   * weights' allocation is in the trace with its stack; otherwise recording began after them (no stack).
   */
  const run = (recorded: boolean): SnapshotModel => {
    const weights = recorded ? S.moduleCudaNative.frames : undefined;
    const entries = [
      ...(recorded
        ? [
            { action: "alloc", addr: BASE, size: 6 * MiB, frames: weights },
            { action: "alloc", addr: BASE + 6 * MiB, size: 6 * MiB, frames: weights },
          ]
        : []),
      { action: "alloc", addr: BASE + 12 * MiB, size: 10 * MiB, frames: activation },
      { action: "free_requested", addr: BASE + 12 * MiB, size: 10 * MiB, frames: activation },
      { action: "free_completed", addr: BASE + 12 * MiB, size: 10 * MiB, frames: activation },
    ];
    return buildModel(
      [
        {
          address: BASE,
          blocks: [
            { size: 6 * MiB, frames: weights },
            { size: 6 * MiB, frames: weights },
            { size: 10 * MiB, state: "inactive" },
          ],
        },
      ],
      [{ device: 0, entries }],
    );
  };

  it("the same weights, recorded in A and not in B: no change at the peaks, and what was matched", () => {
    const a = run(true);
    const b = run(false);
    // Unmatched, B's weights are unknown at its peak and A's are parameters: −12 MiB / +12 MiB.
    expect(buildReport(b).peak?.categories.unknown).toBe(12 * MiB);
    expect(buildReport(a).peak?.categories.parameters).toBe(12 * MiB);
    const p = buildReport(a, { other: b }).compare?.atPeaks;
    // Both peaks: the weights and the activation, 22 MiB (a plain sum of the fixture).
    expect(p?.basePeak.allocatedBytes).toBe(22 * MiB);
    expect(p?.otherPeak.allocatedBytes).toBe(22 * MiB);
    expect(p?.matched).toEqual([
      { side: "other", sizeBytes: 6 * MiB, blocks: 2, bytes: 12 * MiB, site: expect.any(String) },
    ]);
    expect(p?.matchedBytes).toEqual({ base: 0, other: 12 * MiB });
    for (const name of CATEGORY_NAMES) expect(p?.categories[name], name).toBe(0);
    expect(p?.callSites).toEqual([]);
    expect(p?.verdict).toBe("no change: +0.00 MiB in every category");
  });
});
