// The summary of an open model for the page: the core summary (the same numbers `peakscope inspect`
// prints) plus what the page shows beside it (layout, totals over devices, timing, analysis errors).

import { summarize as coreSummarize, type SnapshotSummary } from "../src/core/model/summary";
import type { SnapshotModel } from "../src/core/model/types";
import type { Summary } from "./api";

export function summarize(
  model: SnapshotModel,
  readMs: number,
  analyseMs: number,
  analysisErrors: string[],
  readBy: Summary["readBy"] = "direct",
  attributedBy: Summary["attributedBy"] = "here",
  /** The core summary, where made already (the engine makes it while a helper attributes). */
  core: SnapshotSummary = coreSummarize(model),
): Summary {
  const seg = model.segments;
  let requested = Number.NaN;
  for (let i = 0; i < seg.length; i++) {
    const r = seg.requestedSizeBytes[i];
    if (!Number.isNaN(r)) requested = (Number.isNaN(requested) ? 0 : requested) + r;
  }
  const hasTime = new Set<number>();
  for (const t of model.traces) {
    for (let i = 0; i < t.length; i++) {
      if (!Number.isNaN(t.timeUs[i])) {
        hasTime.add(t.device);
        break;
      }
    }
  }
  const devices = core.devices.map((d) => ({
    device: d.device,
    segments: d.segments,
    blocks: d.blocks,
    traceEntries: d.traceEntries,
    actions: d.actions,
    reservedBytes: d.reservedBytes,
    allocatedBytes: d.allocatedBytes,
    activeBytes: d.activeBytes,
    requestedBytes: d.requestedBytes,
    hasTime: hasTime.has(d.device),
  }));
  const sum = (f: (d: (typeof devices)[number]) => number) => devices.reduce((a, d) => a + f(d), 0);
  return {
    fileName: core.fileName,
    kind: core.kind,
    lacks: core.lacks,
    byteLength: model.source.byteLength,
    format: core.format,
    pickleProtocol: core.pickleProtocol,
    layout: model.layout,
    legacyHistory: model.legacyHistory,
    notes: core.notes,
    segments: core.segments,
    blocks: core.blocks,
    traceEntries: core.traceEntries,
    actions: core.actions,
    frames: model.frames.length,
    stacks: model.stacks.length,
    devices,
    totals: {
      reservedBytes: sum((d) => d.reservedBytes),
      allocatedBytes: sum((d) => d.allocatedBytes),
      activeBytes: sum((d) => d.activeBytes),
      requestedBytes: requested,
    },
    annotations: model.annotations.length,
    allocatorSettings: model.allocatorSettings,
    readMs,
    readBy,
    attributedBy,
    pairedWhileRead: false,
    traceEntriesByWasm: model.source.traceEntriesByWasm ?? 0,
    slicesReadInPlace: model.source.slicesReadInPlace ?? 0,
    analyseMs,
    analysisErrors,
  };
}
