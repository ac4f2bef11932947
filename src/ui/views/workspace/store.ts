// The workspace's open tab, and the way Back / Forward move between views (tabs, the rank overview and a
// file opened from it) without losing the loaded files: every change of view pushes a history entry that
// names it; going back re-shows that view from what is already loaded. The URL hash stays the link's
// (linkSync.ts rewrites it in place), so a pushed entry carries the hash of the moment it was made.

import { create } from "zustand";
import { adoptHash } from "../../state/linkSync";
import { useRanks } from "../ranks/store";

export type TabId = string;

interface WorkspaceState {
  tab: TabId;
  shortcutsOpen: boolean;
  /** Opens a tab; `fromHistory`: Back / Forward did (no new entry). */
  setTab(tab: TabId, fromHistory?: boolean): void;
  setShortcutsOpen(open: boolean): void;
}

interface NavEntry {
  peakscope: { tab: TabId; ranks: boolean };
}

function isNavEntry(v: unknown): v is NavEntry {
  return typeof v === "object" && v !== null && "peakscope" in v;
}

function push(tab: TabId): void {
  const entry: NavEntry = { peakscope: { tab, ranks: useRanks.getState().shown } };
  history.pushState(entry, "", location.href);
}

export const useWorkspace = create<WorkspaceState>()((set, get) => ({
  tab: "summary",
  shortcutsOpen: false,
  setTab(tab, fromHistory = false) {
    if (tab === get().tab) return;
    set({ tab });
    if (!fromHistory) push(tab);
  },
  setShortcutsOpen: (open) => set({ shortcutsOpen: open }),
}));

let started = false;

/** Listens for Back / Forward and records the rank overview's view changes; once, from main.tsx. */
export function startNavigation(): void {
  if (started) return;
  started = true;
  // The entry the page opened on names the first view, so Back from the second one comes back to it.
  const first: NavEntry = { peakscope: { tab: useWorkspace.getState().tab, ranks: false } };
  history.replaceState({ ...(history.state ?? {}), ...first }, "", location.href);
  useRanks.subscribe((r, prev) => {
    if (r.openedFrom.length > 0) lastOpened = r.openedFrom;
    // Leaving the overview for a file (or back) is a change of view: one entry each.
    if (r.shown !== prev.shown && !restoring) push(useWorkspace.getState().tab);
  });
  window.addEventListener("popstate", (e) => {
    if (!isNavEntry(e.state)) return;
    // The hash of the entry is the link of that moment; the files are open already: do not re-apply it.
    adoptHash();
    const { tab, ranks } = e.state.peakscope;
    restoring = true;
    try {
      useWorkspace.getState().setTab(tab, true);
      const r = useRanks.getState();
      if (ranks && !r.shown && r.entries.length > 0) r.back();
      else if (!ranks && r.shown && lastOpened.length > 0) {
        // Forward to the file (or pair) last opened from the overview: read again from its handle.
        if (lastOpened.length === 1) void r.openRank(lastOpened[0]);
        else {
          useRanks.setState({ checked: lastOpened.slice(0, 2) });
          void r.compareChecked();
        }
      }
    } finally {
      restoring = false;
    }
  });
}

let restoring = false;
/** The overview's entries last opened as a file or a pair (Forward opens them again). */
let lastOpened: number[] = [];
