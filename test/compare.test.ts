// Compare: steady steps diff to +0.00 in every category; a planted activation growth is attributed to
// activations and its line; sites match across OS and install prefix (real Windows vs Linux frames).

import { describe, expect, it } from "vitest";
import { attribute } from "../src/core/attribution";
import { compareSnapshots } from "../src/core/compare";
import { BlockState, type SnapshotModel } from "../src/core/model/types";
import { REAL_STACKS } from "./attribution-real-stacks";
import { type BlockSpec, buildModel, MiB } from "./report-fixtures";

const S = REAL_STACKS;
const side = (model: SnapshotModel) => ({ model, attribution: attribute(model) });

/** One training step's live blocks, as in a real post-step snapshot (stacks copied from real files). */
function step(extra: BlockSpec[] = [], reverse = false): SnapshotModel {
  const blocks: BlockSpec[] = [
    { size: 8 * MiB, frames: S.moduleCudaNative.frames }, // parameters
    { size: 8 * MiB, frames: S.accumulateGrad.frames }, // gradients
    { size: 8 * MiB, frames: S.adamInitGroup.frames }, // optimizer state
    { size: 8 * MiB, frames: S.adamInitGroup.frames },
    { size: 2 * MiB, frames: S.ownCodeTransfer.frames }, // input
    { size: 2 * MiB, frames: S.lightningForwardInsideOptimizerStep.frames }, // activations
    { size: MiB, state: "inactive" },
    ...extra,
  ];
  return buildModel([{ blocks: reverse ? blocks.reverse() : blocks }]);
}

describe("compare", () => {
  it("two steady steps: +0.00 MiB in every category (block order and addresses differ)", () => {
    const c = compareSnapshots(side(step()), side(step([], true)));
    for (const v of Object.values(c.categories)) expect(v).toBe(0);
    expect(c.callSites).toEqual([]);
    expect(c.verdict).toBe("no change: +0.00 MiB in every category");
  });

  it("a planted +10 MiB activation growth is attributed to activations and its line", () => {
    const grown = step([{ size: 10 * MiB, frames: S.windowsPythonOnlyForward.frames }]);
    const c = compareSnapshots(side(step()), side(grown));
    expect(c.categories).toEqual({
      parameters: 0,
      gradients: 0,
      optimizer_state: 0,
      activations: 10 * MiB,
      input: 0,
      temporary: 0,
      workspace: 0,
      kv_cache: 0,
      other: 0,
      unknown: 0,
    });
    expect(c.callSites[0]).toMatchObject({
      site: "cs336_basics/model.py:39:forward",
      label: "model.py:39 forward",
      category: "activations",
      deltaBytes: 10 * MiB,
    });
    expect(c.verdict).toBe("growth +10.00 MiB, all in activations: model.py:39 forward");
  });

  it("mixed changes name the top categories, largest first", () => {
    const other = buildModel([
      {
        blocks: [
          { size: 8 * MiB, frames: S.moduleCudaNative.frames },
          { size: 8 * MiB, frames: S.accumulateGrad.frames },
          { size: 8 * MiB, frames: S.adamInitGroup.frames },
          { size: 8 * MiB, frames: S.adamInitGroup.frames },
          { size: 2 * MiB, frames: S.ownCodeTransfer.frames },
          { size: 14 * MiB, frames: S.lightningForwardInsideOptimizerStep.frames }, // +12
          { size: 3 * MiB, frames: S.bmmBackwardEngine.frames }, // gradients +3
        ],
      },
    ]);
    const c = compareSnapshots(side(step()), side(other));
    expect(c.totalDeltaBytes).toBe(15 * MiB);
    expect(c.verdict).toBe(
      "growth +15.00 MiB: activations +12.00 MiB (dit.py:126 forward), gradients +3.00 MiB (torch::autograd::generated::BmmBackward0::apply)",
    );
  });

  it("a shrink says so", () => {
    const c = compareSnapshots(side(step([{ size: 4 * MiB, frames: S.vllmKvCache.frames }])), side(step()));
    expect(c.verdict).toBe("shrink -4.00 MiB, all in kv_cache: vllm_rollout_spmd.py:114 __init__");
  });

  it("matches call sites across Windows and Linux install prefixes (same line, two real machines)", () => {
    // MAGMA27 (D:\…\.venv\Lib\site-packages, Windows) and Wedsonlin (/home/…/.venv/lib/python3.12/…, Linux)
    // ran the same cs336_basics/model.py:39 forward.
    const win = buildModel([{ blocks: [{ size: 40 * MiB, frames: S.windowsPythonOnlyForward.frames }] }]);
    const linux = buildModel([{ blocks: [{ size: 40 * MiB, frames: S.linuxSameForward.frames }] }]);
    const c = compareSnapshots(side(win), side(linux));
    expect(c.callSites).toEqual([]);
    expect(c.verdict).toBe("no change: +0.00 MiB in every category");
  });

  it("unknown blocks matched to the other file's parameters by size where that is exact", () => {
    // A recorded the model's two 6 MiB weights; B was recorded after they were built: no stack, unknown.
    const weights = (frames: typeof S.moduleCudaNative.frames | undefined): BlockSpec[] => [
      { size: 6 * MiB, frames },
      { size: 6 * MiB, frames },
    ];
    const A = side(step(weights(S.moduleCudaNative.frames)));
    const B = side(step(weights(undefined)));
    const raw = (m: SnapshotModel, a: ReturnType<typeof attribute>, cat: string) => {
      let n = 0;
      for (let b = 0; b < m.blocks.length; b++)
        if (m.blocks.state[b] === BlockState.active_allocated && a.categoryNames[a.blockCategory[b]] === cat)
          n += m.blocks.sizeBytes[b];
      return n;
    };
    // without matching, the same weights would read parameters −12 MiB / unknown +12 MiB
    expect(raw(B.model, B.attribution, "unknown") - raw(A.model, A.attribution, "unknown")).toBe(12 * MiB);
    const c = compareSnapshots(A, B);
    expect(c.categories.parameters).toBe(0);
    expect(c.categories.unknown).toBe(0);
    expect(c.totalDeltaBytes).toBe(0);
    expect(c.matched).toEqual([
      { side: "other", sizeBytes: 6 * MiB, blocks: 2, bytes: 12 * MiB, site: expect.any(String) },
    ]);
    expect(c.matchedBytes).toEqual({ base: 0, other: 12 * MiB });
    expect(c.matchRule).toMatch(/exactly that many more parameter blocks/);
    // the site of A's weights: no call-site change either
    expect(c.callSites).toEqual([]);
    // reversed: B is the base, its unknown blocks match A's (the other file's) parameters
    const r = compareSnapshots(B, A);
    expect(r.categories.parameters).toBe(0);
    expect(r.matched.map((m) => [m.side, m.blocks])).toEqual([["base", 2]]);
  });

  it("no match where the count is not exact: three unknown 6 MiB blocks against two parameters", () => {
    const A = side(
      step([
        { size: 6 * MiB, frames: S.moduleCudaNative.frames },
        { size: 6 * MiB, frames: S.moduleCudaNative.frames },
      ]),
    );
    const B = side(step([{ size: 6 * MiB }, { size: 6 * MiB }, { size: 6 * MiB }]));
    const c = compareSnapshots(A, B);
    expect(c.matched).toEqual([]);
    expect(c.categories.parameters).toBe(-12 * MiB);
    expect(c.categories.unknown).toBe(18 * MiB);
  });
});
