// Loading: phase, percent, MB/s, and Cancel. A download whose size the server did not give shows the
// bytes so far without a percentage.

import { useApp } from "../state/app";
import { useSide } from "../state/store";
import { LoadPreview } from "./LoadPreview";

export function ProgressPanel() {
  const S = useSide();
  const progress = S((s) => s.progress);
  const fileName = S((s) => s.fileName);
  const cancel = useApp((a) => a.cancel);
  if (!progress) return null;
  const { phase, bytesDone, bytesTotal, startedAt, now } = progress;
  const known = bytesTotal > 0;
  const fraction = known ? Math.min(1, bytesDone / bytesTotal) : 0;
  const seconds = Math.max(0.001, (now - startedAt) / 1000);
  const mbps = bytesDone / 1e6 / seconds;
  return (
    <section className="progress-panel" aria-live="polite" data-testid="progress">
      <h2>Opening {fileName}</h2>
      <div className="progress-line">
        <span className="phase" data-testid="progress-phase">
          {phase}
        </span>
        <span data-testid="progress-percent">{known ? `${(fraction * 100).toFixed(0)}%` : "—"}</span>
        <span>
          {(bytesDone / 1e6).toFixed(1)}
          {known ? ` of ${(bytesTotal / 1e6).toFixed(1)}` : ""} MB
        </span>
        <span data-testid="progress-rate">{bytesDone > 0 ? `${mbps.toFixed(0)} MB/s` : "—"}</span>
      </div>
      {known ? <progress max={1} value={fraction} /> : <progress />}
      {progress.preview && <LoadPreview preview={progress.preview} />}
      <div>
        <button type="button" onClick={cancel} data-testid="cancel">
          Cancel
        </button>
      </div>
    </section>
  );
}
