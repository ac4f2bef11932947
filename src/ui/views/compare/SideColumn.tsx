// One file of a comparison: its name, format and device, its totals, timeline and segment map, and the
// rest of its analysis (peak, categories, checks, call sites) folded below. Everything inside reads the
// side's own store through SideContext, exactly as the single-file page does.

import { Bytes } from "../../components/Bytes";
import { ErrorBanner } from "../../components/ErrorBanner";
import { ErrorBoundary } from "../../components/ErrorBoundary";
import { ProgressPanel } from "../../components/ProgressPanel";
import { formatCount } from "../../format";
import type { Side } from "../../state/client";
import { SideContext, sides } from "../../state/store";
import { SegmentMap } from "../segment-map/SegmentMap";
import { SidePanel, Totals } from "../side-panel/SidePanel";
import { Timeline } from "../timeline/Timeline";

export function SideColumn({ side, label }: { side: Side; label: "A" | "B" }) {
  const S = sides[side];
  const status = S((s) => s.status);
  const device = S((s) => s.device);
  const report = S((s) => s.panel?.report ?? null);
  return (
    <SideContext.Provider value={S}>
      <section
        className="column"
        data-testid={`column-${label.toLowerCase()}`}
        data-side={side}
        data-state={status}
        aria-label={`File ${label}`}
      >
        <ColumnHead label={label} side={side} />
        {status === "loading" && <ProgressPanel />}
        {status === "error" && <ErrorBanner />}
        {status === "ready" && (
          <>
            {report && (
              <ErrorBoundary name="totals">
                <Totals report={report} device={device} compact />
              </ErrorBoundary>
            )}
            <ErrorBoundary name="timeline">
              <Timeline key={device} />
            </ErrorBoundary>
            <ErrorBoundary name="segment map">
              <SegmentMap key={device} />
            </ErrorBoundary>
            <details className="card column-more">
              <summary>Peak, categories, checks and call sites of {label}</summary>
              <ErrorBoundary name="side panel">
                <SidePanel inColumn />
              </ErrorBoundary>
            </details>
          </>
        )}
      </section>
    </SideContext.Provider>
  );
}

function ColumnHead({ label, side }: { label: "A" | "B"; side: Side }) {
  const S = sides[side];
  const fileName = S((s) => s.fileName);
  const summary = S((s) => s.summary);
  const device = S((s) => s.device);
  const setDevice = S((s) => s.setDevice);
  const countersFile = S((s) => s.panel?.countersFile ?? null);
  return (
    <div className="card column-head">
      <div className="column-title">
        <span className={`side-badge side-${label.toLowerCase()}`}>{label}</span>
        <span className="summary-file" data-testid="column-file">
          {fileName ?? "—"}
        </span>
      </div>
      {summary && (
        <div className="small muted column-facts">
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
        </div>
      )}
    </div>
  );
}
