// "What if" for the page (issue 13): the core what-if engine (src/core/whatif) on the worker's own replay of
// a device. The page sends transformations as the CLI writes them (`--scale category:parameters=1/2`, …),
// gets small answers back: the ranked suggestions (no curves), one what-if's peak and composition, and the
// new allocated curve bucketed per pixel like workers/timeline.ts buckets the replayed one. The what-if
// context (phases, masks, recompute plans) is made once per replay; suggestions are cached per capacity
// and counters sidecar; the last curve is kept so that zooming does not replay the change again.
//
// suggest() takes ~0.8 s on a 1 M-event trace: it runs one evaluation per task (the page's other requests
// are answered in between), requests carry a ticket, and one that a newer ticket of the same kind has
// overtaken (while it waited in the worker's queue, or between its evaluations) answers `stale`.

import type { CountersSidecar } from "../src/core/model/types";
import { nextTask } from "../src/core/next-task";
import type { Replay } from "../src/core/replay/types";
import {
  type Capacity,
  deviceCapacity,
  evaluate,
  type OomNeed,
  oomNeeds,
  parseRecompute,
  parseScale,
  parseSelection,
  prepareWhatIf,
  rankSuggestions,
  type Suggestion,
  suggestSteps,
  type Transform,
  type TransformSummary,
  topLevelModules,
  transformSpec,
  type WhatIfContext,
  type WhatIfResult,
} from "../src/core/whatif/index";
import type { TimelineQuery } from "./api";
import type { Engine } from "./engine";
import { axisX, forEachBucket } from "./timeline";

export type { Capacity, OomNeed, TransformSummary };

/** One ranked suggestion, as `peakscope whatif FILE --suggest --json` lists it (the core's, less its
 * transforms: `specs` says them as CLI options, what the page sends back and what a link holds). */
export type WhatIfSuggestionRow = Omit<Suggestion, "transforms">;

export interface WhatIfSuggestQuery {
  device: number;
  /** A capacity typed by the user (bytes); else the counters' or the OOM's. */
  capacityBytes?: number | null;
  /** How the typed capacity was read (units.ts parseCapacity's note), shown in capacity.detail. */
  capacityNote?: string | null;
  /** GPUs available (default 1): suggestions needing more devices rank after the rest. */
  devices?: number;
  ticket?: number;
}

export interface WhatIfSuggestAnswer {
  device: number;
  /** A newer request overtook this one: nothing was computed. */
  stale: boolean;
  baselinePeakBytes: number;
  baselinePeakEvent: number;
  capacity: Capacity | null;
  /** The GPUs available the ranking was made for. */
  devicesAvailable: number;
  oom: OomNeed[];
  suggestions: WhatIfSuggestionRow[];
  /** Time suggest() took in the worker (0 from the cache). */
  ms: number;
  error: string | null;
}

export interface WhatIfQuery {
  device: number;
  specs: string[];
  capacityBytes?: number | null;
  ticket?: number;
}

export interface WhatIfAnswer {
  device: number;
  stale: boolean;
  /** The specs as the engine writes them back (normalised). */
  specs: string[];
  peakBytes: number;
  peakEvent: number;
  /** The new peak on the time axis (time_us) when the trace has usable times, else null. */
  peakTimeUs: number | null;
  baselinePeakBytes: number;
  baselinePeakEvent: number;
  savedBytes: number;
  categoriesAtPeak: Record<string, number>;
  assumption: string;
  transforms: TransformSummary[];
  capacity: Capacity | null;
  /** The new peak (and, with an OOM, the failed request on top of the new curve there) fits; null: unknown. */
  fits: boolean | null;
  error: string | null;
}

export interface WhatIfCurveQuery extends TimelineQuery {
  specs: string[];
  ticket?: number;
}

/** The new allocated curve, one bucket per pixel (NaN outside the trace), as TimelineAnswer's allocMin/Max. */
export interface WhatIfCurveAnswer {
  stale: boolean;
  buckets: number;
  allocMin: Float64Array;
  allocMax: Float64Array;
  peakBytes: number;
  peakEvent: number;
  /** The new peak's x on the query's axis (µs or event index). */
  peakX: number;
  error: string | null;
}

