// The side panel for the selected device: totals from the segment fields, the peak against the snapshot
// (flagged beyond 2%), categories with colour keys, the consistency checks, the ring-buffer notice and
// the top call sites. Every number is read from the core report (what `peakscope report --json` prints).

import { Fragment, useRef, useState } from "react";
import type { PanelAnswer, ReportJson } from "../../../../workers/api";
import { Bytes } from "../../components/Bytes";
import {
  describeRule,
  InferredBadge,
  inferredText,
  partsOf,
  WORKSPACE_NOTE,
} from "../../components/Inferred";
import { SeeCapture } from "../../components/SeeCapture";
import { formatBytes, formatCount, formatPercent } from "../../format";
import { useApp } from "../../state/app";
import { useSide, useSideKey } from "../../state/store";
import { GrowthSection } from "../series/GrowthSection";
import { WhatIfPanel, WhatIfSelectionBar } from "../whatif/WhatIfPanel";
import { ArtifactPeak } from "./ArtifactPeak";
import {
  InferenceNotes,
  InferredPeakRow,
  InferredRules,
  InferredToggle,
  UnknownReasonRows,
  useDisclosures,
} from "./Inference";

const PEAK_TOLERANCE = 0.02;

/**
 * `inColumn`: inside a comparison's column (no sticky panel; the column shows the totals itself).
 * `part`: the workspace's Summary tab shows the numbers (no what-if, no checks), its Checks tab the checks.
 */
export function SidePanel({
  inColumn = false,
  part = "all",
}: {
  inColumn?: boolean;
  part?: "all" | "numbers" | "checks";
} = {}) {
  const S = useSide();
  const k = useSideKey();
  const panel = S((s) => s.panel);
  const device = S((s) => s.device);
  if (!panel) {
    return (
      <aside className={inColumn ? "side-panel in-column" : "side-panel"} aria-label="Analysis">
        <section className="card">
          <p className="muted">Analysing device {device}…</p>
        </section>
      </aside>
    );
  }
  const report = panel.report;
  const dev = report?.devices.find((d) => d.device === device) ?? null;
  return (
    <aside
      className={inColumn ? "side-panel in-column" : part === "all" ? "side-panel" : "side-panel in-pane"}
      aria-label={part === "checks" ? "Checks" : "Analysis"}
      data-testid="side-panel"
    >
      {panel.errors.length > 0 && (
        <section className="card">
          {panel.errors.map((e) => (
            <p key={e} className="status-fail">
              {e}
            </p>
          ))}
        </section>
      )}
      {part !== "checks" && report && !inColumn && <Totals report={report} device={device} />}
      {part !== "checks" && <OomCard panel={panel} />}
      {part !== "checks" && <PeakGap panel={panel} />}
      {part === "all" && !inColumn && <WhatIfPanel />}
      {part !== "checks" && dev && (
        <Categories
          categories={dev.categories}
          allocated={dev.allocatedBytes}
          title={`at the snapshot, device ${device}`}
        />
      )}
      {part !== "numbers" && report && <Checks report={report} panel={panel} />}
      {part !== "checks" && panel.replay?.truncationNote && (
        <section className="card notice" data-testid="truncation">
          <h2>Trace is incomplete</h2>
          <p className="small">
            {panel.replay.truncationNote} Give <code>peakscope_hook.start(max_entries=…)</code> enough entries
            to hold the peak — <SeeCapture />.
          </p>
        </section>
      )}
      {part !== "checks" && report && <CallSites report={report} />}
      {part !== "checks" && panel.replay && <GrowthSection />}
      {part !== "checks" && report && (report.notes.length > 0 || report.noStackReasons.length > 0) && (
        <section className="card" aria-labelledby={`notes-title-${k}`}>
          <h2 id={`notes-title-${k}`}>Notes</h2>
          <ul className="notes">
            {report.notes.map((n) => (
              <li key={n}>{n}</li>
            ))}
            {report.noStackReasons.length > 0 && (
              <li>
                Some blocks have no stack. Most likely:{" "}
                {report.noStackReasons.map((n, i) => (
                  <span key={n}>
                    {i > 0 ? "; " : ""}
                    {n}
                  </span>
                ))}
              </li>
            )}
          </ul>
        </section>
      )}
    </aside>
  );
}

