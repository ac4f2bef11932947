// Phases of the trace (forward / backward / optimizer / parameters) and their runs, as the attribution's
// lifetime rules read them (trace-rules.ts): each memory entry takes the phase of its stack's rule; a run
// starts at an entry whose phase differs from the last phase seen and lasts until the next run starts
// (entries of no phase belong to the run before them). Events before the first phased entry are in no run.

import { isPythonFile } from "../attribution/frames";
import { Phase, RULE_PHASE } from "../attribution/trace-rules";
import { Action, EMPTY_STACK, type SnapshotModel, type TraceTable } from "../model/types";
import type { PhaseName } from "./types";

export { Phase };

export const PHASE_NAMES: readonly (PhaseName | "none")[] = [
  "none",
  "forward",
  "backward",
  "optimizer",
  "parameters",
];

export function phaseId(name: PhaseName): number {
  return PHASE_NAMES.indexOf(name);
}

export interface Phases {
  /** Per event: the phase of the entry itself (0: none). */
  phase: Uint8Array;
  /** Per event: its run (-1 before the first phased entry). */
  run: Int32Array;
  runStart: Int32Array;
  /** First event after the run (the next run's start, or the trace's length). */
  runEnd: Int32Array;
  runPhase: Uint8Array;
  /**
   * Per phase id: the windows an allocation made in a run of that phase is held in by free-early, as
   * [start, end) event pairs in order: its runs, a backward run extended through the optimizer run right
   * after it (the step that reads the gradients).
   */
  windows: Int32Array[];
  /** Per run: the index of its window in windows[runPhase[run]]. */
  runWindow: Int32Array;
}

/** Frames were recorded and all are Python: stacks='python' (engine-thread entries have no stack). */
export function isPythonOnly(model: SnapshotModel): boolean {
  if (model.stacks.length <= 1) return false;
  const { filename } = model.frames;
  for (let f = 0; f < model.frames.length; f++) {
    if (!isPythonFile(model.strings[filename[f]] ?? "")) return false;
  }
  return true;
}

/**
 * The last phases computed per trace (and the rules they came from): the page asks for one trace's phases
 * four times (summary words, what-if, steps for leaks, the phase bands), each an O(events) pass.
 * Callers only read them.
 */
const computed = new WeakMap<TraceTable, { stackRule: Uint8Array; phases: Phases }>();

/** Phases of one device's trace from the attribution's rule per stack. */
export function tracePhases(model: SnapshotModel, trace: TraceTable | null, stackRule: Uint8Array): Phases {
  if (!trace) return phasesOf(model, null, stackRule);
  const hit = computed.get(trace);
  if (hit && hit.stackRule === stackRule) return hit.phases;
  const phases = phasesOf(model, trace, stackRule);
  computed.set(trace, { stackRule, phases });
  return phases;
}

/**
 * The phase of the run event i is in (0: none, before the first phased entry): the phase of the last
 * phased entry at or before it. From the phases when they are computed; otherwise a walk back from i,
 * which is all a report asks for (the peak's phase) and far shorter than the trace.
 */
export function runPhaseAt(
  model: SnapshotModel,
  trace: TraceTable | null,
  stackRule: Uint8Array,
  i: number,
): number {
  if (!trace || i < 0 || i >= trace.length) return Phase.none;
  const hit = computed.get(trace);
  if (hit && hit.stackRule === stackRule) {
    const run = hit.phases.run[i];
    return run < 0 ? Phase.none : hit.phases.runPhase[run];
  }
  const pythonOnly = isPythonOnly(model);
  for (let j = i; j >= 0; j--) {
    const p = entryPhase(trace, j, stackRule, pythonOnly);
    if (p) return p;
  }
  return Phase.none;
}

/** The phase of entry i itself (0: none), as phasesOf assigns it. */
function entryPhase(trace: TraceTable, i: number, stackRule: Uint8Array, pythonOnly: boolean): number {
  const a = trace.action[i];
  if (a > Action.segment_unmap || trace.isWorkspace[i]) return Phase.none; // not a memory action
  const s = trace.stack[i];
  // stacks='python': frame-less allocs and frees are the autograd engine's threads.
  if (s === EMPTY_STACK) return pythonOnly && a <= Action.free_completed ? Phase.backward : Phase.none;
  return RULE_PHASE[stackRule[s]];
}

function phasesOf(model: SnapshotModel, trace: TraceTable | null, stackRule: Uint8Array): Phases {
  const n = trace?.length ?? 0;
  const phase = new Uint8Array(n);
  if (trace) {
    const pythonOnly = isPythonOnly(model);
    for (let i = 0; i < n; i++) phase[i] = entryPhase(trace, i, stackRule, pythonOnly);
  }
  const run = new Int32Array(n).fill(-1);
  const starts: number[] = [];
  const phases: number[] = [];
  for (let i = 0, last = 0; i < n; i++) {
    const p = phase[i];
    if (p && p !== last) {
      starts.push(i);
      phases.push(p);
      last = p;
    }
    run[i] = starts.length - 1;
  }
  const R = starts.length;
  const runStart = Int32Array.from(starts);
  const runPhase = Uint8Array.from(phases);
  const runEnd = new Int32Array(R);
  for (let r = 0; r < R; r++) runEnd[r] = r + 1 < R ? runStart[r + 1] : n;
  const lists: number[][] = PHASE_NAMES.map(() => []);
  const runWindow = new Int32Array(R).fill(-1);
  for (let r = 0; r < R; r++) {
    const p = runPhase[r];
    let end = runEnd[r];
    if (p === Phase.backward && r + 1 < R && runPhase[r + 1] === Phase.optimizer) end = runEnd[r + 1];
    runWindow[r] = lists[p].length / 2;
    lists[p].push(runStart[r], end);
  }
  return {
    phase,
    run,
    runStart,
    runEnd,
    runPhase,
    windows: lists.map((l) => Int32Array.from(l)),
    runWindow,
  };
}
