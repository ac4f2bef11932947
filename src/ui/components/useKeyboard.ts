// Page-wide keys (listed in shortcuts.ts): ? the shortcut sheet, p / s / r the moment (peak, snapshot,
// visible range), 1–9 the workspace's tabs, ←/→ step the pinned event (the current moment), +/− zoom the
// timeline around its centre, 0 resets the zoom, Esc cancels a load, clears a highlight or unpins. In a
// comparison they act on the side the pointer was last over. Keys typed into inputs are ignored.

import { useEffect } from "react";
import { useApp } from "../state/app";
import { eventsInView, pinRange } from "../state/moment";
import { sides } from "../state/store";
import { resetZoom } from "../views/timeline/Timeline";
import { useWorkspace } from "../views/workspace/store";
import { TABS } from "../views/workspace/tabs";

export function useKeyboard(): void {
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      const t = e.target as HTMLElement | null;
      if (t && (t.tagName === "INPUT" || t.tagName === "SELECT" || t.tagName === "TEXTAREA")) return;
      if (e.ctrlKey || e.metaKey || e.altKey) return;
      if (t?.closest("dialog")) return;
      const app = useApp.getState();
      const store = sides[app.mode === "compare" ? app.activeSide : app.base];
      const s = store.getState();
      if (e.key === "?") {
        e.preventDefault();
        useWorkspace.getState().setShortcutsOpen(true);
        return;
      }
      const tabIndex = "123456789".indexOf(e.key);
      if (tabIndex >= 0 && tabIndex < TABS.length && app.mode === "single" && s.status === "ready") {
        e.preventDefault();
        useWorkspace.getState().setTab(TABS[tabIndex].id);
        return;
      }
      if (e.key === "Escape") {
        if (sides.some((x) => x.getState().status === "loading")) app.cancel();
        else if (s.highlightSite) {
          if (s.highlightBy === "portable") app.highlightBoth(null);
          else s.setHighlightSite(null);
        } else if (s.highlightCategory) s.setHighlightCategory(null);
        else s.pin(null);
        return;
      }
      const replay = s.panel?.replay;
      if (!replay || replay.events === 0) return;
      if (e.key === "p" || e.key === "s") {
        s.pin(e.key === "p" ? replay.peakEvent : null);
        return;
      }
      if (e.key === "r") {
        void eventsInView(store).then((r) => r && pinRange(store, r.a, r.b));
        return;
      }
      if (e.key === "ArrowRight" || e.key === "ArrowLeft") {
        e.preventDefault();
        const step = (e.shiftKey ? 100 : 1) * (e.key === "ArrowRight" ? 1 : -1);
        const current = s.pinnedEvent ?? replay.events - 1;
        s.pin(Math.max(0, Math.min(replay.events - 1, current + step)));
        return;
      }
      const v = s.view;
      if (!v) return;
      if (e.key === "+" || e.key === "=" || e.key === "-" || e.key === "_") {
        e.preventDefault();
        const k = e.key === "+" || e.key === "=" ? 0.5 : 2;
        const mid = (v.x0 + v.x1) / 2;
        const half = ((v.x1 - v.x0) / 2) * k;
        s.setView({ ...v, x0: mid - half, x1: mid + half });
      } else if (e.key === "0") {
        resetZoom(store);
      }
    };
    window.addEventListener("keydown", onKey);
    return () => window.removeEventListener("keydown", onKey);
  }, []);
}
