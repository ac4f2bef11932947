// Step boundaries inside one trace. From annotations first (`external_annotations` START/END, paired by the
// replay into spans): a name the user gives (--step-marker REGEX), else `ProfilerStep#N`, else
// `Optimizer.step#…`; else from the trace's own repetition: the optimizer's runs (the phases the attribution's
// rules give each entry, as the what-if reads them), one per step. A step ends at its boundary event: the last
// event before the END of its span (or the optimizer run's last optimizer entry); each step is measured there.

import type { Attribution } from "../attribution";
import type { SnapshotModel } from "../model/types";
import type { Replay } from "../replay/types";
import { Phase, tracePhases } from "../whatif/phases";

export type StepSourceKind = "step-marker" | "profiler-step" | "optimizer-step" | "repetition" | "none";

export interface StepSource {
  kind: StepSourceKind;
  /** "certain" for annotations; for repetition: "high" / "medium" / "low" from how regular the steps are. */
  confidence: "certain" | "high" | "medium" | "low" | "none";
  /** One sentence: what was used and how sure. */
  detail: string;
}

export interface TraceSteps {
  /** Per step: its number and the last event of the step (the state after it is the step's end). */
  numbers: number[];
  endEvents: number[];
  source: StepSource;
}

export class StepMarkerError extends Error {}

/** The last event before an annotation time: the span's endEvent − 1 (null END time: none). */
function boundaryOf(r: Replay, endEvent: number | null, endUs: number | null): number | null {
  if (endEvent !== null) return endEvent - 1;
  if (endUs !== null && r.length > 0 && r.hasTime && endUs > r.x[r.length - 1]) return r.length - 1;
  return null;
}

function fromSpans(
  r: Replay,
  match: (name: string) => boolean,
  numberOf: (name: string) => number | null,
): { numbers: number[]; endEvents: number[] } | null {
  const spans = r.markers.annotations
    .filter((a) => match(a.name))
    .map((a) => ({ name: a.name, end: boundaryOf(r, a.endEvent, a.endUs) }))
    .filter((a): a is { name: string; end: number } => a.end !== null && a.end >= 0)
    .sort((a, b) => a.end - b.end);
  // Two spans ending at the same event (nested or repeated names) are one boundary.
  const ends: number[] = [];
  const names: string[] = [];
  for (const s of spans) {
    if (ends.length > 0 && ends[ends.length - 1] === s.end) continue;
    ends.push(s.end);
    names.push(s.name);
  }
  if (ends.length === 0) return null;
  const given = names.map(numberOf);
  const distinct = new Set(given).size === given.length && given.every((n) => n !== null);
  const increasing = distinct && given.every((n, i) => i === 0 || (n as number) > (given[i - 1] as number));
  return { numbers: increasing ? (given as number[]) : ends.map((_e, i) => i + 1), endEvents: ends };
}

const PROFILER_STEP = /^ProfilerStep#(\d+)$/;
const OPTIMIZER_STEP = /^Optimizer\.step#/;

/** How regular a list of positive spacings is: max/min − 1 over all but the first (step 1 differs). */
function spread(spacings: number[]): number {
  const s = spacings.length > 2 ? spacings.slice(1) : spacings;
  const lo = Math.min(...s);
  const hi = Math.max(...s);
  return lo > 0 ? hi / lo - 1 : Number.POSITIVE_INFINITY;
}

/** The optimizer's runs in the trace, one per step; each ends at its last optimizer entry. */
function fromRepetition(model: SnapshotModel, r: Replay, a: Attribution): TraceSteps | null {
  const trace = model.traces[r.device] ?? null;
  const p = tracePhases(model, trace, a.stackRule);
  const ends: number[] = [];
  const allocsPerRun: number[] = [];
  for (let run = 0; run < p.runStart.length; run++) {
    if (p.runPhase[run] !== Phase.optimizer) continue;
    let last = -1;
    let allocs = 0;
    for (let i = p.runStart[run]; i < p.runEnd[run]; i++) {
      if (p.phase[i] === Phase.optimizer) {
        last = i;
        if (trace && trace.action[i] === 0) allocs++;
      }
    }
    if (last >= 0) {
      ends.push(last);
      allocsPerRun.push(allocs);
    }
  }
  if (ends.length < 2) return null;
  const spacing = ends.slice(1).map((e, i) => e - ends[i]);
  const eventsSpread = spread(spacing);
  const sameAllocs = allocsPerRun.slice(1).every((n) => n === allocsPerRun[1]);
  const confidence = sameAllocs && eventsSpread <= 0.1 ? "high" : eventsSpread <= 0.5 ? "medium" : "low";
  const lo = Math.min(...spacing.slice(spacing.length > 1 ? 1 : 0));
  const hi = Math.max(...spacing.slice(spacing.length > 1 ? 1 : 0));
  return {
    numbers: ends.map((_e, i) => i + 1),
    endEvents: ends,
    source: {
      kind: "repetition",
      confidence,
      detail:
        `no step annotation: the optimizer's allocations recurring (${ends.length} runs of optimizer code, ` +
        `${lo === hi ? lo : `${lo}–${hi}`} events apart after the first${sameAllocs ? ", the same allocations each time" : ""}); ` +
        `${confidence} confidence`,
    },
  };
}

/** The steps of one device's trace. `stepMarker`: a regular expression over annotation names. */
export function findSteps(
  model: SnapshotModel,
  r: Replay,
  a: Attribution,
  stepMarker: RegExp | null = null,
): TraceSteps {
  const annotated = (kind: StepSourceKind, what: string, s: { numbers: number[]; endEvents: number[] }) => ({
    ...s,
    source: {
      kind,
      confidence: "certain" as const,
      detail: `${s.endEvents.length} ${what} annotations (external_annotations START/END): each step ends at its END`,
    },
  });
  if (stepMarker) {
    const s = fromSpans(
      r,
      (n) => stepMarker.test(n),
      (n) => {
        const m = /(\d+)\s*$/.exec(n);
        return m ? Number(m[1]) : null;
      },
    );
    if (!s) {
      const names = [...new Set(r.markers.annotations.map((x) => x.name))].slice(0, 5);
      throw new StepMarkerError(
        `--step-marker ${stepMarker.source}: no annotation with a time matches it (annotations in the trace: ` +
          `${names.length > 0 ? names.join(", ") : "none"}).`,
      );
    }
    return annotated("step-marker", `"${stepMarker.source}"`, s);
  }
  const prof = fromSpans(
    r,
    (n) => PROFILER_STEP.test(n),
    (n) => Number(PROFILER_STEP.exec(n)?.[1]),
  );
  if (prof) return annotated("profiler-step", "ProfilerStep#N", prof);
  const opt = fromSpans(
    r,
    (n) => OPTIMIZER_STEP.test(n),
    () => null,
  );
  if (opt) return annotated("optimizer-step", "Optimizer.step#…", opt);
  const rep = fromRepetition(model, r, a);
  if (rep) return rep;
  return {
    numbers: [],
    endEvents: [],
    source: {
      kind: "none",
      confidence: "none",
      detail:
        "no step found: no ProfilerStep# or Optimizer.step# annotation, and no optimizer code recurring in the " +
        "trace (give --step-marker REGEX for an annotation that marks your steps)",
    },
  };
}
