// The what-if engine: transformations of the replay's allocation table → a new allocated curve and peak.
// Each affected allocation adds −size on its old interval [alloc, free) and factor·size on its new ones to a
// difference array over events; one running sum gives the curve, a running max the peak: O(selected + n)
// per what-if. Allocations alive before the trace count from its start (index 0 of the difference array is
// the state before event 0, r.initial). All byte counts stay whole numbers, so the curve is exact.

import { slashPath } from "../attribution/frames";
import type { SnapshotModel } from "../model/types";
import { BEFORE_TRACE, NEVER, type Replay, stackOf } from "../replay/types";
import { Phase, type Phases, phaseId, tracePhases } from "./phases";
import { planRecompute, type RecomputePlan } from "./recompute";
import { factorText, selectionSpec, transformSpec } from "./spec";
import type { Selection, Transform, TransformSummary, WhatIfResult } from "./types";

export class WhatIfError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "WhatIfError";
  }
}

/** What the engine needs from the attribution (an `Attribution` fits). */
export interface WhatIfInputs {
  /** Category names in id order. */
  categoryNames: readonly string[];
  /** Call sites in id order: the allocation table's `site` indexes them. */
  sites: readonly { filename: string; line: number }[];
  /** The attribution's rule per stack (the phases come from it). */
  stackRule: Uint8Array;
}

/** One device's replay, prepared for what-ifs; caches per frame text and per site. */
export interface WhatIfContext {
  model: SnapshotModel;
  replay: Replay;
  categoryNames: readonly string[];
  sites: readonly { filename: string; line: number }[];
  phases: Phases;
  /** Per allocation: the phase it was made in (Phase; pre-trace: from its category, see README), 0 none. */
  allocPhase: Uint8Array;
  /** Per allocation: its free-early window (index into phases.windows[allocPhase]); -1 none. */
  allocWindow: Int32Array;
  /** Per stack: 1 when a frame's `filename:line:name` contains the text (cached per text). */
  stackMask(text: string): Uint8Array;
  /** Per frame: 1 when its text contains the text (cached per text). */
  frameMask(text: string): Uint8Array;
  /** `filename:line:name` of a frame. */
  frameText(frame: number): string;
  /** The recompute plan of a module (cached per frame text). */
  recomputePlan(module: string): RecomputePlan;
}

/** Prepares one device's replay for what-ifs. */
export function prepareWhatIf(model: SnapshotModel, replay: Replay, inputs: WhatIfInputs): WhatIfContext {
  const phases = tracePhases(model, replay.trace, inputs.stackRule);
  const A = replay.allocations;
  const allocPhase = new Uint8Array(A.length);
  const allocWindow = new Int32Array(A.length).fill(-1);
  const cat = inputs.categoryNames;
  const preTracePhase = new Uint8Array(cat.length);
  const set = (name: string, p: number) => {
    const c = cat.indexOf(name);
    if (c >= 0) preTracePhase[c] = p;
  };
  set("gradients", Phase.backward);
  set("activations", Phase.forward);
  set("optimizer_state", Phase.optimizer);
  for (let k = 0; k < A.length; k++) {
    const a = A.allocEvent[k];
    if (a === BEFORE_TRACE) {
      allocPhase[k] = preTracePhase[A.category[k]] ?? 0;
      continue;
    }
    const run = phases.run[a];
    if (run < 0) continue;
    allocPhase[k] = phases.runPhase[run];
    allocWindow[k] = phases.runWindow[run];
  }
  const texts: (string | undefined)[] = new Array(model.frames.length);
  const frameText = (f: number) => {
    let t = texts[f];
    if (t === undefined) {
      const { filename, line, name } = model.frames;
      t = texts[f] = `${model.strings[filename[f]] ?? ""}:${line[f]}:${model.strings[name[f]] ?? ""}`;
    }
    return t;
  };
  const frameMasks = new Map<string, Uint8Array>();
  const stackMasks = new Map<string, Uint8Array>();
  const frameMask = (text: string) => {
    let m = frameMasks.get(text);
    if (!m) {
      m = new Uint8Array(model.frames.length);
      for (let f = 0; f < m.length; f++) if (frameText(f).includes(text)) m[f] = 1;
      frameMasks.set(text, m);
    }
    return m;
  };
  const stackMask = (text: string) => {
    let m = stackMasks.get(text);
    if (!m) {
      const fm = frameMask(text);
      const { offsets, frameIds } = model.stacks;
      m = new Uint8Array(model.stacks.length);
      for (let s = 0; s < m.length; s++) {
        for (let i = offsets[s]; i < offsets[s + 1]; i++) {
          if (fm[frameIds[i]]) {
            m[s] = 1;
            break;
          }
        }
      }
      stackMasks.set(text, m);
    }
    return m;
  };
  const plans = new Map<string, RecomputePlan>();
  const ctx: WhatIfContext = {
    model,
    replay,
    categoryNames: inputs.categoryNames,
    sites: inputs.sites,
    phases,
    allocPhase,
    allocWindow,
    stackMask,
    frameMask,
    frameText,
    recomputePlan: (module: string) => {
      let plan = plans.get(module);
      if (!plan) plans.set(module, (plan = planRecompute(ctx, module)));
      return plan;
    },
  };
  return ctx;
}

