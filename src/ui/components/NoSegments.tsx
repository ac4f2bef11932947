// In place of a panel that reads the allocator's segments (segment map, allocator health), for a file
// that has none (a profiler trace, a memory timeline): one sentence saying why it is not there.

import type { ReactNode } from "react";
import { useSide } from "../state/store";

const WHAT: Record<string, string> = {
  "profiler-trace": "a profiler trace records each allocation and free, not the allocator's segments",
  "memory-timeline":
    "an export_memory_timeline file holds live bytes per category, not the allocator's segments",
};

export function NoSegments({ panel, children }: { panel: string; children: ReactNode }) {
  const kind = useSide()((s) => s.summary?.kind ?? "snapshot");
  const why = WHAT[kind];
  if (!why) return <>{children}</>;
  return (
    <section className="card" data-testid="no-segments" data-panel={panel} data-kind={kind}>
      <h2>{panel}</h2>
      <p className="small muted">Not available for this file: {why}.</p>
    </section>
  );
}
