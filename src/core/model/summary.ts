// Counts and segment-field totals of a model: what `peakscope inspect` prints and the page's summary shows.

import { traceCounts } from "./trace-counts";
import type { SnapshotModel, SourceKind } from "./types";

export interface DeviceSummary {
  device: number;
  segments: number;
  blocks: number;
  traceEntries: number;
  actions: Record<string, number>;
  reservedBytes: number;
  allocatedBytes: number;
  activeBytes: number;
  requestedBytes: number;
}

export interface SnapshotSummary {
  fileName: string;
  /** What kind of file it was, and what that kind cannot contain (one sentence each). */
  kind: SourceKind;
  lacks: string[];
  format: string;
  pickleProtocol: number | null;
  segments: number;
  blocks: number;
  traceEntries: number;
  actions: Record<string, number>;
  devices: DeviceSummary[];
  notes: string[];
}

function addActions(model: SnapshotModel, counts: Float64Array, into: Record<string, number>): void {
  counts.forEach((n, id) => {
    if (n > 0) into[model.actionNames[id]] = (into[model.actionNames[id]] ?? 0) + n;
  });
}

export function summarize(model: SnapshotModel): SnapshotSummary {
  const byDevice = new Map<number, DeviceSummary>();
  const device = (d: number): DeviceSummary => {
    let s = byDevice.get(d);
    if (!s) {
      s = {
        device: d,
        segments: 0,
        blocks: 0,
        traceEntries: 0,
        actions: {},
        reservedBytes: 0,
        allocatedBytes: 0,
        activeBytes: 0,
        requestedBytes: 0,
      };
      byDevice.set(d, s);
    }
    return s;
  };
  const seg = model.segments;
  for (let i = 0; i < seg.length; i++) {
    const s = device(seg.device[i]);
    s.segments++;
    s.blocks += seg.blockCount[i];
    s.reservedBytes += seg.totalSizeBytes[i];
    s.allocatedBytes += seg.allocatedSizeBytes[i];
    s.activeBytes += seg.activeSizeBytes[i];
    if (!Number.isNaN(seg.requestedSizeBytes[i])) s.requestedBytes += seg.requestedSizeBytes[i];
  }
  const actions: Record<string, number> = {};
  let traceEntries = 0;
  for (const t of model.traces) {
    const s = device(t.device);
    s.traceEntries += t.length;
    traceEntries += t.length;
    const counts = traceCounts(t).actions.subarray(0, model.actionNames.length);
    addActions(model, counts, s.actions);
    addActions(model, counts, actions);
  }
  return {
    fileName: model.source.fileName,
    kind: model.source.kind ?? "snapshot",
    lacks: model.source.lacks ?? [],
    format: model.source.format,
    pickleProtocol: model.source.pickleProtocol,
    segments: seg.length,
    blocks: model.blocks.length,
    traceEntries,
    actions,
    devices: [...byDevice.values()].sort((a, b) => a.device - b.device),
    notes: model.source.notes,
  };
}
