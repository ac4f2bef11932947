// Lifetime rules and the inference of pre-trace memory, on real stacks (attribution-real-stacks.ts) in
// planted event orders. Expected categories follow from the plant (which tensor is what) and arithmetic
// here, never from the code under test.

import { describe, expect, it } from "vitest";
import { attribute, RULES } from "../src/core/attribution";
import { entriesFromStacks, Kind, Phase, RULE_PHASE } from "../src/core/attribution/trace-rules";
import { EMPTY_STACK } from "../src/core/model/types";
import { mulberry32 } from "../src/core/random";
import { compositionAt } from "../src/core/replay/peak";
import { prepareReplays } from "../src/core/replay/report";
import { buildReport, replayInputs } from "../src/core/report";
import { REAL_STACKS } from "./attribution-real-stacks";
import { buildModel } from "./report-fixtures";

const S = REAL_STACKS;
const fwd = S.linuxSameForward.frames;
const engine = S.bmmBackwardEngine.frames;
const opt = S.adamInitGroup.frames; // torch/optim/adam.py: an Adam-like optimizer
const grad = S.accumulateGrad.frames;
const loss = S.windowsPythonOnlyLoss.frames;

type Entry = { action: string; addr?: number; size?: number; frames?: (typeof fwd)[number][] };
const alloc = (addr: number, size: number, frames?: Entry["frames"]): Entry => ({
  action: "alloc",
  addr,
  size,
  frames,
});
const free = (addr: number, size: number, frames?: Entry["frames"]): Entry => ({
  action: "free_requested",
  addr,
  size,
  frames,
});

function traceOnly(entries: Entry[]) {
  const a = attribute(buildModel([], [{ device: 0, entries }]));
  return (i: number) => [a.categoryNames[a.traceCategory[0][i]], a.rules[a.traceRule[0][i]].id];
}

describe("lifetime rules", () => {
  it("a forward's intermediate freed before any backward is temporary; one freed in backward is an activation", () => {
    const at = traceOnly([
      alloc(0x1000, 512, fwd), // 0: freed inside the forward
      alloc(0x2000, 512, fwd), // 1: saved for backward
      free(0x1000, 512, fwd),
      alloc(0x3000, 512, engine), // 3: backward begins
      free(0x2000, 512, engine),
      alloc(0x4000, 512, fwd), // 5: never freed
    ]);
    expect(at(0)).toEqual(["temporary", "forward-transient"]);
    expect(at(1)).toEqual(["activations", "forward"]);
    expect(at(5)).toEqual(["activations", "forward"]);
  });

  it("optimizer scratch freed inside its step is temporary; state that survives the step stays state", () => {
    const at = traceOnly([
      alloc(0x1000, 512, opt), // 0: exp_avg, kept
      alloc(0x2000, 512, opt), // 1: foreach scratch
      free(0x2000, 512, opt),
      alloc(0x3000, 512, opt), // 3: freed only after the next forward: it outlived the step
      alloc(0x4000, 512, fwd),
      free(0x3000, 512, fwd),
    ]);
    expect(at(0)).toEqual(["optimizer_state", "optimizer"]);
    expect(at(1)).toEqual(["temporary", "optimizer-scratch"]);
    expect(at(3)).toEqual(["optimizer_state", "optimizer"]);
  });

  it("the loss computation: intermediates, what backward keeps, and the loss itself", () => {
    const at = traceOnly([
      alloc(0x100, 512, fwd),
      alloc(0x1000, 512, loss), // 1: freed before backward
      alloc(0x2000, 512, loss), // 2: freed during backward
      alloc(0x3000, 512, loss), // 3: outlives backward
      free(0x1000, 512, loss),
      alloc(0x5000, 512, engine), // 5: backward
      free(0x2000, 512, engine),
      alloc(0x6000, 512, opt), // 7: the optimizer step
    ]);
    expect(at(1)).toEqual(["temporary", "loss-intermediate"]);
    expect(at(2)).toEqual(["activations", "loss-saved"]);
    expect(at(3)).toEqual(["other", "loss-computation"]);
  });
});

