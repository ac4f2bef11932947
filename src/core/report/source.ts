// What kind of file a report is about, and what it could not contain: `source` in `report --json`,
// `deviceType` (and the device's own id) on timeline.devices[], and the checks that compare with a
// snapshot's segments skipped with the reason when the file has none (a profiler trace, a timeline).

import type { SnapshotModel, SourceKind } from "../model/types";
import { isNpuSnapshot } from "../replay/prepare";

export interface SourceJson {
  kind: SourceKind;
  /** How the bytes were laid out (pickle, pickle+gzip, zip, json, chrome-trace, timeline-json, html…). */
  format: string;
  /** What this kind of file cannot contain, one sentence each; empty for a snapshot. */
  lacks: string[];
  /** The rank and world size when the file says (a profiler trace's distributedInfo). */
  rank: number | null;
  worldSize: number | null;
}

export function sourceJson(model: SnapshotModel): SourceJson {
  const s = model.source;
  return {
    kind: s.kind ?? "snapshot",
    format: s.format,
    lacks: s.lacks ?? [],
    rank: s.rank ?? null,
    worldSize: s.worldSize ?? null,
  };
}

/** A trace table's device as the file names it: type and id (CPU −1). */
export function deviceOf(model: SnapshotModel, traceIndex: number): { deviceType: string; device: number } {
  const d = model.source.devices?.[traceIndex];
  if (d) return { deviceType: d.deviceType, device: d.deviceId };
  return { deviceType: isNpuSnapshot(model) ? "npu" : "cuda", device: traceIndex };
}

/** Checks that read the snapshot's segments, which a file without segments does not have. */
const SEGMENT_CHECKS = new Set(["block-tiling", "active-total", "snapshot-vs-peak", "trace-replay"]);

interface CheckLike {
  id: string;
  status: string;
  detail: string;
}

/** The checks with the ones about segments skipped, saying why, when the file has no segments. */
export function checksForSource<T extends CheckLike>(model: SnapshotModel, checks: T[]): T[] {
  if (!model.source.noSegments) return checks;
  const what =
    model.source.kind === "memory-timeline" ? "an export_memory_timeline file" : "a profiler trace";
  return checks.map((c) =>
    SEGMENT_CHECKS.has(c.id)
      ? {
          ...c,
          status: "skipped",
          detail: `${what} has no segments: there is no snapshot state to check this against.`,
        }
      : c,
  );
}
