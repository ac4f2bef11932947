// Memory with no stack, named from sizes and lifetimes (rules.ts, the `inferred` rules). Most real files
// start recording after the model is built: the weights, and often last step's optimizer state, carry no
// stack. What the trace still shows about them:
//  - replaced-in-phase: a pre-trace allocation freed in the same phase as a same-size allocation from a
//    known site is replaced by it one for one (functional optimizers replace exp_avg every step);
//  - matches-gradient / adam-state: per size, as many pre-trace blocks as the most gradients of that size
//    alive at once are parameters; with an Adam-like optimizer two more per parameter are its moments;
//  - adam-quartet: with no gradient of that size in the file (kept across steps, set_to_none=False),
//    pre-trace blocks of a size the Adam-like optimizer works on, in fours: weight, grad, two moments.
// Every such answer is marked inferred (its rule says so) and keeps the "allocated before recording" site.

import { BlockState, EMPTY_STACK, type SnapshotModel } from "../model/types";
import type { InferredBefore } from "../replay/types";
import { Category, RULES, RuleId } from "./rules";
import { type IntervalsBySize, Kind, Phase, SizeLifetimes, type TraceLifetimes } from "./trace-rules";

const R = {
  replaced: RuleId["replaced-in-phase"],
  matchesGradient: RuleId["matches-gradient"],
  releasedByBackward: RuleId["released-by-backward"],
  engineGradient: RuleId["engine-gradient"],
  adamState: RuleId["adam-state"],
  quartet: RuleId["adam-quartet"],
  pairsMoments: RuleId["pairs-traced-moments"],
  noStack: RuleId["no-stack"],
  optimizer: RuleId.optimizer,
};

/** What the inference reads and writes for one device trace. */
export interface TraceAttribution {
  trace: SnapshotModel["traces"][number];
  lifetimes: TraceLifetimes;
  /** Final per-entry category / rule / site (after the trace refinements). */
  category: Uint8Array;
  rule: Uint8Array;
  site: Int32Array;
  /** Out: for the free entries that close a pre-trace allocation, what was inferred of it. */
  before: BeforeInferred;
}

/**
 * Per trace: the free entry that closes an allocation made before the trace (the entry the replay takes it
 * from) → what was inferred of it. A few hundred entries on a big file: a column of one value per entry
 * cost the 1.05 GB file 41 MB of memory and ≈ 25 ms to zero.
 */
export type BeforeInferred = Map<number, InferredBefore>;

export interface BlockAttribution {
  category: Uint8Array;
  rule: Uint8Array;
  site: Int32Array;
  /** Per block: 1 when its allocation was found in the trace. */
  inTrace: Uint8Array;
}

/**
 * Infers categories of pre-trace memory on one device, in place: `traceAttr` (null when the device has no
 * trace) and the device's blocks in `blocks`.
 */
