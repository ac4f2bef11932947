// What `peakscope leaks --json` prints and the page reads. The keys the issue names are kept exactly
// (mode, steps[step, startEvent, endEvent | file, allocatedBytes, peakBytes], leaks[site, category,
// bytesPerStep, steps, liveBytesByStep], verdict, projectedOomStep); the rest says how the answer was reached.

import type { GrowthTableRow, LeakRow, OneOffRow } from "./growth";

export interface SiteBytes {
  site: string;
  label: string;
  category: string;
  bytes: number;
}

export interface LeakStepJson {
  step: number;
  /** Trace mode: the step's first and last events (the state after endEvent is the step's end). */
  startEvent?: number;
  endEvent?: number;
  /** Series mode: the dump. */
  file?: string;
  /** Allocated (rounded block bytes) at the step's end / at the dump. */
  allocatedBytes: number;
  /** Trace: the highest allocated within the step; series: the dump's peak (sidecar, else its trace's). */
  peakBytes: number | null;
  /** Trace mode: allocated at the step's start (the state after the previous step's end). */
  startAllocatedBytes?: number;
  /**
   * Trace mode: bytes the step allocated that are still allocated at the end of the next step (the same
   * point one step later); null for the last step (no next step in the trace). `retained`: the largest, by
   * (call site, category).
   */
  retainedBytes?: number | null;
  retained?: SiteBytes[];
  /** Series mode: where the step number came from. */
  stepSource?: "file-name" | "sidecar-tag" | "order";
}

export interface LeaksJson {
  mode: "trace" | "series";
  steps: LeakStepJson[];
  /** Only the flagged (call site, category) pairs, largest growth first. */
  leaks: (LeakRow & { label: string })[];
  verdict: "leak" | "none" | "too-few-steps";
  /** The step at which allocated memory would exceed the device's capacity; null when unknown. */
  projectedOomStep: number | null;
  /** One sentence: the leak named, "no growth found", or why there are too few steps. */
  message: string;
  /** How the steps were found (trace: annotations or repetition; series: file names, tags, order). */
  stepSource: { kind: string; confidence: string; detail: string };
  /** The rule and its numbers. */
  rule: { thresholdBytes: number; minGrowthSteps: number; text: string };
  /** Warm-up, told apart from leaks: growth that stopped, and (trace) what the first step kept. */
  warmUp: { oneOff: OneOffRow[]; firstStepRetainedBytes: number | null; text: string };
  /** Every (call site, category) that changed, largest growth first (at most 50), and the steady largest. */
  growth: GrowthTableRow[];
  capacity: { bytes: number; source: string; detail: string } | null;
  /** Trace mode: the device whose trace was read. */
  device?: number;
  file?: string;
  files?: string[];
}
