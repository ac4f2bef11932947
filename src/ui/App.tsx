// The page: a header (open, compare with, demo, device, copy link, shortcuts), a drop target covering the
// whole window, notices (from links), then either one file as a workspace (views/workspace: the pinned
// timeline, tabs, the sidebar) or two side by side with their difference (views/compare).

import { useEffect } from "react";
import { DropTarget } from "./components/DropTarget";
import { ErrorBanner } from "./components/ErrorBanner";
import { ErrorBoundary } from "./components/ErrorBoundary";
import { Header } from "./components/Header";
import { LinkPrompt } from "./components/LinkPrompt";
import { Notices } from "./components/Notices";
import { ProgressPanel } from "./components/ProgressPanel";
import { SeeCapture } from "./components/SeeCapture";
import { ShortcutsDialog } from "./components/ShortcutsDialog";
import { useKeyboard } from "./components/useKeyboard";
import { useApp } from "./state/app";
import { SideContext, sides } from "./state/store";
import { CompareView } from "./views/compare/CompareView";
import { RankOverview, RanksBackBar } from "./views/ranks/RankOverview";
import { useRanks } from "./views/ranks/store";
import { SeriesView } from "./views/series/SeriesView";
import { useSeries } from "./views/series/store";
import { Workspace } from "./views/workspace/Workspace";

export function App() {
  const mode = useApp((a) => a.mode);
  const ranksShown = useRanks((r) => r.shown);
  const seriesShown = useSeries((s) => s.shown);
  useKeyboard();

  useEffect(() => {
    // Expose the idle signal to tests from the first paint.
    document.body.dataset.state ??= "empty";
  }, []);

  return (
    <DropTarget>
      <Header />
      <ShortcutsDialog />
      {/* One file and a comparison are workspaces: the page does not scroll, their panes do. */}
      <main className={!ranksShown && !seriesShown ? "page page-fixed" : "page"}>
        <Notices />
        <RanksBackBar />
        {seriesShown ? (
          <ErrorBoundary name="series">
            <SeriesView />
          </ErrorBoundary>
        ) : ranksShown ? (
          <ErrorBoundary name="rank overview">
            <RankOverview />
          </ErrorBoundary>
        ) : mode === "compare" ? (
          <ErrorBoundary name="comparison">
            <CompareView />
          </ErrorBoundary>
        ) : (
          <SingleView />
        )}
      </main>
    </DropTarget>
  );
}

function SingleView() {
  const base = useApp((a) => a.base);
  const expecting = useApp((a) => a.expecting);
  const S = sides[base];
  const status = S((s) => s.status);
  const summary = S((s) => s.summary);
  return (
    <SideContext.Provider value={S}>
      {status === "loading" && <ProgressPanel />}
      {status === "error" && <ErrorBanner />}
      {status !== "loading" && !summary && (expecting ? <LinkPrompt /> : <EmptyState />)}
      {summary && status !== "loading" && (
        <>
          {expecting && <LinkPrompt />}
          <Workspace />
        </>
      )}
    </SideContext.Provider>
  );
}

function EmptyState() {
  return (
    <section className="empty-state" aria-labelledby="empty-title">
      <h1 id="empty-title">Drop a PyTorch memory snapshot anywhere on this page</h1>
      <p data-testid="empty-capture">
        No snapshot yet? Capture one with <code>python/peakscope_hook.py</code> — five lines, <SeeCapture />.
      </p>
      <p>
        Files written by <code>torch.cuda.memory._dump_snapshot()</code> or{" "}
        <code>torch_npu.npu.memory._dump_snapshot()</code>: pickle (any protocol), gzip, zip or JSON.
      </p>
      <p>
        Or use <strong>Open snapshot…</strong> above, or <strong>Open demo</strong> to try a generated one.
        Drop two files at once to compare them side by side; more than two (or a folder of them) open as a
        rank overview, or as a series when they are one rank's dumps after different steps (…step3…).
      </p>
      <p className="privacy">
        Your file never leaves this machine: it is read by this page, in a background thread, and nothing is
        uploaded.
      </p>
    </section>
  );
}
