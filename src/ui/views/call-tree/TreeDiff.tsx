// A comparison's call tree difference, B − A per node (core diffTrees over the same display paths; node
// keys agree across files when the frames' portable keys do): at both snapshots, both peaks, or each
// side's pinned moment, with the call tree's filters (orientation, by, own code, library). Pruned by
// |Δ| in the worker like the tree itself.

import { useCallback, useMemo, useState } from "react";
import type { TreeDiffAnswer, TreeDiffNodeOut, TreeDiffQuery } from "../../../../workers/api";
import { Bytes } from "../../components/Bytes";
import { ErrorBoundary } from "../../components/ErrorBoundary";
import { formatCount } from "../../format";
import { useApp } from "../../state/app";
import { askRoot } from "../../state/client";
import { sides } from "../../state/store";
import "./call-tree.css";
import { useCallTree } from "./store";
import { useLatest } from "./useLatest";

type Moment = "snapshot" | "peak" | "pinned";
const MAX_ROWS = 400;

function at(m: Moment, peak: number | null, pin: number | null): number | null {
  return m === "snapshot" ? null : m === "peak" ? peak : pin;
}

export function TreeDiffPanel() {
  return (
    <ErrorBoundary name="call tree difference">
      <TreeDiffView />
    </ErrorBoundary>
  );
}

