// The allocator health of one device of the open file (core buildHealth: memory_stats verdicts from the
// counters sidecar, pending frees, fragmentation at the peak and at each OOM) and its three curves —
// cached (reserved − allocated), pending (active − allocated), inactive split — bucketed per pixel for the
// timeline's overlay, as workers/timeline.ts buckets allocated. Computed once per replay and sidecar.

import {
  buildHealth,
  type DeviceHealth,
  type HealthSummary,
  memoryStatsVerdicts,
} from "../src/core/health/index";
import type { CountersSidecar } from "../src/core/model/types";
import type { Replay } from "../src/core/replay/types";
import { replayInputs } from "../src/core/report/index";
import type { TimelineQuery } from "./api";
import type { Engine } from "./engine";
import { axisX, forEachBucket } from "./timeline";

export interface HealthAnswer {
  device: number;
  /** null when the device has no trace (nothing to replay: only the sidecar's verdicts could be said). */
  summary: HealthSummary | null;
  /** memory_stats verdicts even without a trace (they come from the sidecar only). */
  verdicts: HealthSummary["verdicts"];
  /** The sidecar names another device: its verdicts are not this device's. */
  countersDevice: number | null;
  error: string | null;
}

/** One bucket per pixel: the max of each curve inside it (state carried in from the left). NaN: no trace. */
export interface HealthTimelineAnswer {
  buckets: number;
  cached: Float64Array;
  pending: Float64Array;
  inactiveSplit: Float64Array;
}

const cache = new WeakMap<Replay, { counters: CountersSidecar | null; health: DeviceHealth }>();

function healthOf(engine: Engine, device: number): DeviceHealth {
  const d = engine.device(device);
  const counters = engine.countersSidecar;
  const hit = cache.get(d.replay);
  if (hit && hit.counters === counters) return hit.health;
  const model = engine.model;
  if (!model) throw new Error("No snapshot is open.");
  const names = engine.attribution ? replayInputs(engine.attribution) : null;
  const health = buildHealth(model, d.replay, counters, {
    siteKeys: names?.siteKeys,
    categoryNames: names?.categoryNames,
  });
  cache.set(d.replay, { counters, health });
  return health;
}

export function healthAnswer(engine: Engine, device: number): HealthAnswer {
  const counters = engine.countersSidecar;
  const base = {
    device,
    countersDevice: counters?.device ?? null,
  };
  const model = engine.model;
  if (!model) return { ...base, summary: null, verdicts: [], error: "No snapshot is open." };
  if (!(model.traces[device]?.length > 0)) {
    // No trace: the sidecar's verdicts still hold (they are about the process, not the trace).
    const forThis = counters !== null && (counters.device === null || counters.device === device);
    const verdicts = forThis ? memoryStatsVerdicts(counters) : [];
    return { ...base, summary: null, verdicts, error: null };
  }
  try {
    const h = healthOf(engine, device);
    return { ...base, summary: h.summary, verdicts: h.summary.verdicts, error: null };
  } catch (e) {
    return { ...base, summary: null, verdicts: [], error: e instanceof Error ? e.message : String(e) };
  }
}

export function healthTimeline(engine: Engine, q: TimelineQuery): HealthTimelineAnswer {
  const B = Math.max(1, Math.min(20000, Math.floor(q.buckets)));
  const out: HealthTimelineAnswer = {
    buckets: B,
    cached: new Float64Array(B).fill(Number.NaN),
    pending: new Float64Array(B).fill(Number.NaN),
    inactiveSplit: new Float64Array(B).fill(Number.NaN),
  };
  const d = engine.device(q.device);
  const r = d.replay;
  const n = r.length;
  if (n === 0 || !(q.x1 > q.x0)) return out;
  const { curves } = healthOf(engine, q.device);
  const axis = q.axis === "time" && d.timeAxis ? "time" : "event";
  const x = axisX(r, axis);
  const split = curves.inactiveSplit;
  const cols = [curves.cachedAt, curves.pendingAt, (k: number) => split[k]] as const;
  const init = [curves.initial.cached, curves.initial.pending, curves.initial.inactiveSplit];
  const dst = [out.cached, out.pending, out.inactiveSplit] as const;
  forEachBucket(n, x, q.x0, q.x1, B, (b, prev, start, end) => {
    for (let c = 0; c < 3; c++) {
      const at = cols[c];
      let m = prev >= 0 ? at(prev) : init[c];
      for (let k = start; k < end; k++) {
        const v = at(k);
        if (v > m) m = v;
      }
      dst[c][b] = m;
    }
  });
  return out;
}
