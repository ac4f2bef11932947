// Pinned host memory (record_pinned_host_memory): its own lane, never mixed with the devices. The numbers
// are report --json's `host` (core src/core/host), which the worker already hands over with the panel:
// `HostSummaryRow` is the "host (pinned)" row of the summary's device table; `HostLane` the lane's
// timeline (allocated and reserved after each host trace entry) and its segment map (one pinned block per
// segment, allocated or cached). Self-contained: the page places them where it likes.

import { Bytes } from "../../components/Bytes";
import { formatCount } from "../../format";
import { useSide, useSideKey } from "../../state/store";
import "./host.css";

function useHost() {
  return useSide()((s) => s.panel?.report?.host ?? null);
}

/** A row for the summary's per-device table (8 columns), shown only when the file has host memory. */
export function HostSummaryRow() {
  const h = useHost();
  if (!h) return null;
  return (
    <tr data-testid="summary-host" data-device="host">
      <th scope="row">host (pinned)</th>
      <td data-field="segments" data-value={h.segments}>
        {formatCount(h.segments)}
      </td>
      <td data-field="blocks" data-value={h.segments}>
        {formatCount(h.segments)}
      </td>
      <td data-field="traceEntries" data-value={h.traceEntries}>
        {formatCount(h.traceEntries)}
      </td>
      <td data-field="reserved" data-value={h.reservedBytes}>
        <Bytes value={h.reservedBytes} />
      </td>
      <td data-field="active" data-value={h.allocatedBytes}>
        <Bytes value={h.allocatedBytes} />
      </td>
      <td data-field="allocated" data-value={h.allocatedBytes}>
        <Bytes value={h.allocatedBytes} />
      </td>
      <td data-field="requested">—</td>
    </tr>
  );
}

const W = 800;
const H = 120;

export function HostLane() {
  const h = useHost();
  const k = useSideKey();
  if (!h) return null;
  const t = h.timeline;
  const n = t.x.length;
  const x0 = n > 0 ? t.x[0] : 0;
  const x1 = n > 0 ? t.x[n - 1] : 1;
  const yMax = Math.max(1, h.peakAllocatedBytes, ...t.reserved);
  const px = (x: number) => (x1 > x0 ? ((x - x0) / (x1 - x0)) * W : W / 2);
  const py = (y: number) => H - (y / yMax) * (H - 8);
  const line = (ys: number[]) => ys.map((y, i) => `${px(t.x[i]).toFixed(1)},${py(y).toFixed(1)}`).join(" ");
  const total = h.blocks.reduce((s, b) => s + b.sizeBytes, 0) || 1;
  let at = 0;
  return (
    <section className="card host-lane" aria-labelledby={`host-title-${k}`} data-testid="host-lane">
      <h2 id={`host-title-${k}`}>Host (pinned) memory</h2>
      <p className="muted">
        The host caching allocator's pinned blocks (a data loader's <code>pin_memory</code> batches, offloaded
        state): its own lane, not in any device's totals. Sizes are rounded block sizes.
      </p>
      <dl className="facts">
        <div>
          <dt>Pinned blocks</dt>
          <dd data-testid="host-segments">{formatCount(h.segments)}</dd>
        </div>
        <div>
          <dt>Reserved</dt>
          <dd data-testid="host-reserved" data-value={h.reservedBytes}>
            <Bytes value={h.reservedBytes} />
          </dd>
        </div>
        <div>
          <dt>Allocated</dt>
          <dd data-testid="host-allocated" data-value={h.allocatedBytes}>
            <Bytes value={h.allocatedBytes} />
          </dd>
        </div>
        <div>
          <dt>Peak allocated</dt>
          <dd data-testid="host-peak" data-value={h.peakAllocatedBytes}>
            <Bytes value={h.peakAllocatedBytes} />
          </dd>
        </div>
      </dl>
      {n > 0 && (
        <figure className="host-timeline">
          <svg
            viewBox={`0 0 ${W} ${H}`}
            preserveAspectRatio="none"
            role="img"
            aria-label={`Host memory over ${formatCount(h.traceEntries)} host trace entries: allocated (filled) and reserved (line)`}
            data-testid="host-timeline"
          >
            <polygon className="host-allocated" points={`0,${H} ${line(t.allocated)} ${W},${H}`} />
            <polyline className="host-reserved" points={line(t.reserved)} fill="none" />
          </svg>
          <figcaption className="muted">
            Allocated (filled) and reserved (line) over the host trace
            {t.hasTime ? " (time)" : " (entry order)"}.
          </figcaption>
        </figure>
      )}
      <figure className="host-map">
        <svg
          viewBox={`0 0 ${W} 24`}
          preserveAspectRatio="none"
          role="img"
          aria-label="Pinned blocks at the snapshot, in address order: allocated or cached"
          data-testid="host-map"
        >
          {h.blocks.map((b) => {
            const x = (at / total) * W;
            const w = Math.max(1, (b.sizeBytes / total) * W - 1);
            at += b.sizeBytes;
            return (
              <rect
                key={b.address}
                x={x}
                y={2}
                width={w}
                height={20}
                className={b.allocated ? "host-block allocated" : "host-block cached"}
              >
                <title>{`${b.allocated ? "allocated" : "cached (free)"} pinned block at 0x${b.address.toString(16)}, ${b.sizeBytes.toLocaleString("en-US")} B`}</title>
              </rect>
            );
          })}
        </svg>
        <figcaption className="muted">One segment per pinned block (device −1), in address order.</figcaption>
      </figure>
      {h.topCallSites.length > 0 && (
        <table className="num-table" data-testid="host-sites">
          <caption>Allocated pinned blocks by call site</caption>
          <tbody>
            {h.topCallSites.map((s) => (
              <tr key={s.site}>
                <td data-value={s.bytes}>
                  <Bytes value={s.bytes} />
                </td>
                <td>{s.label}</td>
                <td>
                  {formatCount(s.blocks)} {s.blocks === 1 ? "block" : "blocks"}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
