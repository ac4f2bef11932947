// The known-composition run (test/gen/generate.py known): 3 x bf16 Linear(2048, 2048) + AdamW + a 512x2048
// bf16 input, dumped after step 2, after step 3 and mid-backward, with every stack layout and install-path
// style. Expected values come from the generator's OUT.truth.json and from arithmetic here.

import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readSnapshotFile } from "../src/cli/read-file";
import { buildReport } from "../src/core/report";
import { parseCounters } from "../src/core/report/counters";
import { formatMiB } from "../src/core/report/format";
import { python } from "./helpers/python";

const LAYOUTS = ["cuda-all", "cuda-python", "npu"] as const;
const PATHS = ["linux", "conda", "venv", "dist", "windows"] as const;
const MOMENTS = ["step2", "step3", "mid_backward"] as const;
const dir = mkdtempSync(join(tmpdir(), "peakscope-known-"));

interface Truth {
  snapshot: { categories: Record<string, number>; allocatedBytes: number; reservedBytes: number };
  maxMemoryAllocated: number;
  callSites: { site: string | null; category: string; bytes: number; blocks: number }[];
}

async function known(layout: string, paths: string, moment: string) {
  const out = join(dir, `${layout}-${paths}-${moment}.pickle`);
  python(["test/gen/generate.py", "known", "--layout", layout, "--paths", paths, "--moment", moment, out]);
  const truth: Truth = JSON.parse(readFileSync(`${out}.truth.json`, "utf8"));
  const counters = parseCounters(readFileSync(`${out}.counters.json`, "utf8"));
  const model = await readSnapshotFile(out);
  return { out, truth, counters, model, report: buildReport(model, { counters }) };
}

const W = 2048 * 2048 * 2; // one bf16 weight

describe("known-composition run", () => {
  for (const layout of LAYOUTS) {
    for (const paths of PATHS) {
      for (const moment of MOMENTS) {
        it(`${layout} / ${paths} / ${moment}`, async () => {
          const { truth, report: r } = await known(layout, paths, moment);
          // Exactly the generator's truth, in every category.
          expect(r.categories).toEqual(truth.snapshot.categories);
          // And the seed's ground truth, by arithmetic: 24 / 24 / 48 / 2 MiB.
          expect(formatMiB(r.categories.parameters)).toBe("24.00 MiB");
          expect(formatMiB(r.categories.gradients)).toBe("24.00 MiB");
          expect(formatMiB(r.categories.optimizer_state)).toBe("48.00 MiB");
          expect(formatMiB(r.categories.input)).toBe("2.00 MiB");
          if (layout !== "npu") {
            // CUDA rounds to 512 B, so the sizes are exact multiples of the tensors.
            expect(r.categories.parameters).toBe(3 * W);
            expect(r.categories.gradients).toBe(3 * W);
            expect(r.categories.optimizer_state).toBe(6 * W);
            expect(r.categories.input).toBe(512 * 2048 * 2);
            // Mid-backward: the gradient of layer 1's input (2 MiB) and its weight gradient not yet accumulated,
            // backward's in-flight buffers: temporary, not activations (checkpointing would not remove them).
            expect(r.categories.temporary).toBe(moment === "mid_backward" ? 512 * 2048 * 2 + W : 0);
            expect(r.categories.activations).toBe(0);
          }
          expect(r.totals.allocatedBytes).toBe(truth.snapshot.allocatedBytes);
          // Call sites: every own-code site of the truth, with its bytes and category.
          for (const s of truth.callSites) {
            if (s.site === null) continue;
            const mine = r.topCallSites.find((c) => c.site === s.site && c.category === s.category);
            expect(mine, `${s.site} ${s.category}`).toBeDefined();
            expect([mine?.bytes, mine?.blocks]).toEqual([s.bytes, s.blocks]);
            expect(mine?.via).toBe("own-code");
          }
          // Checks: 1–4 pass; the snapshot is not the peak (post-step 98 MiB vs ~122 MiB), by arithmetic.
          const status = Object.fromEntries(r.checks.map((c) => [c.id, c.status]));
          expect([
            status["block-tiling"],
            status["active-total"],
            status["reserved-counter"],
            status["allocated-counter"],
          ]).toEqual(["pass", "pass", "pass", "pass"]);
          const gap =
            Math.abs(truth.maxMemoryAllocated - truth.snapshot.allocatedBytes) / truth.maxMemoryAllocated;
          expect(status["snapshot-vs-peak"]).toBe(gap <= 0.02 ? "pass" : "fail");
        });
      }
    }
  }

  it("two steady steps diff to +0.00 in every category; mid-backward grows +10.00 MiB, all in temporary", async () => {
    for (const layout of LAYOUTS) {
      const s2 = await known(layout, "linux", "step2");
      const s3 = await known(layout, "linux", "step3");
      const mb = await known(layout, "linux", "mid_backward");
      const steady = buildReport(s2.model, { other: s3.model }).compare;
      expect(Object.values(steady?.categories ?? {}).every((v) => v === 0)).toBe(true);
      expect(steady?.verdict).toBe("no change: +0.00 MiB in every category");
      const grow = buildReport(s3.model, { other: mb.model }).compare;
      const delta = mb.truth.snapshot.categories.temporary - s3.truth.snapshot.categories.temporary;
      expect(grow?.categories).toEqual({
        parameters: 0,
        gradients: 0,
        optimizer_state: 0,
        activations: 0,
        input: 0,
        temporary: delta,
        workspace: 0,
        kv_cache: 0,
        other: 0,
        unknown: 0,
      });
      expect(grow?.verdict).toMatch(/^growth \+10\.00 MiB, all in temporary: /);
    }
  });
});

