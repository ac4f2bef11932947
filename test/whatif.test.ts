// What-if engine (src/core/whatif) and `peakscope whatif`. Expected values never come from the code under
// test: on the generated known runs, from the simulation's own per-record bookkeeping (memgen/knownrun.py
// `series`: allocated and bytes per category and per kind after every recorded trace record, read through
// Python); on planted traces, from hand computation; on the real files, from a naive event-by-event
// evaluation written here (per allocation, per event, no difference array, its own phases and calls).

import { copyFileSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readSnapshotFile } from "../src/cli/read-file";
import { runWhatIf } from "../src/cli/whatif";
import { type Attribution, attribute } from "../src/core/attribution";
import { isPythonFile } from "../src/core/attribution/frames";
import { RULE_PHASE } from "../src/core/attribution/trace-rules";
import { ModelBuilder } from "../src/core/model/builder";
import { Action, EMPTY_STACK, type SnapshotModel } from "../src/core/model/types";
import { NEVER, type Replay, stackOf } from "../src/core/replay/types";
import {
  deviceCapacity,
  oomNeeds,
  parseScale,
  parseSelection,
  planRecompute,
  prepareWhatIf,
  type Selection,
  selectionSpec,
  suggest,
  type Transform,
  type WhatIfContext,
  WhatIfSpecError,
  whatIf,
  whatIfContext,
} from "../src/core/whatif";
import { HAVE_REAL, python, pythonFirstOom, REAL_DIR, REPO } from "./helpers/python";

const GEN = join(REPO, "test/gen/generate.py");
const dir = mkdtempSync(join(tmpdir(), "peakscope-whatif-"));
const KiB = 1024;
const MiB = 1024 * KiB;
const CATEGORIES = [
  "parameters",
  "gradients",
  "optimizer_state",
  "activations",
  "input",
  "temporary",
  "workspace",
  "kv_cache",
  "other",
  "unknown",
];

// ---- the known run: the simulation's bookkeeping per recorded record ------------------------------------

const SERIES_PY = `
import json, sys
sys.dont_write_bytecode = True
sys.path.insert(0, "test/gen")
from memgen import knownrun
run = knownrun.simulate(**json.loads(sys.argv[1]))
print(json.dumps({"offset": 3 * len(run.workspaces),
                  "series": [[s[0], s[2], s[3], s[4]] for s in run.series]}))
`;

interface Series {
  /** torch_npu's prepended workspace entries come first in the written trace. */
  offset: number;
  /** Per recorded record: allocated, {category: bytes}, {kind: bytes}, {category: bytes allocated before recording}. */
  series: [number, Record<string, number>, Record<string, number>, Record<string, number>][];
}

interface KnownCase {
  args: string[];
  sim: Record<string, string | number>;
}

const KNOWN: KnownCase[] = [
  { args: ["--moment", "step3"], sim: { layout: "cuda-all", moment: "step3" } },
  { args: ["--layout", "cuda-python", "--moment", "step2"], sim: { layout: "cuda-python", moment: "step2" } },
  { args: ["--layout", "npu", "--moment", "mid_backward"], sim: { layout: "npu", moment: "mid_backward" } },
  {
    args: ["--moment", "mid_backward", "--record-from", "after-build"],
    sim: { layout: "cuda-all", moment: "mid_backward", record_from: "after-build" },
  },
  {
    args: ["--layout", "cuda-python", "--moment", "step3", "--record-from", "after-step1"],
    sim: { layout: "cuda-python", moment: "step3", record_from: "after-step1" },
  },
  { args: ["--moment", "step3", "--streams", "2"], sim: { layout: "cuda-all", moment: "step3", streams: 2 } },
];

async function knownRun(c: KnownCase, name: string) {
  const out = join(dir, name);
  python([GEN, "known", ...c.args, out]);
  const truth: Series = JSON.parse(python(["-c", SERIES_PY, JSON.stringify(c.sim)]));
  const model = await readSnapshotFile(out);
  return { out, truth, model };
}

/**
 * Bytes per category after every event as the attribution can see them: the truth's, except that an
 * input allocated before recording (x, no stack, nothing to infer it from) is unknown to the attribution
 * (its documented limit), so the oracle moves the truth's unrecorded input bytes to unknown.
 */
function visibleCategories(truth: Series, n: number): Record<string, number>[] {
  const out: Record<string, number>[] = [];
  for (let i = 0; i < n; i++) {
    const j = i - truth.offset;
    const cats = Object.fromEntries(CATEGORIES.map((c) => [c, 0]));
    if (j >= 0) {
      const [, c, , unrecorded] = truth.series[j];
      for (const k of CATEGORIES) cats[k] = c[k] ?? 0;
      const lateInput = unrecorded.input ?? 0;
      cats.input -= lateInput;
      cats.unknown += lateInput;
    }
    out.push(cats);
  }
  return out;
}

function argmax(xs: ArrayLike<number>): number {
  let best = 0;
  for (let i = 1; i < xs.length; i++) if (xs[i] > xs[best]) best = i;
  return best;
}

