// The readable form of a ReportJson (the CLI without --json): sizes in MiB with 2 decimals, exact bytes
// where they are compared, checks as PASS / FAIL / SKIP with both numbers.

import { CATEGORY_NAMES } from "../attribution/rules";
import { formatBytes, formatDeltaMiB, formatMiB } from "./format";
import { annotatedTextLines, hostTextLines } from "./host-text";
import type { ReportJson } from "./index";

const STATUS = { pass: "PASS", fail: "FAIL", skipped: "SKIP" } as const;

function pct(part: number, whole: number): string {
  return whole > 0 ? `${((100 * part) / whole).toFixed(1)}%` : "-";
}

export function renderReportText(r: ReportJson): string {
  const out: string[] = [];
  const t = r.totals;
  out.push(`peakscope report: ${r.file}`, "");
  const kind = r.source?.kind ?? "snapshot";
  if (kind !== "snapshot") {
    out.push(`kind: ${kind}${r.source.rank !== null ? ` (rank ${r.source.rank})` : ""}`);
    for (const l of r.source.lacks) out.push(`  ${l}`);
    out.push("");
  }
  const noSnapshot = kind === "profiler-trace" || kind === "memory-timeline";
  // A profiler trace or a memory-timeline export has no segments and no state at a snapshot: zeros here
  // would read as "nothing allocated", so say there are none and let the peak below speak.
  if (noSnapshot)
    out.push("totals: none (no segments and no snapshot state in this file; its peak is below)");
  else {
    out.push("totals (segment fields, all devices)");
    const row = (label: string, n: number | null) =>
      `  ${label.padEnd(11)}${n === null ? "n/a".padStart(14) : formatMiB(n).padStart(14)}${n === null ? "" : `  ${formatBytes(n)}`}`;
    out.push(
      row("reserved", t.reservedBytes),
      row("active", t.activeBytes),
      row("allocated", t.allocatedBytes),
    );
    out.push(row("requested", t.requestedBytes));
    if (r.devices.length > 1) {
      out.push("", "per device");
      out.push(
        `  ${"device".padEnd(8)}${"reserved".padStart(14)}${"active".padStart(14)}${"allocated".padStart(14)}`,
      );
      for (const d of r.devices) {
        out.push(
          `  ${String(d.device).padEnd(8)}${formatMiB(d.reservedBytes).padStart(14)}${formatMiB(d.activeBytes).padStart(14)}${formatMiB(d.allocatedBytes).padStart(14)}`,
        );
      }
    }
  }

  out.push(...hostTextLines(r), ...annotatedTextLines(r));

  if (!noSnapshot) {
    out.push("", "categories (active_allocated blocks; they add up to allocated)");
    for (const name of CATEGORY_NAMES) {
      const n = r.categories[name];
      const inferred = r.inferredBytes[name] ?? 0;
      out.push(
        `  ${name.padEnd(16)}${formatMiB(n).padStart(14)}  ${pct(n, t.allocatedBytes).padStart(6)}  ${formatBytes(n)}` +
          (inferred > 0
            ? `  (${formatMiB(inferred)} inferred: no stack, named from sizes and lifetimes)`
            : ""),
      );
      if (name === "unknown" && n > 0) {
        for (const [why, bytes] of Object.entries(r.unknownBytesByReason))
          if (bytes > 0)
            out.push(`    ${why.padEnd(22)}${formatMiB(bytes).padStart(10)}  ${formatBytes(bytes)}`);
      }
    }
    if (r.reconciliationBytes !== 0) {
      out.push(
        `  ${"reconciliation".padEnd(16)}${formatMiB(r.reconciliationBytes).padStart(14)}          ${formatBytes(r.reconciliationBytes)}`,
      );
    }
    out.push(
      `  ${"= allocated".padEnd(16)}${formatMiB(t.allocatedBytes).padStart(14)}          ${formatBytes(t.allocatedBytes)}`,
    );
    if (r.pendingFreeBytes > 0) out.push(`  (pending free, not allocated: ${formatMiB(r.pendingFreeBytes)})`);
    if (r.workspaceBytes > 0) {
      out.push(
        `  (torch_npu workspace ${formatMiB(r.workspaceBytes)}: not in memory_allocated(); its timing is not recorded, so it is kept out of the peak)`,
      );
    }
    if ((r.unknownBytesByReason["before-recording"] ?? 0) > 0 || Object.keys(r.inferredBytes).length > 0) {
      out.push(
        "  fix: call torch.cuda.memory._record_memory_history() before building the model, so its memory has stacks",
      );
    }
  }

  if (r.peak) {
    const p = r.peak;
    const gap = r.snapshotVsPeakGapBytes ?? p.allocatedBytes - t.allocatedBytes;
    const where =
      p.source === "trace"
        ? `the replayed trace, event ${p.eventIndex} of ${r.timeline.devices.find((d) => d.device === p.device)?.events ?? r.timeline.events}`
        : "the counters sidecar's max_memory_allocated";
    out.push(
      "",
      noSnapshot
        ? `peak on device ${p.device}: ${formatMiB(p.allocatedBytes)} (${where}); this file has no snapshot to compare it with`
        : `peak on device ${p.device}: ${formatMiB(p.allocatedBytes)} (${where}); the snapshot holds ${formatMiB(p.allocatedBytes - gap)}: ` +
            `gap ${formatMiB(gap)} (${pct(gap, p.allocatedBytes)} of the peak)`,
    );
    if (p.note) out.push(`  ${p.note}`);
    const cats = CATEGORY_NAMES.filter((c) => (p.categories[c] ?? 0) > 0);
    if (cats.length > 0) {
      out.push("  what the peak held:");
      for (const c of cats)
        out.push(
          `    ${c.padEnd(16)}${formatMiB(p.categories[c]).padStart(14)}  ${formatBytes(p.categories[c])}`,
        );
      for (const s of p.topCallSites.slice(0, 5))
        out.push(`    ${formatMiB(s.bytes).padStart(30)}  ${s.category.padEnd(16)} ${s.site}`);
    }
  }
  if (r.timeline.events > 0) {
    const m = r.timeline.markers;
    out.push(
      "",
      `trace: ${r.timeline.events} events${r.timeline.hasTime ? "" : " (no time_us: x is the event index)"}; markers: ${m.snapshot} snapshot, ${m.oom} oom, ${m.annotations} annotations`,
    );
    for (const o of r.timeline.oom)
      out.push(`  OOM on device ${o.device} at event ${o.eventIndex}: ${o.message}`);
  }

  out.push("", "checks");
  for (const c of r.checks) out.push(`  ${STATUS[c.status]} ${c.id.padEnd(18)} ${c.detail}`);

  if (r.topCallSites.length > 0) {
    out.push("", "top call sites (active_allocated blocks)");
    for (const s of r.topCallSites) {
      out.push(
        `  ${formatMiB(s.bytes).padStart(14)}  ${s.category.padEnd(16)} ${s.label}  (${s.blocks} block${s.blocks === 1 ? "" : "s"}; ${s.inferred ? "inferred, " : ""}rule ${s.rule}, ${s.via})`,
      );
      if (s.library) {
        out.push(
          `  ${"".padStart(14)}  ${"".padEnd(16)}   → ${s.library}${s.libraryInnermost ? ` … ${s.libraryInnermost}` : ""}`,
        );
      }
    }
  }
  if (r.noStackReasons.length > 0) {
    out.push("", `no stack recorded for ${formatMiB(r.categories.unknown)}; likely because:`);
    for (const reason of r.noStackReasons) out.push(`  - ${reason}`);
  }
  if (r.notes.length > 0) {
    out.push("", "notes");
    for (const n of r.notes) out.push(`  - ${n}`);
  }

  if (r.compare) {
    const c = r.compare;
    out.push("", `compare: ${c.otherFile} − ${r.file}`, `  ${c.verdict}`, "", "  category deltas");
    for (const name of CATEGORY_NAMES)
      out.push(`    ${name.padEnd(16)}${formatDeltaMiB(c.categories[name]).padStart(14)}`);
    if (c.callSites.length > 0) {
      out.push("", "  call-site deltas");
      for (const s of c.callSites) {
        out.push(
          `    ${formatDeltaMiB(s.deltaBytes).padStart(14)}  ${s.category.padEnd(16)} ${s.label}  [${s.site}]`,
        );
      }
    }
    const p = c.atPeaks;
    if (p) {
      const at = (file: string, m: typeof p.basePeak) =>
        `    ${file}: ${formatMiB(m.allocatedBytes)} after event ${m.eventIndex} of device ${m.device}${m.isRunPeak ? "" : " (the recorded window's peak)"}`;
      out.push(
        "",
        "  at the peaks (what each held at its highest allocated moment)",
        at(r.file, p.basePeak),
        at(c.otherFile, p.otherPeak),
        `  ${p.verdict}`,
      );
      for (const name of CATEGORY_NAMES)
        if (p.categories[name] !== 0)
          out.push(`    ${name.padEnd(16)}${formatDeltaMiB(p.categories[name]).padStart(14)}`);
      for (const s of p.callSites.slice(0, 5)) {
        out.push(
          `    ${formatDeltaMiB(s.deltaBytes).padStart(14)}  ${s.category.padEnd(16)} ${s.label}  [${s.site}]`,
        );
      }
    } else
      out.push("", "  at the peaks: not compared (a file has no trace to replay, so its peak is unknown)");
    out.push("", `  checks of ${c.otherFile}`);
    for (const k of c.otherChecks) out.push(`    ${STATUS[k.status]} ${k.id.padEnd(18)} ${k.detail}`);
  }
  return `${out.join("\n")}\n`;
}