function TreeDiffView() {
  const base = useApp((a) => a.base);
  const A = sides[base];
  const B = sides[1 - base];
  const readyA = A((s) => s.status === "ready" && !!s.panel);
  const readyB = B((s) => s.status === "ready" && !!s.panel);
  const devA = A((s) => s.device);
  const devB = B((s) => s.device);
  const peakA = A((s) => s.panel?.replay?.peakEvent ?? null);
  const peakB = B((s) => s.panel?.replay?.peakEvent ?? null);
  const pinA = A((s) => (s.panel?.replay ? s.pinnedEvent : null));
  const pinB = B((s) => (s.panel?.replay ? s.pinnedEvent : null));
  const nameA = A((s) => s.fileName);
  const nameB = B((s) => s.fileName);
  const orientation = useCallTree((t) => t.orientation);
  const by = useCallTree((t) => t.by);
  const ownCodeOnly = useCallTree((t) => t.ownCodeOnly);
  const hideLibrary = useCallTree((t) => t.hideLibrary);
  // Peaks compared by default (issue 21): the snapshot of a dump taken after the step is rarely the
  // moment that matters. A file without a trace falls back to its snapshot (its peak is unknown).
  const [moment, setMoment] = useState<Moment>("peak");
  const [open, setOpen] = useState<Map<string, boolean>>(() => new Map());

  const query: TreeDiffQuery = useMemo(
    () => ({
      deviceA: devA,
      deviceB: devB,
      eventA: at(moment, peakA, pinA),
      eventB: at(moment, peakB, pinB),
      orientation,
      by,
      ownCodeOnly,
      hideLibrary,
    }),
    [devA, devB, moment, peakA, pinA, peakB, pinB, orientation, by, ownCodeOnly, hideLibrary],
  );
  const run = useCallback((q: TreeDiffQuery) => askRoot((api) => api.treeDiff(base, q)), [base]);
  const latest = useLatest<TreeDiffQuery, TreeDiffAnswer>(
    readyA && readyB ? `${base}|${JSON.stringify(query)}` : null,
    query,
    run,
    80,
  );
  const answer = latest.answer;
  const rows = useMemo(() => {
    const out: { node: TreeDiffNodeOut; depth: number; expanded: boolean }[] = [];
    if (!answer) return out;
    const scale = Math.max(answer.totalA, answer.totalB, 1);
    const walk = (n: TreeDiffNodeOut, depth: number) => {
      if (out.length >= MAX_ROWS) return;
      const def = depth === 0 || (Math.abs(n.deltaBytes) >= scale * 0.05 && depth < 8);
      const expanded = n.children.length > 0 && (open.get(n.key) ?? def);
      out.push({ node: n, depth, expanded });
      if (expanded) for (const c of n.children) walk(c, depth + 1);
    };
    walk(answer.root, 0);
    return out;
  }, [answer, open]);

  if (!readyA || !readyB) return null;
  const words = (ev: number | null) => (ev === null ? "the snapshot" : `after event #${formatCount(ev)}`);
  return (
    <section className="card ct-diff" aria-label="Call tree difference" data-testid="tree-diff">
      <h2>
        Call tree difference: B − A{" "}
        <span className="muted small">
          per frame path, live allocated bytes; red: B holds more, green: B holds less
        </span>
      </h2>
      <div className="toolbar">
        <span className="label">moment</span>
        <span className="group">
          {(["snapshot", "peak", "pinned"] as const).map((m) => (
            <button key={m} type="button" aria-pressed={moment === m} onClick={() => setMoment(m)}>
              {m === "snapshot" ? "Both snapshots" : m === "peak" ? "Both peaks" : "Each pinned moment"}
            </button>
          ))}
        </span>
        <span className="muted small">
          filters from the call tree: {orientation}, by {by}
          {ownCodeOnly ? ", only own code" : ""}
          {hideLibrary ? ", library hidden" : ""}
        </span>
      </div>
      {latest.error && <p className="status-fail">The difference could not be built: {latest.error}</p>}
      {answer && (
        <>
          <p className="small">
            A ({nameA}, {words(answer.eventA)}): <Bytes value={answer.totalA} /> · B ({nameB},{" "}
            {words(answer.eventB)}): <Bytes value={answer.totalB} /> · B − A:{" "}
            <Bytes value={answer.totalB - answer.totalA} signed testId="tree-diff-total" />
            {answer.shownNodes < answer.nodeCount && (
              <span className="muted">
                {" "}
                · showing {formatCount(answer.shownNodes)} of {formatCount(answer.nodeCount)} nodes (small
                differences summed into "… N more")
              </span>
            )}
          </p>
          <div
            className="ct-head"
            aria-hidden="true"
            style={{ gridTemplateColumns: "minmax(0,1fr) 90px 90px 100px" }}
          >
            <span>frame</span>
            <span className="num">A</span>
            <span className="num">B</span>
            <span className="num">B − A</span>
          </div>
          <div className="ct-tree" role="tree" aria-label="Call tree difference nodes">
            {rows.map(({ node: n, depth, expanded }) => (
              <div
                key={n.key}
                role="treeitem"
                aria-level={depth + 1}
                aria-expanded={n.children.length > 0 ? expanded : undefined}
                aria-selected={false}
                tabIndex={depth === 0 ? 0 : -1}
                className={`ct-row ct-kind-${n.kind}${n.own ? " ct-own-row" : ""}`}
                data-key={n.key}
                data-name={n.name}
                data-delta={n.deltaBytes}
                onClick={() => n.children.length > 0 && setOpen((m) => new Map(m).set(n.key, !expanded))}
                onKeyDown={(e) => {
                  if (e.key === "Enter" || e.key === " ") {
                    e.preventDefault();
                    if (n.children.length > 0) setOpen((m) => new Map(m).set(n.key, !expanded));
                  }
                }}
              >
                <div className="ct-line">
                  <span className="ct-name" style={{ paddingLeft: depth * 14 }}>
                    <span className="ct-caret" aria-hidden="true">
                      {n.children.length > 0 ? (expanded ? "▾" : "▸") : "·"}
                    </span>
                    <span className={n.own ? "ct-label ct-own" : "ct-label"}>{n.name}</span>
                    {n.detail && <span className="ct-detail">{n.detail}</span>}
                  </span>
                  <span className="num muted">
                    <Bytes value={n.bytesA} />
                  </span>
                  <span className="num muted">
                    <Bytes value={n.bytesB} />
                  </span>
                  <span
                    className={`num ${n.deltaBytes > 0 ? "delta-up" : n.deltaBytes < 0 ? "delta-down" : "muted"}`}
                  >
                    <Bytes value={n.deltaBytes} signed />
                  </span>
                </div>
              </div>
            ))}
          </div>
        </>
      )}
    </section>
  );
}
