// Replay against helper-1's generator (test/gen/generate.py): the known run's peak and its composition,
// and random traces. Expected values come from the generator's OUT.truth.json (its own bookkeeping).

import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readSnapshotFile } from "../src/cli/read-file";
import { attribute } from "../src/core/attribution";
import type { SnapshotModel } from "../src/core/model/types";
import {
  compositionAt,
  liveAllocationsAt,
  Origin,
  prepareReplay,
  type ReplayInputs,
  replayReport,
  stateAtReport,
} from "../src/core/replay";
import { addressOf, requestedOf } from "../src/core/replay/types";
import { parseCounters } from "../src/core/report/counters";
import { python, REPO } from "./helpers/python";

const GEN = join(REPO, "test/gen/generate.py");
const dir = mkdtempSync(join(tmpdir(), "peakscope-replay-gen-"));

function inputsFor(model: SnapshotModel): ReplayInputs {
  const a = attribute(model);
  return {
    traceCategory: a.traceCategory,
    traceSite: a.traceSite,
    blockCategory: a.blockCategory,
    blockSite: a.blockSite,
    categoryNames: [...a.categoryNames],
    siteKeys: a.sites.map((s) => s.key),
  };
}

interface KnownTruth {
  peak: {
    allocatedBytes: number;
    requestedBytes: number;
    eventIndex: number;
    categories: Record<string, number>;
  } | null;
  peakRequested: { bytes: number; eventIndex: number };
  maxMemoryAllocated: number;
  traceEntries: number;
  snapshot: { allocatedBytes: number; reservedBytes: number; categories: Record<string, number> };
}

async function known(args: string[], name: string) {
  const out = join(dir, name);
  python([GEN, "known", ...args, out]);
  const truth: KnownTruth = JSON.parse(readFileSync(`${out}.truth.json`, "utf8"));
  const counters = parseCounters(readFileSync(`${out}.counters.json`, "utf8"));
  const model = await readSnapshotFile(out);
  return { truth, counters, model };
}

describe("the known run (generate.py known)", () => {
  const cases: { args: string[]; name: string }[] = [
    {
      args: ["--layout", "cuda-all", "--paths", "linux", "--moment", "mid_backward"],
      name: "all-mid.pickle",
    },
    { args: ["--layout", "cuda-all", "--paths", "linux", "--moment", "step3"], name: "all-step3.pickle" },
    { args: ["--layout", "cuda-python", "--paths", "conda", "--moment", "step2"], name: "py-step2.pickle" },
    { args: ["--layout", "npu", "--paths", "linux", "--moment", "mid_backward"], name: "npu-mid.pickle" },
  ];
  for (const { args, name } of cases) {
    it(`${args.join(" ")}: peak, its composition and the end state equal the truth`, async () => {
      const { truth, counters, model } = await known(args, name);
      const inputs = inputsFor(model);
      const r = prepareReplay(model, 0, {
        traceCategory: inputs.traceCategory?.[0],
        traceSite: inputs.traceSite?.[0],
        blockCategory: inputs.blockCategory,
        blockSite: inputs.blockSite,
        categoryCount: inputs.categoryNames.length,
      });
      expect(r.check.status, r.check.detail).toBe("pass");
      expect(r.length).toBe(truth.traceEntries);
      expect(r.end.replayAllocatedBytes).toBe(truth.snapshot.allocatedBytes);
      expect(r.end.replayReservedBytes).toBe(truth.snapshot.reservedBytes);
      const peak = truth.peak as NonNullable<KnownTruth["peak"]>;
      expect(r.peakAllocatedBytes).toBe(peak.allocatedBytes);
      expect(r.peakEvent).toBe(peak.eventIndex);
      expect(r.requested[peak.eventIndex]).toBe(peak.requestedBytes);
      let maxReq = 0;
      let maxReqAt = -1;
      for (let i = 0; i < r.length; i++) {
        if (r.requested[i] > maxReq) {
          maxReq = r.requested[i];
          maxReqAt = i;
        }
      }
      expect([maxReq, maxReqAt]).toEqual([truth.peakRequested.bytes, truth.peakRequested.eventIndex]);

      const rep = replayReport(model, inputs, counters);
      expect(rep.peak?.source).toBe("trace");
      expect(rep.peak?.allocatedBytes).toBe(peak.allocatedBytes);
      expect(rep.peak?.allocatedBytes).toBe(truth.maxMemoryAllocated);
      expect(rep.peak?.categories).toEqual(peak.categories);
      expect(rep.peak?.topCallSites.reduce((s, x) => s + x.bytes, 0)).toBe(peak.allocatedBytes);
      expect(rep.snapshotVsPeakGapBytes).toBe(peak.allocatedBytes - truth.snapshot.allocatedBytes);
      expect(rep.traceReplay.status).toBe("pass");
      // the state at the last event is the snapshot, by category
      const last = stateAtReport(model, inputs, 0, r.length - 1);
      expect(last.categories).toEqual(truth.snapshot.categories);
      expect(last.allocatedBytes).toBe(truth.snapshot.allocatedBytes);
    });
  }

  it("a ring-buffer-truncated known run: the window's peak and composition equal the truth", async () => {
    for (const keep of [60, 120, 200]) {
      const { truth, counters, model } = await known(
        [
          "--layout",
          "cuda-all",
          "--paths",
          "linux",
          "--moment",
          "mid_backward",
          "--truncate-trace",
          String(keep),
        ],
        `trunc-${keep}.pickle`,
      );
      const inputs = inputsFor(model);
      const rep = replayReport(model, inputs, counters);
      expect(rep.traceReplay.status, rep.traceReplay.detail).toBe("pass");
      const peak = truth.peak as NonNullable<KnownTruth["peak"]>;
      const windowPeak = rep.peak?.source === "counters" ? rep.peak.windowPeak : rep.peak;
      expect(windowPeak?.allocatedBytes).toBe(peak.allocatedBytes);
      expect(windowPeak?.eventIndex).toBe(peak.eventIndex);
      // Allocations made before the window and freed inside it have no allocation stack in the trace
      // (free entries record where the free happened): their bytes move to "unknown", nothing else.
      const r = prepareReplay(model, 0, { categoryCount: 7 });
      expect(r.freesCarryAllocationStack).toBe(false);
      let beforeWindow = 0;
      for (const k of liveAllocationsAt(r, peak.eventIndex)) {
        const o = r.allocations.origin[k];
        if (
          (o === Origin.beforeTraceFreed || o === Origin.beforeTracePending) &&
          r.allocations.freeRequestedEvent[k] > peak.eventIndex
        ) {
          beforeWindow += r.allocations.sizeBytes[k];
        }
      }
      const got = windowPeak?.categories ?? {};
      let moved = 0;
      for (const [name, bytes] of Object.entries(peak.categories)) {
        if (name === "unknown") continue;
        expect(got[name]).toBeLessThanOrEqual(bytes);
        moved += bytes - got[name];
      }
      expect(moved).toBe(beforeWindow);
      expect(got.unknown).toBe(peak.categories.unknown + beforeWindow);
      if (truth.maxMemoryAllocated > peak.allocatedBytes) {
        expect(rep.peak?.source).toBe("counters");
        expect(rep.peak?.note).toContain("fell outside the recorded trace");
      } else expect(rep.peak?.source).toBe("trace");
    }
  });
});

