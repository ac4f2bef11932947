// Which moment a device opens at: the peak whenever the snapshot is more than 2 % below it (the
// common late-recorded training file, where the snapshot is taken after the worst moment), else the
// snapshot itself. Pure: no store, so store.ts can use it without a cycle.

import type { PanelAnswer } from "../../../workers/api";

/** Beyond this fraction below the peak, the snapshot is not "the peak" and the page opens at the peak. */
export const PEAK_TOLERANCE = 0.02;

/** The snapshot's allocated bytes comparable with the replayed peak (torch_npu's workspace left out). */
export function snapshotComparableBytes(panel: PanelAnswer): number | null {
  const dev = panel.report?.devices.find((d) => d.device === panel.device) ?? null;
  if (!dev) return null;
  return dev.allocatedBytes - (panel.inference?.workspaceBytes ?? 0);
}

/** How far the snapshot is below the replayed peak, as a fraction of the peak (0 when unknown). */
export function snapshotGapFraction(panel: PanelAnswer): number {
  const r = panel.replay;
  const snap = snapshotComparableBytes(panel);
  if (!r || r.events === 0 || r.peakBytes <= 0 || snap === null) return 0;
  return (r.peakBytes - snap) / r.peakBytes;
}

/** The event to pin when a device opens: the peak's, or null (the snapshot). */
export function defaultPinnedEvent(panel: PanelAnswer): number | null {
  const r = panel.replay;
  if (!r || r.events === 0) return null;
  // A profiler trace or a memory-timeline export has no snapshot state (no segments): its end is not a
  // moment anyone asked about, so it opens at the peak.
  const kind = panel.report?.source?.kind ?? "snapshot";
  if (kind === "profiler-trace" || kind === "memory-timeline") return r.peakEvent;
  return snapshotGapFraction(panel) > PEAK_TOLERANCE ? r.peakEvent : null;
}