describe("what-if on the known runs equals the simulation's own bookkeeping", () => {
  KNOWN.forEach((c, idx) => {
    it(`known ${c.args.join(" ")}: remove / halve each category`, async () => {
      const { truth, model } = await knownRun(c, `known-${idx}.pickle`);
      const ctx = whatIfContext(model);
      const r = ctx.replay;
      const n = r.length;
      expect(n).toBe(truth.offset + truth.series.length);
      // The simulation's allocated (before any change) is the replay's: the two are aligned.
      const alloc = Array.from({ length: n }, (_, i) =>
        i < truth.offset ? 0 : truth.series[i - truth.offset][0],
      );
      expect(Array.from(r.allocated)).toEqual(alloc);
      const vis = visibleCategories(truth, n);
      for (const cat of CATEGORIES) {
        for (const [op, keep] of [
          ["remove", 0],
          ["scale", 0.5],
        ] as const) {
          const t: Transform =
            op === "remove"
              ? { op, select: { kind: "category", category: cat } }
              : { op, select: { kind: "category", category: cat }, factor: keep };
          const res = whatIf(ctx, [t], { curve: true });
          const expected = alloc.map((a, i) => a - (1 - keep) * vis[i][cat]);
          expect(Array.from(res.curve as Float64Array), `${op} ${cat}`).toEqual(expected);
          const p = argmax(expected);
          expect(res.peakBytes).toBe(expected[p]);
          expect(res.peakEvent).toBe(p);
          expect(res.savedBytes).toBe(Math.max(...alloc) - expected[p]);
          expect(res.categoriesAtPeak).toEqual({ ...vis[p], [cat]: keep * vis[p][cat] });
        }
      }
    });
  });

  it("site and frame selections remove exactly the simulation's kinds made there", async () => {
    const { truth, model } = await knownRun(KNOWN[0], "known-sites.pickle");
    const ctx = whatIfContext(model);
    const kinds = (i: number, ks: string[]) => ks.reduce((s, k) => s + (truth.series[i][2][k] ?? 0), 0);
    const cases: [Selection, string[]][] = [
      // the loss line: every forward allocation of the user's line 59 (the Linear outputs, .float(), pow, mean)
      [parseSelection("site:train.py:59"), ["activation", "forward_temp", "loss"]],
      [parseSelection("site:proj/train.py:45"), ["input"]],
      [parseSelection("frame:adam.py:647:_multi_tensor_adam"), ["optimizer_temp"]],
      [parseSelection("frame:AccumulateGrad"), ["gradient"]],
      [parseSelection("frame:_init_group"), ["exp_avg", "exp_avg_sq"]],
      [parseSelection("frame:_init_group|frame:AccumulateGrad"), ["exp_avg", "exp_avg_sq", "gradient"]],
    ];
    for (const [select, ks] of cases) {
      const res = whatIf(ctx, [{ op: "remove", select }], { curve: true });
      const expected = truth.series.map((s, i) => s[0] - kinds(i, ks));
      expect(Array.from(res.curve as Float64Array), selectionSpec(select)).toEqual(expected);
      expect(res.peakBytes).toBe(Math.max(...expected));
    }
    // A site that is not in the file selects nothing.
    const none = whatIf(ctx, [{ op: "remove", select: parseSelection("site:train.py:9999") }]);
    expect(none.transforms[0].allocations).toBe(0);
    expect(none.peakBytes).toBe(ctx.replay.peakAllocatedBytes);
  });
});

// ---- planted traces (hand-computed expectations) ---------------------------------------------------------

const SRC = { fileName: "planted", byteLength: 0, format: "pickle" as const, pickleProtocol: 4, notes: [] };
const TORCH = "/home/u/.local/lib/python3.11/site-packages/torch";

type StackName = "fwd" | "grad" | "eng" | "opt" | "b30" | "b31" | "head";

function plantedModel(entries: [string, number, number, StackName][]): SnapshotModel {
  const b = new ModelBuilder();
  const f = (file: string, line: number, name: string) => b.internFrame(file, line, name);
  const main = f("/home/u/proj/train.py", 20, "main");
  const call = f(`${TORCH}/nn/modules/module.py`, 1773, "_call_impl");
  const gpt77 = f("/home/u/proj/gpt.py", 77, "forward");
  const stacks: Record<StackName, number> = {
    fwd: b.internStack([f("/home/u/proj/model.py", 10, "forward"), main]),
    grad: b.internStack([
      f(
        "??",
        0,
        "torch::autograd::AccumulateGrad::apply(std::vector<at::Tensor, std::allocator<at::Tensor> >&&)",
      ),
    ]),
    eng: b.internStack([
      f(
        "??",
        0,
        "torch::autograd::generated::MmBackward0::apply(std::vector<at::Tensor, std::allocator<at::Tensor> >&&)",
      ),
    ]),
    opt: b.internStack([
      f(`${TORCH}/optim/adam.py`, 100, "_init_group"),
      f("/home/u/proj/train.py", 22, "main"),
    ]),
    b30: b.internStack([f("/home/u/proj/block.py", 30, "forward"), call, gpt77, main]),
    b31: b.internStack([f("/home/u/proj/block.py", 31, "forward"), call, gpt77, main]),
    head: b.internStack([f("/home/u/proj/gpt.py", 80, "forward"), main]),
  };
  for (const [action, addr, kib, stack] of entries) {
    b.addTraceEntry(0, { action, addr, sizeBytes: kib * KiB, stack: stacks[stack] });
  }
  return b.finish(SRC);
}

const alloc = (addr: number, kib: number, s: StackName): [string, number, number, StackName] => [
  "alloc",
  addr,
  kib,
  s,
];
const free = (addr: number, kib: number, s: StackName): [string, number, number, StackName] => [
  "free_requested",
  addr,
  kib,
  s,
];

function plantedContext(model: SnapshotModel) {
  const ctx = whatIfContext(model);
  const A = ctx.replay.allocations;
  const cats = Array.from({ length: A.length }, (_, k) => ctx.categoryNames[A.category[k]]);
  return { ctx, cats };
}

