// Categories a profiler trace shows through its spans, decided per allocation from where it was made
// and where it was freed. They are written as "span:<profiler category>" in the trace's category
// column; the attribution marks them inferred (rule `profiler-span`). Where the spans show nothing,
// an allocation with Python frames keeps the stack rules; one without stays unknown ("span:unknown").

/**
 * What a memory event's enclosing spans say, per memory event (index into the trace's memory events), as
 * columns: no object per event.
 */
export interface SpanFacts {
  /** FACT_* bits. */
  flags: Uint8Array;
  /** End (µs) of the innermost enclosing `Optimizer.step#…` span; NaN when none. */
  optimizerStepEnd: Float64Array;
}

/** Some enclosing span is an AccumulateGrad node. */
export const FACT_ACCUMULATE_GRAD = 1;
/** Some enclosing span is the autograd engine running a node (`autograd::engine::evaluate_function: …`). */
export const FACT_BACKWARD = 2;
/** The stack holds at least one Python frame (with_stack=True). */
export const FACT_PYTHON = 4;

/**
 * Per event position: the category string of an allocation, or null for frees and OOMs.
 * `freeOf[p]`: the position of allocation p's free (-1: never freed in the trace).
 */
export function decideSpanCategories(
  events: number[],
  freeOf: Int32Array,
  isFree: Uint8Array,
  facts: SpanFacts,
  ts: Float64Array,
): (string | null)[] {
  const out: (string | null)[] = new Array(events.length).fill(null);
  const { flags, optimizerStepEnd } = facts;
  for (let p = 0; p < events.length; p++) {
    if (isFree[p]) continue;
    const i = events[p];
    const f = flags[i];
    const stepEnd = optimizerStepEnd[i];
    const q = freeOf[p];
    const freedInBackward = q >= 0 && (flags[events[q]] & FACT_BACKWARD) !== 0;
    let cat: string | null = null;
    if (f & FACT_ACCUMULATE_GRAD) cat = "gradient";
    else if (!Number.isNaN(stepEnd)) {
      // made by the optimizer's step: its state when it outlives the step, scratch otherwise
      cat = q >= 0 && ts[events[q]] <= stepEnd ? "temporary" : "optimizer_state";
    } else if (f & FACT_BACKWARD) {
      if (freedInBackward) cat = "temporary";
    } else if (freedInBackward) cat = "activation";
    out[p] = cat !== null ? `span:${cat}` : f & FACT_PYTHON ? null : "span:unknown";
  }
  return out;
}
