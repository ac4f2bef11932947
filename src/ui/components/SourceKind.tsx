// One sentence in the summary saying what kind of file this is (a snapshot, a profiler trace, a memory
// timeline, a MemoryViz page) and, for the kinds that are not snapshots, what they cannot show. The
// views stay the same; this is where the page says why some of them are empty.

import type { Summary } from "../../../workers/api";

const KIND_WORDS: Record<Summary["kind"], string> = {
  snapshot: "a memory snapshot",
  "profiler-trace": "a torch.profiler trace",
  "memory-timeline": "an export_memory_timeline file",
  "memoryviz-html": "a MemoryViz page (the snapshot inside it)",
};

export function SourceKind({ summary }: { summary: Summary }) {
  const kind = summary.kind ?? "snapshot";
  const lacks = summary.lacks ?? [];
  return (
    <div className="source-kind" data-testid="summary-kind" data-kind={kind} data-lacks={lacks.length}>
      <p className="small">
        This file is <strong>{KIND_WORDS[kind] ?? kind}</strong>.
      </p>
      {lacks.length > 0 ? (
        <ul className="small muted" data-testid="summary-lacks">
          {lacks.map((l) => (
            <li key={l}>{l}</li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}