const K = (xs: number[]) => xs.map((x) => x * KiB);

describe("free early on a planted two-step trace", () => {
  // Addresses name the tensors. Sizes are 512-byte multiples ≤ 1 MiB, so rounded = requested.
  const A1 = 0x1000000;
  const A2 = 0x2000000;
  const G = 0x3000000;
  const S = 0x4000000;
  const T = 0x5000000;
  const A3 = 0x6000000;
  const A4 = 0x7000000;
  const X = 0x8000000;
  const A5 = 0x9000000;
  const model = plantedModel([
    alloc(A1, 64, "fwd"), //  0 forward (step 1)
    alloc(A2, 32, "fwd"), //  1
    alloc(G, 128, "grad"), // 2 backward: the .grad, kept
    free(A2, 32, "eng"), //   3
    free(A1, 64, "eng"), //   4
    alloc(S, 256, "opt"), //  5 optimizer: state, kept
    alloc(T, 16, "opt"), //   6 scratch
    free(T, 16, "opt"), //    7
    alloc(A3, 64, "fwd"), //  8 forward (step 2)
    alloc(A4, 32, "fwd"), //  9
    alloc(X, 128, "eng"), // 10 backward: in flight
    free(X, 128, "eng"), //  11
    free(A4, 32, "eng"), //  12
    free(A3, 64, "eng"), //  13
    alloc(T, 16, "opt"), //  14 optimizer
    free(T, 16, "opt"), //   15
    alloc(A5, 512, "fwd"), // 16 forward (step 3): a transient
    free(A5, 512, "fwd"), // 17
  ]);
  const base = K([64, 96, 224, 192, 128, 384, 400, 384, 448, 480, 608, 480, 448, 384, 400, 384, 896, 384]);

  it("the attribution reads the phases and categories the trace was planted with", () => {
    const { ctx, cats } = plantedContext(model);
    expect(Array.from(ctx.replay.allocated)).toEqual(base);
    expect(cats).toEqual([
      "activations",
      "activations",
      "gradients",
      "optimizer_state",
      "temporary",
      "activations",
      "activations",
      "temporary",
      "temporary",
      "temporary",
    ]);
    // forward [0,2) backward [2,5) optimizer [5,8) forward [8,10) backward [10,14) optimizer [14,16) forward [16,18)
    expect(Array.from(ctx.phases.runStart)).toEqual([0, 2, 5, 8, 10, 14, 16]);
    expect(Array.from(ctx.phases.windows[2])).toEqual([2, 8, 10, 16]);
  });

  it("gradients: held from the backward through the optimizer step, re-made at the next backward", () => {
    const { ctx } = plantedContext(model);
    const res = whatIf(ctx, [{ op: "free-early", select: parseSelection("category:gradients") }], {
      curve: true,
    });
    // G (128 KiB) is not counted at events 8, 9 (step 2's forward) and 16, 17 (step 3's forward).
    const expected = base.map((v, i) => ([8, 9, 16, 17].includes(i) ? v - 128 * KiB : v));
    expect(Array.from(res.curve as Float64Array)).toEqual(expected);
    expect(res.peakBytes).toBe(768 * KiB);
    expect(res.peakEvent).toBe(16);
    expect(res.savedBytes).toBe(128 * KiB);
    expect(res.categoriesAtPeak).toMatchObject({
      optimizer_state: 256 * KiB,
      temporary: 512 * KiB,
      gradients: 0,
    });
  });

  it("activations: freed at the end of their forward; optimizer state: held in optimizer steps only", () => {
    const { ctx } = plantedContext(model);
    const act = whatIf(ctx, [{ op: "free-early", select: parseSelection("category:activations") }], {
      curve: true,
    });
    const expectedAct = [...base];
    expectedAct[2] -= 96 * KiB; // A1, A2 dropped when step 1's forward ends
    expectedAct[3] -= 64 * KiB; // A1
    expectedAct[10] -= 96 * KiB; // A3, A4
    expectedAct[11] -= 96 * KiB;
    expectedAct[12] -= 64 * KiB; // A3
    expect(Array.from(act.curve as Float64Array)).toEqual(expectedAct);
    expect(act.peakBytes).toBe(896 * KiB);
    const opt = whatIf(ctx, [{ op: "free-early", select: parseSelection("category:optimizer_state") }], {
      curve: true,
    });
    const expectedOpt = base.map((v, i) => (i >= 8 && i !== 14 && i !== 15 ? v - 256 * KiB : v));
    expect(Array.from(opt.curve as Float64Array)).toEqual(expectedOpt);
    expect(opt.peakBytes).toBe(640 * KiB);
    expect(opt.peakEvent).toBe(16);
    // Temporaries are already freed within their phase: nothing changes.
    const tmp = whatIf(ctx, [{ op: "free-early", select: parseSelection("category:temporary") }], {
      curve: true,
    });
    expect(Array.from(tmp.curve as Float64Array)).toEqual(base);
  });

  it("windows, ids, phases and combinations", () => {
    const { ctx } = plantedContext(model);
    // A3 (made at 8, freed at 13) and A4 (made at 9, freed at 12)
    const w = whatIf(ctx, [{ op: "remove", select: parseSelection("window:8..9") }], { curve: true });
    expect(Array.from(w.curve as Float64Array)).toEqual(
      base.map((v, i) => v - (i === 8 || i === 12 ? 64 : i > 8 && i < 12 ? 96 : 0) * KiB),
    );
    // A5 (allocation 9) × 1/4: 128 KiB at event 16, so event 10 (608 KiB) is the peak
    const ids = whatIf(ctx, [{ op: "scale", select: { kind: "ids", ids: [9] }, factor: 0.25 }], {
      curve: true,
    });
    expect((ids.curve as Float64Array)[16]).toBe(512 * KiB);
    expect(ids.peakEvent).toBe(10);
    expect(ids.peakBytes).toBe(608 * KiB);
    const both = whatIf(ctx, [
      { op: "remove", select: parseSelection("category:temporary&phase:forward") },
      { op: "scale", select: parseSelection("category:optimizer_state"), factor: 0.5 },
    ]);
    // Without A5 and with S at 128 KiB: event 10 (608 − 128) = 480 is the highest.
    expect(both.peakBytes).toBe(480 * KiB);
    expect(both.peakEvent).toBe(10);
    expect(both.categoriesAtPeak).toMatchObject({
      gradients: 128 * KiB,
      optimizer_state: 128 * KiB,
      activations: 96 * KiB,
      temporary: 128 * KiB,
    });
    expect(Object.values(both.categoriesAtPeak).reduce((a, b) => a + b, 0)).toBe(both.peakBytes);
    expect(both.assumption).toContain("category:temporary&phase:forward");
  });
});

