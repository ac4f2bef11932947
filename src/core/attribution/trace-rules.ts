// The trace refinements (rules.ts, scope "trace"): what an allocation is depends on when it is freed as
// well as where it was made. One pass pairs every alloc with the entry that ends it; a second walks the
// phases (forward / backward / optimizer, from each entry's stack rule) to decide, per allocation, whether
// it outlived the phase that made it.

import { recycleMemory, takeInt32, takeUint8 } from "../model/recycled-memory";
import { Action, EMPTY_STACK, type SnapshotModel } from "../model/types";
import type { Paired } from "../replay/pairing";
import { NEVER, Origin } from "../replay/types";
import { lowerBoundInt32 } from "../sorted";
import { Category, RULES, RuleId } from "./rules";

type Trace = SnapshotModel["traces"][number];

/** Phase of a trace entry, from its stack's rule: what the program was doing. */
export const Phase = { none: 0, forward: 1, backward: 2, optimizer: 3, parameters: 4 } as const;
const PHASE_OF_RULE: Record<string, number> = {
  forward: Phase.forward,
  "accumulate-grad": Phase.backward,
  "autograd-engine": Phase.backward,
  "backward-call": Phase.backward,
  optimizer: Phase.optimizer,
  "module-to": Phase.parameters,
  "load-weights": Phase.parameters,
  "init-weights": Phase.parameters,
  "data-parallel-replicate": Phase.parameters,
  "own-constructor": Phase.parameters,
};
export const RULE_PHASE = Uint8Array.from(RULES, (r) => PHASE_OF_RULE[r.id] ?? Phase.none);

const R = {
  ownCode: RuleId["own-code"],
  engine: RuleId["autograd-engine"],
  accumulateGrad: RuleId["accumulate-grad"],
  backwardCall: RuleId["backward-call"],
  forward: RuleId.forward,
  optimizer: RuleId.optimizer,
  inFlight: RuleId["backward-in-flight"],
  engineNoStack: RuleId["engine-no-stack"],
  loss: RuleId["loss-computation"],
  lossIntermediate: RuleId["loss-intermediate"],
  lossSaved: RuleId["loss-saved"],
  forwardTransient: RuleId["forward-transient"],
  optimizerScratch: RuleId["optimizer-scratch"],
  workspace: RuleId["npu-workspace"],
};

/** Per action id: 2 alloc, 3 free_requested / free_completed, 4 another memory action, 0 the rest. */
export const Kind = { other: 0, alloc: 2, free: 3, memory: 4 } as const;

/**
 * For an alloc entry, the entry that ends it (its free_requested, else free_completed, else the alloc that
 * reused the address); n when it is alive at the end, and for other entries. Read off the pairing rather
 * than kept as a column of n entries: fresh memory costs more than the two loads (docs/speed.md).
 */
export class AllocationEnds {
  constructor(
    private readonly action: Uint8Array,
    private readonly eventAllocation: Int32Array,
    private readonly freeRequested: Int32Array,
    private readonly n: number,
  ) {}

  of(i: number): number {
    const k = this.eventAllocation[i];
    if (k < 0 || this.action[i] !== Action.alloc) return this.n;
    const e = this.freeRequested[k];
    return e === NEVER ? this.n : e;
  }
}

export interface TraceLifetimes {
  /** Where each alloc entry's allocation ends. */
  end: AllocationEnds;
  /** The frees that close an allocation made before the trace (the free_requested, or a free_completed
   * with no request before it: the entry the replay takes such an allocation from), ascending. */
  freesBeforeTrace: number[];
  /** Per entry: phase (Phase) of the entry's stack; engine-thread entries are backward. */
  phase: Uint8Array;
  /** The runs of one phase the entries make. */
  runs: PhaseRuns;
  /** Addresses of live blocks → index of the last alloc there (where a live block's allocation is). */
  lastAlloc: Map<number, number>;
  /** Do free entries carry the allocation's stack (`context="alloc"`) rather than their own? */
  freesCarryAllocationStack: boolean;
  /**
   * The alloc entries' lifetimes by size and category, as the rules left the categories (null where
   * something changed a category after them: a profiler's categories).
   */
  bySize: SizeLifetimes | null;
}

/** Intervals [start, end) of entries by size: an allocation's alloc entry and the entry that ends it. */
export class IntervalsBySize {
  readonly starts = new Map<number, number[]>();
  readonly ends = new Map<number, number[]>();

  add(size: number, start: number, end: number): void {
    const s = this.starts.get(size);
    if (s) {
      s.push(start);
      (this.ends.get(size) as number[]).push(end);
    } else {
      this.starts.set(size, [start]);
      this.ends.set(size, [end]);
    }
  }
}

