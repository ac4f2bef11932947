// Loading: phase, percent, MB/s, and Cancel.

import { useStore } from "../state/store";

export function ProgressPanel() {
  const progress = useStore((s) => s.progress);
  const fileName = useStore((s) => s.fileName);
  const cancel = useStore((s) => s.cancel);
  if (!progress) return null;
  const { phase, bytesDone, bytesTotal, startedAt, now } = progress;
  const fraction = bytesTotal > 0 ? Math.min(1, bytesDone / bytesTotal) : 0;
  const seconds = Math.max(0.001, (now - startedAt) / 1000);
  const mbps = bytesDone / 1e6 / seconds;
  return (
    <section className="progress-panel" aria-live="polite" data-testid="progress">
      <h2>Opening {fileName}</h2>
      <div className="progress-line">
        <span className="phase" data-testid="progress-phase">
          {phase}
        </span>
        <span data-testid="progress-percent">{(fraction * 100).toFixed(0)}%</span>
        <span>
          {(bytesDone / 1e6).toFixed(1)} of {(bytesTotal / 1e6).toFixed(1)} MB
        </span>
        <span data-testid="progress-rate">{bytesDone > 0 ? `${mbps.toFixed(0)} MB/s` : "—"}</span>
      </div>
      <progress max={1} value={fraction} />
      <div>
        <button type="button" onClick={cancel} data-testid="cancel">
          Cancel
        </button>
      </div>
    </section>
  );
}
