// The peak of a file that has no segments (a profiler trace, a memory timeline): there is no snapshot to
// compare it with, so this card shows the peak and what it held, and says why there is no comparison,
// in place of "Peak vs snapshot".

import type { PanelAnswer } from "../../../../workers/api";
import { Bytes } from "../../components/Bytes";
import { formatCount } from "../../format";
import { useSide, useSideKey } from "../../state/store";

export function ArtifactPeak({ panel }: { panel: PanelAnswer }) {
  const S = useSide();
  const k = useSideKey();
  const colors = S((s) => s.colors);
  const r = panel.replay;
  const device = panel.report?.timeline.devices.find((d) => d.peakEventIndex === r?.peakEvent);
  const label = device ? `${device.deviceType}:${device.device}` : `device ${panel.device}`;
  if (!r) {
    return (
      <section className="card" aria-labelledby={`peak-title-${k}`} data-testid="peak-gap" data-artifact="1">
        <h2 id={`peak-title-${k}`}>Peak</h2>
        <p className="small muted">This device has no memory events: nothing to replay.</p>
      </section>
    );
  }
  const names = panel.categories.map((c) => c.name);
  return (
    <section
      className="card"
      aria-labelledby={`peak-title-${k}`}
      data-testid="peak-gap"
      data-artifact="1"
      data-run-peak={r.isRunPeak ? "1" : "0"}
    >
      <h2 id={`peak-title-${k}`}>
        {r.isRunPeak ? "Peak" : "Peak of the recorded window"} — {label}
      </h2>
      <table className="num-table">
        <thead>
          <tr>
            <th scope="col">Category</th>
            <th scope="col">At peak</th>
          </tr>
        </thead>
        <tbody>
          <tr data-testid="peak-row-total">
            <th scope="row">allocated</th>
            <td data-testid="peak-bytes" data-value={r.peakBytes}>
              <strong>
                <Bytes value={r.peakBytes} />
              </strong>
            </td>
          </tr>
          {names.map((n, c) => {
            const atPeak = r.peakByCategory[c] ?? 0;
            if (atPeak === 0) return null;
            return (
              <tr key={n} data-category={n}>
                <td>
                  <span className="swatch" style={{ background: colors[c] }} />
                  {n}
                </td>
                <td data-field="peak" data-value={atPeak}>
                  <Bytes value={atPeak} />
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
      <p className="small muted">
        Highest allocated over the file's events, at event #{formatCount(r.peakEvent)}. This kind of file has
        no segments, so there is no snapshot to compare the peak with.
      </p>
    </section>
  );
}