/**
 * What the inference of pre-trace memory weighs (before-trace.ts), gathered as the rules walk the alloc
 * entries (a pass of its own over the 1.05 GB file's 6.6 M entries took ≈ 45 ms in Node): the lifetimes of
 * the trace's gradients, parameters and kept optimizer state by size, and the sizes the optimizer allocated.
 */
export class SizeLifetimes {
  readonly gradients = new IntervalsBySize();
  readonly parameters = new IntervalsBySize();
  /** The optimizer's allocations that are optimizer_state (its moments, not scratch). */
  readonly optimizerState = new IntervalsBySize();
  readonly optimizerSizes = new Set<number>();

  /** Whether an alloc entry of `category` (`optimizer`: its stack's rule is) is gathered (add). */
  static weighs(category: number, optimizer: boolean): boolean {
    return category === Category.gradients || category === Category.parameters || optimizer;
  }

  /** Alloc entry i of `size`, ending at `end`, is of `category`; `optimizer`: its stack's rule is. */
  add(i: number, size: number, end: number, category: number, optimizer: boolean): void {
    if (category === Category.gradients) this.gradients.add(size, i, end);
    else if (category === Category.parameters) this.parameters.add(size, i, end);
    if (optimizer) {
      this.optimizerSizes.add(size);
      if (category === Category.optimizer_state) this.optimizerState.add(size, i, end);
    }
  }
}

/**
 * Applies the trace refinements to the alloc entries of one device trace in place (`entries`: cat, rule,
 * site) and returns the lifetimes the inference of pre-trace memory needs.
 *  - Engine-made allocations (autograd-engine frames; frame-less ones of a stacks='python' file; torch's
 *    own backward(), which makes the root gradient) are gradients if some main-thread event happened
 *    between the allocation and its free — they outlived their backward: AccumulateGrad kept them as .grad —
 *    and temporaries in flight otherwise.
 *  - A forward's allocation freed before any backward or optimizer entry comes after it is a transient.
 *  - An optimizer allocation freed before the program left the optimizer step is scratch.
 *  - The user's own code between a forward and its backward (the loss): freed before the backward began, an
 *    intermediate; freed during it, saved for it (activations); outliving it, the loss itself (other).
 * torch_npu workspace entries (prepended, out of time order) take no part.
 */
export function refineFromTrace(
  t: Trace,
  kinds: Uint8Array,
  stackRule: Uint8Array,
  entries: TraceEntries,
  blockAddresses: Set<number> | undefined,
  paired: Paired,
  engineNoStackSite: number,
): TraceLifetimes {
  const { end, freesBeforeTrace, lastAlloc, freesCarryAllocationStack } = lifetimesOf(
    t,
    paired,
    blockAddresses,
  );

  const { engine, phase, runs } = entries;
  const bySize = refineAllocations(t, kinds, stackRule, entries, runs, end, engineNoStackSite);
  recycleMemory(engine.buffer as ArrayBuffer, engine.byteOffset, engine.byteLength); // read by nothing else
  return { end, freesBeforeTrace, phase, runs, lastAlloc, freesCarryAllocationStack, bySize };
}

// The passes of refineFromTrace, each a small function of its own: on a file opened cold, V8 compiles a
// small loop in a moment, where the loops of one big function each waited for the whole of it.

/** A trace's entries as the rules start from them (entriesFromStacks). */
export interface TraceEntries {
  /** Per entry: category, call site and rule, from its stack's (torch_npu workspace entries: workspace). */
  cat: Uint8Array;
  site: Int32Array;
  rule: Uint8Array;
  /**
   * Per entry: engine thread (1; 2 for AccumulateGrad; 0 for the main thread's entries and the rest).
   * Its memory is recycled once the rules have run (refineFromTrace): nothing reads it after.
   */
  engine: Uint8Array;
  /** Per entry: its phase (Phase). */
  phase: Uint8Array;
  /** The runs of one phase that `phase` makes. */
  runs: PhaseRuns;
}

/**
 * Each entry's category, site and rule from its stack's, and what the trace rules read of it (engine
 * thread, phase, the phase runs): one pass, each entry's stack read once (two passes read it twice: 99
 * against 78 ms of the attribution on the 1.05 GB file in Node, on the way to the page's first answer; the
 * runs made by a pass of their own over the phases took 8 ms more there, 20–24 ms in the page's helper).
 */
