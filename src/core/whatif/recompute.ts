// Recompute (activation checkpointing) of a module named by a frame text. README.md ("Recompute") has the
// definitions; in short, per call of the module in a forward run:
//   call      a maximal run of consecutive alloc entries whose stack has a frame containing the text (any
//             other alloc ends it); back-to-back calls split where the module's first line runs again (the
//             Python frame just inside the module's frame, past torch's Module.__call__ plumbing, returns to the
//             call's first one after another was seen). The call spans [s, e]: its first alloc to just before
//             the next alloc that is not the call's (or its forward run's end).
//   saved D   allocations made in [s, e], category activations, freed (free_requested) after e in a backward
//   R         the first free of D (the module's backward is under way)
//   B         the module's backward start: just after the last release, before R, of something made after the
//             call in the forward (what ran after it has finished its backward); else its backward run's start
//   drop      D leaves the curve on [e + 1, B − 1): after event B − 1 the recompute has brought it back
//   X         the recompute's own working memory: the peak, over [s, e], of bytes the call made that are not
//             in D (transients, outputs), added at event B − 1

import { isPythonFile } from "../attribution/frames";
import { Action, EMPTY_STACK } from "../model/types";
import { NEVER } from "../replay/types";
import type { WhatIfContext } from "./engine";
import { Phase } from "./phases";

export interface RecomputePlan {
  /** Module calls found in forward runs, and those whose saved activations are dropped. */
  calls: number;
  checkpointed: number;
  /** Per dropped allocation: its id and the event interval [from, to) it leaves the curve. */
  dropAlloc: number[];
  dropFrom: number[];
  dropTo: number[];
  /** The recompute's working memory: bytes at one event, by category. */
  spikes: { event: number; bytes: number; byCategory: Float64Array }[];
  /** Per checkpointed call: [s, e], B and X (for the UI and tests). */
  detail: { start: number; end: number; backwardStart: number; savedBytes: number; recomputeBytes: number }[];
}

const MODULE_PLUMBING = /\/torch\/nn\/modules\/module\.py$/;

/**
 * Per stack matching the text: the Python frame just inside the outermost matching frame, past torch's
 * Module.__call__ plumbing (native frames skipped).
 */
function childKeys(ctx: WhatIfContext, text: string, stackMask: Uint8Array): Int32Array {
  const { model } = ctx;
  const fm = ctx.frameMask(text);
  const { offsets, frameIds } = model.stacks;
  const key = new Int32Array(model.stacks.length).fill(-1);
  const plumbing = new Map<number, boolean>();
  const isPlumbing = (f: number) => {
    let v = plumbing.get(f);
    if (v === undefined) {
      const name = model.strings[model.frames.filename[f]] ?? "";
      v = !isPythonFile(name) || MODULE_PLUMBING.test(name.replaceAll("\\", "/"));
      plumbing.set(f, v);
    }
    return v;
  };
  for (let s = 0; s < key.length; s++) {
    if (!stackMask[s]) continue;
    let outer = -1;
    for (let i = offsets[s + 1] - 1; i >= offsets[s]; i--) {
      if (fm[frameIds[i]]) {
        outer = i;
        break;
      }
    }
    for (let i = outer - 1; i >= offsets[s]; i--) {
      if (!isPlumbing(frameIds[i])) {
        key[s] = frameIds[i];
        break;
      }
    }
  }
  return key;
}

