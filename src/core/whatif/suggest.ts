// Ranked ways under the limit: each suggestion is a list of transformations evaluated by the engine, with
// the assumption that makes its figure exact and an honest caveat about what it costs.

import { isPythonFile, pathTail, slashPath } from "../attribution/frames";
import { Action, type CountersSidecar, EMPTY_STACK } from "../model/types";
import { deviceTotalFor, outsideAllocatorBytes } from "../replay/outside";
import { roundRequest } from "../replay/rounding";
import type { Replay } from "../replay/types";
import { formatMiB as formatBytes } from "../report/format";
import { evaluate, selectAllocations, type WhatIfContext } from "./engine";
import { Phase } from "./phases";
import { transformSpec } from "./spec";
import type { Capacity, OomNeed, Selection, Suggestion, SuggestionKind, Transform } from "./types";

/** Keys a counters sidecar's memory_stats may carry for the device's total (torch's memory_stats has none). */
const TOTAL_KEYS = ["total_memory", "device_total_bytes", "total_bytes"];

/** The OOM entries of the replay with what was needed. */
export function oomNeeds(r: Replay): OomNeed[] {
  return r.markers.oom.map((o) => {
    const allocatedBytes = o.eventIndex >= 0 ? r.allocated[o.eventIndex] : r.initial.allocatedBytes;
    const requestBytes = roundRequest(o.requestedBytes, r.rounding);
    const free = Number.isFinite(o.deviceFreeBytes) ? o.deviceFreeBytes : Number.NaN;
    return {
      eventIndex: o.eventIndex,
      requestBytes,
      allocatedBytes,
      deviceFreeBytes: free,
      neededBytes: Number.isFinite(free) ? Math.max(0, requestBytes - free) : Number.NaN,
    };
  });
}

/**
 * The device's capacity for memory_allocated(): an explicit figure; else a total in the counters'
 * memory_stats (`total_memory`, when the capture added one); else the first OOM entry: allocated there +
 * the device_free it reported (cached-but-free blocks the allocator could not release count as unusable).
 */
export function deviceCapacity(
  r: Replay,
  counters: CountersSidecar | null,
  explicitBytes?: number | null,
  /** How the explicit figure was read (units.ts parseCapacity's note: "40 GB" read as GiB). */
  explicitNote?: string | null,
  deviceTotalBytes?: number | null,
): Capacity | null {
  if (explicitBytes !== undefined && explicitBytes !== null && Number.isFinite(explicitBytes)) {
    const detail = `given: ${formatBytes(explicitBytes)}${explicitNote ? `; ${explicitNote}` : ""}`;
    return { bytes: explicitBytes, source: "option", detail };
  }
  // The device's total known (--device-total, or the sidecar's device_total_bytes): what the caching
  // allocator could have had is the total less what was held outside it (at the OOM when there is one).
  const total = deviceTotalFor(r.device, counters, deviceTotalBytes);
  if (total !== null) {
    const o = oomNeeds(r).find((x) => Number.isFinite(x.deviceFreeBytes));
    const reservedAt = o ? (o.eventIndex >= 0 ? r.reserved[o.eventIndex] : r.initial.reservedBytes) : 0;
    const outside = o ? outsideAllocatorBytes(total, o.deviceFreeBytes, reservedAt) : null;
    if (o && outside !== null) {
      return {
        bytes: total - outside,
        source: "oom",
        detail:
          `device total ${formatBytes(total)} − ${formatBytes(outside)} held outside the caching allocator at the ` +
          `OOM at event ${o.eventIndex} (total − ${formatBytes(o.deviceFreeBytes)} free − ${formatBytes(reservedAt)} reserved)`,
      };
    }
    return { bytes: total, source: "counters", detail: `device total ${formatBytes(total)}` };
  }
  const stats = counters?.memoryStats;
  if (
    stats &&
    (counters?.device === null || counters?.device === undefined || counters.device === r.device)
  ) {
    for (const k of TOTAL_KEYS) {
      const v = stats[k];
      if (typeof v === "number" && Number.isFinite(v) && v > 0)
        return { bytes: v, source: "counters", detail: `memory_stats ${k} = ${formatBytes(v)}` };
    }
  }
  const oom = oomNeeds(r).find((o) => Number.isFinite(o.deviceFreeBytes));
  if (oom) {
    const bytes = oom.allocatedBytes + oom.deviceFreeBytes;
    return {
      bytes,
      source: "oom",
      detail:
        `the OOM at event ${oom.eventIndex}: ${formatBytes(oom.allocatedBytes)} allocated + ` +
        `${formatBytes(oom.deviceFreeBytes)} the device reported free`,
    };
  }
  return null;
}

