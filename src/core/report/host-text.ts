// The host (pinned) memory lane in the text report: its own section, never added to the device totals.

import { formatBytes, formatMiB } from "./format";
import type { ReportJson } from "./index";

export function hostTextLines(r: ReportJson): string[] {
  const h = r.host;
  if (!h) return [];
  const row = (label: string, n: number) =>
    `  ${label.padEnd(11)}${formatMiB(n).padStart(14)}  ${formatBytes(n)}`;
  const out = [
    "",
    `host (pinned) memory: ${h.segments} pinned block${h.segments === 1 ? "" : "s"}, ${h.traceEntries} host trace entries (its own lane, not in the device totals; rounded block bytes)`,
    row("reserved", h.reservedBytes),
    row("allocated", h.allocatedBytes),
    `${row("peak", h.peakAllocatedBytes)}${h.peakEventIndex === null ? "" : `  (after host trace entry ${h.peakEventIndex})`}`,
  ];
  for (const s of h.topCallSites)
    out.push(
      `  ${formatMiB(s.bytes).padStart(14)}  ${s.label}  (${s.blocks} block${s.blocks === 1 ? "" : "s"})`,
    );
  return out;
}

/** Notes attached to allocations (annotate entries), with the allocation. */
export function annotatedTextLines(r: ReportJson): string[] {
  const list = r.timeline.annotated ?? [];
  if (list.length === 0) return [];
  return [
    "",
    "notes on allocations (annotate)",
    ...list.map(
      (a) =>
        `  ${JSON.stringify(a.notes.join(" · "))}: ${formatMiB(a.sizeBytes)} at 0x${a.address.toString(16)} on device ${a.device}, ${a.site}${a.allocEvent >= 0 ? ` (event ${a.allocEvent})` : ""}`,
    ),
  ];
}
