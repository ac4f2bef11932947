// Replay of device_traces: timeline columns, peak composition, state at any event, trace-replay check.

export { AddressMap } from "./addr-map";
export {
  buildExtents,
  intervalStateAt,
  type Regions,
  type ReservedExtents,
  regionOf,
  regionsFromState,
} from "./extents";
export { type Composition, compositionAt, peakComposition, type SiteShare } from "./peak";
export { eventAtOrAfter, prepareReplay } from "./prepare";
export {
  type CallSiteBytes,
  combineTraceReplayChecks,
  type PeakReport,
  prepareReplays,
  type ReplayInputs,
  type ReplayReport,
  type ReplayReportOptions,
  replayReport,
  type StateAtReport,
  stateAtReport,
} from "./report";
export {
  DEFAULT_ROUNDING,
  fittedBlockSize,
  LARGE_BUFFER_BYTES,
  MIN_BLOCK_BYTES,
  type RoundingSettings,
  roundingSettings,
  roundRequest,
  SMALL_SIZE_BYTES,
} from "./rounding";
export {
  type Fragmentation,
  formatBytes,
  fragmentationAt,
  isAllocatedAt,
  type LiveBlocks,
  liveAllocationsAt,
  type OomSummary,
  oomSummaries,
  ReplayCursor,
  regionsAt,
  stateAt,
} from "./state";
export * from "./types";