/** Top-level modules: the distinct outermost Python `forward` frames of forward-run allocations. */
export function topLevelModules(ctx: WhatIfContext): { text: string; label: string; allocs: number }[] {
  const r = ctx.replay;
  const t = r.trace;
  if (!t) return [];
  const { model } = ctx;
  const { offsets, frameIds } = model.stacks;
  const { filename, name } = model.frames;
  const outerOfStack = new Map<number, number>();
  const counts = new Map<number, number>();
  const forwardFrame = (f: number) =>
    model.strings[name[f]] === "forward" && isPythonFile(model.strings[filename[f]] ?? "");
  const { run, runPhase } = ctx.phases;
  for (let i = 0; i < t.length; i++) {
    if (t.action[i] !== Action.alloc || t.isWorkspace[i]) continue;
    const s = t.stack[i];
    if (s === EMPTY_STACK || run[i] < 0 || runPhase[run[i]] !== Phase.forward) continue;
    let outer = outerOfStack.get(s);
    if (outer === undefined) {
      outer = -1;
      for (let j = offsets[s + 1] - 1; j >= offsets[s]; j--) {
        if (forwardFrame(frameIds[j])) {
          outer = frameIds[j];
          break;
        }
      }
      outerOfStack.set(s, outer);
    }
    if (outer >= 0) counts.set(outer, (counts.get(outer) ?? 0) + 1);
  }
  return [...counts.entries()]
    .map(([f, allocs]) => {
      const file = model.strings[filename[f]] ?? "";
      const line = model.frames.line[f];
      return { text: `${file}:${line}:forward`, label: `${pathTail(slashPath(file), 1)}:${line}`, allocs };
    })
    .sort((a, b) => b.allocs - a.allocs || a.text.localeCompare(b.text));
}

interface Candidate {
  id: string;
  kind: SuggestionKind;
  action: string;
  caveat: string;
  /** Overrides the engine's assumption line. */
  assumption?: string;
  transforms: Transform[];
  /** How cheap the change is (COST below): cheaper changes first among those that fit. */
  cost: number;
  /** Devices the change needs (ZeRO over N ranks: N; everything else: 1). */
  devices: number;
}

/**
 * "Cheapest": what a change costs on the devices it runs on, in this order (README "Ranking"):
 * a flag with no time cost < a slower optimizer step < more, smaller steps (same maths) < recomputing the
 * forward (~+30% step time) < different numerics (bf16 weights) < sharding (communication, more devices).
 */
export const COST = {
  "free-gradients": 0,
  foreach: 1,
  batch: 2,
  checkpoint: 3,
  "mixed-precision": 4,
  zero: 5,
} as const satisfies Record<SuggestionKind, number>;

const cat = (category: string): Selection => ({ kind: "category", category });

export interface SuggestOptions {
  capacity?: Capacity | null;
  /** Devices the user has (GPUs available, default 1): changes that need more rank after those that fit. */
  devices?: number;
  /** Activation-checkpointing candidates to keep (the best by saving). Default 3. */
  modules?: number;
}

/** Ranked suggestions for the peak (`rankSuggestions`: the devices at hand first, then fit, cost, saving). */
export function suggest(ctx: WhatIfContext, opts: SuggestOptions = {}): Suggestion[] {
  const steps = suggestSteps(ctx, opts);
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}

/**
 * `suggest` one evaluation at a time: yields after each (one pass over the trace, ~0.1 s on 5 M
 * events), so a worker can answer other requests between them; returns the ranked list.
 */