/** Does a call site's filename end with `file` (whole path components, either slash)? */
export function siteFileMatches(filename: string, file: string): boolean {
  const f = slashPath(filename);
  const want = slashPath(file);
  return f === want || f.endsWith(`/${want}`);
}

/** The allocations a selection picks, as a mask over the allocation table. */
export function selectAllocations(ctx: WhatIfContext, sel: Selection): Uint8Array {
  const r = ctx.replay;
  const A = r.allocations;
  const n = A.length;
  const out = new Uint8Array(n);
  switch (sel.kind) {
    case "category": {
      const c = ctx.categoryNames.indexOf(sel.category);
      if (c < 0) {
        throw new WhatIfError(
          `there is no category "${sel.category}" (categories: ${ctx.categoryNames.join(", ")})`,
        );
      }
      for (let k = 0; k < n; k++) if (A.category[k] === c) out[k] = 1;
      return out;
    }
    case "site": {
      const siteOk = new Uint8Array(ctx.sites.length);
      for (let s = 0; s < ctx.sites.length; s++) {
        const site = ctx.sites[s];
        if (site.line === sel.line && siteFileMatches(site.filename, sel.file)) siteOk[s] = 1;
      }
      for (let k = 0; k < n; k++) {
        const s = A.site[k];
        if (s >= 0 && siteOk[s]) out[k] = 1;
      }
      return out;
    }
    case "frame": {
      const m = ctx.stackMask(sel.text);
      for (let k = 0; k < n; k++) if (m[stackOf(A, k)]) out[k] = 1;
      return out;
    }
    case "ids":
      for (const k of sel.ids) {
        if (!Number.isInteger(k) || k < 0 || k >= n)
          throw new WhatIfError(`allocation id ${k} is not in the table (0 … ${n - 1})`);
        out[k] = 1;
      }
      return out;
    case "window":
      for (let k = 0; k < n; k++) {
        const a = A.allocEvent[k];
        if (a >= sel.fromEvent && a <= sel.toEvent) out[k] = 1;
      }
      return out;
    case "time": {
      if (!r.hasTime) throw new WhatIfError("time: needs a trace whose entries have time_us (use window:)");
      for (let k = 0; k < n; k++) {
        const a = A.allocEvent[k];
        if (a >= 0 && r.x[a] >= sel.fromUs && r.x[a] <= sel.toUs) out[k] = 1;
      }
      return out;
    }
    case "phase": {
      const p = phaseId(sel.phase);
      for (let k = 0; k < n; k++) if (A.allocEvent[k] >= 0 && ctx.allocPhase[k] === p) out[k] = 1;
      return out;
    }
    case "all": {
      out.fill(1);
      for (const s of sel.of) {
        const m = selectAllocations(ctx, s);
        for (let k = 0; k < n; k++) out[k] &= m[k];
      }
      return out;
    }
    case "any": {
      for (const s of sel.of) {
        const m = selectAllocations(ctx, s);
        for (let k = 0; k < n; k++) out[k] |= m[k];
      }
      return out;
    }
  }
}

// ---- intervals: flat [s0, e0, s1, e1, …], sorted, disjoint, half-open, in event space (-1 = before the
// trace, n = its end).