describe("memory allocated before recording", () => {
  const W = 4096;
  // One segment: P, Q1, Q2 made before recording (no frames), G a gradient and N a new exp_avg from the
  // trace. Before N, the trace frees an old exp_avg (address 0x9000000) it never allocated, in the same
  // optimizer step, beside N: the functional optimizer's one-for-one replacement.
  const seg = 0x7f0000000000;
  const model = buildModel(
    [
      {
        address: seg,
        blocks: [{ size: W }, { size: W }, { size: W }, { size: W, frames: grad }, { size: W, frames: opt }],
      },
    ],
    [
      {
        device: 0,
        entries: [
          alloc(seg + 3 * W, W, grad), // 0: .grad (AccumulateGrad)
          alloc(seg + 4 * W, W, opt), // 1: new exp_avg
          free(0x9000000, W, opt), // 2: last step's exp_avg, allocated before recording
          { action: "free_completed", addr: 0x9000000, size: W, frames: opt },
        ],
      },
    ],
  );
  const a = attribute(model);
  const cat = (b: number) => a.categoryNames[a.blockCategory[b]];
  const rule = (b: number) => a.rules[a.blockRule[b]];

  it("blocks matching a gradient one for one are parameters; with Adam two more per parameter are its moments", () => {
    expect([cat(0), cat(1), cat(2)]).toEqual(["parameters", "optimizer_state", "optimizer_state"]);
    expect([rule(0).id, rule(1).id, rule(2).id]).toEqual(["matches-gradient", "adam-state", "adam-state"]);
    expect([rule(0).inferred, rule(1).inferred, rule(3).inferred]).toEqual([true, true, false]);
    const r = buildReport(model);
    expect(r.inferredBytes).toEqual({ parameters: W, optimizer_state: 2 * W });
    expect(r.categories.unknown).toBe(0);
    const row = r.topCallSites.find((c) => c.rule === "matches-gradient");
    expect(row?.inferred).toBe(true);
    expect(row?.bytes).toBe(W);
  });

  it("a pre-trace block freed beside a same-size allocation of the same phase takes its category, in the replay too", () => {
    const inferred = a.traceBefore[0].get(2);
    expect(inferred && a.categoryNames[inferred.category]).toBe("optimizer_state");
    expect(inferred && a.rules[inferred.rule].id).toBe("replaced-in-phase");
    const inputs = replayInputs(a);
    const r = prepareReplays(model, inputs).get(0);
    expect(r).toBeDefined();
    if (!r) return;
    // After event 1 (N allocated, the old exp_avg not yet freed): P + Q1 + Q2 + G + N + the old one.
    const c = compositionAt(r, 1);
    const byName = Object.fromEntries(a.categoryNames.map((n, i) => [n, c.byCategory[i]]));
    expect(byName.optimizer_state).toBe(4 * W); // Q1, Q2 (inferred), N, the replaced old exp_avg
    expect(byName.parameters).toBe(W);
    expect(byName.gradients).toBe(W);
    expect(byName.unknown).toBe(0);
    expect(r.peakAllocatedBytes).toBe(6 * W);
  });

  it("with no gradient of a size, pre-trace blocks of a size Adam works on come in fours", () => {
    const m = buildModel(
      [{ address: seg, blocks: [...Array.from({ length: 8 }, () => ({ size: 8192 })), { size: 2048 }] }],
      [{ device: 0, entries: [alloc(0x9000000, 8192, opt), free(0x9000000, 8192, opt)] }],
    );
    const r = buildReport(m);
    expect(r.categories.parameters).toBe(2 * 8192);
    expect(r.categories.gradients).toBe(2 * 8192);
    expect(r.categories.optimizer_state).toBe(4 * 8192);
    // The 2 KiB block matches nothing: unknown, allocated before recording.
    expect(r.categories.unknown).toBe(2048);
    expect(r.unknownBytesByReason["before-recording"]).toBe(2048);
    expect(r.inferredBytes).toEqual({ parameters: 2 * 8192, gradients: 2 * 8192, optimizer_state: 4 * 8192 });
  });

  it("seven same-size blocks are not four per parameter: nothing is inferred", () => {
    const m = buildModel(
      [{ address: seg, blocks: Array.from({ length: 7 }, () => ({ size: 8192 })) }],
      [{ device: 0, entries: [alloc(0x9000000, 8192, opt), free(0x9000000, 8192, opt)] }],
    );
    const r = buildReport(m);
    expect(r.categories.unknown).toBe(7 * 8192);
    expect(r.inferredBytes).toEqual({});
  });
});