/** What a selection can be asked: gone, halved, freed early, recomputed. */
export type WhatIfAction = "remove" | "halve" | "free-early" | "recompute";

export type WhatIfTarget =
  /** A category of the attribution. */
  | { kind: "category"; category: string }
  /** A call site by its key as written in the file (the report's topCallSites[].site). */
  | { kind: "site"; site: string }
  /** Any CLI selection (`frame:TEXT`, `category:a&phase:forward`, …): a call-tree node, for one. */
  | { kind: "selection"; selection: string; module?: string };

export interface WhatIfSpecsQuery {
  device: number;
  target: WhatIfTarget;
  action: WhatIfAction;
}

/** The transformations for a selection and an action, or why that action does not apply to it. */
export interface WhatIfSpecsAnswer {
  specs: string[] | null;
  /** The selection for people: `category activations`, `model.py:120 forward`. */
  label: string;
  why: string | null;
}

interface Cached {
  ctx: WhatIfContext;
  suggestions: Map<string, { counters: CountersSidecar | null; rows: WhatIfSuggestionRow[] }>;
  /** The last evaluated what-if with its curve (zooming and panning reuse it). */
  last: { key: string; result: WhatIfResult } | null;
}

const cache = new WeakMap<Replay, Cached>();

function cachedOf(engine: Engine, device: number): Cached {
  const d = engine.device(device);
  let c = cache.get(d.replay);
  if (c) return c;
  const model = engine.model;
  const attribution = engine.attribution;
  if (!model) throw new Error("No snapshot is open.");
  if (!attribution) throw new Error("The attribution failed: a what-if needs the categories and call sites.");
  if (d.replay.length === 0) throw new Error(`Device ${device} has no trace: a what-if replays the trace.`);
  c = { ctx: prepareWhatIf(model, d.replay, attribution), suggestions: new Map(), last: null };
  cache.set(d.replay, c);
  return c;
}

/** The latest ticket seen per engine and kind of request. */
const latest = new WeakMap<Engine, Map<string, number>>();

/**
 * Notes the ticket, lets the messages already queued behind this one arrive (one macrotask), and says
 * whether a newer request of the same kind came meanwhile.
 */
async function overtaken(engine: Engine, kind: string, ticket: number | undefined): Promise<boolean> {
  if (ticket === undefined) return false;
  let m = latest.get(engine);
  if (!m) latest.set(engine, (m = new Map()));
  if (ticket > (m.get(kind) ?? -1)) m.set(kind, ticket);
  await new Promise<void>((resolve) => setTimeout(resolve, 0));
  return ticket < (m.get(kind) ?? -1);
}

const OPTION = /^--(remove|scale|free-early|recompute)\s+([\s\S]+)$/;

/** CLI options (`--remove SPEC`, `--scale SPEC=F`, `--free-early SPEC`, `--recompute MODULE`) → transforms. */
export function parseSpecs(specs: readonly string[]): Transform[] {
  return specs.map((s) => {
    const m = OPTION.exec(s.trim());
    if (!m) throw new Error(`"${s}" is not a what-if: write --remove, --scale, --free-early or --recompute`);
    const [, op, value] = m;
    if (op === "remove") return { op: "remove", select: parseSelection(value) };
    if (op === "scale") return parseScale(value);
    if (op === "free-early") return { op: "free-early", select: parseSelection(value) };
    return parseRecompute(value);
  });
}

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

function capacityOf(
  engine: Engine,
  c: Cached,
  capacityBytes: number | null | undefined,
  note?: string | null,
): Capacity | null {
  return deviceCapacity(c.ctx.replay, engine.countersSidecar, capacityBytes ?? null, note ?? null);
}

function fitsOf(c: Cached, res: WhatIfResult, capacity: Capacity | null): boolean | null {
  if (!capacity) return null;
  const oom = oomNeeds(c.ctx.replay).find((o) => Number.isFinite(o.deviceFreeBytes)) ?? null;
  let need = res.peakBytes;
  if (oom && res.curve) need = Math.max(need, res.curve[oom.eventIndex] + oom.requestBytes);
  return need <= capacity.bytes;
}

/** Evaluates (or reuses the last evaluation of) a list of specs, always with the curve. */
function evaluated(c: Cached, specs: readonly string[]): WhatIfResult {
  const key = specs.join("\n");
  if (c.last?.key === key) return c.last.result;
  const result = evaluate(c.ctx, parseSpecs(specs), { curve: true });
  c.last = { key, result };
  return result;
}