export function* suggestSteps(ctx: WhatIfContext, opts: SuggestOptions = {}): Generator<void, Suggestion[]> {
  const A = ctx.replay.allocations;
  const bytesOf = (sel: Selection) => {
    const m = selectAllocations(ctx, sel);
    let b = 0;
    for (let k = 0; k < A.length; k++) if (m[k]) b += A.sizeBytes[k];
    return b;
  };
  // one pass over the allocations per category, however often it is asked
  const held = new Map<string, boolean>();
  const has = (name: string) => {
    let h = held.get(name);
    if (h === undefined) held.set(name, (h = ctx.categoryNames.includes(name) && bytesOf(cat(name)) > 0));
    return h;
  };
  const candidates: Candidate[] = [];

  // Activation checkpointing per top-level module.
  const modules = topLevelModules(ctx);
  yield;
  const ckpt: Candidate[] = modules.map((m) => ({
    id: `checkpoint:${m.label}`,
    kind: "checkpoint",
    action: `activation checkpointing of what ${m.label} (forward) calls (torch.utils.checkpoint per call)`,
    caveat:
      "recomputes those calls' forward during the backward: about one more forward of them (~+30% step time " +
      "for a whole model); back-to-back calls told apart by their first line",
    transforms: [{ op: "recompute", module: m.text }],
    cost: COST.checkpoint,
    devices: 1,
  }));
  if (modules.length > 1) {
    ckpt.push({
      id: "checkpoint:all",
      kind: "checkpoint",
      action: `activation checkpointing of every top-level module call (${modules.map((m) => m.label).join(", ")})`,
      caveat: "recomputes the whole forward during the backward: about one more forward (~+30% step time)",
      transforms: modules.map((m) => ({ op: "recompute", module: m.text })),
      cost: COST.checkpoint,
      devices: 1,
    });
  }

  // ZeRO sharding.
  if (has("optimizer_state") || has("gradients") || has("parameters")) {
    for (const N of [2, 4, 8]) {
      const stages: [number, string[], string][] = [
        [1, ["optimizer_state"], "optimizer state"],
        [2, ["optimizer_state", "gradients"], "optimizer state and gradients"],
        [3, ["optimizer_state", "gradients", "parameters"], "optimizer state, gradients and parameters"],
      ];
      for (const [stage, cats, what] of stages) {
        if (!cats.some(has)) continue;
        candidates.push({
          id: `zero${stage}x${N}`,
          kind: "zero",
          action: `ZeRO-${stage} over ${N} ranks: shard the ${what} (each rank keeps 1/${N})`,
          caveat:
            `needs ${N} data-parallel ranks (the same model on ${N} devices) and their communication` +
            (stage >= 2 ? "; reduce-scatter buckets not counted" : "") +
            (stage === 3
              ? "; the full parameters of the layer being computed are gathered on the fly (not counted)"
              : ""),
          transforms: cats.map((c) => ({ op: "scale", select: cat(c), factor: 1 / N })),
          cost: COST.zero + stage / 10,
          devices: N,
        });
      }
    }
  }

  // Gradients freed earlier.
  if (has("gradients")) {
    candidates.push({
      id: "free-gradients",
      kind: "free-gradients",
      action: "free the gradients right after the optimizer step (zero_grad(set_to_none=True), the default)",
      caveat:
        "no cost; helps only where gradients outlive the step (between the optimizer step and the next backward)",
      transforms: [{ op: "free-early", select: cat("gradients") }],
      cost: COST["free-gradients"],
      devices: 1,
    });
  }

  // The optimizer's foreach scratch.
  const scratch: Selection = { kind: "all", of: [cat("temporary"), { kind: "phase", phase: "optimizer" }] };
  if (ctx.categoryNames.includes("temporary")) {
    const m = selectAllocations(ctx, scratch);
    let largest = 0;
    let total = 0;
    for (let k = 0; k < A.length; k++) {
      if (!m[k]) continue;
      total += A.sizeBytes[k];
      largest = Math.max(largest, A.sizeBytes[k]);
    }
    if (total > 0) {
      candidates.push({
        id: "foreach-off",
        kind: "foreach",
        action: "optimizer without the foreach scratch (foreach=False)",
        caveat:
          `slower step (a loop over the parameters); the per-parameter path still needs one parameter's scratch ` +
          `at a time (up to ${formatBytes(largest)} here), which this figure leaves out`,
        transforms: [{ op: "remove", select: scratch }],
        cost: COST.foreach,
        devices: 1,
      });
    }
  }

  // Half the batch.
  const batch: Selection = {
    kind: "any",
    of: [
      cat("activations"),
      cat("input"),
      { kind: "all", of: [cat("temporary"), { kind: "phase", phase: "forward" }] },
      { kind: "all", of: [cat("temporary"), { kind: "phase", phase: "backward" }] },
    ],
  };
  if (bytesOf(batch) > 0) {
    candidates.push({
      id: "batch-half",
      kind: "batch",
      action: "halve the batch size (gradient accumulation over 2 micro-batches keeps the effective batch)",
      caveat:
        "assumes activations, inputs and forward/backward temporaries scale with the batch; twice the steps " +
        "per batch; changes the optimisation unless you accumulate gradients",
      transforms: [{ op: "scale", select: batch, factor: 0.5 }],
      cost: COST.batch,
      devices: 1,
    });
  }

  // Mixed precision: bf16 weights. What follows the parameters' dtype changes with them: their gradients
  // (AccumulateGrad makes .grad like the parameter) and torch.optim's state (exp_avg, exp_avg_sq are
  // zeros_like(param)). Nothing else is assumed to change (activations are autocast's business).
  if (has("parameters")) {
    const follows = ["parameters", "gradients", "optimizer_state"].filter(has);
    const what = follows.map((c) => c.replace("_", " ")).join(", ");
    candidates.push({
      id: "mixed-precision",
      kind: "mixed-precision",
      action: `bf16 weights (model.to(torch.bfloat16)): ${what} at half their bytes`,
      assumption:
        "the snapshot has no dtypes: assumes fp32 now; bf16 parameters make their gradients bf16 (.grad takes " +
        "the parameter's dtype) and torch.optim's state bf16 (made like the parameter); activations, inputs " +
        "and temporaries unchanged",
      caveat:
        "saves nothing if they are already bf16/fp16; no fp32 master weights: small updates are lost in bf16 " +
        "(standard AMP keeps fp32 weights, gradients and optimizer state, and then saves none of this)",
      transforms: follows.map((c) => ({ op: "scale", select: cat(c), factor: 0.5 })),
      cost: COST["mixed-precision"],
      devices: 1,
    });
  }

  const oom = oomNeeds(ctx.replay).find((o) => Number.isFinite(o.deviceFreeBytes)) ?? null;
  const cap = opts.capacity ?? null;
  const evaluated = (c: Candidate): Suggestion => {
    const res = evaluate(ctx, c.transforms, { curve: oom !== null && cap !== null });
    let fits: boolean | null = null;
    if (cap) {
      let need = res.peakBytes;
      if (oom && res.curve) need = Math.max(need, res.curve[oom.eventIndex] + oom.requestBytes);
      fits = need <= cap.bytes;
    }
    return {
      id: c.id,
      kind: c.kind,
      action: c.action,
      peakBytes: res.peakBytes,
      peakEvent: res.peakEvent,
      savedBytes: res.savedBytes,
      assumption: c.assumption ?? res.assumption,
      caveat: c.caveat,
      fits,
      devices: c.devices,
      cost: c.cost,
      categoriesAtPeak: res.categoriesAtPeak,
      transforms: c.transforms,
      specs: c.transforms.map(transformSpec),
    };
  };
  const keepModules = opts.modules ?? 3;
  const ckptResults: { c: Candidate; s: Suggestion }[] = [];
  for (const c of ckpt) {
    ckptResults.push({ c, s: evaluated(c) });
    yield;
  }
  ckptResults.sort((x, y) => y.s.savedBytes - x.s.savedBytes || x.c.id.localeCompare(y.c.id));
  const all = ckptResults.find((x) => x.c.id === "checkpoint:all");
  // Per module: the best few that save something (with one module only, it stays either way).
  const perModule = ckptResults
    .filter((x) => x.c.id !== "checkpoint:all" && (!all || x.s.savedBytes > 0))
    .slice(0, keepModules);
  const out = [...perModule, ...(all ? [all] : [])];
  for (const c of candidates) {
    out.push({ c, s: evaluated(c) });
    yield;
  }
  return rankSuggestions(
    out.map((x) => x.s),
    opts.devices ?? 1,
  );
}

type Ranked = Pick<Suggestion, "id" | "devices" | "fits" | "cost" | "savedBytes">;

/**
 * The ranking (README "Ranking"): first the changes that work on the devices at hand (`devices` ≤ the
 * GPUs available), then those that need more; within each, the ones that fit the capacity (when known)
 * cheapest first (COST; then by saving), then the rest by saving (then cheapest); ties by id.
 */
export function rankSuggestions<T extends Ranked>(list: readonly T[], devicesAvailable = 1): T[] {
  const group = (s: T) => (s.devices <= devicesAvailable ? 0 : 1);
  const fitFirst = (s: T) => (s.fits === true ? 0 : 1);
  return [...list].sort((x, y) => {
    const d = group(x) - group(y) || fitFirst(x) - fitFirst(y);
    if (d !== 0) return d;
    if (x.fits === true) return x.cost - y.cost || y.savedBytes - x.savedBytes || x.id.localeCompare(y.id);
    return y.savedBytes - x.savedBytes || x.cost - y.cost || x.id.localeCompare(y.id);
  });
}
