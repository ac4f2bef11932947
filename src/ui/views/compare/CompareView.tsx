// Two files as one workspace (issue 21, point 6): a pinned header (both file names, the verdict, swap,
// the shared-axis toggle and alignment), A and B as two timeline tracks stacked under it — each on its
// own time axis by default, one shared axis when toggled — and the difference below as ARIA tabs
// (Categories, Call sites, Tree) filling the rest of the window. The document does not scroll; only the
// active tab's pane scrolls inside. "Compare at: Peaks | Snapshots" chooses the moment of the verdict,
// Categories and Call sites: each file's peak by default (when both have a trace to replay), else its
// snapshot, with the reason on screen.

import "./compare.css";
import { type KeyboardEvent, useId, useState } from "react";
import { ErrorBoundary } from "../../components/ErrorBoundary";
import { bothHaveSnapshotMarkers, useApp } from "../../state/app";
import type { Side } from "../../state/client";
import { sides } from "../../state/store";
import { TreeDiffPanel } from "../call-tree/TreeDiff";
import { CompareTrack } from "./CompareTrack";
import { DiffCategories, DiffSites, DiffStatus, Verdict } from "./DiffPanel";
import { type CompareAt, effectiveAt } from "./moment";

/** The diff tabs, in order; `name` is the tab's accessible name (tests and the issue name them exactly). */
const DIFF_TABS = [
  { id: "categories", name: "Categories" },
  { id: "sites", name: "Call sites" },
  { id: "tree", name: "Tree" },
] as const;
type DiffTab = (typeof DIFF_TABS)[number]["id"];

export function CompareView() {
  const base = useApp((a) => a.base);
  const other = (1 - base) as Side;
  const answer = useApp((a) => a.compare);
  // The user's choice (null until they make one; kept in the link as `at=`); what is shown is what the
  // answer allows.
  const choice = useApp((a) => a.compareAt);
  const setChoice = useApp((a) => a.setCompareAt);
  const at = effectiveAt(answer, choice);
  return (
    <div className="cmp" data-testid="compare" data-compare-at={at}>
      <div className="cmp-strip" data-testid="compare-strip">
        <CompareBar at={at} onAt={setChoice} />
        <div className="cmp-tracks">
          <CompareTrack side={base} label="A" />
          <CompareTrack side={other} label="B" />
        </div>
      </div>
      <DiffTabs at={at} />
    </div>
  );
}

function DiffTabs({ at }: { at: CompareAt }) {
  const [tab, setTab] = useState<DiffTab>("categories");
  const status = useApp((a) => a.compareStatus);
  const ready = useApp((a) => a.compare !== null);
  const onKey = (e: KeyboardEvent<HTMLButtonElement>) => {
    // From the focused tab (focus may sit on a tab other than the chosen one).
    const i = DIFF_TABS.findIndex((t) => `cmp-tab-${t.id}` === e.currentTarget.id);
    const n = DIFF_TABS.length;
    const j =
      e.key === "ArrowRight"
        ? (i + 1) % n
        : e.key === "ArrowLeft"
          ? (i - 1 + n) % n
          : e.key === "Home"
            ? 0
            : e.key === "End"
              ? n - 1
              : -1;
    if (j < 0) return;
    e.preventDefault();
    // The page's ←/→ step the moment: not while moving between tabs.
    e.stopPropagation();
    setTab(DIFF_TABS[j].id);
    document.getElementById(`cmp-tab-${DIFF_TABS[j].id}`)?.focus();
  };
  return (
    <div className="cmp-diff ws-main" data-testid="diff" data-status={status} data-tab={tab}>
      <div className="ws-tabs" role="tablist" aria-label="Difference B − A">
        {DIFF_TABS.map((t) => (
          <button
            key={t.id}
            type="button"
            role="tab"
            id={`cmp-tab-${t.id}`}
            aria-selected={t.id === tab}
            aria-controls={`cmp-pane-${t.id}`}
            tabIndex={t.id === tab ? 0 : -1}
            onClick={() => setTab(t.id)}
            onKeyDown={onKey}
          >
            {t.name}
          </button>
        ))}
        <span className="cmp-tabs-note small muted">
          {tab === "tree"
            ? "B − A per frame path, at the moment chosen below"
            : at === "peaks"
              ? "B − A in the allocations alive at each file's peak"
              : "B − A in live blocks at each file's snapshot"}
        </span>
      </div>
      {/* Every pane stays mounted (hidden when not chosen): a tab switch keeps the tree's open rows. */}
      {DIFF_TABS.map((t) => (
        <div
          key={t.id}
          className="ws-pane cmp-pane"
          role="tabpanel"
          id={`cmp-pane-${t.id}`}
          aria-labelledby={`cmp-tab-${t.id}`}
          data-testid={`cmp-pane-${t.id}`}
          hidden={t.id !== tab}
          // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling pane, reachable to scroll by keys
          tabIndex={0}
        >
          {t.id === "tree" ? (
            <TreeDiffPanel />
          ) : !ready ? (
            <DiffStatus />
          ) : (
            <ErrorBoundary name={t.name}>
              {t.id === "categories" ? <DiffCategories at={at} /> : <DiffSites at={at} />}
            </ErrorBoundary>
          )}
        </div>
      ))}
    </div>
  );
}