describe("recompute on a planted two-block forward", () => {
  const a1 = 0x1000000;
  const t1 = 0x1100000;
  const o1 = 0x1200000;
  const a2 = 0x2000000;
  const t2 = 0x2100000;
  const o2 = 0x2200000;
  const h = 0x3000000;
  const g1 = 0x4000000;
  const g2 = 0x4100000;
  const g3 = 0x4200000;
  const s = 0x5000000;
  const model = plantedModel([
    alloc(a1, 64, "b30"), //  0 block 1, line 30: saved for its backward
    alloc(t1, 32, "b30"), //  1 transient
    free(t1, 32, "b30"), //   2
    alloc(o1, 16, "b31"), //  3 line 31: block 1's output (saved by block 2)
    alloc(a2, 64, "b30"), //  4 line 30 again: block 2
    alloc(t2, 32, "b30"), //  5
    free(t2, 32, "b30"), //   6
    alloc(o2, 16, "b31"), //  7 block 2's output (saved by the head)
    alloc(h, 128, "head"), // 8 the head's activation
    alloc(g1, 8, "eng"), //   9 backward: the head's
    free(h, 128, "eng"), //  10
    free(o2, 16, "eng"), //  11
    free(g1, 8, "eng"), //   12
    alloc(g2, 8, "eng"), //  13 block 2's backward
    free(a2, 64, "eng"), //  14
    free(o1, 16, "eng"), //  15
    free(g2, 8, "eng"), //   16
    alloc(g3, 8, "eng"), //  17 block 1's backward
    free(a1, 64, "eng"), //  18
    free(g3, 8, "eng"), //   19
    alloc(s, 4, "opt"), //   20 optimizer
  ]);
  const base = K([64, 96, 64, 80, 144, 176, 144, 160, 288, 296, 168, 152, 144, 152, 88, 72, 64, 72, 8, 0, 4]);

  it("drops each call's saved activations until its backward and adds the recompute's working memory", () => {
    const { ctx, cats } = plantedContext(model);
    expect(Array.from(ctx.replay.allocated)).toEqual(base);
    expect(cats.slice(0, 6)).toEqual([
      "activations",
      "temporary",
      "activations",
      "activations",
      "temporary",
      "activations",
    ]);
    const plan = planRecompute(ctx, "gpt.py:77");
    expect(plan.calls).toBe(2);
    expect(plan.checkpointed).toBe(2);
    // Call 1 = events 0–3: saved a1 (o1 is its output); block 2's backward last releases at 15–16 → B = 17.
    // Call 2 = events 4–7: saved a2; the head's backward last releases at 10–12 → B = 13.
    expect(plan.detail).toEqual([
      { start: 0, end: 3, backwardStart: 17, savedBytes: 64 * KiB, recomputeBytes: 32 * KiB },
      { start: 4, end: 7, backwardStart: 13, savedBytes: 64 * KiB, recomputeBytes: 32 * KiB },
    ]);
    const res = whatIf(ctx, [{ op: "recompute", module: "gpt.py:77" }], { curve: true });
    const expected = K([64, 96, 64, 80, 80, 112, 80, 96, 160, 168, 40, 24, 112, 88, 24, 8, 96, 72, 8, 0, 4]);
    expect(Array.from(res.curve as Float64Array)).toEqual(expected);
    expect(res.peakBytes).toBe(168 * KiB);
    expect(res.peakEvent).toBe(9);
    expect(res.savedBytes).toBe(128 * KiB);
    expect(res.categoriesAtPeak).toMatchObject({ activations: 160 * KiB, temporary: 8 * KiB });
    expect(res.transforms[0]).toMatchObject({
      calls: 2,
      checkpointedCalls: 2,
      allocations: 2,
      bytes: 128 * KiB,
    });
  });

  it("the top-level module is suggested for checkpointing with the same figure", () => {
    const { ctx } = plantedContext(model);
    const ck = suggest(ctx).find((x) => x.id === "checkpoint:gpt.py:77");
    expect(ck?.peakBytes).toBe(168 * KiB);
    expect(ck?.specs).toEqual(["--recompute /home/u/proj/gpt.py:77:forward"]);
  });
});

// ---- the real training files: suggestions vs a naive evaluation -----------------------------------------