function intersect(x: readonly number[], y: readonly number[]): number[] {
  const out: number[] = [];
  let i = 0;
  let j = 0;
  while (i < x.length && j < y.length) {
    const s = Math.max(x[i], y[j]);
    const e = Math.min(x[i + 1], y[j + 1]);
    if (s < e) out.push(s, e);
    if (x[i + 1] < y[j + 1]) i += 2;
    else j += 2;
  }
  return out;
}

function subtract(x: readonly number[], from: number, to: number): number[] {
  const out: number[] = [];
  for (let i = 0; i < x.length; i += 2) {
    const s = x[i];
    const e = x[i + 1];
    if (e <= from || s >= to) out.push(s, e);
    else {
      if (s < from) out.push(s, from);
      if (e > to) out.push(to, e);
    }
  }
  return out;
}

/**
 * Free early: where allocation k is held. Within [alloc, free), only inside the windows of the phase it
 * was made in (its own window from its allocation on, then each later window whole); made before the trace,
 * from the trace's start when the first window starts there.
 */
function heldIntervals(ctx: WhatIfContext, k: number, a: number, f: number): number[] {
  const p = ctx.allocPhase[k];
  const w = ctx.phases.windows[p];
  const out: number[] = [];
  // first window ending after a
  let lo = 0;
  let hi = w.length / 2;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (w[2 * mid + 1] <= a) lo = mid + 1;
    else hi = mid;
  }
  for (let j = lo; j < w.length / 2; j++) {
    const ws = w[2 * j];
    const we = w[2 * j + 1];
    if (ws >= f) break;
    const s = ws <= a ? a : ws === 0 && a < 0 ? a : ws;
    const e = Math.min(we, f);
    if (s < e) out.push(s, e);
  }
  return out;
}

const FREE_EARLY_ASSUMPTION =
  "each is held only while the phase it was made in runs (a backward run together with the optimizer run " +
  "right after it), dropped at its end and re-made at the start of each later run of that phase (nothing " +
  "reads it in between; gradients: zero_grad(set_to_none=True)); those made outside any phase, or before the " +
  "trace and not gradients/activations/optimizer state, are unchanged";

const RECOMPUTE_ASSUMPTION =
  "each call's saved activations (made in the call, freed by its backward; not its outputs) are dropped " +
  "when the call ends and come back when its backward starts (after the last release of what ran after it " +
  "in the forward); re-running the call then holds, on top, its forward's peak of non-saved bytes; " +
  "back-to-back calls are told apart where the module's first line runs again";

function recomputeAssumption(module: string): string {
  return `checkpointing "${module}": ${RECOMPUTE_ASSUMPTION}`;
}

const REMOVE_ASSUMPTION = "never existed (nothing else moves, nothing is made instead)";
const SCALE_ASSUMPTION =
  "each block's rounded size × the factor, to whole bytes (not re-rounded to 512-byte blocks), lifetimes unchanged";

/** One line from the transformations' assumptions: heads that share an assumption are listed together. */
function joinAssumptions(parts: { head: string; tail: string }[]): string {
  if (parts.length === 0) return "no change: the replayed trace as it is";
  const byTail = new Map<string, string[]>();
  for (const p of parts) {
    const heads = byTail.get(p.tail);
    if (heads) heads.push(p.head);
    else byTail.set(p.tail, [p.head]);
  }
  return [...byTail].map(([tail, heads]) => `${heads.join(", ")}: ${tail}`).join("; ");
}

/** allocated + the running sum of diff (from index 1) per event; the highest and the first event reaching it. */
function runningPeak(allocated: Float64Array, diff: Float64Array, curve: Float64Array | null) {
  const n = allocated.length;
  let run = diff[0];
  let peak = Number.NEGATIVE_INFINITY;
  let peakEvent = 0;
  for (let i = 0; i < n; i++) {
    run += diff[i + 1];
    const v = allocated[i] + run;
    if (curve) curve[i] = v;
    if (v > peak) {
      peak = v;
      peakEvent = i;
    }
  }
  return { peak, peakEvent };
}

export interface WhatIfOptions {
  /** Return the new allocated curve (one value per event). */
  curve?: boolean;
}

/** Applies the transformations in order and returns the new curve's peak and what it is made of. */
export function whatIf(ctx: WhatIfContext, transforms: readonly Transform[], opts: WhatIfOptions = {}) {
  return evaluate(ctx, transforms, opts);
}

