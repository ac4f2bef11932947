// The Summary pane's facts (src/core/report/summary-words.ts, `summary` in `report --json`): the peak's
// phase and text, the own-code lines at the peak, the OOM entries or that there are none. Expected values:
// the generator's truth (test/gen: the known run peaks in step 1's opt.step(), train.py:61) and Python
// reading the OOM entry from the pickle.

import { copyFileSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readSnapshotFile } from "../src/cli/read-file";
import { buildReport } from "../src/core/report";
import { python, pythonFirstOom, REPO } from "./helpers/python";

const GEN = join(REPO, "test/gen/generate.py");
const dir = mkdtempSync(join(tmpdir(), "peakscope-summary-"));
const MiB = 1024 * 1024;

describe("summary words", () => {
  it("known run: the peak, its phase (optimizer) and the own-code lines that held it", async () => {
    const file = join(dir, "known.pickle");
    python([GEN, "known", "--moment", "step3", file]);
    const truth = JSON.parse(readFileSync(`${file}.truth.json`, "utf8"));
    const r = buildReport(await readSnapshotFile(file));
    const s = r.summary;
    expect(s).not.toBeNull();
    expect(s?.peak?.bytes).toBe(truth.peak.allocatedBytes);
    expect(s?.peak?.eventIndex).toBe(truth.peak.eventIndex);
    expect(s?.peak?.phase).toBe("optimizer"); // the truth: during step 1's opt.step()
    expect(s?.peak?.isRunPeak).toBe(true);
    expect(s?.peak?.text).toBe(`peak ${(truth.peak.allocatedBytes / MiB).toFixed(2)} MiB`);
    expect(s?.peak?.windowReason).toBeNull();
    // opt.step() (train.py:61) made the optimizer state and the foreach temporaries; model.to (43) the weights
    const lines = s?.topOwnLines ?? [];
    expect(lines[0].label).toMatch(/^train\.py:61 /);
    expect(lines[0].bytes).toBe(truth.peak.categories.optimizer_state + truth.peak.categories.temporary);
    const to = lines.find((l) => l.label.startsWith("train.py:43 "));
    expect(to?.bytes).toBe(truth.peak.categories.parameters);
    expect(s?.holdsOom).toBe(false);
    expect(s?.ooms).toEqual([]);
    expect(s?.noOomNote).toBeNull();
  });

  it("recorded after step 1 without a sidecar: 'peak ≥ X (recorded window)' with the reason", async () => {
    const file = join(dir, "late.pickle");
    python([GEN, "known", "--moment", "step3", "--record-from", "after-step1", file]);
    const truth = JSON.parse(readFileSync(`${file}.truth.json`, "utf8"));
    const r = buildReport(await readSnapshotFile(file)); // no counters: the window's peak only
    const p = r.summary?.peak;
    expect(p?.bytes).toBe(truth.peak.allocatedBytes);
    expect(p?.isRunPeak).toBe(false);
    expect(p?.text).toBe(`peak ≥ ${(truth.peak.allocatedBytes / MiB).toFixed(2)} MiB (recorded window)`);
    expect(p?.windowReason).toMatch(/sidecar|max_entries/);
    expect(p?.phase).toBe("optimizer"); // step 2's opt.step()
  });

  it("an OOM file: the request, the largest free block, what the device reported free", async () => {
    const vdir = join(dir, "variants");
    python([GEN, "variants", vdir]);
    const file = join(vdir, "oom.pickle");
    const [event, size, deviceFree] = pythonFirstOom(file);
    const s = buildReport(await readSnapshotFile(file)).summary;
    expect(s?.holdsOom).toBe(true);
    expect(s?.ooms[0]).toMatchObject({
      device: 0,
      eventIndex: event,
      requestedBytes: size,
      deviceFreeBytes: deviceFree,
    });
    const o = s?.ooms[0];
    expect(o?.largestFreeBlockBytes).toBeLessThanOrEqual(o?.freeInCachedSegmentsBytes ?? -1);
    expect(o?.largestFreeBlockBytes).toBeLessThan(Math.ceil(size / 512) * 512);
    expect(s?.noOomNote).toBeNull();
  });

  it("a file named like an OOM dump that holds none says so", async () => {
    const file = join(dir, "known2.pickle");
    python([GEN, "known", "--moment", "step2", file]);
    const named = join(dir, "train_oom_snapshot.pickle");
    copyFileSync(file, named);
    const s = buildReport(await readSnapshotFile(named)).summary;
    expect(s?.holdsOom).toBe(false);
    expect(s?.noOomNote).toMatch(/holds no OOM entry/);
  });
});