export function entriesFromStacks(
  t: Trace,
  stackCategory: Uint8Array,
  stackSite: Int32Array,
  stackRule: Uint8Array,
  kinds: Uint8Array,
  pythonOnly: boolean,
): TraceEntries {
  const n = t.length;
  const cat = takeUint8(n);
  const site = takeInt32(n);
  const rule = takeUint8(n);
  const engine = takeUint8(n);
  const phase = takeUint8(n);
  const { action, stack, isWorkspace } = t;
  const runs = new RunsBuilder(n);
  for (let i = 0; i < n; i++) {
    const s = stack[i];
    const r = stackRule[s];
    site[i] = stackSite[s];
    if (isWorkspace[i]) {
      cat[i] = Category.workspace;
      rule[i] = R.workspace;
      continue; // (no part in the trace rules)
    }
    cat[i] = stackCategory[s];
    rule[i] = r;
    const k = kinds[action[i]];
    if (k === Kind.other) continue;
    if (s === EMPTY_STACK) {
      if (pythonOnly && k !== Kind.memory) {
        engine[i] = 1;
        phase[i] = Phase.backward;
        runs.at(i, Phase.backward);
      }
    } else {
      if (r === R.accumulateGrad)
        engine[i] = 2; // a gradient whatever happens next
      else if (r === R.engine) engine[i] = 1;
      const ph = RULE_PHASE[r];
      phase[i] = ph;
      if (ph !== Phase.none) runs.at(i, ph);
    }
  }
  return { cat, site, rule, engine, phase, runs: runs.finish() };
}

/**
 * The runs of one phase: a run starts where an entry's phase differs from the last phase seen (entries of
 * no phase keep the run), so each run is one range of entries. A few thousand runs on a big trace, kept as
 * their starts rather than as two columns of n entries (fresh memory costs more than a binary search).
 */
export class PhaseRuns {
  constructor(
    /** Per run, its first entry, ascending (start[0] = 0), and the trace's length last. */
    readonly start: Int32Array,
    /** Per run: its phase. */
    readonly phase: Uint8Array,
    /** The first entry with a phase (the entries before it are in run 0 but of no phase yet). */
    readonly firstPhased: number,
  ) {}

  /** The run entry i is in. */
  runOf(i: number): number {
    return lowerBoundInt32(this.start, i + 1) - 1;
  }

  /** The last phase seen at or before entry i (its run's, or none before the first). */
  phaseAt(i: number): number {
    return i < this.firstPhased ? Phase.none : this.phase[this.runOf(i)];
  }
}

/**
 * PhaseRuns made as the phases are written, entry by entry: a run starts at an entry whose phase differs
 * from the last phase seen (entries of no phase are not told, and keep the run).
 */
class RunsBuilder {
  private readonly starts = [0];
  private readonly phases: number[] = [];
  private firstPhased: number;
  /** The last phase seen (none before the first). */
  private last: number = Phase.none;

  constructor(private readonly n: number) {
    this.firstPhased = n;
  }

  /** Entry i (ascending) has phase `ph` (not none). */
  at(i: number, ph: number): void {
    if (ph === this.last) return;
    if (this.last !== Phase.none) {
      this.phases.push(this.last);
      this.starts.push(i);
    } else this.firstPhased = i;
    this.last = ph;
  }

  finish(): PhaseRuns {
    this.phases.push(this.last);
    this.starts.push(this.n);
    return new PhaseRuns(Int32Array.from(this.starts), Uint8Array.from(this.phases), this.firstPhased);
  }
}

/**
 * The rules that depend on when an allocation is freed, applied to the alloc entries in place; the
 * engine's frame-less allocations (engine-no-stack, backward-in-flight) get the engine's site. Returns
 * the alloc entries' lifetimes by size and category as the rules leave them.
 */
