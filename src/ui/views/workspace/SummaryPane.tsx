// The Summary tab: the answer in words first — the peak (value, when, inside which annotation span),
// what held it at the current moment (categories and the own-code lines holding the most), whether it
// fits the device (when the capacity is known), whether the file holds an OOM (the request, the largest
// free block) — then the numbers (the side panel's cards) and the file's facts.

import { useEffect, useState } from "react";
import type { HealthAnswer } from "../../../../workers/health";
import type { WhatIfAnswer } from "../../../../workers/whatif";
import { Bytes } from "../../components/Bytes";
import { ErrorBoundary } from "../../components/ErrorBoundary";
import { KindWords } from "../../components/KindWords";
import { formatBytes, formatCount, formatPercent } from "../../format";
import { momentName, whenWords } from "../../state/moment";
import { snapshotGapFraction } from "../../state/momentDefault";
import { useSide } from "../../state/store";
import { HostLane } from "../host/HostLane";
import { SidePanel } from "../side-panel/SidePanel";
import { SummaryPanel } from "../side-panel/SummaryPanel";
import { Annotations } from "../tags/Annotations";
import { useWhatIf } from "../whatif/store";
import { useMoment, useMomentFacts } from "./useMomentFacts";

export function SummaryPane() {
  return (
    <div className="summary-pane">
      <SummaryWords />
      <h2 className="pane-sub">The numbers</h2>
      <SidePanel part="numbers" />
      <SummaryPanel />
      <ErrorBoundary name="host memory">
        <HostLane />
      </ErrorBoundary>
      <ErrorBoundary name="notes on allocations">
        <Annotations />
      </ErrorBoundary>
    </div>
  );
}

const PHASE_WORDS = {
  forward: "forward pass",
  backward: "backward pass",
  optimizer: "optimizer step",
  parameters: "model set-up (parameters)",
} as const;

/** File names that promise an OOM ("oom_snapshot.pickle"). */
const OOM_NAME = /(^|[^a-z])oom([^a-z]|$)/i;

