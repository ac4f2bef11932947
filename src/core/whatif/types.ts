// Types of the what-if engine: selections of allocations, transformations of the allocation table, and
// the answers (a new allocated curve, its peak and what the peak is made of).

/** The phases of a training step, as the attribution reads them from each trace entry's stack. */
export type PhaseName = "forward" | "backward" | "optimizer" | "parameters";

/** Which allocations of the replay's allocation table a transformation acts on. */
export type Selection =
  /** The attribution's category (parameters, gradients, optimizer_state, activations, input, …). */
  | { kind: "category"; category: string }
  /** The attribution's call site: its filename ends with `file` (whole path components) and its line is `line`. */
  | { kind: "site"; file: string; line: number }
  /** Some frame of the allocation's stack, written `filename:line:name`, contains `text`. */
  | { kind: "frame"; text: string }
  /** Allocation ids (rows of the replay's allocation table). */
  | { kind: "ids"; ids: readonly number[] }
  /** Allocations made at events fromEvent … toEvent (inclusive; -1 = allocated before the trace). */
  | { kind: "window"; fromEvent: number; toEvent: number }
  /** Allocations made at time_us fromUs … toUs (inclusive; needs a trace with times). */
  | { kind: "time"; fromUs: number; toUs: number }
  /** Allocations made in a run of this phase (see phases.ts). */
  | { kind: "phase"; phase: PhaseName }
  /** Every selection holds (intersection). */
  | { kind: "all"; of: readonly Selection[] }
  /** Some selection holds (union). */
  | { kind: "any"; of: readonly Selection[] };

export type Transform =
  /** The selection never existed. */
  | { op: "remove"; select: Selection }
  /** Sizes × factor (0.5: bf16 instead of fp32; 1/N: sharded over N ranks). */
  | { op: "scale"; select: Selection; factor: number }
  /** Each selected allocation is held only while its phase runs (README: "Free early"). */
  | { op: "free-early"; select: Selection }
  /** Activation checkpointing of a module, named by a frame text (README: "Recompute"). */
  | { op: "recompute"; module: string };

/** What one transformation touched. */
export interface TransformSummary {
  /** The transformation as the CLI writes it (`--remove category:gradients`). */
  spec: string;
  /** Allocations it changed, and their (rounded) bytes before the change. */
  allocations: number;
  bytes: number;
  /** Recompute only: module calls found, and those whose saved activations could be dropped. */
  calls?: number;
  checkpointedCalls?: number;
  /** One line: what is assumed for this transformation to be exact. */
  assumption: string;
}

export interface WhatIfResult {
  device: number;
  /** Events of the device's trace. */
  events: number;
  /** The new peak: highest allocated (rounded block bytes) after any event; first event reaching it. */
  peakBytes: number;
  peakEvent: number;
  /** time_us of that event; null when the trace has no times. */
  peakTimeUs: number | null;
  baselinePeakBytes: number;
  baselinePeakEvent: number;
  /** baselinePeakBytes − peakBytes (negative: the change makes the peak higher). */
  savedBytes: number;
  /** Allocated bytes at the new peak per category; sums exactly to peakBytes. */
  categoriesAtPeak: Record<string, number>;
  /** The assumptions under which the answer is exact, one line. */
  assumption: string;
  transforms: TransformSummary[];
  /** Allocated before the first event, after the change. */
  initialBytes: number;
  /** The new allocated curve (one value per event), when asked for. */
  curve?: Float64Array;
}

/** The device's capacity as far as memory_allocated() is concerned, and where it comes from. */
export interface Capacity {
  bytes: number;
  source: "option" | "counters" | "oom";
  detail: string;
}

/** An OOM entry of the trace: what was asked, what was free, how much more was needed. */
export interface OomNeed {
  eventIndex: number;
  /** The failed request, rounded as the allocator rounds it. */
  requestBytes: number;
  /** Allocated after the event (the failed request is not in it). */
  allocatedBytes: number;
  deviceFreeBytes: number;
  /** How much more the device needed to hold for the request to succeed (request − device free). */
  neededBytes: number;
}

export type SuggestionKind =
  | "checkpoint"
  | "zero"
  | "free-gradients"
  | "foreach"
  | "batch"
  | "mixed-precision";

export interface Suggestion {
  id: string;
  kind: SuggestionKind;
  /** What to do, for people. */
  action: string;
  peakBytes: number;
  peakEvent: number;
  savedBytes: number;
  /** Under which assumption peakBytes is exact (one line). */
  assumption: string;
  /** What it costs or needs (time, ranks, accuracy). */
  caveat: string;
  /** Whether the new peak fits the device (with an OOM: also the failed request); null: capacity unknown. */
  fits: boolean | null;
  /** Devices the change needs: N for ZeRO over N ranks (the figures are per rank), 1 for everything else. */
  devices: number;
  /** How cheap the change is (suggest.ts COST: 0 a flag … 5 sharding); the ranking's order among fits. */
  cost: number;
  categoriesAtPeak: Record<string, number>;
  /** The transformations, and the same as CLI options. */
  transforms: Transform[];
  specs: string[];
}
