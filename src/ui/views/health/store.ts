// Which allocator-health curves the timeline overlays, per side (the health panel and the timeline's
// legend both toggle them). Off by default: the timeline stays as it was until asked.

import { create } from "zustand";

export type CurveKey = "cached" | "inactiveSplit" | "pending";

export const CURVES: { key: CurveKey; label: string; help: string; color: string; dash: number[] }[] = [
  {
    key: "cached",
    label: "cached (reserved − allocated)",
    help: "Bytes the caching allocator holds beyond live tensors: free space inside segments plus pending frees",
    color: "#7B2FF7",
    dash: [],
  },
  {
    key: "inactiveSplit",
    label: "inactive split",
    help: "Free bytes inside segments that also hold live blocks: cached but stuck (fragmentation); empty_cache() cannot return them",
    color: "#C2185B",
    dash: [6, 3],
  },
  {
    key: "pending",
    label: "pending frees (active − allocated)",
    help: "Freed by the program but still in use by another stream (record_stream): not reusable yet",
    color: "#FF8F00",
    dash: [2, 2],
  },
];

type Shown = Record<CurveKey, boolean>;
const NONE: Shown = { cached: false, inactiveSplit: false, pending: false };

interface OverlayState {
  shown: [Shown, Shown];
  toggle(side: 0 | 1, key: CurveKey, on: boolean): void;
}

export const useHealthOverlay = create<OverlayState>()((set, get) => ({
  shown: [NONE, NONE],
  toggle(side, key, on) {
    const next: [Shown, Shown] = [get().shown[0], get().shown[1]];
    next[side] = { ...next[side], [key]: on };
    set({ shown: next });
  },
}));
