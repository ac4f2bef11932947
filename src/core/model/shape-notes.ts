// What a file recorded with the newer recording options lacks, said once in the report's notes, so that
// a missing kind of entry reads as a choice made when recording, not as memory the tool lost.

import { Action, type SnapshotModel } from "./types";

/** Notes on the file's shape: no trace at all (include_traces=False), actions left out (skip_actions). */
export function shapeNotes(model: SnapshotModel): string[] {
  const notes: string[] = [];
  if (model.layout !== "dict") return notes;
  const entries = model.traces.reduce((n, t) => n + t.length, 0);
  // Whether any entry (torch_npu's workspace entries aside) has the action: found with indexOf, which
  // stops at the first one instead of counting every entry of a big trace.
  const has = (action: number) =>
    model.traces.some((t) => {
      for (let i = t.action.indexOf(action); i >= 0; i = t.action.indexOf(action, i + 1))
        if (!t.isWorkspace[i]) return true;
      return false;
    });
  if (entries === 0 && model.segments.length > 0) {
    notes.push(
      "the file has no trace entries (device_traces empty: recorded with include_traces=False, or history was off): the segments are complete, but there is no timeline, no peak from the trace and no order of events.",
    );
    return notes;
  }
  if (!has(Action.alloc)) return notes;
  const missing: string[] = [];
  if (!has(Action.free_requested) && has(Action.free_completed)) missing.push("free_requested");
  if (!has(Action.segment_alloc) && !has(Action.segment_map) && model.segments.length > 0)
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
