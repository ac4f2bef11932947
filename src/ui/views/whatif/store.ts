// The chosen what-if, per side: the transformations (as the CLI writes them: `--scale category:x=1/2`), a
// label for people, and the capacity the user typed. Cleared when the side opens another file or shows
// another device. The timeline's overlay (WhatIfOverlay), the side panel's "What if" card and the share
// link (`whatif=`) all read it here.
//
// Others call `openWhatIf(…)` (or dispatch a `peakscope:whatif` event with the same detail) to ask "what if
// this were gone / halved / freed early / recomputed" about any selection — a call-tree node, for one.

import { create } from "zustand";
import type { WhatIfAction, WhatIfTarget } from "../../../../workers/api";
import type { Side } from "../../state/client";
import { sides } from "../../state/store";
import { describeSpecs, specsOfLink, whatIfLinkValue } from "./specs";

export { describeSpecs, specsOfLink, whatIfLinkValue };

export interface ChosenWhatIf {
  /** CLI options, in order. */
  specs: string[];
  /** What it is, for people ("ZeRO-1 over 8 ranks: …", "category activations halved"). */
  label: string;
  /** The suggestion's id when it came from the ranked list. */
  id: string | null;
  /** From a link: the suggestion id it named (`whatifid=`); it takes that suggestion's label once listed. */
  linkId?: string | null;
}

interface WhatIfState {
  chosen: [ChosenWhatIf | null, ChosenWhatIf | null];
  /** A capacity the user typed (bytes), per side; null: the counters' or the OOM's, if any. */
  capacity: [number | null, number | null];
  /** Why the last selection action could not be turned into a what-if (shown in the panel). */
  refusal: [string | null, string | null];
  /** GPUs available (the "GPUs available" field, `devices=` in the link), per side; default 1. */
  devices: [number, number];
  setDevices(side: Side, n: number): void;
  /** How the typed capacity was read ("40 GB" read as 40 GiB), per side. */
  capacityNote: [string | null, string | null];
  choose(side: Side, chosen: ChosenWhatIf | null): void;
  setCapacity(side: Side, bytes: number | null, note?: string | null): void;
  refuse(side: Side, why: string | null): void;
}

const pair = <T>(next: [T, T], side: Side, v: T): [T, T] => (side === 0 ? [v, next[1]] : [next[0], v]);

export const useWhatIf = create<WhatIfState>()((set, get) => ({
  chosen: [null, null],
  capacity: [null, null],
  refusal: [null, null],
  devices: [1, 1],
  setDevices: (side, n) => set({ devices: pair(get().devices, side, n) }),
  choose: (side, chosen) =>
    set({ chosen: pair(get().chosen, side, chosen), refusal: pair(get().refusal, side, null) }),
  capacityNote: [null, null],
  setCapacity: (side, bytes, note = null) =>
    set({ capacity: pair(get().capacity, side, bytes), capacityNote: pair(get().capacityNote, side, note) }),
  refuse: (side, why) => set({ refusal: pair(get().refusal, side, why) }),
}));

// Another file or another device: the what-if was about the old one.
for (const S of sides) {
  S.subscribe((s, prev) => {
    if (s.generation === prev.generation && s.device === prev.device) return;
    const w = useWhatIf.getState();
    if (w.chosen[s.side] || w.refusal[s.side]) {
      useWhatIf.setState({
        chosen: pair(w.chosen, s.side, null),
        refusal: pair(w.refusal, s.side, null),
      });
    }
  });
}

/** The chosen what-if of a side as a link value, or undefined (single-file view only). */
export function linkValueOf(side: Side): string | undefined {
  const c = useWhatIf.getState().chosen[side];
  return c ? whatIfLinkValue(c.specs) : undefined;
}

/** The chosen what-if's suggestion id for the link (`whatifid=`), or undefined when it is a custom one. */
export function linkIdOf(side: Side): string | undefined {
  const c = useWhatIf.getState().chosen[side];
  return c?.id ?? c?.linkId ?? undefined;
}

/** GPUs available on a side (the link's `devices=`). */
export function devicesOf(side: Side): number {
  return useWhatIf.getState().devices[side];
}

/** The capacity the user typed on a side, in bytes (the link's `cap=`); null: none typed. */
export function capacityOf(side: Side): number | null {
  return useWhatIf.getState().capacity[side];
}

/** A link's `cap=`: as if typed (the note on how "40 GB" was read belongs to the typing, not the link). */
export function restoreCapacity(side: Side, capacityBytes: number): void {
  if (Number.isSafeInteger(capacityBytes) && capacityBytes > 0)
    useWhatIf.getState().setCapacity(side, capacityBytes);
}

/** A link's `devices=`. */
export function restoreDevices(side: Side, n: number): void {
  if (Number.isInteger(n) && n >= 1) useWhatIf.getState().setDevices(side, n);
}

/**
 * A link's `whatif=` (and `whatifid=`): chosen again once the file is open. Named as asked
 * (describeSpecs); it takes a suggestion's label only when the link names that suggestion, so a custom
 * "optimizer state × 1/2" never reads "ZeRO-1 over 2 ranks".
 */
export function restoreWhatIf(side: Side, value: string, linkId: string | null = null): void {
  const specs = specsOfLink(value);
  if (specs.length === 0) return;
  useWhatIf.getState().choose(side, { specs, label: describeSpecs(specs), id: null, linkId });
}

export interface OpenWhatIfRequest {
  side?: Side;
  /** Either CLI options… */
  specs?: string[];
  label?: string;
  /** …or a selection and what to do with it. */
  target?: WhatIfTarget;
  action?: WhatIfAction;
}

/**
 * Shows a what-if in the panel and on the timeline. With `target` + `action`, the worker turns the selection
 * into CLI options first. Resolves with null, or with why it does not apply (also shown in the panel).
 */
export async function openWhatIf(req: OpenWhatIfRequest): Promise<string | null> {
  const side = req.side ?? 0;
  const S = sides[side];
  const w = useWhatIf.getState();
  if (req.specs && req.specs.length > 0) {
    w.choose(side, { specs: req.specs, label: req.label ?? describeSpecs(req.specs), id: null });
    return null;
  }
  if (!req.target || !req.action) return "openWhatIf needs specs, or a target and an action.";
  const st = S.getState();
  const device = st.device;
  const generation = st.generation;
  const a = await st.ask((api) =>
    api.whatIfSpecs({ device, target: req.target as WhatIfTarget, action: req.action as WhatIfAction }),
  );
  if (S.getState().generation !== generation || S.getState().device !== device) return null;
  if (!a.specs) {
    w.refuse(side, a.why ?? "This does not apply here.");
    return a.why;
  }
  w.choose(side, { specs: a.specs, label: req.label ?? a.label, id: null });
  return null;
}

if (typeof window !== "undefined") {
  window.addEventListener("peakscope:whatif", (e) => {
    const detail = (e as CustomEvent<OpenWhatIfRequest>).detail;
    if (detail) void openWhatIf(detail);
  });
}
