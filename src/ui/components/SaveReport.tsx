// "Save report": downloads one self-contained HTML file — the same kind of file as
// `peakscope report FILE --html OUT.html` (src/report-html, built in the worker from the open model and
// its counters sidecar). The file needs no script and loads nothing, so it opens anywhere, offline.
// Nothing is uploaded: the bytes go from the worker to a blob: URL on this page to the download.

import { useState } from "react";
import { useApp } from "../state/app";
import { sides } from "../state/store";

export function SaveReport() {
  const mode = useApp((a) => a.mode);
  const base = useApp((a) => a.base);
  const S = sides[base];
  const status = S((s) => s.status);
  const ask = S((s) => s.ask);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  if (mode !== "single" || status !== "ready") return null;
  const save = async () => {
    setBusy(true);
    setError(null);
    try {
      const r = await ask((api) => api.reportHtml());
      const url = URL.createObjectURL(new Blob([r.html], { type: "text/html;charset=utf-8" }));
      const a = document.createElement("a");
      a.href = url;
      a.download = r.fileName;
      a.rel = "noopener";
      document.body.append(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 60_000);
    } catch (e) {
      setError(e instanceof Error ? e.message : String(e));
    } finally {
      setBusy(false);
    }
  };
  return (
    <>
      <button
        type="button"
        onClick={() => void save()}
        disabled={busy}
        data-testid="save-report"
        title="Download this file's report as one HTML page (the same as `peakscope report FILE --html`): it needs no network and no script, so it can be mailed or attached to an issue"
      >
        {busy ? "Saving…" : "Save report"}
      </button>
      {error && (
        <span className="status-fail small" role="alert" data-testid="save-report-error">
          The report could not be built: {error}
        </span>
      )}
    </>
  );
}
