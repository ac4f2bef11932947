// Leaks inside one trace: the steps (steps.ts), and per step its allocated at start and end, its peak, and
// what it made that is still allocated at the same point of the next step, by call site and category; then
// the growth verdict over the live bytes per (call site, category) at each step's end (growth.ts).
// One pass over the allocation table: each allocation adds its rounded size to the steps whose end it is
// allocated at (a difference array per (site, category)), so the cost is O(allocations · log steps + keys ·
// steps), independent of how long allocations live.

import { type Attribution, attribute } from "../attribution";
import type { CountersSidecar, SnapshotModel } from "../model/types";
import { prepareReplays } from "../replay/report";
import { type Replay, SITE_BEFORE_TRACE } from "../replay/types";
import { replayInputs } from "../report";
import { lowerBoundInt32 } from "../sorted";
import { deviceCapacity } from "../whatif/suggest";
import { analyseGrowth, type GrowthOptions, growthRule, projectOomStep } from "./growth";
import { verdictMessage, warmUpText } from "./message";
import { findSteps, type TraceSteps } from "./steps";
import type { LeakStepJson, LeaksJson, SiteBytes } from "./types";

export interface TraceLeaksOptions extends GrowthOptions {
  counters?: CountersSidecar | null;
  capacityBytes?: number | null;
  stepMarker?: RegExp | null;
  device?: number | null;
  attribution?: Attribution;
  replays?: Map<number, Replay>;
  /** How many (site, category) rows of the growth table, and of each step's retained list. */
  tableRows?: number;
}

/** The device a trace analysis reads: the one asked for, the counters', else the one with the highest peak. */
export function leaksDevice(
  replays: Map<number, Replay>,
  counters: CountersSidecar | null,
  device?: number | null,
) {
  if (device !== null && device !== undefined) return replays.has(device) ? device : null;
  const cd = counters?.device;
  if (cd !== null && cd !== undefined && replays.has(cd)) return cd;
  let best: Replay | null = null;
  for (const r of replays.values()) if (!best || r.peakAllocatedBytes > best.peakAllocatedBytes) best = r;
  return best?.device ?? null;
}

interface KeyNames {
  site: string;
  label: string;
  category: string;
}

export interface StepMeasures {
  /** Per (site, category) key: live bytes at each step's end. */
  live: Map<number, Float64Array>;
  /** Per key: bytes made in step k still allocated at the end of step k + 1. */
  retained: Map<number, Float64Array>;
  retainedTotal: Float64Array;
  names: (key: number) => KeyNames;
}

/** Live bytes per (site, category) at each step end, and each step's retained bytes, from one pass. */
export function measureSteps(r: Replay, a: Attribution, endEvents: number[]): StepMeasures {
  const m = endEvents.length;
  const ends = Int32Array.from(endEvents);
  const C = a.categoryNames.length;
  const A = r.allocations;
  const live = new Map<number, Float64Array>();
  const retained = new Map<number, Float64Array>();
  const retainedTotal = new Float64Array(m);
  for (let k = 0; k < A.length; k++) {
    const size = A.sizeBytes[k];
    // Allocated at step end e when allocEvent ≤ e < freeRequestedEvent (BEFORE_TRACE = −1 ≤ any e).
    const j0 = lowerBoundInt32(ends, A.allocEvent[k]);
    const j1 = lowerBoundInt32(ends, A.freeRequestedEvent[k]);
    if (j0 >= j1) continue;
    const key = (A.site[k] + 4) * C + A.category[k];
    let d = live.get(key);
    if (!d) {
      d = new Float64Array(m + 1);
      live.set(key, d);
    }
    d[j0] += size;
    d[j1] -= size;
    // Made in step j0 (after the previous step's end) and still allocated at the end of step j0 + 1.
    if (A.allocEvent[k] >= 0 && j0 + 1 < m && j1 > j0 + 1) {
      let t = retained.get(key);
      if (!t) {
        t = new Float64Array(m);
        retained.set(key, t);
      }
      t[j0] += size;
      retainedTotal[j0] += size;
    }
  }
  for (const d of live.values()) for (let j = 1; j <= m; j++) d[j] += d[j - 1];
  const names = (key: number): KeyNames => {
    const site = Math.floor(key / C) - 4;
    const s = site >= 0 ? a.sites[site] : null;
    const text =
      s?.key ??
      (site === SITE_BEFORE_TRACE
        ? "(allocated before the trace: its stack is not in the trace)"
        : "(no call site)");
    return { site: text, label: s?.label ?? text, category: a.categoryNames[key % C] ?? "unknown" };
  };
  return { live, retained, retainedTotal, names };
}