// Recording started late (after the model was built, after the first step), a second stream, and
// torch_npu's workspace. Expected values: the generator's truth. The one thing no rule can recover is the
// input batch allocated before recording (never freed, no stack, no size to match): it must be reported
// as unknown "before-recording", and everything else exactly as the truth says.
interface LateTruth extends Truth {
  snapshot: Truth["snapshot"] & {
    unrecordedCategories?: Record<string, number>;
    unrecordedKinds?: Record<string, number>;
    workspaceBytes?: number;
  };
  peak: {
    allocatedBytes: number;
    categories: Record<string, number>;
    unrecordedKinds?: Record<string, number>;
  };
}

async function knownWith(layout: string, moment: string, extra: string[]) {
  const out = join(dir, `${layout}-${moment}-${extra.join("-")}.pickle`);
  python(["test/gen/generate.py", "known", "--layout", layout, "--moment", moment, ...extra, out]);
  const truth: LateTruth = JSON.parse(readFileSync(`${out}.truth.json`, "utf8"));
  const counters = parseCounters(readFileSync(`${out}.counters.json`, "utf8"));
  const model = await readSnapshotFile(out);
  return { truth, report: buildReport(model, { counters }), noSidecar: buildReport(model) };
}

/** The truth's categories with the pre-recording input moved to unknown (nothing can say what it is). */
function expectedView(categories: Record<string, number>, unrecordedKinds: Record<string, number> = {}) {
  const input = unrecordedKinds.input ?? 0;
  return { ...categories, input: categories.input - input, unknown: categories.unknown + input };
}