export async function whatIfSuggest(engine: Engine, q: WhatIfSuggestQuery): Promise<WhatIfSuggestAnswer> {
  const empty: WhatIfSuggestAnswer = {
    device: q.device,
    stale: false,
    baselinePeakBytes: 0,
    baselinePeakEvent: 0,
    capacity: null,
    devicesAvailable: q.devices ?? 1,
    oom: [],
    suggestions: [],
    ms: 0,
    error: null,
  };
  if (await overtaken(engine, "suggest", q.ticket)) return { ...empty, stale: true };
  try {
    const c = cachedOf(engine, q.device);
    const r = c.ctx.replay;
    const capacity = capacityOf(engine, c, q.capacityBytes, q.capacityNote);
    const devices = q.devices ?? 1;
    const key = `${capacity?.bytes ?? ""}`;
    const counters = engine.countersSidecar;
    const base = {
      ...empty,
      baselinePeakBytes: r.peakAllocatedBytes,
      baselinePeakEvent: r.peakEvent ?? 0,
      capacity,
      oom: oomNeeds(r),
    };
    const hit = c.suggestions.get(key);
    if (hit && hit.counters === counters) return { ...base, suggestions: rankSuggestions(hit.rows, devices) };
    const t0 = performance.now();
    // one evaluation per task: the timeline's and the map's requests are answered in between
    const steps = suggestSteps(c.ctx, { capacity, devices });
    let step = steps.next();
    while (!step.done) {
      await nextTask();
      if (q.ticket !== undefined && q.ticket < (latest.get(engine)?.get("suggest") ?? -1))
        return { ...empty, stale: true };
      step = steps.next();
    }
    const rows = step.value.map(
      (s): WhatIfSuggestionRow => ({
        id: s.id,
        kind: s.kind,
        action: s.action,
        peakBytes: s.peakBytes,
        peakEvent: s.peakEvent,
        savedBytes: s.savedBytes,
        assumption: s.assumption,
        caveat: s.caveat,
        fits: s.fits,
        devices: s.devices,
        cost: s.cost,
        categoriesAtPeak: s.categoriesAtPeak,
        specs: s.specs,
      }),
    );
    c.suggestions.set(key, { counters, rows });
    return { ...base, suggestions: rows, ms: performance.now() - t0 };
  } catch (e) {
    return { ...empty, error: message(e) };
  }
}

export async function whatIfOne(engine: Engine, q: WhatIfQuery): Promise<WhatIfAnswer> {
  const fail = (error: string, stale = false): WhatIfAnswer => ({
    device: q.device,
    stale,
    specs: [...q.specs],
    peakBytes: 0,
    peakEvent: 0,
    peakTimeUs: null,
    baselinePeakBytes: 0,
    baselinePeakEvent: 0,
    savedBytes: 0,
    categoriesAtPeak: {},
    assumption: "",
    transforms: [],
    capacity: null,
    fits: null,
    error,
  });
  if (await overtaken(engine, "whatif", q.ticket)) return fail("", true);
  try {
    const c = cachedOf(engine, q.device);
    const res = evaluated(c, q.specs);
    const capacity = capacityOf(engine, c, q.capacityBytes);
    const d = engine.device(q.device);
    return {
      device: q.device,
      stale: false,
      specs: res.transforms.map((t) => t.spec),
      peakBytes: res.peakBytes,
      peakEvent: res.peakEvent,
      peakTimeUs: d.timeAxis ? res.peakTimeUs : null,
      baselinePeakBytes: res.baselinePeakBytes,
      baselinePeakEvent: res.baselinePeakEvent,
      savedBytes: res.savedBytes,
      categoriesAtPeak: res.categoriesAtPeak,
      assumption: res.assumption,
      transforms: res.transforms,
      capacity,
      fits: fitsOf(c, res, capacity),
      error: null,
    };
  } catch (e) {
    return fail(message(e));
  }
}

