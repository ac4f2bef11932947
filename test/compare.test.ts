// Compare: steady steps diff to +0.00 in every category; a planted activation growth is attributed to
// activations and its line; sites match across OS and install prefix (real Windows vs Linux frames).

import { describe, expect, it } from "vitest";
import { attribute } from "../src/core/attribution";
import { compareSnapshots } from "../src/core/compare";
import type { SnapshotModel } from "../src/core/model/types";
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
    expect(c.verdict).toBe("shrink -4.00 MiB, all in other: vllm_rollout_spmd.py:114 __init__");
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
});
