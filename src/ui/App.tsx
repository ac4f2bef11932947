// The page: a header (open file, demo, device), a drop target covering the whole window, the loading
// and error states, and once a file is open the summary, timeline, segment map and side panel.

import { useEffect } from "react";
import { DropTarget } from "./components/DropTarget";
import { ErrorBanner } from "./components/ErrorBanner";
import { ErrorBoundary } from "./components/ErrorBoundary";
import { Header } from "./components/Header";
import { ProgressPanel } from "./components/ProgressPanel";
import { useKeyboard } from "./components/useKeyboard";
import { useStore } from "./state/store";
import { SegmentMap } from "./views/segment-map/SegmentMap";
import { SidePanel } from "./views/side-panel/SidePanel";
import { SummaryPanel } from "./views/side-panel/SummaryPanel";
import { Timeline } from "./views/timeline/Timeline";

export function App() {
  const status = useStore((s) => s.status);
  const summary = useStore((s) => s.summary);
  const device = useStore((s) => s.device);
  useKeyboard();

  useEffect(() => {
    // Expose the idle signal to tests from the first paint.
    document.body.dataset.state ??= "empty";
  }, []);

  return (
    <DropTarget>
      <Header />
      <main className="page">
        {status === "loading" && <ProgressPanel />}
        {status === "error" && <ErrorBanner />}
        {status !== "loading" && !summary && <EmptyState />}
        {summary && status !== "loading" && (
          <div className="workspace">
            <div className="main-column">
              <ErrorBoundary name="summary">
                <SummaryPanel />
              </ErrorBoundary>
              <ErrorBoundary name="timeline">
                <Timeline key={device} />
              </ErrorBoundary>
              <ErrorBoundary name="segment map">
                <SegmentMap key={device} />
              </ErrorBoundary>
            </div>
            <ErrorBoundary name="side panel">
              <SidePanel />
            </ErrorBoundary>
          </div>
        )}
      </main>
    </DropTarget>
  );
}

function EmptyState() {
  return (
    <section className="empty-state" aria-labelledby="empty-title">
      <h1 id="empty-title">Drop a PyTorch memory snapshot anywhere on this page</h1>
      <p>
        Files written by <code>torch.cuda.memory._dump_snapshot()</code> or{" "}
        <code>torch_npu.npu.memory._dump_snapshot()</code>: pickle (any protocol), gzip, zip or JSON.
      </p>
      <p>
        Or use <strong>Open snapshot…</strong> above, or <strong>Open demo</strong> to try a generated one.
      </p>
      <p className="privacy">
        Your file never leaves this machine: it is read by this page, in a background thread, and nothing is
        uploaded.
      </p>
    </section>
  );
}
