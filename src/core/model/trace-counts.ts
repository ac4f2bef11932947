// A trace's counts, made in one pass over its entries and kept with it (a model is not changed after its
// read): how many entries of each action, how many are torch_npu workspace entries, how many of the rest
// carry no time. The summary, the replay's prescan and the torch_npu check each made a pass of their own
// over every entry for these (together ≈ 0.1 s of the 1.05 GB file's 6.6 M entries in Node).

import { Action, type TraceTable } from "./types";

export interface TraceCounts {
  /** Per action id (0–255): how many entries have it. */
  readonly actions: Float64Array;
  /** Entries the replay does not replay: torch_npu workspace entries (isWorkspace) and workspace_snapshot. */
  readonly workspaceEntries: number;
  /** Of those, the ones with isWorkspace set. */
  readonly flaggedWorkspaceEntries: number;
  /** Of the other entries, those without a time (timeUs NaN). */
  readonly untimedEntries: number;
}

const kept = new WeakMap<TraceTable, TraceCounts>();

/** The counts of `t`, counted on first use. */
export function traceCounts(t: TraceTable): TraceCounts {
  let c = kept.get(t);
  if (c === undefined) {
    c = count(t);
    kept.set(t, c);
  }
  return c;
}

function count(t: TraceTable): TraceCounts {
  const { action, isWorkspace, timeUs } = t;
  const n = t.length;
  const actions = new Float64Array(256);
  let flagged = 0;
  let snapshots = 0;
  let untimed = 0;
  for (let i = 0; i < n; i++) {
    const a = action[i];
    actions[a]++;
    if (isWorkspace[i]) flagged++;
    else if (a === Action.workspace_snapshot) snapshots++;
    else if (Number.isNaN(timeUs[i])) untimed++;
  }
  return {
    actions,
    workspaceEntries: flagged + snapshots,
    flaggedWorkspaceEntries: flagged,
    untimedEntries: untimed,
  };
}
