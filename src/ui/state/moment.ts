// The current moment every view obeys (issue 21): the peak, the snapshot, one event, or a range. It is
// kept in the side's store as `pinnedEvent` (null = the snapshot) plus `momentRange`, so the views that
// already follow the pinned event (segment map, call tree, map search) follow the moment unchanged; a
// range's views show its highest moment. `body[data-moment]` names it for tests: `peak`, `snapshot`,
// `event:N`, `range:A..B`.

import type { ReplayFacts } from "../../../workers/api";
import { formatCount, formatDurationUs } from "../format";
import type { SideStore, State } from "./store";

export type Moment =
  | { kind: "peak"; event: number }
  | { kind: "snapshot" }
  | { kind: "event"; event: number }
  | { kind: "range"; a: number; b: number; event: number };

export function momentOf(s: Pick<State, "pinnedEvent" | "momentRange" | "panel">): Moment {
  const r = s.panel?.replay ?? null;
  const ev = s.pinnedEvent;
  if (s.momentRange && ev !== null) return { kind: "range", ...s.momentRange, event: ev };
  if (ev === null) return { kind: "snapshot" };
  if (r && ev === r.peakEvent) return { kind: "peak", event: ev };
  return { kind: "event", event: ev };
}

/** The value of `body[data-moment]`. */
export function momentAttr(m: Moment): string {
  switch (m.kind) {
    case "peak":
      return "peak";
    case "snapshot":
      return "snapshot";
    case "event":
      return `event:${m.event}`;
    case "range":
      return `range:${m.a}..${m.b}`;
  }
}

/** The event whose state the views show (null: the snapshot's blocks). */
export function momentEvent(m: Moment): number | null {
  return m.kind === "snapshot" ? null : m.event;
}

/** "+1.52 s" from the trace's first event, when the trace has times. */
export function whenWords(r: ReplayFacts | null, event: number): string {
  if (!r) return `event #${formatCount(event)}`;
  const m = r.markers.find((k) => k.event === event);
  const t = m ? m.timeUs : null;
  const at = t !== null && r.hasTime ? ` (${formatDurationUs(t - r.t0)} after the first event)` : "";
  return `event #${formatCount(event)} of ${formatCount(r.events)}${at}`;
}

/** A short name of the moment for headings: "the peak", "the snapshot", "event #12", "events 3..90". */
export function momentName(m: Moment): string {
  switch (m.kind) {
    case "peak":
      return "the peak";
    case "snapshot":
      return "the snapshot";
    case "event":
      return `event #${formatCount(m.event)}`;
    case "range":
      return `events ${formatCount(m.a)}..${formatCount(m.b)} (their highest moment, #${formatCount(m.event)})`;
  }
}

/**
 * Makes events a..b the current moment: the views show the highest allocated moment inside it, found
 * from the worker's per-bucket maxima, narrowed until one bucket is one event.
 */
export async function pinRange(S: SideStore, a: number, b: number): Promise<void> {
  const s = S.getState();
  const r = s.panel?.replay;
  if (!r || r.events === 0) return;
  const lo0 = Math.max(0, Math.min(a, b));
  const hi0 = Math.min(r.events - 1, Math.max(a, b));
  let lo = lo0;
  let hi = hi0;
  const device = s.device;
  for (let round = 0; round < 8 && hi > lo; round++) {
    const n = hi - lo + 1;
    const buckets = Math.min(n, 2048);
    const ans = await s.ask((api) => api.timeline({ device, axis: "event", x0: lo, x1: hi + 1, buckets }));
    let best = -1;
    for (let i = 0; i < ans.buckets; i++) {
      if (ans.firstEvent[i] < 0) continue;
      if (best < 0 || ans.allocMax[i] > ans.allocMax[best]) best = i;
    }
    if (best < 0) break;
    const f = Math.max(lo, ans.firstEvent[best]);
    const l = Math.min(hi, ans.lastEvent[best]);
    if (f === lo && l === hi) {
      // One bucket spans everything left: it is one event, or the worker cannot split it further.
      hi = lo = f === l ? f : l;
      break;
    }
    lo = f;
    hi = l;
  }
  if (S.getState().device !== device) return;
  S.getState().pinRange({ a: lo0, b: hi0 }, lo);
}

/** The events a view x0..x1 covers (for "range = the visible part of the timeline"). */
export async function eventsInView(S: SideStore): Promise<{ a: number; b: number } | null> {
  const s = S.getState();
  const v = s.view;
  const r = s.panel?.replay;
  if (!v || !r || r.events === 0) return null;
  if (v.axis === "event")
    return { a: Math.max(0, Math.ceil(v.x0)), b: Math.min(r.events - 1, Math.floor(v.x1)) };
  const ans = await s.ask((api) =>
    api.timeline({ device: s.device, axis: v.axis, x0: v.x0, x1: v.x1, buckets: 256 }),
  );
  let a = -1;
  let b = -1;
  for (let i = 0; i < ans.buckets; i++) {
    if (ans.firstEvent[i] < 0) continue;
    if (a < 0) a = ans.firstEvent[i];
    b = ans.lastEvent[i];
  }
  return a < 0 ? null : { a, b };
}
