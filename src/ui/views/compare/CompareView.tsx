// Two files side by side: A (the base) on the left, B on the right, the difference between them. A bar
// above says which is which and holds the comparison's controls: swap, linked zoom/cursor, alignment.

import { bothHaveSnapshotMarkers, useApp } from "../../state/app";
import type { Side } from "../../state/client";
import { sides } from "../../state/store";
import { TreeDiffPanel } from "../call-tree/TreeDiff";
import { DiffPanel } from "./DiffPanel";
import { SideColumn } from "./SideColumn";

export function CompareView() {
  const base = useApp((a) => a.base);
  const other = (1 - base) as Side;
  return (
    <div className="compare" data-testid="compare">
      <CompareBar />
      <div className="compare-grid">
        <SideColumn side={base} label="A" />
        <DiffPanel />
        <SideColumn side={other} label="B" />
      </div>
      <TreeDiffPanel />
    </div>
  );
}

function CompareBar() {
  const base = useApp((a) => a.base);
  const linked = useApp((a) => a.linked);
  const align = useApp((a) => a.align);
  const setLinked = useApp((a) => a.setLinked);
  const setAlign = useApp((a) => a.setAlign);
  const swap = useApp((a) => a.swap);
  const closeCompare = useApp((a) => a.closeCompare);
  const aName = sides[base]((s) => s.fileName);
  const bName = sides[1 - base]((s) => s.fileName);
  // Re-read on each render: markers arrive with the panels.
  sides[0]((s) => s.panel);
  sides[1]((s) => s.panel);
  const markers = bothHaveSnapshotMarkers();
  return (
    <div className="card compare-bar toolbar">
      <span className="compare-names">
        Comparing <span className="side-badge side-a">A</span>{" "}
        <strong className="name" title={aName ?? ""}>
          {aName}
        </strong>{" "}
        with <span className="side-badge side-b">B</span>{" "}
        <strong className="name" title={bName ?? ""}>
          {bName}
        </strong>
      </span>
      <button type="button" onClick={() => void swap()} data-testid="swap" title="Make B the base">
        Swap A and B
      </button>
      <span className="spacer" />
      <label title="Off: each file on its own time axis. On: one axis, zoom, pan and the hover cursor move both timelines together">
        <input
          type="checkbox"
          checked={linked}
          data-testid="link-toggle"
          onChange={(e) => setLinked(e.currentTarget.checked)}
        />{" "}
        Shared time axis (zoom and cursor move both)
      </label>
      <label
        title={
          markers
            ? "Which moment of each file is put at the same place on the axis"
            : "Both files need a _snapshot() marker in their trace to align on it"
        }
      >
        Align{" "}
        <select
          value={markers ? align : "start"}
          title="Where the two time axes meet"
          disabled={!markers || !linked}
          data-testid="align-select"
          onChange={(e) => setAlign(e.currentTarget.value === "snapshot" ? "snapshot" : "start")}
        >
          <option value="start">each trace's start</option>
          <option value="snapshot">each file's first _snapshot() call</option>
        </select>
      </label>
      <button type="button" onClick={closeCompare} data-testid="close-compare" title="Keep A open, alone">
        Close comparison
      </button>
    </div>
  );
}