/** Everything below is the oracle: phases, selections, calls, the curve — evaluated naively per event. */
function naiveEvaluate(model: SnapshotModel, a: Attribution, r: Replay, transforms: Transform[]) {
  const n = r.length;
  const t = model.traces[r.device];
  const A = r.allocations;
  const names = a.categoryNames as readonly string[];
  const pythonOnly =
    model.stacks.length > 1 &&
    Array.from({ length: model.frames.length }, (_, f) =>
      isPythonFile(model.strings[model.frames.filename[f]]),
    ).every(Boolean);
  // Phase per event, then the phase of the run each event is in, and run ids.
  const runPhaseAt = new Uint8Array(n);
  const runId = new Int32Array(n);
  const runStartOf: number[] = [];
  const runPhaseOf: number[] = [];
  let last = 0;
  for (let i = 0; i < n; i++) {
    let p = 0;
    const act = t.action[i];
    if (act <= Action.segment_unmap && !t.isWorkspace[i]) {
      if (t.stack[i] !== EMPTY_STACK) p = RULE_PHASE[a.stackRule[t.stack[i]]];
      else if (pythonOnly && act <= Action.free_completed) p = 2;
    }
    if (p !== 0 && p !== last) {
      runStartOf.push(i);
      runPhaseOf.push(p);
      last = p;
    }
    runPhaseAt[i] = last;
    runId[i] = runStartOf.length - 1;
  }
  const runEndOf = (run: number) => (run + 1 < runStartOf.length ? runStartOf[run + 1] : n);
  const inWindow = (p: number, i: number) =>
    runPhaseAt[i] === p || (p === 2 && runPhaseAt[i] === 3 && runId[i] > 0 && runPhaseOf[runId[i] - 1] === 2);
  const byCategory: Record<string, number> = { gradients: 2, activations: 1, optimizer_state: 3 };
  const phaseOf = (k: number) =>
    A.allocEvent[k] >= 0 ? runPhaseAt[A.allocEvent[k]] : (byCategory[names[A.category[k]]] ?? 0);
  const PH: Record<string, number> = { forward: 1, backward: 2, optimizer: 3, parameters: 4 };
  /** The stack's frames, innermost first: file, and `file:line:name`. */
  const stackFrames = (s: number) => {
    const out: { file: string; text: string }[] = [];
    for (let j = model.stacks.offsets[s]; j < model.stacks.offsets[s + 1]; j++) {
      const f = model.stacks.frameIds[j];
      const file = model.strings[model.frames.filename[f]];
      out.push({ file, text: `${file}:${model.frames.line[f]}:${model.strings[model.frames.name[f]]}` });
    }
    return out;
  };
  const selects = (k: number, s: Selection): boolean => {
    switch (s.kind) {
      case "category":
        return names[A.category[k]] === s.category;
      case "phase":
        return A.allocEvent[k] >= 0 && runPhaseAt[A.allocEvent[k]] === PH[s.phase];
      case "all":
        return s.of.every((x) => selects(k, x));
      case "any":
        return s.of.some((x) => selects(k, x));
      case "frame":
        return stackFrames(stackOf(A, k)).some((x) => x.text.includes(s.text));
      case "site": {
        // the attribution's call site: its file ends with s.file on whole path components, same line
        const site = A.site[k] >= 0 ? a.sites[A.site[k]] : undefined;
        const file = site?.filename.replaceAll("\\", "/") ?? "";
        const want = s.file.replaceAll("\\", "/");
        return site?.line === s.line && (file === want || file.endsWith(`/${want}`));
      }
      default:
        throw new Error(`naive oracle: ${s.kind} not needed here`);
    }
  };
  const factor = new Float64Array(A.length).fill(1);
  const freeEarly = new Uint8Array(A.length);
  const drops = new Map<number, [number, number][]>();
  const spikes: { at: number; bytes: number; cats: Record<string, number> }[] = [];
  for (const tr of transforms) {
    if (tr.op === "recompute") {
      naiveRecompute(tr.module);
      continue;
    }
    for (let k = 0; k < A.length; k++) {
      if (!selects(k, tr.select)) continue;
      if (tr.op === "remove") factor[k] = 0;
      else if (tr.op === "scale") factor[k] *= tr.factor;
      else if (phaseOf(k) !== 0) freeEarly[k] = 1;
    }
  }

  function naiveRecompute(module: string) {
    // Alloc events in order, with whether they belong to the module's forward and the line inside it.
    const allocs: { i: number; member: boolean; key: string; run: number }[] = [];
    for (let i = 0; i < n; i++) {
      if (t.action[i] !== Action.alloc || t.isWorkspace[i] || r.eventAllocation[i] < 0) continue;
      const frames = stackFrames(t.stack[i]);
      let outer = -1;
      frames.forEach((x, j) => {
        if (x.text.includes(module)) outer = j;
      });
      let key = "";
      for (let j = outer - 1; j >= 0; j--) {
        const { file, text } = frames[j];
        if (isPythonFile(file) && !file.replaceAll("\\", "/").endsWith("/torch/nn/modules/module.py")) {
          key = text;
          break;
        }
      }
      allocs.push({ i, member: outer >= 0 && runPhaseAt[i] === 1 && runId[i] >= 0, key, run: runId[i] });
    }
    const calls: [number, number][] = [];
    let cur: { s: number; run: number; first: string; other: boolean } | null = null;
    for (const x of allocs) {
      if (cur && (!x.member || x.run !== cur.run)) {
        calls.push([cur.s, Math.min(x.i, runEndOf(cur.run)) - 1]);
        cur = null;
      }
      if (!x.member) continue;
      if (cur && x.key === cur.first && cur.other) {
        calls.push([cur.s, x.i - 1]);
        cur = null;
      } else if (cur && x.key !== cur.first) cur.other = true;
      if (!cur) cur = { s: x.i, run: x.run, first: x.key, other: false };
    }
    if (cur) calls.push([cur.s, Math.min(n, runEndOf(cur.run)) - 1]);
    const madeIn = (k: number, s: number, e: number) => A.allocEvent[k] >= s && A.allocEvent[k] <= e;
    for (const [s, e] of calls) {
      const C: number[] = [];
      for (let k = 0; k < A.length; k++) {
        const f = A.freeRequestedEvent[k];
        if (madeIn(k, s, e) && names[A.category[k]] === "activations" && f !== NEVER && f > e && f < n)
          if (runPhaseAt[f] === 2) C.push(k);
      }
      if (C.length === 0) continue;
      const b = Math.min(...C.map((k) => runId[A.freeRequestedEvent[k]]));
      let L = runStartOf[b] - 1;
      for (let i = runStartOf[b]; i < runEndOf(b); i++) {
        const k = r.eventAllocation[i];
        if (k >= 0 && A.freeRequestedEvent[k] === i && A.allocEvent[k] > e && A.allocEvent[k] < runStartOf[b])
          L = i;
      }
      if (L >= runStartOf[b]) while (L + 1 < runEndOf(b) && t.action[L + 1] !== Action.alloc) L++;
      let output = -1;
      for (let k = 0; k < A.length; k++) {
        const f = A.freeRequestedEvent[k];
        if (
          madeIn(k, s, e) &&
          (f === NEVER || f > e) &&
          (output < 0 || A.allocEvent[k] > A.allocEvent[output])
        )
          output = k;
      }
      const D = C.filter(
        (k) => k !== output && A.freeRequestedEvent[k] > L && runId[A.freeRequestedEvent[k]] === b,
      );
      if (D.length === 0 || L <= e + 1) continue;
      for (const k of D) drops.set(k, [...(drops.get(k) ?? []), [e + 1, L]]);
      let X = 0;
      let at = -1;
      for (let j = s; j <= e; j++) {
        let live = 0;
        for (let k = 0; k < A.length; k++) {
          const f = A.freeRequestedEvent[k];
          if (!D.includes(k) && A.allocEvent[k] >= s && A.allocEvent[k] <= j && (f === NEVER || f > j))
            live += A.sizeBytes[k];
        }
        if (live > X) [X, at] = [live, j];
      }
      if (X === 0) continue;
      const cats: Record<string, number> = {};
      for (let k = 0; k < A.length; k++) {
        const f = A.freeRequestedEvent[k];
        if (!D.includes(k) && A.allocEvent[k] >= s && A.allocEvent[k] <= at && (f === NEVER || f > at))
          cats[names[A.category[k]]] = (cats[names[A.category[k]]] ?? 0) + A.sizeBytes[k];
      }
      spikes.push({ at: L, bytes: X, cats });
    }
  }

  const curve = new Float64Array(n);
  const value = (k: number, i: number) => {
    if (freeEarly[k] && !inWindow(phaseOf(k), i)) return 0;
    for (const [from, to] of drops.get(k) ?? []) if (i >= from && i < to) return 0;
    return Math.round(A.sizeBytes[k] * factor[k]);
  };
  for (let k = 0; k < A.length; k++) {
    const f = A.freeRequestedEvent[k];
    const end = f === NEVER ? n : f;
    for (let i = Math.max(0, A.allocEvent[k]); i < end; i++) curve[i] += value(k, i);
  }
  for (const sp of spikes) curve[sp.at] += sp.bytes;
  const p = argmax(curve);
  const cats: Record<string, number> = Object.fromEntries(names.map((c) => [c, 0]));
  for (let k = 0; k < A.length; k++) {
    const f = A.freeRequestedEvent[k];
    if (A.allocEvent[k] <= p && (f === NEVER || f > p)) cats[names[A.category[k]]] += value(k, p);
  }
  for (const sp of spikes) if (sp.at === p) for (const [c, v] of Object.entries(sp.cats)) cats[c] += v;
  return { peak: curve[p], peakEvent: p, cats, curve };
}