/**
 * Per-context buffers an evaluation works in (per allocation: factor, touched; per event: the difference
 * array), kept for the next one: `suggest` evaluates a dozen and more, and fresh ones each time left
 * ≈ 65 MiB of garbage per evaluation on 5 M events for the collector to find later.
 */
interface Scratch {
  factor: Float64Array;
  touched: Uint8Array;
  touchedList: Int32Array;
  diff: Float64Array;
  /** Entries of touchedList in use (what to reset). */
  nTouched: number;
  busy: boolean;
}

const scratches = new WeakMap<WhatIfContext, Scratch>();

function newScratch(allocations: number, events: number): Scratch {
  return {
    factor: new Float64Array(allocations).fill(1),
    touched: new Uint8Array(allocations),
    touchedList: new Int32Array(allocations),
    diff: new Float64Array(events + 2),
    nTouched: 0,
    busy: false,
  };
}

export function evaluate(
  ctx: WhatIfContext,
  transforms: readonly Transform[],
  opts: WhatIfOptions = {},
): WhatIfResult {
  const r = ctx.replay;
  let sc = scratches.get(ctx);
  if (sc === undefined || sc.busy) {
    sc = newScratch(r.allocations.length, r.length);
    if (!scratches.has(ctx)) scratches.set(ctx, sc);
  }
  sc.busy = true;
  try {
    return evaluateIn(ctx, transforms, opts, sc);
  } finally {
    // back to the state of a fresh scratch: factor 1, nothing touched, no differences
    for (let j = 0; j < sc.nTouched; j++) {
      const k = sc.touchedList[j];
      sc.factor[k] = 1;
      sc.touched[k] = 0;
    }
    sc.nTouched = 0;
    sc.diff.fill(0);
    sc.busy = false;
  }
}