function CompareBar({ at, onAt }: { at: CompareAt; onAt: (at: CompareAt) => void }) {
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
    <div className="card compare-bar">
      <div className="toolbar">
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
          Shared time axis
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
      <div className="verdict-line">
        <CompareAtToggle at={at} onAt={onAt} />
        <span className="verdict-label" aria-hidden="true">
          <span className="side-badge side-b">B</span> − <span className="side-badge side-a">A</span>
        </span>
        <Verdict at={at} />
      </div>
    </div>
  );
}

/** Whether the file of a side has a replayed peak (a trace on some device), or null while unknown. */
function hasPeak(side: Side): boolean | null {
  const report = sides[side].getState().panel?.report;
  return report ? report.timeline.devices.some((d) => d.peakEventIndex !== null) : null;
}

/**
 * "Compare at: Peaks | Snapshots", a radio group. Choosing one also moves each file's current moment there
 * (its timeline pin, hence its segment map), so the maps beside the call sites show the compared moment.
 */
function CompareAtToggle({ at, onAt }: { at: CompareAt; onAt: (at: CompareAt) => void }) {
  const answer = useApp((a) => a.compare);
  const base = useApp((a) => a.base);
  const name = useId();
  // Re-read on each render: panels arrive after the files open.
  sides[0]((s) => s.panel);
  sides[1]((s) => s.panel);
  if (!answer) return null;
  const peaks = answer.compare.atPeaks;
  const missing = (["A", "B"] as const).filter(
    (_, i) => hasPeak((i === 0 ? base : 1 - base) as Side) === false,
  );
  const who =
    missing.length === 2 ? "A and B have" : missing.length === 1 ? `${missing[0]} has` : "A file has";
  // One short line on screen; the title says why it matters.
  const reason = peaks ? null : `${who} no trace to replay: snapshots compared`;
  const why = peaks
    ? null
    : `${who} no trace to replay, so ${missing.length === 2 ? "their peaks are" : "its peak is"} unknown: the snapshots (the live blocks when each file was dumped) are compared instead`;
  const choose = (next: CompareAt) => {
    onAt(next);
    const moments = [peaks?.basePeak, peaks?.otherPeak];
    [base, 1 - base].forEach((side, i) => {
      const S = sides[side].getState();
      const m = moments[i];
      if (next === "snapshots") S.pin(null);
      else if (m && S.device === m.device) S.pin(m.eventIndex);
    });
  };
  const option = (value: CompareAt, label: string, disabled: boolean, title: string) => (
    <label className={disabled ? "muted" : undefined} title={title}>
      <input
        type="radio"
        name={name}
        value={value}
        checked={at === value}
        disabled={disabled}
        data-testid={`compare-at-${value}`}
        onChange={() => choose(value)}
      />{" "}
      {label}
    </label>
  );
  return (
    <>
      <div
        className="cmp-at"
        role="radiogroup"
        aria-label="Compare at"
        data-testid="compare-at"
        onKeyDown={(e) => {
          // The page's ←/→ step the moment: not while moving between these two.
          if (e.key.startsWith("Arrow")) e.stopPropagation();
        }}
      >
        <span className="cmp-at-label" aria-hidden="true">
          Compare at
        </span>
        {option(
          "peaks",
          "Peaks",
          !peaks,
          why ?? "Each file at its peak: the allocations alive at its highest allocated moment",
        )}
        {option(
          "snapshots",
          "Snapshots",
          false,
          "Each file at its snapshot: the live blocks when it was dumped",
        )}
      </div>
      {reason && (
        <span className="cmp-at-reason small muted" data-testid="compare-at-reason" title={why ?? ""}>
          {reason}
        </span>
      )}
    </>
  );
}