if (!HAVE_REAL) console.warn(`whatif real-file tests skipped: ${REAL_DIR} is absent`);

describe.skipIf(!HAVE_REAL)("suggestions on the real training files", () => {
  const files = [
    "Wedsonlin__assignment2-systems__medium_256_training_memory_snapshot.pickle",
    "kkaitlyn111__cs336-a2-systems__memory_ctx128_fullstep.pickle",
  ];
  for (const file of files) {
    it(`${file}: every suggestion's peak equals a naive evaluation`, async () => {
      const model = await readSnapshotFile(join(REAL_DIR, file));
      const a = attribute(model);
      const ctx: WhatIfContext = whatIfContext(model, { attribution: a });
      const r = ctx.replay;
      const base = naiveEvaluate(model, a, r, []);
      expect(base.peak).toBe(r.peakAllocatedBytes);
      const list = suggest(ctx);
      const kinds = new Set(list.map((s) => s.kind));
      for (const k of ["checkpoint", "zero", "free-gradients", "batch", "mixed-precision"])
        expect(kinds).toContain(k);
      // one GPU (the default): the changes that need no more come first; within each group, by saving
      for (let i = 1; i < list.length; i++) {
        const [x, y] = [list[i - 1], list[i]];
        expect(x.devices <= 1 || y.devices > 1, `${x.id} before ${y.id}`).toBe(true);
        if (x.devices <= 1 === y.devices <= 1) expect(x.savedBytes).toBeGreaterThanOrEqual(y.savedBytes);
      }
      for (const s of list) {
        const naive = naiveEvaluate(model, a, r, s.transforms);
        expect(s.peakBytes, s.id).toBe(naive.peak);
        expect(s.peakEvent, s.id).toBe(naive.peakEvent);
        expect(s.categoriesAtPeak, s.id).toEqual(naive.cats);
        expect(s.savedBytes, s.id).toBe(r.peakAllocatedBytes - naive.peak);
        expect(s.fits).toBeNull();
        expect(s.assumption.length).toBeGreaterThan(20);
        expect(s.caveat.length).toBeGreaterThan(20);
      }
      // On Wedsonlin (peak at the end of the forward) checkpointing the 24 transformer blocks saves the most
      // among the single-device changes; on kkaitlyn (peak in the optimizer step) it saves nothing.
      const ck = list.find((s) => s.id.startsWith("checkpoint:") && s.id !== "checkpoint:all");
      if (file.startsWith("Wedsonlin")) expect(ck?.savedBytes).toBeGreaterThan(1024 * MiB);
      else expect(list.find((s) => s.id === "checkpoint:all")?.savedBytes).toBe(0);
    });
  }
});

