// What the sidebar's "Selection details" shows besides a category or a call site (issue 21): a block
// clicked in the Segments map, or a node clicked in the Call tree / Flame. The views publish here; the
// sidebar shows the details and actions. One per side; an item names the file (generation) and device it
// came from, so another file or device never shows a stale one.

import { create } from "zustand";
import type { BlockDetail, TreeNodeOut } from "../../../../workers/api";
import type { Pinned } from "../call-tree/PinnedNode";

interface Origin {
  generation: number;
  device: number;
}

export type Selected =
  | (Origin & {
      kind: "block";
      /** The map's ref: a block index at the snapshot, an allocation id at an event. */
      ref: number;
      event: number | null;
      detail: BlockDetail;
    })
  | (Origin & {
      kind: "frame";
      pinned: Pinned;
      /** The node at the moment the tree shows now (null: it holds nothing there). */
      now: TreeNodeOut | null;
      /** Live bytes of the whole tree at that moment. */
      total: number;
      /** The `body[data-moment]` of the tree it was read from. */
      moment: string;
    });

interface SelectionState {
  item: [Selected | null, Selected | null];
  select(side: 0 | 1, item: Selected | null): void;
}

export const useSelection = create<SelectionState>()((set, get) => ({
  item: [null, null],
  select(side, item) {
    const next: [Selected | null, Selected | null] = [...get().item];
    next[side] = item;
    set({ item: next });
  },
}));