function refineAllocations(
  t: Trace,
  kinds: Uint8Array,
  stackRule: Uint8Array,
  entries: TraceEntries,
  runs: PhaseRuns,
  end: AllocationEnds,
  engineNoStackSite: number,
): SizeLifetimes {
  const n = t.length;
  const bySize = new SizeLifetimes();
  const { cat, site, rule, engine, phase } = entries;
  // Backwards, so that "the next entry of another phase" is a running value rather than four columns of
  // n entries each (fresh memory costs more than the arithmetic on a big trace): at entry i, `next` is
  // the phase of the nearest phase entry after i, `nf` / `no` / `nb` the first entry after i whose phase
  // is another than forward / optimizer / backward, `b` the first backward entry after i, `nbAfterB`
  // the first entry after b of another phase and `nextMain` the first main-thread entry after i (a memory
  // entry with a stack that is neither the engine's nor AccumulateGrad's).
  // `run`: the run of entry i - 1 (walked down with i)
  for (
    let i = n - 1,
      next = 0,
      nf = n,
      no = n,
      nb = n,
      b = n,
      nbAfterB = n,
      nextMain = n,
      run = runs.phase.length - 1;
    i >= 0;
    i--
  ) {
    while (run > 0 && runs.start[run] > i - 1) run--;
    const k = kinds[t.action[i]];
    const s = t.stack[i];
    if (k === Kind.alloc && !t.isWorkspace[i]) {
      const r = s === EMPTY_STACK ? -1 : stackRule[s];
      const e = end.of(i);
      const prev = i > 0 && i - 1 >= runs.firstPhased ? runs.phase[run] : 0; // the nearest phase entry before i
      let fired = -1;
      if (engine[i] === 1 || r === R.backwardCall) {
        const outlived = nextMain < e; // a main-thread entry between the allocation and its end
        fired = outlived ? (s === EMPTY_STACK ? R.engineNoStack : r) : R.inFlight;
      } else if (r === R.forward) {
        if (e < n && e < nf) fired = R.forwardTransient;
      } else if (r === R.optimizer) {
        if (e < n && e < no) fired = R.optimizerScratch;
      } else if (r === R.ownCode && prev === Phase.forward && next === Phase.backward) {
        // b: the backward that follows; nbAfterB: the first entry after b of another phase
        fired = e < b ? R.lossIntermediate : b < n && e < nbAfterB ? R.lossSaved : R.loss;
      }
      if (fired >= 0 && fired !== r) {
        rule[i] = fired;
        cat[i] = RULES[fired].category;
        if (s === EMPTY_STACK && (fired === R.engineNoStack || fired === R.inFlight))
          site[i] = engineNoStackSite;
      }
      const optimizer = r === R.optimizer;
      if (SizeLifetimes.weighs(cat[i], optimizer)) bySize.add(i, t.sizeBytes[i], e, cat[i], optimizer);
    }
    if (k !== Kind.other && s !== EMPTY_STACK && engine[i] === 0 && !t.isWorkspace[i]) nextMain = i;
    const ph = phase[i];
    if (ph) {
      next = ph;
      if (ph !== Phase.forward) nf = i;
      if (ph !== Phase.optimizer) no = i;
      if (ph !== Phase.backward) nb = i;
      else {
        b = i;
        nbAfterB = nb;
      }
    }
  }
  return bySize;
}

/**
 * The lifetimes the rules read, off the replay's pass 1 (replay/pairing.ts: allocs and frees paired by
 * address and ordinal): an alloc ends at its free_requested, else its free_completed, else the alloc that
 * reused its address (the allocation's freeRequestedEvent); a free that opens an allocation made before
 * the trace is where the replay takes that allocation from.
 */
function lifetimesOf(t: Trace, p: Paired, blockAddresses: Set<number> | undefined) {
  const n = t.length;
  const { action, stack } = t;
  const eventAllocation = p.eventAllocation;
  const { origin, allocEvent, freeRequestedEvent: freeReq, freeCompletedEvent: freeComp } = p.table;
  // The frees of allocations made before the trace: the free that revealed each one (pass 1 made the
  // allocation at it), found from the allocations rather than by a pass over every entry.
  const frees: number[] = [];
  for (let k = 0; k < p.count; k++) {
    const o = origin[k];
    if (o === Origin.beforeTraceFreed) frees.push(freeReq[k]);
    else if (o === Origin.beforeTracePending) frees.push(freeComp[k]);
  }
  const freesBeforeTrace = frees.sort((a, b) => a - b); // (a few hundred on a big file)
  // Do frees carry their allocation's stack? The first 4,096 frees that ended an allocation of the
  // trace, with a stack on both sides, tell (the entries up to them, not all).
  let sameStack = 0;
  let otherStack = 0;
  for (let i = 0; i < n && sameStack + otherStack < 4096; i++) {
    const k = eventAllocation[i];
    if (k < 0 || action[i] === Action.alloc || origin[k] !== Origin.trace || freeReq[k] !== i) continue;
    const s = stack[allocEvent[k]];
    if (s !== EMPTY_STACK && stack[i] !== EMPTY_STACK) {
      if (s === stack[i]) sameStack++;
      else otherStack++;
    }
  }
  // the last alloc entry at each live block's address (pass 1 kept it per address)
  const lastAlloc = new Map<number, number>();
  const last = p.map.second;
  if (blockAddresses && last) {
    for (const a of blockAddresses) {
      const slot = p.map.find(a);
      if (slot >= 0 && last[slot] >= 0) lastAlloc.set(a, last[slot]);
    }
  }
  return {
    end: new AllocationEnds(action, eventAllocation, freeReq, n),
    freesBeforeTrace,
    lastAlloc,
    freesCarryAllocationStack: sameStack > 0 && otherStack === 0,
  };
}