function SummaryWords() {
  const S = useSide();
  const panel = S((s) => s.panel);
  const device = S((s) => s.device);
  const fileName = S((s) => s.fileName);
  const colors = S((s) => s.colors);
  const ask = S((s) => s.ask);
  const side = S((s) => s.side);
  const capacityTyped = useWhatIf((w) => w.capacity[side]);
  const moment = useMoment();
  const facts = useMomentFacts();
  const [whyOpen, setWhyOpen] = useState(false);
  const [health, setHealth] = useState<HealthAnswer | null>(null);
  const [fit, setFit] = useState<WhatIfAnswer | null>(null);
  const r = panel?.replay ?? null;

  useEffect(() => {
    if (!r) return;
    let stale = false;
    ask((api) => api.health(device))
      .then((h) => !stale && setHealth(h))
      .catch(() => {});
    // A what-if that changes nothing: the engine's capacity (OOM, counters or typed) and whether the
    // peak fits it.
    ask((api) => api.whatIf({ device, specs: [], capacityBytes: capacityTyped }))
      .then((w) => !stale && setFit(w))
      .catch(() => {});
    return () => {
      stale = true;
    };
  }, [ask, device, r, capacityTyped]);

  if (!panel) return <p className="muted">Analysing device {device}…</p>;
  // The run's phase at the peak (core summary-words: the attribution's phases), for this device's peak.
  const sp = panel.report?.summary?.peak ?? null;
  const peakPhase = sp && sp.device === panel.device && sp.eventIndex === r?.peakEvent ? sp.phase : null;
  const rr = panel.replayReport;
  const countersPeak =
    rr?.peak?.source === "counters" && rr.peak.device === panel.device ? rr.peak.allocatedBytes : null;
  const countersKnown =
    countersPeak !== null ||
    (rr?.peak?.device === panel.device &&
      rr.peak.countersPeakBytes !== null &&
      rr.peak.countersPeakBytes !== undefined);
  const windowOnly = r !== null && !r.isRunPeak && !countersKnown;
  const peak = countersPeak ?? r?.peakBytes ?? null;
  const ooms = rr?.timeline.oom.filter((o) => o.device === panel.device) ?? [];
  const oomDetail = health?.summary?.fragmentation.ooms[0] ?? null;
  const gap = snapshotGapFraction(panel);
  const capacity = fit && !fit.error ? fit.capacity : null;
  const topCats = facts?.byCategory.slice(0, 3) ?? [];
  const lines = facts?.topLines.slice(0, 3) ?? [];
  const names = panel.categories.map((c) => c.name);

  return (
    <section className="card words" aria-label="Summary in words" data-testid="summary-words">
      <KindWords />
      <p className="answer" data-testid="summary-peak" data-value={peak ?? ""}>
        {peak === null ? (
          <>The peak is unknown: this device has no trace and no counters sidecar.</>
        ) : (
          <>
            <strong>
              {windowOnly ? "Peak ≥ " : "Peak "}
              <Bytes value={peak} />
              {windowOnly ? " (recorded window)" : ""}
            </strong>
            {windowOnly && (
              <button
                type="button"
                className="link info-button"
                aria-expanded={whyOpen}
                aria-label="Why only the recorded window"
                title="Why only the recorded window"
                onClick={() => setWhyOpen(!whyOpen)}
                data-testid="window-why"
              >
                <span className="info-i" aria-hidden="true">
                  i
                </span>
              </button>
            )}
            {r && countersPeak === null && <> at {whenWords(r, r.peakEvent)}</>}
            {peakPhase && (
              <>
                , in the <strong data-testid="peak-phase">{PHASE_WORDS[peakPhase]}</strong>
              </>
            )}
            {facts?.span && moment.kind === "peak" && (
              <>
                , inside <code>{facts.span}</code>
              </>
            )}
            {countersPeak !== null && <> (max_memory_allocated from the counters sidecar)</>}.{" "}
            {r && gap > 0.02 && (
              <span className="muted" data-testid="summary-gap">
                The snapshot holds {formatPercent(gap)} less than the peak.
              </span>
            )}
          </>
        )}
      </p>
      {whyOpen && r && (
        <p className="small" data-testid="window-reason">
          The trace begins with <Bytes value={r.initialBytes} /> already allocated (recording started after
          the model was built, or the ring buffer dropped older entries), so the run may have peaked before
          the recorded window. Drop the dump's <code>.counters.json</code> (max_memory_allocated) with it, or
          record from the start, to know the run's peak.
        </p>
      )}
      <p className="answer" data-testid="summary-held">
        At {momentName(moment)}
        {facts ? (
          <>
            {" "}
            (<Bytes value={facts.totalBytes} testId="summary-moment-total" /> allocated),{" "}
            {topCats.length === 0
              ? "nothing is allocated"
              : topCats.map((c, i) => (
                  <span key={c.name} data-category={c.name} data-value={c.bytes}>
                    {i > 0 ? (i === topCats.length - 1 ? " and " : ", ") : ""}
                    <span className="swatch" style={{ background: colors[c.index] }} />
                    <strong>{c.name.replace(/_/g, " ")}</strong> <Bytes value={c.bytes} /> (
                    {formatPercent(c.bytes / Math.max(1, facts.totalBytes), 0)})
                  </span>
                ))}
            {topCats.length > 0 && " hold the most."}
          </>
        ) : (
          " …"
        )}
      </p>
      {facts && (
        <div data-testid="summary-lines">
          {lines.length > 0 ? (
            <>
              <p className="answer">Your code holding the most there:</p>
              <ol className="top-lines">
                {lines.map((n, i) => (
                  <li key={n.key} data-testid="summary-line" data-value={n.bytes} data-rank={i}>
                    <code className="own">{n.name}</code> <Bytes value={n.bytes} />{" "}
                    <span className="muted small">
                      ({formatPercent(n.bytes / Math.max(1, facts.treeTotalBytes), 0)},{" "}
                      {formatCount(n.blocks)} block{n.blocks === 1 ? "" : "s"}
                      {topCategoryOf(n.byCategory, names)})
                    </span>
                  </li>
                ))}
              </ol>
            </>
          ) : (
            <p className="answer muted">
              No frame of your own code holds memory at this moment (no stacks recorded, or only library
              frames).
            </p>
          )}
        </div>
      )}
      <p className="answer" data-testid="summary-fits" data-fits={fit?.fits ?? ""}>
        {capacity ? (
          <>
            {fit?.fits === true ? "It fits" : fit?.fits === false ? "It does not fit" : "Fit unknown"}: the
            device holds <Bytes value={capacity.bytes} /> (
            {capacity.source === "option" ? "as typed in What if" : capacity.detail}).
          </>
        ) : (
          <>
            Whether it fits is unknown: no OOM, no device total in a counters sidecar (type one in What if).
          </>
        )}
      </p>
      <p className="answer" data-testid="summary-oom" data-ooms={ooms.length}>
        {ooms.length > 0 ? (
          <>
            <strong>This file holds {ooms.length === 1 ? "an OOM" : `${ooms.length} OOMs`}</strong> (first at
            event #{formatCount(ooms[0].eventIndex)}): {ooms[0].message}.
            {oomDetail && (
              <>
                {" "}
                The request was <Bytes value={oomDetail.requestRoundedBytes ?? oomDetail.requestBytes ?? 0} />
                ; the largest free block was{" "}
                <Bytes value={oomDetail.largestFreeBlockBytes} testId="summary-largest-free" />
                {oomDetail.deviceFreeBytes !== null && (
                  <>
                    {" "}
                    and the device reported <Bytes value={oomDetail.deviceFreeBytes} /> free outside the
                    allocator
                  </>
                )}
                .
              </>
            )}{" "}
            <button
              type="button"
              className="link"
              onClick={() => S.getState().pin(ooms[0].eventIndex)}
              data-testid="summary-show-oom"
            >
              Show the OOM
            </button>
          </>
        ) : fileName && OOM_NAME.test(fileName) ? (
          <span data-testid="summary-no-oom">
            The file is named like an OOM dump, but it holds no OOM entry: the trace has no failed allocation
            on device {device}, so it cannot say what failed.
          </span>
        ) : (
          <>No OOM in this file.</>
        )}
      </p>
      {capacity && peak !== null && fit?.fits === false && (
        <p className="small muted">
          Needed {formatBytes(Math.max(0, peak - capacity.bytes))} more at the peak — the What if tab ranks
          changes that would fit.
        </p>
      )}
    </section>
  );
}

function topCategoryOf(byCategory: number[], names: string[]): string {
  let best = -1;
  for (let c = 0; c < byCategory.length; c++) if (best < 0 || byCategory[c] > byCategory[best]) best = c;
  return best >= 0 && byCategory[best] > 0 ? `, mostly ${names[best]?.replace(/_/g, " ")}` : "";
}
