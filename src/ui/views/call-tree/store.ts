// The call tree's filters, page-wide (the tree, its icicle, the timeline's and the map's search layers and
// a comparison's B − A all read them; they travel in the share link, state/treeLink.ts). `search` is the
// committed query (the input commits after a pause, or on Enter), so every view asks for the same one.

import { create } from "zustand";
import type { TreeGroup, TreeLink, TreeRangeLink } from "../../state/treeLink";

export interface TreeFilters {
  orientation: "top-down" | "bottom-up";
  by: "stack" | "module";
  /** "" (none), "forward" or "metadata[:KEY]": a grouped tree instead (not kept in the link). */
  groupBy: string;
  ownCodeOnly: boolean;
  hideLibrary: boolean;
  /** Text or /regex/flags; "" for none. */
  search: string;
  /** Custom groups (the root's children, first match wins): a name and a regex over `filename:line:name`. */
  groups: TreeGroup[];
  /** A measure over events from..to (the file's trace) instead of the pinned moment; null: the moment. */
  range: TreeRangeLink | null;
}

export const DEFAULT_FILTERS: TreeFilters = {
  orientation: "top-down",
  by: "stack",
  groupBy: "",
  ownCodeOnly: false,
  hideLibrary: false,
  search: "",
  groups: [],
  range: null,
};

interface CallTreeState extends TreeFilters {
  set(p: Partial<TreeFilters>): void;
}

export const useCallTree = create<CallTreeState>()((set) => ({
  ...DEFAULT_FILTERS,
  set: (p) => set(p),
}));

/** The filters as link parameters. */
export function treeLinkState(): TreeLink | undefined {
  const s = useCallTree.getState();
  const t: TreeLink = {};
  if (s.search) t.q = s.search;
  if (s.orientation !== "top-down") t.dir = s.orientation;
  if (s.by !== "stack") t.by = s.by;
  if (s.ownCodeOnly) t.own = true;
  if (s.hideLibrary) t.hide = true;
  if (s.range) t.range = { ...s.range };
  if (s.groups.length > 0) t.groups = s.groups.map((g) => ({ ...g }));
  return Object.keys(t).length > 0 ? t : undefined;
}

/** Applies a link's filters (absent ones back to the defaults). */
export function applyTreeLink(t: TreeLink | undefined): void {
  useCallTree.getState().set({
    search: t?.q ?? "",
    orientation: t?.dir ?? "top-down",
    by: t?.by ?? "stack",
    ownCodeOnly: t?.own ?? false,
    hideLibrary: t?.hide ?? false,
    groups: t?.groups ? t.groups.map((g) => ({ ...g })) : [],
    range: t?.range ? { ...t.range } : null,
  });
}

/** A search the worker can use: a /regex/ that does not compile is left out (the tree says why). */
export function usableSearch(search: string): string {
  const m = /^\/(.+)\/([a-z]*)$/s.exec(search);
  if (!m) return search;
  try {
    new RegExp(m[1], m[2].replace(/[gy]/g, ""));
    return search;
  } catch {
    return "";
  }
}
