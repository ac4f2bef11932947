// The Summary pane's facts in words (issue 21 item 3): the peak (value, when, which phase; "peak ≥ X
// (recorded window)" with its reason when the file holds only a window of the run), the own-code lines
// that held it, and whether the file holds an OOM (the request, the largest free block, what the device
// reported free) — or, for a file named like an OOM dump that holds none, that it holds none. Pure: the
// report (CLI `report --json` key `summary`) and the worker share it.

import type { Attribution } from "../attribution/index";
import type { SnapshotModel } from "../model/types";
import type { PeakReport } from "../replay/report";
import { oomSummaries } from "../replay/state";
import type { Replay } from "../replay/types";
import { formatBytes } from "../units";
import { PHASE_NAMES, runPhaseAt } from "../whatif/phases";

export type PeakPhase = "forward" | "backward" | "optimizer" | "parameters";

export interface SummaryPeak {
  bytes: number;
  device: number;
  eventIndex: number | null;
  timeUs: number | null;
  /** The phase of the run the peak event is in (the attribution's phases, whatif/phases.ts); null: none. */
  phase: PeakPhase | null;
  /** false: only the recorded window's peak, a lower bound of the run's (`≥`). */
  isRunPeak: boolean;
  /** "peak 8.49 GiB" or "peak ≥ 8.49 GiB (recorded window)". */
  text: string;
  /** Why the peak is a lower bound (the ⓘ behind "recorded window"); null when it is the run's. */
  windowReason: string | null;
}

export interface SummaryLine {
  /** The call site's key (`path:line:function` as in the file). */
  site: string;
  /** `model.py:382 forward`. */
  label: string;
  bytes: number;
  /** The category holding most of those bytes. */
  category: string;
}

export interface SummaryOom {
  device: number;
  eventIndex: number;
  /** The failed request (bytes asked, as the trace records it). */
  requestedBytes: number;
  largestFreeBlockBytes: number;
  freeInCachedSegmentsBytes: number;
  /** What the device reported free (outside the allocator's cache); null when the entry has none. */
  deviceFreeBytes: number | null;
  reservedBytes: number;
  allocatedBytes: number;
}

export interface SummaryWords {
  peak: SummaryPeak | null;
  /** Own-code lines at the peak, most bytes first (from the peak's top call sites; at most 5). */
  topOwnLines: SummaryLine[];
  /** Whether any device's trace holds an OOM entry. */
  holdsOom: boolean;
  ooms: SummaryOom[];
  /** Set when the file is named like an OOM dump but holds no OOM entry: says so, and why that happens. */
  noOomNote: string | null;
}

const WINDOW_REASON =
  "The trace begins with memory already allocated (recording started late, or the ring buffer dropped older " +
  "entries): this is the highest point of the recorded window, and the run may have peaked before it. A " +
  "counters sidecar (max_memory_allocated) or recording from the start with a larger max_entries gives the run's peak.";

/** The peak's phase: the phase of the run its event is in. */
export function peakPhase(
  model: SnapshotModel,
  a: Attribution,
  r: Replay,
  event: number | null,
): PeakPhase | null {
  if (event === null || event < 0) return null;
  const name = PHASE_NAMES[runPhaseAt(model, model.traces[r.device] ?? null, a.stackRule, event)];
  return name === "none" || name === undefined ? null : name;
}

/** The own-code lines among the peak's top (call site, category) pairs, summed per line. */
export function topOwnLines(a: Attribution, peak: PeakReport | null, limit = 5): SummaryLine[] {
  if (!peak) return [];
  const byKey = new Map(a.sites.map((s) => [s.key, s]));
  const lines = new Map<string, { bytes: number; best: number; category: string; label: string }>();
  for (const c of peak.topCallSites) {
    const s = byKey.get(c.site);
    if (s?.via !== "own-code") continue;
    const l = lines.get(c.site) ?? { bytes: 0, best: 0, category: c.category, label: s.label };
    l.bytes += c.bytes;
    if (c.bytes > l.best) {
      l.best = c.bytes;
      l.category = c.category;
    }
    lines.set(c.site, l);
  }
  return [...lines.entries()]
    .map(([site, l]) => ({ site, label: l.label, bytes: l.bytes, category: l.category }))
    .sort((x, y) => y.bytes - x.bytes || x.site.localeCompare(y.site))
    .slice(0, limit);
}

export function summaryWords(
  model: SnapshotModel,
  a: Attribution,
  replays: Map<number, Replay>,
  peak: PeakReport | null,
): SummaryWords {
  let sp: SummaryPeak | null = null;
  if (peak) {
    const r = replays.get(peak.device);
    const event = peak.source === "trace" ? peak.eventIndex : (peak.windowPeak?.eventIndex ?? null);
    const windowOnly = !peak.isRunPeak;
    sp = {
      bytes: peak.allocatedBytes,
      device: peak.device,
      eventIndex: peak.eventIndex,
      timeUs: peak.timeUs,
      phase: r ? peakPhase(model, a, r, event) : null,
      isRunPeak: peak.isRunPeak,
      text: windowOnly
        ? `peak ≥ ${formatBytes(peak.allocatedBytes)} (recorded window)`
        : `peak ${formatBytes(peak.allocatedBytes)}`,
      windowReason: windowOnly ? WINDOW_REASON : null,
    };
  }
  const ooms: SummaryOom[] = [];
  for (const r of [...replays.values()].sort((x, y) => x.device - y.device)) {
    for (const o of oomSummaries(r)) {
      ooms.push({
        device: r.device,
        eventIndex: o.eventIndex,
        requestedBytes: o.requestedBytes,
        largestFreeBlockBytes: o.largestFreeBlockBytes,
        freeInCachedSegmentsBytes: o.freeInCachedSegmentsBytes,
        deviceFreeBytes: o.deviceFreeBytes,
        reservedBytes: o.reservedBytes,
        allocatedBytes: o.allocatedBytes,
      });
    }
  }
  const named = /(^|[^a-z])oom([^a-z]|$)|out[_ -]?of[_ -]?memory/i.test(model.source.fileName ?? "");
  return {
    peak: sp,
    topOwnLines: topOwnLines(a, peak),
    holdsOom: ooms.length > 0,
    ooms,
    noOomNote:
      named && ooms.length === 0
        ? "This file is named like an OOM dump but holds no OOM entry: it was written outside the failing " +
          "allocation (after the exception was caught, or by a handler that ran later), so it shows the memory " +
          "then, not at the failure. peakscope_hook.dump_on_oom() writes one from inside the allocation."
        : null,
  };
}
