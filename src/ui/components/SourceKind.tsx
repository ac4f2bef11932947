// One sentence in the summary saying what kind of file this is (a snapshot, a profiler trace, a memory
// timeline, a MemoryViz page) and, for the kinds that are not snapshots, what they cannot show. The
// views stay the same; this is where the page says why some of them are empty.

import type { Summary } from "../../../workers/api";

export const KIND_WORDS: Record<Summary["kind"], string> = {
  snapshot: "a memory snapshot",
  "profiler-trace": "a torch.profiler trace",
  "memory-timeline": "an export_memory_timeline file",
  "memoryviz-html": "a MemoryViz page (the snapshot inside it)",
};

/** "no segments", "no addresses (Addr)": each thing the file lacks, named by the words before its colon. */
export function lacksHeads(lacks: readonly string[]): string[] {
  return lacks.map((l) => {
    let head = l.split(":")[0].trim();
    // A long head keeps its words, not its parenthesis ("Categories only where the spans show them").
    if (head.length > 60 && head.includes(" (")) head = head.slice(0, head.indexOf(" ("));
    if (head.length > 90) head = `${head.slice(0, 87)}…`;
    // Lower case inside the sentence, but not an acronym ("OOM", "Addr" stays as the file names it).
    return /^[A-Z][a-z]/.test(head) ? head[0].toLowerCase() + head.slice(1) : head;
  });
}

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
