// The file at a glance: name, format, protocol, counts per device, totals from the segment fields.

import { Bytes } from "../../components/Bytes";
import { SourceKind } from "../../components/SourceKind";
import { formatCount } from "../../format";
import { useSide, useSideKey } from "../../state/store";
import { HostSummaryRow } from "../host/HostLane";

export function SummaryPanel() {
  const summary = useSide()((s) => s.summary);
  const k = useSideKey();
  if (!summary) return null;
  const s = summary;
  return (
    <section className="card summary" aria-labelledby={`summary-title-${k}`} data-testid="summary">
      <h2 id={`summary-title-${k}`}>
        <span className="summary-file" data-testid="summary-file">
          {s.fileName}
        </span>
      </h2>
      <SourceKind summary={s} />
      <dl className="facts">
        <div>
          <dt>Format</dt>
          <dd data-testid="summary-format">{s.format}</dd>
        </div>
        <div>
          <dt>Pickle protocol</dt>
          <dd data-testid="summary-protocol">{s.pickleProtocol ?? "none"}</dd>
        </div>
        <div>
          <dt>Layout</dt>
          <dd data-testid="summary-layout">
            {s.layout === "segment-list" ? "bare segment list (no traces)" : "snapshot dict"}
            {s.legacyHistory ? ", torch 2.0 history" : ""}
          </dd>
        </div>
        <div>
          <dt>File size</dt>
          <dd>
            <Bytes value={s.byteLength} testId="summary-bytes" />
          </dd>
        </div>
        <div>
          <dt>Segments</dt>
          <dd data-testid="summary-segments" data-value={s.segments}>
            {formatCount(s.segments)}
          </dd>
        </div>
        <div>
          <dt>Blocks</dt>
          <dd data-testid="summary-blocks" data-value={s.blocks}>
            {formatCount(s.blocks)}
          </dd>
        </div>
        <div>
          <dt>Trace entries</dt>
          <dd data-testid="summary-trace-entries" data-value={s.traceEntries}>
            {formatCount(s.traceEntries)}
          </dd>
        </div>
        <div>
          <dt>Read in</dt>
          <dd
            data-testid="summary-read"
            data-read-by={s.readBy}
            data-attributed-by={s.attributedBy}
            data-paired-while-read={s.pairedWhileRead ? "1" : "0"}
            data-wasm-entries={s.traceEntriesByWasm}
            data-slices-in-place={s.slicesReadInPlace}
            title={`${
              s.readBy === "parallel"
                ? "The file's slices were read by a second worker while this one parsed"
                : "The file was read and parsed by one worker"
            }; ${formatCount(s.traceEntriesByWasm)} of ${formatCount(s.traceEntries)} trace entries parsed by WebAssembly${
              s.attributedBy === "helper" ? "; attributed on a second thread while this one replayed" : ""
            }${s.pairedWhileRead ? "; a second thread paired the trace's allocations and frees while the file was read" : ""}${
              s.slicesReadInPlace > 0
                ? `; ${formatCount(s.slicesReadInPlace)} of its slices read straight into the scanner's memory`
                : ""
            }`}
          >
            {(s.readMs / 1000).toFixed(2)} s
            {s.readMs > 0 ? ` (${mbPerS(s.byteLength / 1e3 / s.readMs)} MB/s)` : ""}
          </dd>
        </div>
      </dl>
      <table className="num-table devices-table" data-testid="summary-devices">
        <caption>Per device (totals from the segments' own fields)</caption>
        <thead>
          <tr>
            <th scope="col">Device</th>
            <th scope="col">Segments</th>
            <th scope="col">Blocks</th>
            <th scope="col">Trace entries</th>
            <th scope="col">Reserved</th>
            <th scope="col">Active</th>
            <th scope="col">Allocated</th>
            <th scope="col">Requested</th>
          </tr>
        </thead>
        <tbody>
          {s.devices.map((d) => (
            <tr key={d.device} data-testid={`summary-device-${d.device}`} data-device={d.device}>
              <th scope="row">{d.device}</th>
              <td data-field="segments" data-value={d.segments}>
                {formatCount(d.segments)}
              </td>
              <td data-field="blocks" data-value={d.blocks}>
                {formatCount(d.blocks)}
              </td>
              <td data-field="traceEntries" data-value={d.traceEntries}>
                {formatCount(d.traceEntries)}
              </td>
              <td data-field="reserved" data-value={d.reservedBytes}>
                <Bytes value={d.reservedBytes} />
              </td>
              <td data-field="active" data-value={d.activeBytes}>
                <Bytes value={d.activeBytes} />
              </td>
              <td data-field="allocated" data-value={d.allocatedBytes}>
                <Bytes value={d.allocatedBytes} />
              </td>
              <td data-field="requested" data-value={d.requestedBytes}>
                <Bytes value={d.requestedBytes} />
              </td>
            </tr>
          ))}
          <HostSummaryRow />
          {s.devices.length === 0 && (
            <tr>
              <td colSpan={8}>
                This snapshot holds no segments and no trace entries: nothing was allocated.
              </td>
            </tr>
          )}
        </tbody>
      </table>
      {s.notes.length > 0 && (
        <ul className="notes" data-testid="summary-notes">
          {s.notes.map((n) => (
            <li key={n}>{n}</li>
          ))}
        </ul>
      )}
      {s.analysisErrors.length > 0 && (
        <ul className="notes warn">
          {s.analysisErrors.map((n) => (
            <li key={n}>{n}</li>
          ))}
        </ul>
      )}
    </section>
  );
}

/** MB/s with the digits it deserves: "0.45", "3.2", "122". */
function mbPerS(v: number): string {
  return v < 1 ? v.toFixed(2) : v < 10 ? v.toFixed(1) : v.toFixed(0);
}