describe("known run recorded late, on two streams, with torch_npu's workspace", () => {
  for (const layout of LAYOUTS) {
    for (const recordFrom of ["after-build", "after-step1"]) {
      for (const moment of ["step2", "mid_backward"]) {
        it(`${layout} / --record-from ${recordFrom} / ${moment}`, async () => {
          const {
            truth,
            report: r,
            noSidecar,
          } = await knownWith(layout, moment, ["--record-from", recordFrom]);
          const unrec = truth.snapshot.unrecordedKinds ?? {};
          expect(Object.keys(unrec).length).toBeGreaterThan(0);
          // At the snapshot: exactly the truth, with the unrecoverable input unknown.
          expect(r.categories).toEqual(expectedView(truth.snapshot.categories, unrec));
          const inputUnknown = unrec.input ?? 0;
          expect(r.unknownBytesByReason).toEqual({
            "before-recording": inputUnknown,
            "ring-buffer-evicted": 0,
            "no-stacks-recorded": 0,
            reconstructed: 0,
          });
          // Everything else recorded before the trace is named, and marked inferred.
          const inferred = { ...(truth.snapshot.unrecordedCategories ?? {}) };
          delete inferred.input;
          for (const k of Object.keys(inferred)) if (inferred[k] === 0) delete inferred[k];
          expect(r.inferredBytes).toEqual(inferred);
          // At the peak (the replay): the same, exactly.
          const peak = r.peak;
          expect(peak?.source).toBe("trace");
          expect(peak?.allocatedBytes).toBe(truth.peak.allocatedBytes);
          const want = expectedView(truth.peak.categories, truth.peak.unrecordedKinds);
          expect(Object.fromEntries(Object.keys(want).map((k) => [k, peak?.categories[k] ?? 0]))).toEqual(
            want,
          );
          // Without the sidecar the run's peak is not in the file: the check must not claim it.
          expect(noSidecar.peak?.isRunPeak).toBe(false);
          const svp = noSidecar.checks.find((c) => c.id === "snapshot-vs-peak");
          expect(svp?.status).not.toBe("pass");
          expect(noSidecar.checks.find((c) => c.id === "trace-replay")?.status).toBe("pass");
        });
      }
    }
  }

  it("two streams: exact at the snapshot and at the peak", async () => {
    const { truth, report: r } = await knownWith("cuda-all", "step2", ["--streams", "2"]);
    expect(r.categories).toEqual(truth.snapshot.categories);
    expect(r.peak?.allocatedBytes).toBe(truth.peak.allocatedBytes);
    expect(r.peak?.categories).toEqual(truth.peak.categories);
    expect(r.checks.find((c) => c.id === "trace-replay")?.status).toBe("pass");
  });

  it("torch_npu workspace: its own category, kept out of the peak and compared like with like", async () => {
    const { truth, report: r } = await knownWith("npu", "step2", ["--workspace", "active"]);
    expect(truth.snapshot.workspaceBytes).toBeGreaterThan(0);
    expect(r.categories).toEqual(truth.snapshot.categories);
    expect(r.workspaceBytes).toBe(truth.snapshot.workspaceBytes);
    // The replayed peak leaves the workspace out (max_memory_allocated does too).
    expect(r.peak?.allocatedBytes).toBe(truth.peak.allocatedBytes);
    expect(r.peak?.allocatedBytes).toBe(truth.maxMemoryAllocated);
    expect(r.peak?.categories.workspace ?? 0).toBe(0);
    const status = Object.fromEntries(r.checks.map((c) => [c.id, c.status]));
    // memory_allocated excludes the workspace: the counter check passes only when it is left out.
    expect(status["allocated-counter"]).toBe("pass");
    expect(status["trace-replay"]).toBe("pass");
    const svp = r.checks.find((c) => c.id === "snapshot-vs-peak");
    expect(svp?.numbers.snapshotAllocatedBytes).toBe(
      truth.snapshot.allocatedBytes - (truth.snapshot.workspaceBytes ?? 0),
    );
  });
});

// A ring buffer (`--truncate-trace N`: only the newest N entries kept). Live blocks keep their own frames,
// so the snapshot is attributed from them; allocations freed inside the window whose alloc was dropped are
// named from how they were freed (by the engine in backward: saved activations). One documented limit: the
// loss scalar, made by the user's own code outside any forward, reads as input once its alloc is dropped
// (only the order of events calls it the loss) — so `other` and `input` are compared as a sum.
describe("known run in a ring buffer", () => {
  for (const layout of LAYOUTS) {
    for (const n of [40, 90]) {
      for (const moment of ["step3", "mid_backward"]) {
        it(`${layout} / --truncate-trace ${n} / ${moment}`, async () => {
          const { truth, report: r } = await knownWith(layout, moment, ["--truncate-trace", String(n)]);
          const split = (c: Record<string, number>) => {
            const { input = 0, other = 0, ...rest } = c;
            return { ...rest, inputAndOther: input + other };
          };
          expect(split(r.categories)).toEqual(split(truth.snapshot.categories));
          expect(r.categories.unknown).toBe(0);
          // The window's peak (the sidecar's max_memory_allocated is the whole run's).
          const w = r.peak?.windowPeak ?? r.peak;
          expect(w?.allocatedBytes).toBe(truth.peak.allocatedBytes);
          expect(split(w?.categories ?? {})).toEqual(split(truth.peak.categories));
        });
      }
    }
  }
});