export function inferBeforeTrace(
  model: SnapshotModel,
  device: number,
  traceAttr: TraceAttribution | null,
  blocks: BlockAttribution,
  stackCategory: Uint8Array,
  stackRule: Uint8Array,
  kinds: Uint8Array,
  adamLike: boolean,
  pythonOnly: boolean,
  beforeSite: number,
): void {
  if (traceAttr) {
    releasedByBackward(traceAttr, beforeSite);
    replacedInPhase(traceAttr, stackCategory, kinds);
  }

  // Per size, the most gradients (parameters, kept optimizer state) alive at once: a trace of three steps
  // holds three sets, one at a time. The trace's own as the trace rules gathered them (or gathered here,
  // where a profiler's categories came after the rules), and the device's live blocks from before the
  // trace, alive throughout: each adds one to the most alive at once, so they are counted.
  const n = traceAttr ? traceAttr.trace.length : 0;
  const bySize = traceAttr
    ? (traceAttr.lifetimes.bySize ?? gatherBySize(traceAttr, stackRule, kinds))
    : new SizeLifetimes();
  const gradBlocks = new Map<number, number>();
  const paramBlocks = new Map<number, number>();
  const count = (m: Map<number, number>, size: number) => m.set(size, (m.get(size) ?? 0) + 1);
  const candidates = new Map<number, { blocks: number[]; frees: number[] }>();
  const candidate = (size: number) => {
    let c = candidates.get(size);
    if (!c) candidates.set(size, (c = { blocks: [], frees: [] }));
    return c;
  };
  const B = model.blocks;
  const segDevice = model.segments.device;
  for (let b = 0; b < B.length; b++) {
    if (segDevice[B.segment[b]] !== device || blocks.inTrace[b]) continue;
    const st = B.state[b];
    if (st !== BlockState.active_allocated) continue;
    const req = B.requestedSizeBytes[b];
    const size = Number.isNaN(req) ? B.sizeBytes[b] : req;
    if (blocks.category[b] === Category.gradients) count(gradBlocks, size);
    else if (blocks.category[b] === Category.parameters && !isInferredRule(blocks.rule[b]))
      count(paramBlocks, size);
    else if (blocks.rule[b] === R.noStack && B.stack[b] === EMPTY_STACK) candidate(size).blocks.push(b);
  }
  if (traceAttr) {
    const { trace: t, lifetimes, before } = traceAttr;
    const carry = lifetimes.freesCarryAllocationStack;
    for (const i of lifetimes.freesBeforeTrace) {
      if (before.has(i)) continue;
      // With context="alloc" a free carries the allocation's own stack: the replay reads it from there.
      if (carry && t.stack[i] !== EMPTY_STACK) continue;
      candidate(t.sizeBytes[i]).frees.push(i);
    }
  }

  for (const [size, c] of candidates) {
    const g = maxConcurrent(bySize.gradients, size) + (gradBlocks.get(size) ?? 0);
    const total = c.blocks.length + c.frees.length;
    const assign = (from: number, count: number, category: number, rule: number) => {
      for (let j = from; j < from + count; j++) {
        if (j < c.blocks.length) {
          const b = c.blocks[j];
          blocks.category[b] = category;
          blocks.rule[b] = rule;
          blocks.site[b] = beforeSite;
        } else if (traceAttr) {
          traceAttr.before.set(c.frees[j - c.blocks.length], { category, rule, site: beforeSite });
        }
      }
    };
    if (g > 0) {
      const params = Math.min(total, g);
      assign(0, params, Category.parameters, R.matchesGradient);
      if (adamLike) assign(params, Math.min(total - params, 2 * g), Category.optimizer_state, R.adamState);
    } else if (pairsTracedMoments(total, maxConcurrent(bySize.optimizerState, size))) {
      // Two traced moments per parameter, and exactly one pre-trace block per moment: weights and .grad.
      assign(0, total / 2, Category.parameters, R.pairsMoments);
      assign(total / 2, total / 2, Category.gradients, R.pairsMoments);
    } else if (adamLike && bySize.optimizerSizes.has(size) && total % 4 === 0) {
      const q = total / 4;
      assign(0, q, Category.parameters, R.quartet);
      assign(q, q, Category.gradients, R.quartet);
      assign(2 * q, 2 * q, Category.optimizer_state, R.quartet);
    } else if (pythonOnly && n > 0) {
      // Parameters known by their stacks whose gradients are missing: the engine's frame-less .grad.
      const missing = maxConcurrent(bySize.parameters, size) + (paramBlocks.get(size) ?? 0);
      if (missing > 0) assign(0, Math.min(c.blocks.length, missing), Category.gradients, R.engineGradient);
    }
  }
}

/**
 * pairs-traced-moments' guard (as careful as adam-state's): the traced moments of a size, at most alive at
 * once, are an even count (two per parameter) and the pre-trace blocks of that size are exactly as many
 * (one weight and one .grad per parameter). A partial match says nothing.
 */
function pairsTracedMoments(preTrace: number, moments: number): boolean {
  return moments > 0 && moments % 2 === 0 && preTrace === moments;
}

/** The most of `size`'s intervals [start, end) open at once. */
function maxConcurrent(intervals: IntervalsBySize, size: number): number {
  const starts = intervals.starts.get(size);
  const ends = intervals.ends.get(size);
  if (!starts || !ends) return 0;
  const s = Float64Array.from(starts).sort();
  const e = Float64Array.from(ends).sort();
  let best = 0;
  let open = 0;
  for (let i = 0, j = 0; i < s.length; ) {
    if (j < e.length && e[j] <= s[i]) {
      open--;
      j++;
    } else {
      open++;
      i++;
      if (open > best) best = open;
    }
  }
  return best;
}