interface RandomTruth {
  traceEntries: number;
  peak: { allocatedBytes: number; requestedBytes: number; eventIndex: number };
  finalAllocatedBytes: number;
  finalActiveBytes: number;
  liveBlocks: { device: number; address: number; size: number; requestedSize: number; state: string }[];
}

describe("random traces (generate.py random-trace)", () => {
  for (const seed of [1, 2, 3, 4, 5]) {
    it(`seed ${seed}: ends in the snapshot state; the peak equals the truth`, async () => {
      const out = join(dir, `random-${seed}.pickle`);
      python([GEN, "random-trace", "--seed", String(seed), "--events", String(2000 + 1000 * seed), out]);
      const truth: RandomTruth = JSON.parse(readFileSync(`${out}.truth.json`, "utf8"));
      const model = await readSnapshotFile(out);
      const r = prepareReplay(model, 0, { categoryCount: 7 });
      expect(r.check.status, r.check.detail).toBe("pass");
      expect(r.length).toBe(truth.traceEntries);
      expect(r.peakAllocatedBytes).toBe(truth.peak.allocatedBytes);
      expect(r.peakEvent).toBe(truth.peak.eventIndex);
      expect(r.requested[truth.peak.eventIndex]).toBe(truth.peak.requestedBytes);
      expect(r.allocated[r.length - 1]).toBe(truth.finalAllocatedBytes);
      expect(r.active[r.length - 1]).toBe(truth.finalActiveBytes);
      const A = r.allocations;
      const live = [...liveAllocationsAt(r, r.length - 1)]
        .map((k) => ({
          address: addressOf(A, k),
          size: A.sizeBytes[k],
          requestedSize: requestedOf(A, k),
          state: A.freeRequestedEvent[k] < r.length ? "active_pending_free" : "active_allocated",
        }))
        .sort((p, q) => p.address - q.address);
      const want = truth.liveBlocks
        .filter((b) => b.device === 0)
        .map(({ address, size, requestedSize, state }) => ({ address, size, requestedSize, state }))
        .sort((p, q) => p.address - q.address);
      expect(live).toEqual(want);
      const comp = compositionAt(r, truth.peak.eventIndex);
      expect(comp.allocatedBytes).toBe(truth.peak.allocatedBytes);
    });
  }
});