describe("the phase runs the trace rules walk", () => {
  // entriesFromStacks makes the runs as it writes each entry's phase; here they are made again from the
  // phases by the plain rule (a run starts where an entry's phase differs from the last phase seen;
  // entries of no phase keep the run), on random traces of every kind of entry.
  const phased = ["forward", "optimizer", "accumulate-grad", "autograd-engine", "module-to", "own-code"];
  const rules = phased.map((id) => RULES.findIndex((r) => r.id === id));
  const kinds = Uint8Array.from([Kind.alloc, Kind.free, Kind.free, Kind.memory, Kind.memory, 0, 0, 0]);
  function reference(phase: Uint8Array) {
    const start = [0];
    const phases: number[] = [];
    let last = 0;
    let firstPhased = phase.length;
    for (let i = 0; i < phase.length; i++) {
      const p = phase[i];
      if (p === 0 || p === last) continue;
      if (last === 0) firstPhased = i;
      else {
        phases.push(last);
        start.push(i);
      }
      last = p;
    }
    phases.push(last);
    start.push(phase.length);
    return { start, phases, firstPhased };
  }
  it("start where an entry's phase differs from the last phase seen, on 400 random traces", () => {
    const rnd = mulberry32(25);
    let runsSeen = 0;
    for (let trial = 0; trial < 400; trial++) {
      const n = Math.floor(rnd() * 60);
      const stackRule = Uint8Array.from({ length: 8 }, () => rules[Math.floor(rnd() * rules.length)]);
      // stack 0 is EMPTY_STACK: no frames (the engine's thread in a stacks="python" file)
      const stack = Int32Array.from({ length: n }, () => Math.floor(rnd() * stackRule.length));
      const action = Uint8Array.from({ length: n }, () => Math.floor(rnd() * kinds.length));
      const isWorkspace = Uint8Array.from({ length: n }, () => (rnd() < 0.1 ? 1 : 0));
      type Trace = Parameters<typeof entriesFromStacks>[0];
      const t = { length: n, action, stack, isWorkspace } as unknown as Trace;
      const pythonOnly = trial % 2 === 0;
      const e = entriesFromStacks(t, new Uint8Array(8), new Int32Array(8), stackRule, kinds, pythonOnly);
      // the phases themselves, by the rule's table (and backward for the frame-less in a python-only file)
      for (let i = 0; i < n; i++) {
        const k = kinds[action[i]];
        const want =
          isWorkspace[i] || k === 0
            ? 0
            : stack[i] === EMPTY_STACK
              ? pythonOnly && k !== Kind.memory
                ? Phase.backward
                : 0
              : RULE_PHASE[stackRule[stack[i]]];
        expect(e.phase[i]).toBe(want);
      }
      const want = reference(e.phase);
      expect([...e.runs.start]).toEqual(want.start);
      expect([...e.runs.phase]).toEqual(want.phases);
      expect(e.runs.firstPhased).toBe(want.firstPhased);
      runsSeen += want.phases.length;
    }
    expect(runsSeen).toBeGreaterThan(2000);
  });
});