function stepRows(r: Replay, steps: TraceSteps, meas: StepMeasures, top: number): LeakStepJson[] {
  const out: LeakStepJson[] = [];
  for (let j = 0; j < steps.endEvents.length; j++) {
    const end = steps.endEvents[j];
    const start = j === 0 ? 0 : steps.endEvents[j - 1] + 1;
    const startAllocatedBytes = j === 0 ? r.initial.allocatedBytes : r.allocated[steps.endEvents[j - 1]];
    let peak = startAllocatedBytes;
    for (let i = start; i <= end; i++) if (r.allocated[i] > peak) peak = r.allocated[i];
    const last = j === steps.endEvents.length - 1;
    const retained: SiteBytes[] = [];
    if (!last) {
      for (const [key, t] of meas.retained) if (t[j] > 0) retained.push({ ...meas.names(key), bytes: t[j] });
      retained.sort((x, y) => y.bytes - x.bytes || x.site.localeCompare(y.site));
    }
    out.push({
      step: steps.numbers[j],
      startEvent: start,
      endEvent: end,
      allocatedBytes: r.allocated[end],
      peakBytes: peak,
      startAllocatedBytes,
      retainedBytes: last ? null : meas.retainedTotal[j],
      retained: retained.slice(0, top),
    });
  }
  return out;
}

/** `peakscope leaks FILE`: the steps of one trace and what grows from one to the next. */
export function traceLeaks(model: SnapshotModel, opts: TraceLeaksOptions = {}): LeaksJson {
  const a = opts.attribution ?? attribute(model);
  const replays = opts.replays ?? prepareReplays(model, replayInputs(a));
  const counters = opts.counters ?? null;
  const device = leaksDevice(replays, counters, opts.device);
  const top = opts.tableRows ?? 50;
  const rule = {
    thresholdBytes: opts.thresholdBytes ?? 1 << 20,
    minGrowthSteps: opts.minGrowthSteps ?? 3,
    text: "",
  };
  rule.text = growthRule(rule.thresholdBytes, rule.minGrowthSteps);
  if (device === null) {
    const detail =
      opts.device !== null && opts.device !== undefined
        ? `device ${opts.device} has no trace entries`
        : "this file has no trace entries: steps need device_traces (record with _record_memory_history)";
    return {
      mode: "trace",
      steps: [],
      leaks: [],
      verdict: "too-few-steps",
      projectedOomStep: null,
      message: `too few steps: ${detail}`,
      stepSource: { kind: "none", confidence: "none", detail },
      rule,
      warmUp: { oneOff: [], firstStepRetainedBytes: null, text: "" },
      growth: [],
      capacity: null,
      file: model.source.fileName,
    };
  }
  const r = replays.get(device) as Replay;
  const steps = findSteps(model, r, a, opts.stepMarker ?? null);
  const meas = measureSteps(r, a, steps.endEvents);
  const rows = [...meas.live].map(([key, d]) => ({
    ...meas.names(key),
    live: Array.from(d.subarray(0, -1)),
  }));
  const g = analyseGrowth(steps.numbers, rows, opts);
  const stepJson = stepRows(r, steps, meas, 10);
  const cap = deviceCapacity(r, counters, opts.capacityBytes ?? null);
  const capacity = cap ? { bytes: cap.bytes, source: cap.source, detail: cap.detail } : null;
  const last = stepJson[stepJson.length - 1];
  const perStep = g.leaks.reduce((s, l) => s + l.bytesPerStep, 0);
  const projectedOomStep =
    g.verdict === "leak" && last
      ? projectOomStep(last.step, last.peakBytes, perStep, capacity?.bytes ?? null)
      : null;
  const firstStepRetainedBytes = stepJson.length > 1 ? (stepJson[0].retainedBytes ?? null) : null;
  return {
    mode: "trace",
    steps: stepJson,
    leaks: g.leaks,
    verdict: g.verdict,
    projectedOomStep,
    message: verdictMessage(g, steps.numbers.length, projectedOomStep, capacity, steps.source.detail),
    stepSource: steps.source,
    rule,
    warmUp: {
      oneOff: g.oneOff.slice(0, top),
      firstStepRetainedBytes,
      text: warmUpText(g, steps.numbers[0] ?? null, firstStepRetainedBytes),
    },
    growth: g.table.filter((t) => t.kind !== "steady" || t.liveBytesByStep.some((v) => v > 0)).slice(0, top),
    capacity,
    device,
    file: model.source.fileName,
  };
}
