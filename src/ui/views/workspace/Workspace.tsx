// One file as a workspace (issue 21; the Firefox Profiler / Perfetto shape): a pinned strip on top (the
// current moment's controls and the stacked timeline with its overview, markers and overlays), ARIA tabs
// below that fill the rest of the window (TABS, one pane shown at a time, scrolling inside), and a right
// sidebar with the selection. The document itself does not scroll.

import { type KeyboardEvent, useEffect } from "react";
import { ErrorBoundary } from "../../components/ErrorBoundary";
import { momentAttr, momentOf } from "../../state/moment";
import { useSide } from "../../state/store";
import { Timeline } from "../timeline/Timeline";
import { MomentBar } from "./MomentBar";
import { Sidebar } from "./Sidebar";
import { useWorkspace } from "./store";
import { TABS } from "./tabs";

/** The timeline's canvas height inside the strip (the whole strip stays under ~40 % of 900 px). */
const STRIP_PLOT_HEIGHT = 170;
/**
 * "Each allocation" draws a band only for an allocation at least one pixel tall (peak / plot height): in
 * the 170 px strip a 6 GiB training run's bands are all under a pixel (nothing drawn, and the Call tree
 * search has no band to outline). The user asked for the bands, so the strip grows to the old card's
 * height while that mode is on (the tabs below scroll).
 */
const ALLOCATIONS_PLOT_HEIGHT = 330;

export function Workspace() {
  const S = useSide();
  const device = S((s) => s.device);
  const bandsMode = S((s) => s.timelineMode === "allocations");
  const tab = useWorkspace((w) => w.tab);
  const setTab = useWorkspace((w) => w.setTab);
  const active = TABS.find((t) => t.id === tab) ?? TABS[0];
  useMomentAttribute();

  const onTabKey = (e: KeyboardEvent<HTMLButtonElement>) => {
    const i = TABS.findIndex((t) => t.id === active.id);
    let j = -1;
    if (e.key === "ArrowRight") j = (i + 1) % TABS.length;
    else if (e.key === "ArrowLeft") j = (i - 1 + TABS.length) % TABS.length;
    else if (e.key === "Home") j = 0;
    else if (e.key === "End") j = TABS.length - 1;
    if (j < 0) return;
    e.preventDefault();
    // The page's ←/→ step the moment: not while moving between tabs.
    e.stopPropagation();
    setTab(TABS[j].id);
    document.getElementById(`tab-${TABS[j].id}`)?.focus();
  };

  return (
    <div className="ws" data-testid="workspace" data-tab={active.id}>
      <div className="ws-strip" data-testid="strip">
        <MomentBar />
        <ErrorBoundary name="timeline">
          <Timeline key={device} height={bandsMode ? ALLOCATIONS_PLOT_HEIGHT : STRIP_PLOT_HEIGHT} />
        </ErrorBoundary>
      </div>
      <div className="ws-body">
        <div className="ws-main">
          <div className="ws-tabs" role="tablist" aria-label="Views">
            {TABS.map((t) => (
              <button
                key={t.id}
                type="button"
                role="tab"
                id={`tab-${t.id}`}
                aria-selected={t.id === active.id}
                aria-controls={`pane-${t.id}`}
                tabIndex={t.id === active.id ? 0 : -1}
                onClick={() => setTab(t.id)}
                onKeyDown={onTabKey}
              >
                {t.name}
              </button>
            ))}
          </div>
          <div
            className="ws-pane"
            role="tabpanel"
            id={`pane-${active.id}`}
            aria-labelledby={`tab-${active.id}`}
            data-testid={`pane-${active.id}`}
            // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling pane, reachable to scroll by keys
            tabIndex={0}
          >
            <ErrorBoundary name={active.name}>{active.render(device)}</ErrorBoundary>
          </div>
        </div>
        <aside className="ws-side" aria-label="Selection details">
          <ErrorBoundary name="sidebar">
            <Sidebar />
          </ErrorBoundary>
        </aside>
      </div>
    </div>
  );
}

/** `body[data-moment]`: the open file's moment (A's in a comparison), for tests and styles. */
function useMomentAttribute(): void {
  const S = useSide();
  const attr = S((s) => momentAttr(momentOf(s)));
  useEffect(() => {
    document.body.dataset.moment = attr;
  }, [attr]);
  useEffect(
    () => () => {
      delete document.body.dataset.moment;
    },
    [],
  );
}
