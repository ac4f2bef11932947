// Two files compared at their peaks: what each held at its highest allocated moment, by category and call
// site (other − base), with the same matching of unknown blocks to parameters as the snapshot comparison.
// A late-recorded training file's snapshot can sit 25 % below its peak, so "what changed" at the
// snapshots answers a question nobody asked; the peaks are what a user fits into the GPU.

import type { Attribution } from "../attribution";
import type { CountersSidecar } from "../model/types";
import { countersPeak, peakReplayOf, startsEmpty } from "../replay/report";
import { isAllocatedAt, liveAllocationsAt } from "../replay/state";
import { type EventIndex, type Replay, SITE_BEFORE_TRACE } from "../replay/types";
import { type Comparison, compareLive, type LiveSet, type LiveSite } from "./index";

/** The moment a side was compared at: its peak. */
export interface PeakMoment {
  device: number;
  eventIndex: EventIndex;
  /** time_us of the peak's event; null when the trace has no usable time. */
  timeUs: number | null;
  /** Rounded block bytes allocated after the event (the measure of max_memory_allocated). */
  allocatedBytes: number;
  /**
   * The run's peak (the trace starts with nothing allocated, or the counters' max_memory_allocated is no
   * higher); otherwise only the highest moment of the recorded window.
   */
  isRunPeak: boolean;
}

/** One file's peak: the replay of its peak's device and the attribution that named the replay's sites. */
export interface PeakSide {
  replay: Replay;
  attribution: Attribution;
  moment: PeakMoment;
}

export interface PeakComparison extends Comparison {
  basePeak: PeakMoment;
  otherPeak: PeakMoment;
}

/** Sites a replay gives that are no attribution site: how a comparison keys and shows them. */
const NO_SITE: LiveSite = { portableKey: "(no call site)", label: "(no call site)" };
const BEFORE_TRACE_SITE: LiveSite = {
  portableKey: "(allocated before the trace: its stack is not in the trace)",
  label: "allocated before the trace (no stack)",
};

/**
 * The file's peak, on the device the report's peak is about (core replay/report peakReplayOf: the counters'
 * device, else the highest replayed peak); null when no device has a trace to replay.
 */
export function peakSide(
  replays: Map<number, Replay>,
  attribution: Attribution,
  counters: CountersSidecar | null = null,
): PeakSide | null {
  const r = peakReplayOf(replays, counters);
  if (!r || r.peakEvent === null) return null;
  const cPeak = countersPeak(counters);
  return {
    replay: r,
    attribution,
    moment: {
      device: r.device,
      eventIndex: r.peakEvent,
      timeUs: r.hasTime ? r.x[r.peakEvent] : null,
      allocatedBytes: r.peakAllocatedBytes,
      isRunPeak: startsEmpty(r) || (cPeak !== null && cPeak <= r.peakAllocatedBytes),
    },
  };
}

/**
 * The allocations alive (allocated, not pending free) after event i of a replay: what compositionAt sums
 * to the allocated column, with each replay site id read as the attribution's site.
 */
export function liveAt(r: Replay, i: EventIndex, a: Attribution): LiveSet {
  return {
    forEach(visit) {
      const ids = liveAllocationsAt(r, i);
      const A = r.allocations;
      for (let j = 0; j < ids.length; j++) {
        const k = ids[j];
        if (!isAllocatedAt(r, k, i)) continue;
        const s = A.site[k];
        const site = s >= 0 ? a.sites[s] : s === SITE_BEFORE_TRACE ? BEFORE_TRACE_SITE : NO_SITE;
        visit(A.sizeBytes[k], A.category[k], site ?? NO_SITE);
      }
    },
  };
}

/** Base and other compared at their peaks (other − base). */
export function comparePeaks(base: PeakSide, other: PeakSide, maxSites = 20): PeakComparison {
  const c = compareLive(
    liveAt(base.replay, base.moment.eventIndex, base.attribution),
    liveAt(other.replay, other.moment.eventIndex, other.attribution),
    maxSites,
  );
  return { ...c, basePeak: base.moment, otherPeak: other.moment };
}
