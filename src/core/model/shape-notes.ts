// What a file recorded with the newer recording options lacks, said once in the report's notes, so that
// a missing kind of entry reads as a choice made when recording, not as memory the tool lost.

import { Action, type SnapshotModel } from "./types";

/** Notes on the file's shape: no trace at all (include_traces=False), actions left out (skip_actions). */
export function shapeNotes(model: SnapshotModel): string[] {
  const notes: string[] = [];
  if (model.layout !== "dict") return notes;
  const counts = new Float64Array(model.actionNames.length);
  let entries = 0;
  for (const t of model.traces) {
    entries += t.length;
    for (let i = 0; i < t.length; i++) if (!t.isWorkspace[i]) counts[t.action[i]]++;
  }
  if (entries === 0 && model.segments.length > 0) {
    notes.push(
      "the file has no trace entries (device_traces empty: recorded with include_traces=False, or history was off): the segments are complete, but there is no timeline, no peak from the trace and no order of events.",
    );
    return notes;
  }
  if (counts[Action.alloc] === 0) return notes;
  const missing: string[] = [];
  if (counts[Action.free_requested] === 0 && counts[Action.free_completed] > 0)
    missing.push("free_requested");
  if (counts[Action.segment_alloc] === 0 && counts[Action.segment_map] === 0 && model.segments.length > 0)
    missing.push("segment_alloc", "segment_free");
  if (missing.length > 0) {
    notes.push(
      `the trace has no ${missing.join(" / ")} entries (recorded with skip_actions): ${
        missing.includes("free_requested") ? "allocated memory is taken as freed at free_completed; " : ""
      }${missing.includes("segment_alloc") ? "reserved memory over time follows the final segments (segments made or released inside the trace are not seen); " : ""}the checks allow for it.`,
    );
  }
  return notes;
}