// ---- capacity, OOM, the CLI ------------------------------------------------------------------------------

describe("device capacity and OOM", () => {
  it("an OOM entry gives the capacity (allocated there + device_free) and how much more was needed", async () => {
    const vdir = join(dir, "variants");
    python([GEN, "variants", vdir]);
    const file = join(vdir, "oom.pickle");
    const [event, size, deviceFree] = pythonFirstOom(file);
    const model = await readSnapshotFile(file);
    const a = attribute(model);
    const ctx = whatIfContext(model, { attribution: a });
    const r = ctx.replay;
    const rounded = Math.ceil(size / 512) * 512;
    // Allocated at the OOM from Python (test/tools/replay.py's curve); the capacity is that + device_free.
    const py = JSON.parse(python(["test/tools/replay.py", "--curve", file]))["oom.pickle"].devices[0];
    const capacity = py.allocated[event] + deviceFree;
    expect(oomNeeds(r)).toEqual([
      {
        eventIndex: event,
        requestBytes: rounded,
        allocatedBytes: py.allocated[event],
        deviceFreeBytes: deviceFree,
        neededBytes: rounded - deviceFree,
      },
    ]);
    const cap = deviceCapacity(r, null);
    expect(cap).toMatchObject({ bytes: capacity, source: "oom" });
    // Fits: the naive evaluation's new curve, with the failed request added at the OOM, stays within it.
    const list = suggest(ctx, { capacity: cap });
    let fits = 0;
    for (const s of list) {
      const naive = naiveEvaluate(model, a, r, s.transforms);
      expect(s.peakBytes, s.id).toBe(naive.peak);
      const need = Math.max(naive.peak, naive.curve[event] + rounded);
      expect(s.fits, s.id).toBe(need <= capacity);
      if (s.fits) fits++;
    }
    expect(fits).toBeGreaterThan(0);
    expect(fits).toBeLessThan(list.length);
    expect(deviceCapacity(r, null, 123)).toMatchObject({ bytes: 123, source: "option" });
  });
});

