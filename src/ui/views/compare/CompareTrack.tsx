// One file of a comparison as a timeline track: a one-line head (A or B, its name, format, device,
// counters sidecar, a "Details" button) over its timeline — the single-file Timeline, shorter, on this
// file's own time axis unless the shared axis is on. The file's totals, peak, categories, checks and call
// sites open in a dialog (the workspace below holds the difference, so the page never scrolls).
// Everything inside reads the side's own store through SideContext, exactly as the single-file page does.

import { useEffect, useRef, useState } from "react";
import type { PanelAnswer } from "../../../../workers/api";
import { Bytes } from "../../components/Bytes";
import { ErrorBanner } from "../../components/ErrorBanner";
import { ErrorBoundary } from "../../components/ErrorBoundary";
import { ProgressPanel } from "../../components/ProgressPanel";
import { formatBytes, formatCount, formatDurationUs } from "../../format";
import { useApp } from "../../state/app";
import type { Side } from "../../state/client";
import { SideContext, sides, useSide } from "../../state/store";
import { SidePanel, Totals } from "../side-panel/SidePanel";
import { Timeline } from "../timeline/Timeline";

/** The track's canvas height: two tracks, the header and the diff tabs share 900 px. */
const TRACK_PLOT_HEIGHT = 120;

export function CompareTrack({ side, label }: { side: Side; label: "A" | "B" }) {
  const S = sides[side];
  const status = S((s) => s.status);
  const device = S((s) => s.device);
  const linked = useApp((a) => a.linked);
  const replay = S((s) => s.panel?.replay ?? null);
  const span = replay ? (replay.hasTime ? formatDurationUs(replay.t1 - replay.t0) : null) : null;
  return (
    <SideContext.Provider value={S}>
      <section
        className={`cmp-track cmp-track-${label.toLowerCase()}`}
        data-testid={`column-${label.toLowerCase()}`}
        data-side={side}
        data-state={status}
        data-axis-shared={linked ? "1" : "0"}
        aria-label={`File ${label}: ${linked ? "on the shared time axis" : "on its own time axis"}${span ? `, ${span} of trace` : ""}`}
      >
        <TrackHead label={label} side={side} />
        {status === "loading" && <ProgressPanel />}
        {status === "error" && <ErrorBanner />}
        {status === "ready" && (
          <ErrorBoundary name="timeline">
            <Timeline key={device} height={TRACK_PLOT_HEIGHT} />
          </ErrorBoundary>
        )}
      </section>
    </SideContext.Provider>
  );
}

function TrackHead({ label, side }: { label: "A" | "B"; side: Side }) {
  const S = sides[side];
  const fileName = S((s) => s.fileName);
  const summary = S((s) => s.summary);
  const device = S((s) => s.device);
  const setDevice = S((s) => s.setDevice);
  const countersFile = S((s) => s.panel?.countersFile ?? null);
  const panel = S((s) => s.panel);
  const status = S((s) => s.status);
  const l = label.toLowerCase();
  const peak = panel ? peakOf(panel) : null;
  return (
    <div className="cmp-track-head">
      <span className={`side-badge side-${l}`}>{label}</span>
      <span className="summary-file cmp-track-file" data-testid="column-file" title={fileName ?? ""}>
        {fileName ?? "—"}
      </span>
      {summary && (
        <span className="small muted cmp-track-facts">
          {summary.format}
          {summary.legacyHistory ? " (torch 2.0 history)" : ""} · <Bytes value={summary.byteLength} /> ·{" "}
          {formatCount(summary.traceEntries)} trace entries
          {countersFile ? (
            <>
              {" "}
              · counters <code data-testid="column-counters">{countersFile}</code>
            </>
          ) : null}
          {summary.devices.length > 1 ? (
            <label className="device-select">
              {" "}
              · device{" "}
              <select
                data-testid="device-select"
                value={device}
                onChange={(e) => void setDevice(Number(e.currentTarget.value))}
              >
                {summary.devices.map((d) => (
                  <option key={d.device} value={d.device}>
                    {`${d.device} — ${d.segments} segments, ${d.traceEntries} trace entries`}
                  </option>
                ))}
              </select>
            </label>
          ) : (
            ` · device ${summary.devices[0]?.device ?? device}`
          )}
        </span>
      )}
      <span className="spacer" />
      {peak && (
        <span
          className="small cmp-track-peak"
          data-testid="track-peak"
          data-value={peak.bytes}
          data-window-only={peak.windowOnly ? "1" : "0"}
          title={
            peak.windowOnly
              ? "The trace began with memory already allocated and no counters sidecar gives the run's peak: this is the highest moment of the recorded window (Details has the why)"
              : undefined
          }
        >
          {peak.windowOnly ? "peak ≥ " : "peak "}
          <strong>{formatBytes(peak.bytes)}</strong>
          {peak.windowOnly ? " (recorded window)" : ""}
        </span>
      )}
      {status === "ready" && <DetailsDialog label={label} />}
    </div>
  );
}

/**
 * The peak to show, as the Summary pane words it: a sidecar's max_memory_allocated when it is about this
 * device, else the replayed peak — "≥ … (recorded window)" when the trace began with memory already held
 * and no sidecar confirms the run's peak.
 */
function peakOf(panel: PanelAnswer): { bytes: number; windowOnly: boolean } | null {
  const r = panel.replay;
  const rr = panel.replayReport;
  const countersPeak =
    rr?.peak?.source === "counters" && rr.peak.device === panel.device ? rr.peak.allocatedBytes : null;
  const countersKnown =
    countersPeak !== null ||
    (rr?.peak?.device === panel.device &&
      rr.peak.countersPeakBytes !== null &&
      rr.peak.countersPeakBytes !== undefined);
  const bytes = countersPeak ?? r?.peakBytes ?? null;
  if (bytes === null) return null;
  return { bytes, windowOnly: r !== null && !r.isRunPeak && !countersKnown };
}

/** This file's own analysis (totals, peak, categories, checks, call sites) in a modal dialog. */
function DetailsDialog({ label }: { label: "A" | "B" }) {
  const [open, setOpen] = useState(false);
  const ref = useRef<HTMLDialogElement>(null);
  const l = label.toLowerCase();
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (open && !d.open) d.showModal();
    if (!open && d.open) d.close();
  }, [open]);
  return (
    <>
      <button
        type="button"
        onClick={() => setOpen(true)}
        data-testid="track-details"
        title={`The totals, peak, categories, checks and call sites of ${label}`}
      >
        Details of {label}…
      </button>
      <dialog
        ref={ref}
        className="cmp-details"
        aria-labelledby={`cmp-details-title-${l}`}
        onClose={() => setOpen(false)}
        data-testid="track-details-dialog"
      >
        <div className="cmp-details-head">
          <h2 id={`cmp-details-title-${l}`}>
            <span className={`side-badge side-${l}`}>{label}</span> on its own
          </h2>
          <button type="button" onClick={() => setOpen(false)}>
            Close
          </button>
        </div>
        <DialogContent />
      </dialog>
    </>
  );
}

function DialogContent() {
  const ctx = useSide();
  const device = ctx((s) => s.device);
  const report = ctx((s) => s.panel?.report ?? null);
  return (
    <>
      {report && (
        <ErrorBoundary name="totals">
          <Totals report={report} device={device} compact />
        </ErrorBoundary>
      )}
      <ErrorBoundary name="side panel">
        <SidePanel inColumn />
      </ErrorBoundary>
    </>
  );
}
