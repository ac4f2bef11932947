// A link made while viewing dropped files: the files were never uploaded, so the link carries only their
// names and fingerprints. This asks for them; once dropped, the page says whether they match and
// restores the link's view.

import { useApp } from "../state/app";
import { sides } from "../state/store";

export function LinkPrompt() {
  const expecting = useApp((a) => a.expecting);
  const base = useApp((a) => a.base);
  const aReady = sides[base]((s) => s.status === "ready");
  if (!expecting) return null;
  const files = [expecting.a, expecting.b].filter((f) => f !== null);
  const waitingForB = aReady && expecting.b;
  return (
    <section className="link-prompt" data-testid="link-prompt">
      <h1>This link shows a view of {files.length === 2 ? "two files" : "a file"} on someone's machine</h1>
      <p>
        Files opened in peakscope are never uploaded, so the link holds only{" "}
        {files.length === 2 ? "their names and fingerprints" : "its name and fingerprint"}. Drop{" "}
        {files.length === 2 ? "both files together" : "that file"} here (or use{" "}
        <strong>Open snapshot…</strong>) to see the view; the page checks that{" "}
        {files.length === 2 ? "they are" : "it is"} the same.
      </p>
      <ul>
        {files.map((f, i) => (
          <li key={f.name + String(i)}>
            {files.length === 2 ? (i === 0 ? "A (left): " : "B (right): ") : ""}
            <code data-testid="link-file">{f.name}</code>
            {f.hash ? <span className="muted small"> · fingerprint {f.hash.slice(0, 12)}…</span> : null}
          </li>
        ))}
      </ul>
      {waitingForB && (
        <p className="small">
          {expecting.a?.name} is open; drop {expecting.b?.name} on the right half of the page to compare.
        </p>
      )}
    </section>
  );
}