export function planRecompute(ctx: WhatIfContext, module: string): RecomputePlan {
  const r = ctx.replay;
  const n = r.length;
  const plan: RecomputePlan = {
    calls: 0,
    checkpointed: 0,
    dropAlloc: [],
    dropFrom: [],
    dropTo: [],
    spikes: [],
    detail: [],
  };
  const trace = r.trace;
  if (!trace) return plan;
  const mask = ctx.stackMask(module);
  const keys = childKeys(ctx, module, mask);
  const { run, runPhase, runStart, runEnd } = ctx.phases;
  const { action, stack, isWorkspace } = trace;
  const ev = r.eventAllocation;
  const A = r.allocations;
  const activations = ctx.categoryNames.indexOf("activations");
  const inD = new Uint8Array(A.length);

  const closeCall = (s: number, e: number) => {
    plan.calls++;
    // Candidates: activations made in the call, freed in a backward run (the first such run after it).
    const C: number[] = [];
    let b = -1;
    for (let j = s; j <= e; j++) {
      if (action[j] !== Action.alloc) continue;
      const k = ev[j];
      if (k < 0 || A.allocEvent[k] !== j || A.category[k] !== activations) continue;
      const f = A.freeRequestedEvent[k];
      if (f === NEVER || f <= e || f >= n) continue;
      const fr = run[f];
      if (fr < 0 || runPhase[fr] !== Phase.backward) continue;
      if (b < 0 || fr < b) b = fr;
      C.push(k);
    }
    if (C.length === 0) return;
    const bwdStart = runStart[b];
    // L: the last release, in that backward run, of something made after the call in the forward; then
    // the rest of that burst of frees (one backward node releasing what it saved).
    let L = bwdStart - 1;
    for (let i = runEnd[b] - 1; i >= bwdStart; i--) {
      const k = ev[i];
      if (k < 0 || A.freeRequestedEvent[k] !== i) continue;
      const a = A.allocEvent[k];
      if (a > e && a < bwdStart) {
        L = i;
        break;
      }
    }
    if (L >= bwdStart) while (L + 1 < runEnd[b] && action[L + 1] !== Action.alloc) L++;
    // The call's output: the last allocation it made that outlives it (kept by checkpointing).
    let output = -1;
    for (let j = e; j >= s && output < 0; j--) {
      const k = ev[j];
      if (action[j] === Action.alloc && k >= 0 && A.allocEvent[k] === j) {
        const f = A.freeRequestedEvent[k];
        if (f === NEVER || f > e) output = k;
      }
    }
    // Saved: the candidates released after L (by the call's own backward), but its output; those released
    // by L are outputs too, released by the backward of what consumed them. Outputs stay.
    const D = C.filter(
      (k) => k !== output && A.freeRequestedEvent[k] > L && run[A.freeRequestedEvent[k]] === b,
    );
    const B = L + 1;
    if (D.length === 0) return;
    if (B - 1 <= e + 1) return; // the backward begins right away: nothing to drop
    for (const k of D) inD[k] = 1;
    // X: the peak of the call's non-saved bytes over [s, e].
    let live = 0;
    let X = 0;
    let at = -1;
    for (let j = s; j <= e; j++) {
      const k = ev[j];
      if (k >= 0 && !inD[k]) {
        if (A.allocEvent[k] === j) live += A.sizeBytes[k];
        else if (A.freeRequestedEvent[k] === j && A.allocEvent[k] >= s) live -= A.sizeBytes[k];
      }
      if (live > X) {
        X = live;
        at = j;
      }
    }
    let saved = 0;
    for (const k of D) {
      plan.dropAlloc.push(k);
      plan.dropFrom.push(e + 1);
      plan.dropTo.push(B - 1);
      saved += A.sizeBytes[k];
    }
    if (X > 0) {
      const byCategory = new Float64Array(r.categoryCount);
      for (let j = s; j <= at; j++) {
        if (action[j] !== Action.alloc) continue;
        const k = ev[j];
        if (k < 0 || inD[k] || A.allocEvent[k] !== j) continue;
        const f = A.freeRequestedEvent[k];
        if (f === NEVER || f > at) byCategory[A.category[k]] += A.sizeBytes[k];
      }
      plan.spikes.push({ event: B - 1, bytes: X, byCategory });
    }
    for (const k of D) inD[k] = 0;
    plan.checkpointed++;
    plan.detail.push({ start: s, end: e, backwardStart: B, savedBytes: saved, recomputeBytes: X });
  };

  let open = false;
  let s = 0;
  let callRun = -1;
  let firstKey = -1;
  let seenOther = false;
  for (let i = 0; i < n; i++) {
    if (action[i] !== Action.alloc || isWorkspace[i] || ev[i] < 0) continue;
    const st = stack[i];
    const ri = run[i];
    const member = st !== EMPTY_STACK && mask[st] === 1 && ri >= 0 && runPhase[ri] === Phase.forward;
    if (open && (!member || ri !== callRun)) {
      closeCall(s, Math.min(i, runEnd[callRun]) - 1);
      open = false;
    }
    if (!member) continue;
    const key = keys[st];
    if (open) {
      if (key === firstKey) {
        if (seenOther) {
          closeCall(s, i - 1);
          open = false;
        }
      } else seenOther = true;
    }
    if (!open) {
      open = true;
      s = i;
      callRun = ri;
      firstKey = key;
      seenOther = false;
    }
  }
  if (open) closeCall(s, Math.min(n, runEnd[callRun]) - 1);
  return plan;
}