/**
 * The trace's lifetimes by size (SizeLifetimes) from its final categories, where the trace rules' could
 * not be kept (a profiler's categories replaced theirs).
 */
function gatherBySize(a: TraceAttribution, stackRule: Uint8Array, kinds: Uint8Array): SizeLifetimes {
  const { trace: t, lifetimes, category } = a;
  const out = new SizeLifetimes();
  for (let i = 0; i < t.length; i++) {
    if (kinds[t.action[i]] !== Kind.alloc || t.isWorkspace[i]) continue;
    const s = t.stack[i];
    const optimizer = s !== EMPTY_STACK && stackRule[s] === R.optimizer;
    if (SizeLifetimes.weighs(category[i], optimizer))
      out.add(i, t.sizeBytes[i], lifetimes.end.of(i), category[i], optimizer);
  }
  return out;
}

/** released-by-backward: a pre-trace allocation the autograd engine frees during a backward was saved for it. */
function releasedByBackward(a: TraceAttribution, beforeSite: number): void {
  const { lifetimes } = a;
  for (const i of lifetimes.freesBeforeTrace) {
    if (lifetimes.phase[i] !== Phase.backward) continue;
    a.before.set(i, { category: Category.activations, rule: R.releasedByBackward, site: beforeSite });
  }
}

/**
 * replaced-in-phase: within each run of one phase, the k-th pre-trace free of a size pairs with the k-th
 * allocation of that size from a known site in the run (a one-for-one replacement, batched or interleaved).
 * The replacement's own category is taken from its stack (a replacement freed later in the step would be
 * scratch; what it replaced lived since before the trace, so it was state).
 */
function replacedInPhase(a: TraceAttribution, stackCategory: Uint8Array, kinds: Uint8Array): void {
  const { trace: t, lifetimes } = a;
  const { runs: phaseRuns } = lifetimes;
  // Only the frees that close a pre-trace allocation matter, and they are few: the loops go from one to the
  // next and visit only the phase runs that hold one (phaseRun never decreases, so a run is one range of
  // entries), not every entry of a big trace.
  const frees = lifetimes.freesBeforeTrace;
  // Not in a backward: there, frees release what the forward saved and allocations are new gradients —
  // no one-for-one replacement (released-by-backward names those frees).
  const replaceable = (i: number) => !a.before.has(i) && phaseRuns.phaseAt(i) !== Phase.backward;
  const runs: number[] = [];
  for (const i of frees) {
    const run = phaseRuns.runOf(i);
    if (replaceable(i) && run !== runs[runs.length - 1]) runs.push(run);
  }
  if (runs.length === 0) return;
  /** run → size → alloc entries of a known site, in order. */
  const allocs = new Map<number, Map<number, number[]>>();
  for (const run of runs) {
    const end = phaseRuns.start[run + 1];
    for (let i = phaseRuns.start[run]; i < end; i++) {
      if (kinds[t.action[i]] !== Kind.alloc || t.isWorkspace[i]) continue;
      const s = t.stack[i];
      if (s === EMPTY_STACK || stackCategory[s] === Category.unknown) continue;
      let bySize = allocs.get(run);
      if (!bySize) allocs.set(run, (bySize = new Map()));
      const size = t.sizeBytes[i];
      const list = bySize.get(size);
      if (list) list.push(i);
      else bySize.set(size, [i]);
    }
  }
  const taken = new Map<number[], number>();
  for (const i of frees) {
    if (!replaceable(i)) continue;
    const list = allocs.get(phaseRuns.runOf(i))?.get(t.sizeBytes[i]);
    if (!list) continue;
    const k = taken.get(list) ?? 0;
    if (k >= list.length) continue;
    taken.set(list, k + 1);
    const j = list[k];
    const s = t.stack[j];
    const category = a.category[j] === Category.temporary ? stackCategory[s] : a.category[j];
    a.before.set(i, { category, rule: R.replaced, site: a.site[j] });
  }
}

/** Whether a rule id names an inferred attribution. */
export function isInferredRule(rule: number): boolean {
  return RULES[rule]?.inferred === true;
}
