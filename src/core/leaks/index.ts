// src/core/leaks: what grows from one step to the next, in one trace and across a series of dumps (README.md).

export {
  analyseGrowth,
  DEFAULT_MIN_GROWTH_STEPS,
  DEFAULT_THRESHOLD_BYTES,
  type GrowthResult,
  type GrowthRow,
  type GrowthTableRow,
  growthRule,
  type LeakRow,
  type OneOffRow,
  projectOomStep,
} from "./growth";
export {
  checkOneRun,
  compareDumps,
  type DumpSite,
  type DumpSummary,
  SeriesInputError,
  seriesLeaks,
  seriesSteps,
  stepFromFileName,
  stepFromTag,
  summarizeDump,
} from "./series";
export { findSteps, StepMarkerError, type StepSource, type TraceSteps } from "./steps";
export { leaksDevice, measureSteps, traceLeaks } from "./trace";
export type { LeakStepJson, LeaksJson, SiteBytes } from "./types";