/** The new curve bucketed per pixel: min and max inside each bucket, with the state carried in from the left. */
export async function whatIfCurve(engine: Engine, q: WhatIfCurveQuery): Promise<WhatIfCurveAnswer> {
  const B = Math.max(1, Math.min(20000, Math.floor(q.buckets)));
  const out: WhatIfCurveAnswer = {
    stale: false,
    buckets: B,
    allocMin: new Float64Array(B).fill(Number.NaN),
    allocMax: new Float64Array(B).fill(Number.NaN),
    peakBytes: 0,
    peakEvent: 0,
    peakX: Number.NaN,
    error: null,
  };
  if (await overtaken(engine, "curve", q.ticket)) return { ...out, stale: true };
  try {
    const c = cachedOf(engine, q.device);
    const res = evaluated(c, q.specs);
    const curve = res.curve as Float64Array;
    const d = engine.device(q.device);
    const r = d.replay;
    const n = r.length;
    const axis = q.axis === "time" && d.timeAxis ? "time" : "event";
    const x = axisX(r, axis);
    out.peakBytes = res.peakBytes;
    out.peakEvent = res.peakEvent;
    out.peakX = x(res.peakEvent);
    if (n === 0 || !(q.x1 > q.x0)) return out;
    forEachBucket(n, x, q.x0, q.x1, B, (b, prev, start, end) => {
      let mn = prev >= 0 ? curve[prev] : res.initialBytes;
      let mx = mn;
      for (let k = start; k < end; k++) {
        const v = curve[k];
        if (v > mx) mx = v;
        if (v < mn) mn = v;
      }
      out.allocMin[b] = mn;
      out.allocMax[b] = mx;
    });
    return out;
  } catch (e) {
    return { ...out, error: message(e) };
  }
}

const ACTION_WORD: Record<WhatIfAction, string> = {
  remove: "gone",
  halve: "halved",
  "free-early": "freed early",
  recompute: "recomputed",
};

/** The transformations that answer "what if this were gone / halved / freed early / recomputed". */
export function whatIfSpecs(engine: Engine, q: WhatIfSpecsQuery): WhatIfSpecsAnswer {
  const t = q.target;
  let selection: string;
  let label: string;
  /** The frame text a recompute names, when the target has one. */
  let module: string | null = null;
  let recomputeWhy: string | null = null;
  try {
    const c = cachedOf(engine, q.device);
    if (t.kind === "category") {
      selection = `category:${t.category}`;
      label = `category ${t.category.replace(/_/g, " ")}`;
      if (t.category !== "activations")
        recomputeWhy =
          "Recomputing applies to activations: what a module's forward saves for its backward. Choose activations, or a call site inside a module.";
    } else if (t.kind === "site") {
      const site = engine.attribution?.sites.find((s) => s.key === t.site);
      if (!site || site.frameIndex < 0)
        return {
          specs: null,
          label: t.site,
          why: `"${t.site}" is not a line of code (no stack names it): choose its category instead.`,
        };
      selection = `site:${site.filename}:${site.line}`;
      label = site.label;
      module = site.key;
    } else {
      parseSelection(t.selection);
      selection = t.selection;
      label = t.selection;
      module = t.module ?? (t.selection.startsWith("frame:") ? t.selection.slice("frame:".length) : null);
      if (!module) recomputeWhy = "Recomputing needs a module: a frame of the stack (frame:FILE:LINE:NAME).";
    }
    let specs: string[];
    if (q.action === "remove") specs = [`--remove ${selection}`];
    else if (q.action === "halve") specs = [`--scale ${selection}=1/2`];
    else if (q.action === "free-early") specs = [`--free-early ${selection}`];
    else if (module) specs = [transformSpec({ op: "recompute", module })];
    else if (t.kind === "category" && t.category === "activations") {
      const modules = topLevelModules(c.ctx);
      if (modules.length === 0)
        return {
          specs: null,
          label,
          why: "No module's forward is on these stacks (no Python forward frame): nothing to checkpoint.",
        };
      specs = modules.map((m) => transformSpec({ op: "recompute", module: m.text }));
    } else return { specs: null, label, why: recomputeWhy };
    // Check that they parse (a bad selection says so now, not when evaluated).
    parseSpecs(specs);
    return { specs, label: `${label} ${ACTION_WORD[q.action]}`, why: null };
  } catch (e) {
    return { specs: null, label: "", why: message(e) };
  }
}