describe("peakscope whatif (CLI)", () => {
  const run = async (args: string[]) => {
    let out = "";
    let err = "";
    const code = await runWhatIf(args, { stdout: (s) => (out += s), stderr: (s) => (err += s) });
    return { code, out, err };
  };

  it("--json: the documented keys, the engine's figures, the sidecar beside the file", async () => {
    const { out: file, truth, model } = await knownRun(KNOWN[0], "cli.pickle");
    const { code, out, err } = await run([
      file,
      "--remove",
      "category:optimizer_state",
      "--suggest",
      "--json",
    ]);
    expect(err).toBe("");
    expect(code).toBe(0);
    const j = JSON.parse(out);
    for (const k of [
      "device",
      "peakBytes",
      "peakEvent",
      "peakTimeUs",
      "baselinePeakBytes",
      "savedBytes",
      "categoriesAtPeak",
      "assumption",
      "suggestions",
    ]) {
      expect(j).toHaveProperty(k);
    }
    const expected = truth.series.map((s) => s[0] - s[1].optimizer_state);
    const p = argmax(expected);
    expect(j.device).toBe(0);
    expect(j.peakBytes).toBe(expected[p]);
    expect(j.peakEvent).toBe(p);
    expect(j.peakTimeUs).toBe(model.traces[0].timeUs[p]);
    expect(j.baselinePeakBytes).toBe(127_926_784);
    expect(j.savedBytes).toBe(127_926_784 - expected[p]);
    expect(j.categoriesAtPeak.optimizer_state).toBe(0);
    expect(j.suggestions.length).toBeGreaterThan(5);
    for (const s of j.suggestions) {
      for (const k of ["action", "peakBytes", "savedBytes", "assumption"]) expect(s).toHaveProperty(k);
    }
    // The known run's sidecar has no device total: capacity unknown.
    expect(j.capacity).toBeNull();
    // A sidecar beside the file with a total in memory_stats is picked up.
    const copy = join(dir, "cli-copy.pickle");
    copyFileSync(file, copy);
    const side = JSON.parse(readFileSync(`${file}.counters.json`, "utf8"));
    side.memory_stats.total_memory = 120 * MiB;
    writeFileSync(`${copy}.counters.json`, JSON.stringify(side));
    const j2 = JSON.parse((await run([copy, "--suggest", "--json"])).out);
    expect(j2.capacity).toMatchObject({ bytes: 120 * MiB, source: "counters" });
    expect(j2.peakBytes).toBe(127_926_784);
    expect(j2.savedBytes).toBe(0);
    for (const s of j2.suggestions) expect(s.fits).toBe(s.peakBytes <= 120 * MiB);
    // --capacity wins over the sidecar.
    const j3 = JSON.parse((await run([copy, "--capacity", "1GiB", "--json"])).out);
    expect(j3.capacity).toMatchObject({ bytes: 1024 * MiB, source: "option" });
    expect(j3.fits).toBe(true);
  });

  it("every transformation from the command line, and text output", async () => {
    const { out: file } = await knownRun(KNOWN[0], "cli-text.pickle");
    const model = await readSnapshotFile(file);
    const a = attribute(model);
    const ctx = whatIfContext(model, { attribution: a });
    const args = [
      "--remove",
      "site:train.py:45",
      "--scale",
      "category:parameters=1/2",
      "--free-early",
      "category:gradients",
      "--recompute",
      "container.py:240",
    ];
    const j = JSON.parse((await run([file, ...args, "--json"])).out);
    // The expected peak from the naive event-by-event evaluation written above, not from whatIf.
    const naive = naiveEvaluate(model, a, ctx.replay, [
      { op: "remove", select: { kind: "site", file: "train.py", line: 45 } },
      { op: "scale", select: { kind: "category", category: "parameters" }, factor: 0.5 },
      { op: "free-early", select: { kind: "category", category: "gradients" } },
      { op: "recompute", module: "container.py:240" },
    ]);
    expect(j.peakBytes).toBe(naive.peak);
    expect(j.peakEvent).toBe(naive.peakEvent);
    expect(j.categoriesAtPeak).toEqual(naive.cats);
    // every transformation did something: the peak is below the baseline
    expect(naive.peak).toBeLessThan(ctx.replay.peakAllocatedBytes);
    expect(j.transforms.map((t: { spec: string }) => t.spec)).toEqual([
      "--remove site:train.py:45",
      "--scale category:parameters=1/2",
      "--free-early category:gradients",
      "--recompute container.py:240",
    ]);
    const text = await run([file, ...args]);
    expect(text.code).toBe(0);
    expect(text.out).toContain("new peak");
    expect(text.out).toContain("assumption:");
  });

  it("usage errors and unanswerable selections exit 1 with a message", async () => {
    const { out: file } = await knownRun(KNOWN[0], "cli-err.pickle");
    for (const args of [
      [],
      [file, "--scale", "category:parameters"],
      [file, "--remove", "nonsense"],
      [file, "--bogus"],
      [file, "--capacity", "lots"],
    ]) {
      const r = await run(args);
      expect(r.code, args.join(" ")).toBe(1);
      expect(r.err).toContain("usage: peakscope whatif");
    }
    const bad = await run([file, "--remove", "category:weights"]);
    expect(bad.code).toBe(1);
    expect(bad.err).toContain('there is no category "weights"');
    const missing = await run([join(dir, "absent.pickle")]);
    expect(missing.code).toBe(1);
    const noDev = await run([file, "--device", "3"]);
    expect(noDev.code).toBe(1);
    expect(noDev.err).toContain("device 3 has no trace entries");
  });
});

describe("selection specs", () => {
  it("parse and print back", () => {
    expect(parseSelection("category:gradients")).toEqual({ kind: "category", category: "gradients" });
    expect(parseSelection("site:C:\\Users\\u\\train.py:57")).toEqual({
      kind: "site",
      file: "C:\\Users\\u\\train.py",
      line: 57,
    });
    expect(parseSelection("window:-1..20")).toEqual({ kind: "window", fromEvent: -1, toEvent: 20 });
    // a C++ frame text keeps its "&"; "&" before a selection kind joins
    expect(parseSelection("frame:at::Tensor const&, int&phase:forward")).toEqual({
      kind: "all",
      of: [
        { kind: "frame", text: "at::Tensor const&, int" },
        { kind: "phase", phase: "forward" },
      ],
    });
    const spec = "category:activations|category:temporary&phase:backward";
    expect(selectionSpec(parseSelection(spec))).toBe(spec);
    expect(parseScale("category:parameters=1/8")).toEqual({
      op: "scale",
      select: { kind: "category", category: "parameters" },
      factor: 0.125,
    });
    for (const bad of ["site:train.py", "phase:loss", "window:5..1", "ids:x", "stack:foo"]) {
      expect(() => parseSelection(bad), bad).toThrow(WhatIfSpecError);
    }
  });

  it("prepareWhatIf works from a replay and an attribution directly (the worker's path)", async () => {
    const { model } = await knownRun(KNOWN[0], "direct.pickle");
    const a = attribute(model);
    const replay = whatIfContext(model, { attribution: a }).replay;
    const ctx = prepareWhatIf(model, replay, a);
    const t: Transform[] = [{ op: "remove", select: parseSelection("category:temporary") }];
    const got = whatIf(ctx, t);
    const naive = naiveEvaluate(model, a, replay, t);
    expect([got.peakBytes, got.peakEvent, got.categoriesAtPeak]).toEqual([
      naive.peak,
      naive.peakEvent,
      naive.cats,
    ]);
  });
});
