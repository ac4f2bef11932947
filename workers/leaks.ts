// Leaks inside the open file (core traceLeaks on this worker's model, attribution and replay): its steps,
// what each kept into the next, and the growth verdict, for the timeline's step bands and the panel's
// "Growth" section. Computed once per replay and sidecar.

import { type LeaksJson, traceLeaks } from "../src/core/leaks/index";
import type { CountersSidecar } from "../src/core/model/types";
import type { Replay } from "../src/core/replay/types";
import type { Engine } from "./engine";

export type LeaksAnswer = LeaksJson & {
  /** Per step: the time (µs, the timeline's time axis) of its first and last event; null without times. */
  stepTimes: [number, number][] | null;
};

const cache = new WeakMap<Replay, { counters: CountersSidecar | null; answer: LeaksAnswer }>();

export function leaksAnswer(engine: Engine, device: number): LeaksAnswer {
  const model = engine.model;
  if (!model || !engine.attribution) throw new Error("No snapshot is open.");
  const counters = engine.countersSidecar;
  if (model.traces[device]?.length) {
    const replay = engine.device(device).replay;
    const hit = cache.get(replay);
    if (hit && hit.counters === counters) return hit.answer;
    const json = traceLeaks(model, {
      counters,
      device,
      attribution: engine.attribution,
      replays: new Map([[device, replay]]),
      tableRows: 20,
    });
    const stepTimes = replay.hasTime
      ? json.steps.map((s): [number, number] => [replay.x[s.startEvent ?? 0], replay.x[s.endEvent ?? 0]])
      : null;
    const answer = { ...json, stepTimes };
    cache.set(replay, { counters, answer });
    return answer;
  }
  return {
    ...traceLeaks(model, { counters, device, attribution: engine.attribution, replays: new Map() }),
    stepTimes: null,
  };
}