/** `compact`: one row of four numbers (a comparison's column). */
export function Totals({
  report,
  device,
  compact = false,
}: {
  report: ReportJson;
  device: number;
  compact?: boolean;
}) {
  const k = useSideKey();
  const dev = report.devices.find((d) => d.device === device);
  const rows: [string, string, number | null | undefined, string][] = [
    [
      "Reserved",
      "reserved",
      dev?.reservedBytes,
      "Σ segment total_size: what the caching allocator holds from the device",
    ],
    ["Active", "active", dev?.activeBytes, "Σ segment active_size: allocated + pending free"],
    [
      "Allocated",
      "allocated",
      dev?.allocatedBytes,
      "Σ segment allocated_size: live tensors (rounded block sizes)",
    ],
    [
      "Requested",
      "requested",
      dev?.requestedBytes,
      "Σ segment requested_size: what the program asked for (unrounded)",
    ],
  ];
  return (
    <section className="card" aria-labelledby={`totals-title-${k}`} data-testid="totals">
      <h2 id={`totals-title-${k}`}>Memory at the snapshot — device {device}</h2>
      {!dev ? (
        <p className="muted small">Device {device} holds no segments at the snapshot.</p>
      ) : compact ? (
        <div className="totals-row">
          {rows.map(([label, key, v, help]) => (
            <div key={key} data-testid={`total-${key}`} data-value={v ?? ""} title={help}>
              <div className="muted small">{label}</div>
              <div className="big-number">{v === null || v === undefined ? "—" : <Bytes value={v} />}</div>
            </div>
          ))}
        </div>
      ) : (
        <table className="num-table">
          <tbody>
            {rows.map(([label, key, v, help]) => (
              <tr key={key} data-testid={`total-${key}`} data-value={v ?? ""}>
                <th scope="row" title={help}>
                  {label}
                </th>
                <td className="big-number">{v === null || v === undefined ? "—" : <Bytes value={v} />}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {report.devices.length > 1 && (
        <p className="small muted" data-testid="totals-all" data-reserved={report.totals.reservedBytes}>
          All {report.devices.length} devices: reserved <Bytes value={report.totals.reservedBytes} />,
          allocated <Bytes value={report.totals.allocatedBytes} />.
        </p>
      )}
    </section>
  );
}

function OomCard({ panel }: { panel: PanelAnswer }) {
  const S = useSide();
  const k = useSideKey();
  const ooms = panel.replayReport?.timeline.oom.filter((o) => o.device === panel.device) ?? [];
  if (ooms.length === 0) return null;
  return (
    <section className="card" aria-labelledby={`oom-title-${k}`} data-testid="oom">
      <h2 id={`oom-title-${k}`} className="status-fail">
        Out of memory on device {panel.device}
      </h2>
      {ooms.map((o) => (
        <div key={o.eventIndex} className="gap-flag">
          <div>
            At event #{formatCount(o.eventIndex)}: {o.message}.
          </div>
          <button type="button" onClick={() => S.getState().pin(o.eventIndex)}>
            Show this moment in the segment map
          </button>
        </div>
      ))}
    </section>
  );
}

export function PeakGap({ panel }: { panel: PanelAnswer }) {
  // a profiler trace or a memory timeline has no segments: no snapshot to set the peak against
  if (panel.report?.source?.kind === "profiler-trace" || panel.report?.source?.kind === "memory-timeline")
    return <ArtifactPeak panel={panel} />;
  return <SnapshotPeakGap panel={panel} />;
}

function SnapshotPeakGap({ panel }: { panel: PanelAnswer }) {
  const S = useSide();
  const k = useSideKey();
  const colors = S((s) => s.colors);
  const r = panel.replay;
  const report = panel.report;
  const dev = report?.devices.find((d) => d.device === panel.device) ?? null;
  const rr = panel.replayReport;
  const rules = panel.rules;
  const inference = panel.inference;
  const countersPeak =
    rr?.peak?.source === "counters" && rr.peak.device === panel.device ? rr.peak.allocatedBytes : null;
  // max_memory_allocated from a sidecar about this device confirms (or replaces) the replayed peak.
  const countersKnown =
    countersPeak !== null ||
    (rr?.peak?.device === panel.device &&
      rr.peak.countersPeakBytes !== null &&
      rr.peak.countersPeakBytes !== undefined);
  if (!r && countersPeak === null) {
    return (
      <section className="card" aria-labelledby={`peak-title-${k}`} data-testid="peak-gap">
        <h2 id={`peak-title-${k}`}>Peak vs snapshot</h2>
        <p className="small muted">
          No trace to replay on this device and no counters sidecar: the peak is unknown. A snapshot is one
          instant, not the peak; drop the dump's <code>.counters.json</code> with it to compare against
          max_memory_allocated.
        </p>
      </section>
    );
  }
  // The trace began with memory already allocated and no sidecar says the run's peak: what the replay
  // finds is only the highest moment of the recorded window.
  const windowOnly = r !== null && !r.isRunPeak && !countersKnown;
  const snapshot = dev?.allocatedBytes ?? 0;
  const peak = countersPeak ?? r?.peakBytes ?? 0;
  // max_memory_allocated and the replay leave torch_npu's workspace out: compare like with like.
  const gap = peak - (snapshot - (inference?.workspaceBytes ?? 0));
  const frac = peak > 0 ? gap / peak : 0;
  const flagged = frac > PEAK_TOLERANCE;
  const names = panel.categories.map((c) => c.name);
  const peakWord = windowOnly ? "window peak" : "peak";
  return (
    <section
      className="card"
      aria-labelledby={`peak-title-${k}`}
      data-testid="peak-gap"
      data-flagged={flagged ? "1" : "0"}
      data-run-peak={windowOnly ? "0" : "1"}
    >
      <h2 id={`peak-title-${k}`}>
        {windowOnly ? "Peak of the recorded window vs snapshot" : "Peak vs snapshot"} — device {panel.device}
      </h2>
      {windowOnly && r && (
        <details className="peak-window" data-testid="peak-not-in-file">
          <summary>
            <strong className="peak-head">
              peak ≥ <Bytes value={r.peakBytes} /> (recorded window)
            </strong>{" "}
            <span className="info-i" title="Why only the recorded window">
              i
            </span>
          </summary>
          The trace begins with <Bytes value={r.initialBytes} /> already allocated (recording started late, or
          the ring buffer dropped older entries), so the run's peak may have come before it. To get it: drop
          the dump's counters sidecar (<code>.counters.json</code> with <code>max_memory_allocated</code>)
          with the snapshot, or record from the start —{" "}
          <code>torch.cuda.memory._record_memory_history(max_entries=…)</code> before building the model, with
          max_entries larger than the run's allocations and frees.
        </details>
      )}
      {flagged ? (
        // Information, not a failure: most snapshots are taken after the worst moment.
        <div className="gap-flag info">
          <strong>
            The {peakWord} is <Bytes value={gap} testId="gap-bytes" /> ({formatPercent(frac)}) above the
            snapshot.
          </strong>{" "}
          The snapshot does not show the worst moment: look at the {peakWord}'s composition.
        </div>
      ) : windowOnly ? (
        <p className="small muted">
          The snapshot is <Bytes value={gap} testId="gap-bytes" /> ({formatPercent(frac)}) below the recorded
          window's peak; that says nothing about the run's peak.
        </p>
      ) : (
        <div className="gap-flag ok">
          <strong>The snapshot is within {formatPercent(PEAK_TOLERANCE, 0)} of the peak</strong> (gap{" "}
          <Bytes value={gap} testId="gap-bytes" />, {formatPercent(frac)}).
        </div>
      )}
      <table className="num-table">
        <thead>
          <tr>
            <th scope="col">Category</th>
            <th scope="col">{windowOnly ? "At window peak" : "At peak"}</th>
            <th scope="col">At snapshot</th>
          </tr>
        </thead>
        <tbody>
          <tr data-testid="peak-row-total">
            <th scope="row">allocated</th>
            <td data-testid="peak-bytes" data-value={peak}>
              <strong>
                <Bytes value={peak} />
              </strong>
            </td>
            <td data-testid="snapshot-bytes" data-value={snapshot}>
              <strong>
                <Bytes value={snapshot} />
              </strong>
            </td>
          </tr>
          {r &&
            countersPeak === null &&
            names.map((n, c) => {
              const atPeak = r.peakByCategory[c] ?? 0;
              const atSnap = dev?.categories[n] ?? 0;
              if (atPeak === 0 && atSnap === 0) return null;
              return (
                <Fragment key={n}>
                  <tr data-category={n}>
                    <td>
                      <span className="swatch" style={{ background: colors[c] }} />
                      {n}
                    </td>
                    <td data-field="peak" data-value={atPeak}>
                      <Bytes value={atPeak} />
                    </td>
                    <td data-field="snapshot" data-value={atSnap}>
                      <Bytes value={atSnap} />
                    </td>
                  </tr>
                  <InferredPeakRow
                    category={n}
                    peak={inference?.peak}
                    snapshot={inference?.snapshot}
                    rules={rules}
                  />
                </Fragment>
              );
            })}
        </tbody>
      </table>
      <p className="small muted">
        {countersPeak !== null
          ? `Peak from the counters sidecar (max_memory_allocated); its composition is unknown. ${rr?.peak?.note ?? ""}`
          : `${windowOnly ? "Window peak" : "Peak"}: highest allocated over the replayed trace (rounded block bytes), at event #${formatCount(r?.peakEvent ?? 0)}. Snapshot columns come from the snapshot's blocks.`}
        {(inference?.workspaceBytes ?? 0) > 0
          ? ` The torch_npu workspace (${formatBytes(inference?.workspaceBytes ?? 0)}) is in the snapshot's allocated but never in the peak: ${WORKSPACE_NOTE}.`
          : ""}
      </p>
      {r && (
        <button
          type="button"
          onClick={() => {
            S.getState().pin(r.peakEvent);
          }}
          data-testid="peak-show"
        >
          Show the {peakWord} in the segment map
        </button>
      )}
    </section>
  );
}

function Categories({
  categories,
  allocated,
  title,
}: {
  categories: Record<string, number>;
  allocated: number;
  title: string;
}) {
  const S = useSide();
  const k = useSideKey();
  const colors = S((s) => s.colors);
  const panel = S((s) => s.panel);
  const highlight = S((s) => s.highlightCategory);
  const setHighlight = S((s) => s.setHighlightCategory);
  const disclosures = useDisclosures();
  const inference = panel?.inference ?? null;
  const rules = panel?.rules ?? [];
  const names = panel?.categories.map((c) => c.name) ?? Object.keys(categories);
  const total = Object.values(categories).reduce((a, b) => a + b, 0);
  // torch_npu's workspace is shown apart, last, with its note (not in memory_allocated(), no timing).
  const workspaceApart = (inference?.workspaceBytes ?? 0) > 0 && names.includes("workspace");
  const order = names.map((n, c) => ({ n, c }));
  if (workspaceApart) {
    const i = order.findIndex((o) => o.n === "workspace");
    order.push(...order.splice(i, 1));
  }
  return (
    <section className="card" aria-labelledby={`cat-title-${k}`} data-testid="categories">
      <h2 id={`cat-title-${k}`}>What holds the memory — {title}</h2>
      <table className="num-table">
        <thead>
          <tr>
            <th scope="col">Category</th>
            <th scope="col">Bytes</th>
            <th scope="col">% of allocated</th>
          </tr>
        </thead>
        <tbody>
          {order.map(({ n, c }) => {
            const v = categories[n] ?? 0;
            const parts = partsOf(inference?.snapshot, n);
            const open = parts.length > 0 && disclosures.isOpen(n);
            const apart = workspaceApart && n === "workspace";
            const cls = [
              v === 0 ? "muted" : highlight === n ? "highlighted" : "",
              apart ? "apart" : "",
            ].filter(Boolean);
            return (
              <Fragment key={n}>
                <tr
                  data-category={n}
                  data-value={v}
                  data-inferred={parts.length > 0 ? parts.reduce((a, p) => a + p.bytes, 0) : undefined}
                  className={cls.length > 0 ? cls.join(" ") : undefined}
                >
                  <td>
                    <button
                      type="button"
                      className="link cat-button"
                      aria-pressed={highlight === n}
                      title={
                        highlight === n
                          ? "Show every category again"
                          : `Highlight ${n.replace(/_/g, " ")} in the timeline and the segment map`
                      }
                      onClick={() => setHighlight(highlight === n ? null : n)}
                    >
                      <span className="swatch" style={{ background: colors[c] }} />
                      {n.replace(/_/g, " ")}
                    </button>
                  </td>
                  <td>
                    <Bytes value={v} />
                  </td>
                  <td>{allocated > 0 ? formatPercent(v / allocated) : "—"}</td>
                </tr>
                {parts.length > 0 && (
                  <tr className="sub-row" data-inferred-of={n}>
                    <td>
                      <InferredToggle
                        category={n}
                        parts={parts}
                        rules={rules}
                        open={open}
                        onToggle={() => disclosures.toggle(n)}
                        controls={disclosures.idOf(n)}
                      />
                    </td>
                    <td>
                      <Bytes value={parts.reduce((a, p) => a + p.bytes, 0)} />
                    </td>
                    <td>
                      {allocated > 0
                        ? formatPercent(parts.reduce((a, p) => a + p.bytes, 0) / allocated)
                        : "—"}
                    </td>
                  </tr>
                )}
                {n === "unknown" && inference && (
                  <UnknownReasonRows byReason={inference.unknownBytesByReason} allocated={allocated} />
                )}
                {apart && (
                  <tr className="sub-row">
                    <td colSpan={3} className="wrap" data-testid="workspace-note">
                      {WORKSPACE_NOTE}. Counted in reserved and in Σ allocated_size; left out of the peak and
                      of the counter checks.
                    </td>
                  </tr>
                )}
                {open && (
                  <tr className="sub-row">
                    <td colSpan={3} className="wrap">
                      <InferredRules id={disclosures.idOf(n)} parts={parts} rules={rules} />
                    </td>
                  </tr>
                )}
              </Fragment>
            );
          })}
        </tbody>
      </table>
      <WhatIfSelectionBar from="category" />
      {total > 0 && (
        <div className="bar" style={{ display: "flex", marginTop: 6 }} aria-hidden="true">
          {names.map((n, c) => {
            const v = categories[n] ?? 0;
            return v > 0 ? (
              <span key={n} style={{ width: `${(v / total) * 100}%`, background: colors[c] }} />
            ) : null;
          })}
        </div>
      )}
      {inference && <InferenceNotes inference={inference} />}
    </section>
  );
}

function statusClass(s: string): string {
  return s === "pass" ? "status-pass" : s === "fail" ? "status-fail" : "status-skipped";
}
const STATUS_TEXT: Record<string, string> = { pass: "✓ pass", fail: "✗ fail", skipped: "– skipped" };

function Checks({ report, panel }: { report: ReportJson; panel: PanelAnswer }) {
  const input = useRef<HTMLInputElement>(null);
  const [localError, setError] = useState<string | null>(null);
  const S = useSide();
  const k = useSideKey();
  const droppedError = S((s) => s.countersError);
  const error = localError ?? droppedError;
  const applyCountersFile = async (file: File | null) => {
    setError(null);
    const message = await S.getState().applyCounters(file);
    if (message) setError(message);
    else if (useApp.getState().mode === "compare") await useApp.getState().runCompare();
  };
  // The trace-replay check comes from the replay report unless the report already lists it.
  const traceReplay = report.checks.some((c) => c.id === "trace-replay")
    ? null
    : panel.replayReport?.traceReplay;
  return (
    <section className="card" aria-labelledby={`checks-title-${k}`} data-testid="checks">
      <h2 id={`checks-title-${k}`}>Consistency checks</h2>
      {report.checks.map((c) => (
        <div key={c.id} className="check" data-check={c.id} data-status={c.status}>
          <div>
            <span className={statusClass(c.status)}>{STATUS_TEXT[c.status] ?? c.status}</span> {c.title}
          </div>
          <div className="why">{c.detail}</div>
        </div>
      ))}
      {traceReplay && (
        <div className="check" data-check="trace-replay" data-status={traceReplay.status}>
          <div>
            <span className={statusClass(traceReplay.status)}>{STATUS_TEXT[traceReplay.status]}</span> trace
            replay ends in the snapshot's state
          </div>
          <div className="why">{traceReplay.detail}</div>
        </div>
      )}
      <div className="small" style={{ marginTop: 6 }}>
        {panel.countersFile ? (
          <>
            Counters: <code>{panel.countersFile}</code>{" "}
            <button type="button" className="link" onClick={() => void applyCountersFile(null)}>
              remove
            </button>
          </>
        ) : (
          <>
            <button type="button" onClick={() => input.current?.click()} data-testid="add-counters">
              Add counters sidecar…
            </button>{" "}
            <span className="muted">(the dump's .counters.json, for the last three checks)</span>
            {report.checks.some((c) => c.status === "skipped") && (
              <p className="small muted" data-testid="counters-hint">
                Drop{" "}
                <code style={{ wordBreak: "break-all" }}>
                  {S.getState().fileName ?? "FILE"}.counters.json
                </code>{" "}
                with the dump (<code>peakscope_hook</code> writes it) — <SeeCapture />.
              </p>
            )}
          </>
        )}
        <input
          ref={input}
          type="file"
          accept=".json,application/json"
          hidden
          data-testid="counters-input"
          onChange={(e) => {
            const f = e.currentTarget.files?.[0] ?? null;
            e.currentTarget.value = "";
            if (f) void applyCountersFile(f);
          }}
        />
        {error && (
          <p className="status-fail" data-testid="counters-error">
            {error}
          </p>
        )}
      </div>
    </section>
  );
}

function CallSites({ report }: { report: ReportJson }) {
  const S = useSide();
  const k = useSideKey();
  const highlight = S((s) => (s.highlightBy === "key" ? s.highlightSite : null));
  const setHighlight = S((s) => s.setHighlightSite);
  const setMode = S((s) => s.setTimelineMode);
  const colors = S((s) => s.colors);
  const panel = S((s) => s.panel);
  const names = panel?.categories.map((c) => c.name) ?? [];
  const rules = panel?.rules ?? [];
  const sites = report.topCallSites;
  const max = sites.reduce((m, s) => Math.max(m, s.bytes), 0);
  return (
    <section className="card" aria-labelledby={`sites-title-${k}`} data-testid="call-sites">
      <h2 id={`sites-title-${k}`}>Top call sites at the snapshot</h2>
      <p className="small muted">
        Live blocks by the line of code that allocated them (all devices). Click one to highlight its
        allocations in the timeline and the segment map.
      </p>
      {sites.length === 0 ? (
        <p className="small muted">No live blocks.</p>
      ) : (
        <ul className="sites" aria-label="Top call sites">
          {sites.map((s) => {
            const key = `${s.site}\u0000${s.category}\u0000${s.inferred ? 1 : 0}`;
            const selected = highlight === s.site;
            const color = colors[names.indexOf(s.category)] ?? "#888";
            const ruleText = describeRule(rules, s.rule);
            const lines = [
              s.site,
              s.inferred
                ? `category ${s.category}, ${inferredText(s.rule, ruleText)}`
                : `category ${s.category} (rule ${s.rule}, site chosen: ${s.via})`,
              s.library ? `calls ${s.library}` : "",
              s.libraryInnermost ? `… which allocates in ${s.libraryInnermost}` : "",
              `${formatCount(s.blocks)} blocks`,
            ];
            return (
              <li key={key}>
                <button
                  type="button"
                  className="site"
                  aria-pressed={selected}
                  data-site={s.site}
                  data-bytes={s.bytes}
                  data-inferred={s.inferred ? s.rule : undefined}
                  title={lines.filter(Boolean).join("\n")}
                  onClick={() => {
                    setHighlight(selected ? null : s.site);
                    if (!selected) setMode("allocations");
                  }}
                >
                  <span className="site-bytes">
                    <Bytes value={s.bytes} />
                  </span>
                  <span className="swatch" style={{ background: color }} />
                  <span className="site-name">{s.label}</span>
                  {s.library && (
                    <span className="site-lib" data-testid="site-library">
                      → {s.library}
                    </span>
                  )}
                  {s.libraryInnermost && (
                    <span className="site-lib" data-testid="site-library-innermost">
                      … {s.libraryInnermost}
                    </span>
                  )}
                  <span className="small muted site-meta">
                    {s.category.replace(/_/g, " ")} · {formatCount(s.blocks)} blocks
                    {s.inferred ? " · " : ""}
                    {s.inferred && (
                      <InferredBadge
                        parts={[{ category: s.category, rule: s.rule, bytes: s.bytes, count: s.blocks }]}
                        rules={rules}
                        testId="site-inferred"
                      />
                    )}
                  </span>
                  <span className="bar">
                    <span style={{ width: `${max > 0 ? (s.bytes / max) * 100 : 0}%`, background: color }} />
                  </span>
                </button>
              </li>
            );
          })}
        </ul>
      )}
      {highlight && (
        <p className="small">
          Highlighting <code>{highlight}</code>{" "}
          <button type="button" className="link" onClick={() => setHighlight(null)}>
            clear
          </button>
        </p>
      )}
      <WhatIfSelectionBar from="site" />
      <p className="small muted">
        {formatBytes(sites.reduce((a, s) => a + s.bytes, 0))} in the listed sites.
      </p>
    </section>
  );
}
