// Categories a profiler trace shows through its spans, decided per allocation from where it was made
// and where it was freed. They are written as "span:<profiler category>" in the trace's category
// column; the attribution marks them inferred (rule `profiler-span`). Where the spans show nothing,
// an allocation with Python frames keeps the stack rules; one without stays unknown ("span:unknown").

export interface SpanFacts {
  /** The innermost op (or annotation) span containing the event; null when none. */
  op: string | null;
  /** Some enclosing span is an AccumulateGrad node. */
  accumulateGrad: boolean;
  /** Some enclosing span is the autograd engine running a node (`autograd::engine::evaluate_function: …`). */
  inBackward: boolean;
  /** End (µs) of the enclosing `Optimizer.step#…` span; NaN when none. */
  optimizerStepEnd: number;
  /** The stack holds at least one Python frame (with_stack=True). */
  hasPython: boolean;
}

/**
 * Per event position: the category string of an allocation, or null for frees and OOMs.
 * `freeOf[p]`: the position of allocation p's free (-1: never freed in the trace).
 */
export function decideSpanCategories(
  events: number[],
  freeOf: Int32Array,
  isFree: Uint8Array,
  facts: SpanFacts[],
  ts: Float64Array,
): (string | null)[] {
  const out: (string | null)[] = new Array(events.length).fill(null);
  for (let p = 0; p < events.length; p++) {
    if (isFree[p]) continue;
    const f = facts[events[p]];
    if (!f) continue;
    const q = freeOf[p];
    const freed = q >= 0 ? facts[events[q]] : null;
    let cat: string | null = null;
    if (f.accumulateGrad) cat = "gradient";
    else if (!Number.isNaN(f.optimizerStepEnd)) {
      // made by the optimizer's step: its state when it outlives the step, scratch otherwise
      cat = q >= 0 && ts[events[q]] <= f.optimizerStepEnd ? "temporary" : "optimizer_state";
    } else if (f.inBackward) {
      if (freed?.inBackward) cat = "temporary";
    } else if (freed?.inBackward) cat = "activation";
    out[p] = cat !== null ? `span:${cat}` : f.hasPython ? null : "span:unknown";
  }
  return out;
}
