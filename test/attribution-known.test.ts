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
const dir = mkdtempSync(join(tmpdir(), "memscope-known-"));

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
            // Mid-backward: the gradient of layer 1's input (2 MiB) and its weight gradient not yet accumulated.
            expect(r.categories.activations).toBe(moment === "mid_backward" ? 512 * 2048 * 2 + W : 0);
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

  it("two steady steps diff to +0.00 in every category; mid-backward grows +10.00 MiB, all in activations", async () => {
    for (const layout of LAYOUTS) {
      const s2 = await known(layout, "linux", "step2");
      const s3 = await known(layout, "linux", "step3");
      const mb = await known(layout, "linux", "mid_backward");
      const steady = buildReport(s2.model, { other: s3.model }).compare;
      expect(Object.values(steady?.categories ?? {}).every((v) => v === 0)).toBe(true);
      expect(steady?.verdict).toBe("no change: +0.00 MiB in every category");
      const grow = buildReport(s3.model, { other: mb.model }).compare;
      const delta = mb.truth.snapshot.categories.activations - s3.truth.snapshot.categories.activations;
      expect(grow?.categories).toEqual({
        parameters: 0,
        gradients: 0,
        optimizer_state: 0,
        activations: delta,
        input: 0,
        other: 0,
        unknown: 0,
      });
      expect(grow?.verdict).toMatch(/^growth \+10\.00 MiB, all in activations: /);
    }
  });
});