function evaluateIn(
  ctx: WhatIfContext,
  transforms: readonly Transform[],
  opts: WhatIfOptions,
  sc: Scratch,
): WhatIfResult {
  const r = ctx.replay;
  const n = r.length;
  if (n === 0 || r.peakEvent === null) {
    throw new WhatIfError(`device ${r.device} has no trace entries to replay: a what-if needs device_traces`);
  }
  const A = r.allocations;
  const size = A.sizeBytes;
  const aEv = A.allocEvent;
  const fEv = A.freeRequestedEvent;
  /** End of allocation k's allocated interval: its free_requested, or the trace's end. */
  const endOf = (k: number) => {
    const f = fEv[k];
    return f === NEVER || f > n ? n : f;
  };
  const { factor, touched, touchedList } = sc;
  let nTouched = 0;
  const intervals = new Map<number, number[]>();
  const spikes: { event: number; bytes: number; byCategory: Float64Array }[] = [];
  const summaries: (TransformSummary & { head: string; tail: string })[] = [];
  const touch = (k: number) => {
    if (!touched[k]) {
      touched[k] = 1;
      touchedList[nTouched++] = k;
      sc.nTouched = nTouched;
    }
  };
  const current = (k: number, a: number, e: number) => intervals.get(k) ?? [a, e];

  for (const t of transforms) {
    let count = 0;
    let bytes = 0;
    if (t.op === "recompute") {
      const plan = ctx.recomputePlan(t.module);
      for (let j = 0; j < plan.dropAlloc.length; j++) {
        const k = plan.dropAlloc[j];
        const a = aEv[k];
        const e = endOf(k);
        if (a >= e) continue;
        touch(k);
        intervals.set(k, subtract(current(k, a, e), plan.dropFrom[j], plan.dropTo[j]));
        count++;
        bytes += size[k];
      }
      // a loop, not push(...): a big trace's plan has more spikes than a call's arguments may be
      for (const sp of plan.spikes) spikes.push(sp);
      summaries.push({
        spec: transformSpec(t),
        allocations: count,
        bytes,
        calls: plan.calls,
        checkpointedCalls: plan.checkpointed,
        assumption: recomputeAssumption(t.module),
        head: `checkpointing "${t.module}"`,
        tail: RECOMPUTE_ASSUMPTION,
      });
      continue;
    }
    const mask = selectAllocations(ctx, t.select);
    const f = t.op === "scale" ? t.factor : 0;
    for (let k = 0; k < A.length; k++) {
      if (!mask[k]) continue;
      const a = aEv[k];
      const e = endOf(k);
      if (a >= e) continue;
      if (t.op === "free-early") {
        if (ctx.allocPhase[k] === 0) continue;
        intervals.set(k, intersect(current(k, a, e), heldIntervals(ctx, k, a, e)));
      } else factor[k] *= f;
      touch(k);
      count++;
      bytes += size[k];
    }
    const what = selectionSpec(t.select);
    const [head, tail] =
      t.op === "remove"
        ? [what, REMOVE_ASSUMPTION]
        : t.op === "scale"
          ? [`${what} × ${factorText(t.factor)}`, SCALE_ASSUMPTION]
          : [`free early ${what}`, FREE_EARLY_ASSUMPTION];
    summaries.push({
      spec: transformSpec(t),
      allocations: count,
      bytes,
      assumption: `${head}: ${tail}`,
      head,
      tail,
    });
  }

  // Difference array: index e + 1 for event e (0: before the trace).
  const diff = sc.diff;
  const scaled = (k: number) => (factor[k] === 1 ? size[k] : Math.round(size[k] * factor[k]));
  const anyIntervals = intervals.size > 0;
  for (let j = 0; j < nTouched; j++) {
    const k = touchedList[j];
    const a = aEv[k];
    const e = endOf(k);
    const s = size[k];
    const v = scaled(k);
    const list = anyIntervals ? intervals.get(k) : undefined;
    if (list === undefined) {
      diff[a + 1] += v - s;
      diff[e + 1] -= v - s;
      continue;
    }
    diff[a + 1] -= s;
    diff[e + 1] += s;
    if (v === 0) continue;
    for (let i = 0; i < list.length; i += 2) {
      diff[list[i] + 1] += v;
      diff[list[i + 1] + 1] -= v;
    }
  }
  for (const sp of spikes) {
    diff[sp.event + 1] += sp.bytes;
    diff[sp.event + 2] -= sp.bytes;
  }
  const initialBytes = r.initial.allocatedBytes + diff[0];
  const curve = opts.curve ? new Float64Array(n) : null;
  const { peak, peakEvent } = runningPeak(r.allocated, diff, curve);

  // What the new peak is made of.
  const byCategory = new Float64Array(Math.max(r.categoryCount, ctx.categoryNames.length));
  const p = peakEvent;
  const cat = A.category;
  for (let k = 0; k < A.length; k++) {
    if (touched[k]) continue;
    const a = aEv[k];
    const f = fEv[k];
    if (a <= p && (f === NEVER || f > p)) byCategory[cat[k]] += size[k];
  }
  for (let j = 0; j < nTouched; j++) {
    const k = touchedList[j];
    const v = scaled(k);
    if (v === 0) continue;
    const list = (anyIntervals ? intervals.get(k) : undefined) ?? [aEv[k], endOf(k)];
    for (let i = 0; i < list.length; i += 2) {
      if (list[i] <= p && p < list[i + 1]) {
        byCategory[cat[k]] += v;
        break;
      }
    }
  }
  for (const sp of spikes) {
    if (sp.event !== p) continue;
    for (let c = 0; c < sp.byCategory.length; c++) byCategory[c] += sp.byCategory[c];
  }
  const categoriesAtPeak: Record<string, number> = {};
  for (let c = 0; c < byCategory.length; c++) {
    const name = ctx.categoryNames[c] ?? `category ${c}`;
    categoriesAtPeak[name] = (categoriesAtPeak[name] ?? 0) + byCategory[c];
  }
  const baselinePeakBytes = r.peakAllocatedBytes;
  const result: WhatIfResult = {
    device: r.device,
    events: n,
    peakBytes: peak,
    peakEvent,
    peakTimeUs: r.hasTime ? r.x[peakEvent] : null,
    baselinePeakBytes,
    baselinePeakEvent: r.peakEvent,
    savedBytes: baselinePeakBytes - peak,
    categoriesAtPeak,
    assumption: joinAssumptions(summaries),
    transforms: summaries.map(({ head: _h, tail: _t, ...s }) => s),
    initialBytes,
  };
  if (curve) result.curve = curve;
  return result;
}
