// The current moment in the link (issue 21): `moment=snapshot`, `moment=event:N`, `moment=range:A..B`,
// `moment=peak` — the values of `body[data-moment]`. `pin=N` is still written and read (older links, and
// pages that predate `moment`); `moment` says what `pin` cannot: the snapshot when the page would open at
// the peak, a range (pin is only its highest event), and the peak when the page would open at the snapshot.
// The peak is left implicit when it is the moment the file opens at.

import type { ReplayFacts } from "../../../workers/api";
import { formatCount } from "../format";
import { momentAttr, momentOf, pinRange } from "./moment";
import { defaultPinnedEvent } from "./momentDefault";
import type { SideStore, State } from "./store";

export type LinkMoment =
  | { kind: "peak" }
  | { kind: "snapshot" }
  | { kind: "event"; event: number }
  | { kind: "range"; a: number; b: number };

/** Reads a `moment=` value; null when it is not one. */
export function parseMoment(raw: string): LinkMoment | null {
  if (raw === "peak" || raw === "snapshot") return { kind: raw };
  let m = /^event:(\d{1,9})$/.exec(raw);
  if (m) return { kind: "event", event: Number(m[1]) };
  m = /^range:(\d{1,9})\.\.(\d{1,9})$/.exec(raw);
  if (m) {
    const a = Number(m[1]);
    const b = Number(m[2]);
    return b >= a ? { kind: "range", a, b } : null;
  }
  return null;
}

/** The `moment=` value to write for a side's state; undefined: the moment the file opens at anyway. */
export function momentLinkValue(s: Pick<State, "pinnedEvent" | "momentRange" | "panel">): string | undefined {
  const r = s.panel?.replay;
  if (!s.panel || !r || r.events === 0) return undefined;
  const m = momentOf(s);
  if (m.kind === "peak" && defaultPinnedEvent(s.panel) === r.peakEvent) return undefined;
  return momentAttr(m);
}

/**
 * Makes the link's moment the side's current one. Returns what was ignored (for the page's notice), or
 * null when it applied.
 */
export async function applyMoment(
  S: SideStore,
  m: LinkMoment,
  r: ReplayFacts | null | undefined,
  param: string,
): Promise<string | null> {
  if (m.kind === "snapshot") {
    S.getState().pin(null);
    return null;
  }
  if (!r || r.events === 0) return `${param} (no trace on this device: only the snapshot)`;
  const last = r.events - 1;
  switch (m.kind) {
    case "peak":
      S.getState().pin(r.peakEvent);
      return null;
    case "event":
      if (m.event > last) return `${param}=event:${m.event} (the trace has ${formatCount(r.events)} events)`;
      S.getState().pin(m.event);
      return null;
    case "range":
      if (m.a > last) return `${param}=range:${m.a}..${m.b} (the trace has ${formatCount(r.events)} events)`;
      await pinRange(S, m.a, Math.min(m.b, last));
      return null;
  }
}
