// The Summary's first sentence for a file that is not a snapshot (issue 21: a profiler trace or a memory
// timeline must say what it is and what it lacks within one screen): the kind and the heads of what it
// lacks in one line, each whole reason one click away. Snapshots (and MemoryViz pages, which hold one)
// say nothing here: the file's facts below name them.

import { useSide } from "../state/store";
import { KIND_WORDS, lacksHeads } from "./SourceKind";

export function KindWords() {
  const S = useSide();
  const summary = S((s) => s.summary);
  const kind = summary?.kind ?? "snapshot";
  if (!summary || (kind !== "profiler-trace" && kind !== "memory-timeline")) return null;
  const lacks = summary.lacks ?? [];
  return (
    <div className="kind-words" data-testid="summary-kind-words" data-kind={kind}>
      <p className="answer">
        This file is <strong>{KIND_WORDS[kind]}</strong>, not a snapshot
        {lacks.length > 0 ? <>: {lacksHeads(lacks).join("; ")}.</> : "."}
      </p>
      {lacks.length > 0 && (
        <details className="small">
          <summary>What it lacks, and what the page does instead</summary>
          <ul className="muted">
            {lacks.map((l) => (
              <li key={l}>{l}</li>
            ))}
          </ul>
        </details>
      )}
    </div>
  );
}
