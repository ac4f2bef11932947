// The one typed interface between the page and the worker. The worker owns the model; the page asks
// for what it shows and gets small answers: plain JSON for tables, typed arrays (transferred, not
// copied) for anything per pixel or per block. Nothing here imports DOM or React.

import type { ProxyMarked } from "comlink";
import type { LoadPreview } from "../src/core/model/preview";
import type { SourceKind } from "../src/core/model/types";
import type { ReplayReport } from "../src/core/replay/report";
import type { CompareJson, ReportJson, TotalsJson } from "../src/core/report/index";
import type { HealthAnswer, HealthTimelineAnswer } from "./health";
import type { LeaksAnswer } from "./leaks";
import type { RankFileResult } from "./ranks";
import type { ReportHtmlAnswer } from "./save-report";
import type { SeriesFileResult } from "./series";
import type { TimelineLayersApi } from "./timeline-layers";
import type {
  CompileRegionsAnswer,
  TreeAnswer,
  TreeDiffAnswer,
  TreeDiffQuery,
  TreeExportFormat,
  TreeQuery,
  TreeSearchRefsQuery,
  TreeSearchTimelineAnswer,
  TreeSearchTimelineQuery,
} from "./tree";
import type {
  WhatIfAnswer,
  WhatIfCurveAnswer,
  WhatIfCurveQuery,
  WhatIfQuery,
  WhatIfSpecsAnswer,
  WhatIfSpecsQuery,
  WhatIfSuggestAnswer,
  WhatIfSuggestQuery,
} from "./whatif";

export type { ReportHtmlAnswer } from "./save-report";
export type * from "./timeline-layers";
export type * from "./tree";
export type * from "./whatif";

export type {
  CompareJson,
  HealthAnswer,
  HealthTimelineAnswer,
  LeaksAnswer,
  RankFileResult,
  ReplayReport,
  ReportJson,
  SeriesFileResult,
  TotalsJson,
};

/** Bytes, always a whole number of bytes (may exceed 2^32: carried as float64). */
export type Bytes = number;
/** Microseconds since the trace's first timestamp, as written in the file's time_us. */
export type Microseconds = number;
/** Index into one device's trace (the device_traces[device] list, file order). */
export type IndexIntoTrace = number;

export interface ProgressInfo {
  phase: string;
  bytesDone: number;
  bytesTotal: number;
  /** While parsing: memory over the trace entries read so far (the first picture of a big file). */
  preview?: LoadPreview;
}

export interface DeviceSummary {
  device: number;
  segments: number;
  blocks: number;
  traceEntries: number;
  /** Trace entries per action name. */
  actions: Record<string, number>;
  reservedBytes: Bytes;
  allocatedBytes: Bytes;
  activeBytes: Bytes;
  /** NaN when no segment carries requested_size. */
  requestedBytes: Bytes;
  hasTime: boolean;
}

export interface Summary {
  fileName: string;
  /** snapshot, profiler-trace, memory-timeline or memoryviz-html, and what that kind cannot contain. */
  kind: SourceKind;
  lacks: string[];
  byteLength: number;
  format: string;
  pickleProtocol: number | null;
  layout: string;
  legacyHistory: boolean;
  notes: string[];
  segments: number;
  blocks: number;
  traceEntries: number;
  actions: Record<string, number>;
  frames: number;
  stacks: number;
  /** Devices seen in segments or traces, with per-device counts and segment-field totals. */
  devices: DeviceSummary[];
  totals: { reservedBytes: Bytes; allocatedBytes: Bytes; activeBytes: Bytes; requestedBytes: Bytes };
  annotations: number;
  allocatorSettings: Record<string, unknown> | null;
  /** Read + analysis time in the worker. */
  readMs: number;
  /** Who read the file's slices: a second worker while this one parsed ("parallel"), or this one. */
  readBy: "parallel" | "direct";
  /** Where the attribution ran: a helper thread while this one replayed (workers/attribution-helper.ts), or here. */
  attributedBy: "helper" | "here";
  /** Whether that helper paired the trace as the file was read (src/core/attribution/streamed-pairing.ts). */
  pairedWhileRead: boolean;
  /** Trace entries the WebAssembly scanner parsed (0: WebAssembly unavailable or forbidden here). */
  traceEntriesByWasm: number;
  /** The file's slices read into the scanner's memory and scanned there (big files, shared memory). */
  slicesReadInPlace: number;
  analyseMs: number;
  /** What part of the analysis failed, if any; the summary is still shown. */
  analysisErrors: string[];
}

export type OpenResult = { ok: true; summary: Summary } | { ok: false; cancelled: boolean; message: string };

/** A category as the views draw it: index = the category id used in every typed array. */
export interface CategoryInfo {
  id: number;
  name: string;
}

/** A category rule, as the views name it (id, what it means, whether it infers). */
export interface RuleText {
  id: string;
  description: string;
  /** The category was inferred from sizes and lifetimes (no stack says it). */
  inferred: boolean;
}

/** Bytes of one category that one inferred rule named (at the snapshot, at the peak, or over the trace). */
export interface InferredPart {
  category: string;
  rule: string;
  bytes: Bytes;
  /** Blocks (snapshot) or allocations (peak, trace). */
  count: number;
}

/**
 * What was inferred on one device (no stack says it: allocated before recording began), why the unknown
 * bytes are unknown, and the torch_npu workspace kept apart. Small: a few rows per category.
 */
export interface DeviceInference {
  /** Live blocks at the snapshot by (category, inferred rule); Σ per category = inferredBytes. */
  snapshot: InferredPart[];
  /** Bytes at the snapshot per category whose category was inferred (the report's inferredBytes, this device). */
  inferredBytes: Record<string, Bytes>;
  /** The unknown bytes at the snapshot by reason (the report's keys); sums to the device's unknown. */
  unknownBytesByReason: Record<string, Bytes>;
  /** Bytes at the snapshot allocated before recording began: inferred + unknown "before-recording". */
  beforeRecordingBytes: Bytes;
  /** torch_npu workspace blocks active at the snapshot (not in memory_allocated(); no timing). */
  workspaceBytes: Bytes;
  workspaceBlocks: number;
  /** Live allocations at the replayed peak by (category, inferred rule); empty without a trace. */
  peak: InferredPart[];
  /** Every allocation of the replayed trace whose category was inferred, by (category, rule). */
  trace: InferredPart[];
}

/** What the side panel shows for one device; all numbers come from the core report. */
export interface PanelAnswer {
  device: number;
  categories: CategoryInfo[];
  /** Every category rule by id (for the rule named on a row). */
  rules: RuleText[];
  /** What was inferred on this device, unknown by reason, workspace; null without an attribution. */
  inference: DeviceInference | null;
  /** The core `buildReport` JSON, exactly as `peakscope report --json` prints it (whole file). */
  report: ReportJson | null;
  /** The core `replayReport` (peak, its composition, the snapshot-vs-peak gap; whole file). */
  replayReport: ReplayReport | null;
  /** Replay facts for this device, null when the device has no trace. */
  replay: ReplayFacts | null;
  /** The counters sidecar in use: its file name, or null. */
  countersFile: string | null;
  /** What failed while building the panel (the rest is still shown). */
  errors: string[];
}

export interface ReplayFacts {
  events: number;
  hasTime: boolean;
  t0: Microseconds;
  t1: Microseconds;
  peakEvent: IndexIntoTrace;
  peakTimeUs: Microseconds;
  peakBytes: Bytes;
  /** Bytes by category id at the peak. */
  peakByCategory: Bytes[];
  /** Allocated bytes at the end of the trace (the snapshot moment) by category id. */
  endByCategory: Bytes[];
  endBytes: Bytes;
  /** Allocated bytes before the first event: > 0 when recording began late (or the ring buffer dropped entries). */
  initialBytes: Bytes;
  /**
   * The trace starts with nothing allocated and frees nothing it did not allocate (core startsEmpty): its
   * peak is the run's. false: only the recorded window's peak; the run's may have come before it.
   */
  isRunPeak: boolean;
  maxReservedBytes: Bytes;
  /** Ring buffer lost its start (frees of never-allocated addresses, overflow flag…). */
  truncated: boolean;
  truncationNote: string | null;
  /** What the replayed sizes measure: "requested" (trace sizes) or "rounded". */
  measure: string;
  markers: Marker[];
}

export interface Marker {
  kind: "oom" | "snapshot" | "annotation" | "peak" | "segment_alloc_fail" | string;
  event: IndexIntoTrace;
  timeUs: Microseconds;
  label: string;
}

export type XAxis = "time" | "event";

export interface TimelineQuery {
  device: number;
  axis: XAxis;
  /** Visible range in axis units (µs or event index), inclusive start, exclusive end. */
  x0: number;
  x1: number;
  /** One bucket per pixel. */
  buckets: number;
}

/**
 * One bucket per pixel. For bucket b: the allocated total's min and max inside the bucket, the
 * composition by category at the moment of the max (so the stack reaches the max), the reserved
 * total's max, and the event range [firstEvent, lastEvent] the bucket covers (-1 when none).
 */
export interface TimelineAnswer {
  buckets: number;
  categories: number;
  allocMin: Float64Array;
  allocMax: Float64Array;
  reservedMax: Float64Array;
  /** buckets × categories, row-major by bucket. */
  byCategory: Float64Array;
  firstEvent: Int32Array;
  lastEvent: Int32Array;
  /** Largest allocMax / reservedMax over the whole trace (for a stable y scale). */
  yMax: Bytes;
}

/** Per-allocation bands at a level of detail: allocations smaller than minBytes are lumped. */
export interface BandsQuery {
  device: number;
  axis: XAxis;
  x0: number;
  x1: number;
  /** Pixel width and height of the plot; bands thinner than 1 px in y are lumped per category. */
  width: number;
  height: number;
  yMax: Bytes;
}

/**
 * Each band: an allocation alive over [xStart, xEnd) drawn at a stacked offset that may change at
 * events. Encoded as polylines: band i has points pointStart[i] .. pointStart[i+1]), each point an
 * (x, yLow) pair; height = sizeBytes[i]. Category and allocation id for colour and hit-testing.
 */
export interface BandsAnswer {
  count: number;
  alloc: Int32Array;
  category: Int32Array;
  sizeBytes: Float64Array;
  pointStart: Int32Array;
  px: Float64Array;
  py: Float64Array;
  /** Per band: 1 when its allocation's category was inferred (allocated before recording; no stack). */
  inferred: Uint8Array;
  /** Allocations lumped into "small allocations" because they would be under a pixel tall. */
  lumped: number;
  lumpedBytesMax: Bytes;
  truncated: boolean;
}

export interface FrameText {
  filename: string;
  line: number;
  name: string;
}

/** A stack as shown: noise filtered, ≥3 identical frames collapsed; the full one on request. */
export interface StackView {
  frames: (FrameText & { repeats?: number })[];
  hiddenNoise: number;
  total: number;
  /** Index in `frames` of the call-site frame, -1 when it is not among them. */
  siteFrame: number;
}

/** The inferred rule that named a block's or an allocation's category, when one did. */
export interface InferredMark {
  rule: string;
  description: string;
}

export interface AllocationDetail {
  alloc: number;
  device: number;
  addr: number;
  sizeBytes: Bytes;
  category: string;
  site: string | null;
  /** The category rule that fired (its id) and what it means. */
  rule: string | null;
  ruleDetail: string | null;
  allocEvent: IndexIntoTrace;
  freeEvent: IndexIntoTrace;
  allocTimeUs: Microseconds;
  freeTimeUs: Microseconds;
  stream: number;
  compileContext: string | null;
  userMetadata: string | null;
  stack: StackView;
  /** Why the stack is empty, when it is. */
  emptyStackReason: string | null;
  /** Set when the category was inferred (sizes and lifetimes) rather than read from a stack. */
  inferred: InferredMark | null;
}

/**
 * How a call-site key names sites: "key" is the site as written in this file (`path:line:function`, what
 * the report's topCallSites carry); "portable" is the compare key (install prefixes removed, so the same
 * line matches across machines: what the compare section's callSites carry).
 */
export type SiteMatch = "key" | "portable";

export interface SegmentMapQuery {
  device: number;
  /** The state after this event; -1 for the state before the first event; null for the snapshot. */
  event: IndexIntoTrace | null;
  /** Call-site key whose blocks are flagged in blockHighlight. */
  highlightSite?: string | null;
  /** What highlightSite is (default "key"). */
  highlightBy?: SiteMatch;
}

/**
 * The segments alive at one moment and their blocks, address order. Block j of segment s is
 * blockOffset[j] bytes from the segment's start.
 */
export interface SegmentMapAnswer {
  event: IndexIntoTrace | null;
  segments: number;
  segAddress: Float64Array;
  segSize: Float64Array;
  /** bit 0 private pool, bit 1 expandable, bit 2 small pool. */
  segFlags: Uint8Array;
  segStream: Int32Array;
  segFirstBlock: Int32Array;
  segBlockCount: Int32Array;
  blocks: number;
  blockOffset: Float64Array;
  blockSize: Float64Array;
  blockRequested: Float64Array;
  /** 0 inactive (free), 1 allocated, 2 pending free, 3 unknown. */
  blockState: Uint8Array;
  blockCategory: Int32Array;
  /** Opaque id for blockDetail (the model's block index for the snapshot, an allocation id otherwise). */
  blockRef: Int32Array;
  /** 1 for blocks of the highlighted call site (all 0 without one). */
  blockHighlight: Uint8Array;
  /** bit 0: the block's category was inferred (no stack); bit 1: a torch_npu workspace block. */
  blockFlags: Uint8Array;
  /** True when the state came from the snapshot's segments; false when replayed. */
  fromSnapshot: boolean;
  note: string | null;
  stats: MapStats;
}

export interface MapStats {
  reservedBytes: Bytes;
  allocatedBytes: Bytes;
  pendingFreeBytes: Bytes;
  /** Free bytes inside reserved segments (inactive blocks / gaps). */
  freeBytes: Bytes;
  largestFreeBytes: Bytes;
  /** Σ (block size − requested) over allocated blocks with a known requested size. */
  roundingWasteBytes: Bytes;
  privatePoolSegments: number;
  expandableSegments: number;
  /** Allocated blocks whose category was inferred / torch_npu workspace blocks (in allocatedBytes). */
  inferredBytes: Bytes;
  workspaceBytes: Bytes;
}

export interface BlockDetail {
  address: number;
  sizeBytes: Bytes;
  requestedBytes: Bytes;
  state: string;
  category: string;
  site: string | null;
  rule: string | null;
  ruleDetail: string | null;
  segmentAddress: number;
  segmentSize: Bytes;
  stream: number;
  stack: StackView;
  emptyStackReason: string | null;
  inferred: InferredMark | null;
  /** A torch_npu workspace block: not in memory_allocated(), and its timing is not recorded. */
  workspace: boolean;
}

export interface FullStackQuery {
  device: number;
  kind: "alloc" | "block";
  ref: number;
  event: IndexIntoTrace | null;
}

export interface PeakscopeApi extends TimelineLayersApi {
  /**
   * Reads a snapshot in slices inside the worker; replaces the open one. Progress (ProgressInfo) is
   * posted to `progress`, one way: a comlink.proxy callback would cost a reply message per update on
   * both threads while they are busiest (the port is closed when the open ends).
   */
  open(file: Blob, name: string, progress?: MessagePort): Promise<OpenResult>;
  /**
   * Downloads `href` (absolute, http or https) and reads it while it downloads; progress says
   * "downloading" until the last byte is in. A failed download answers ok: false with the message
   * (HTTP status, refused by CORS, mixed content) for `page`, the page's origin and protocol.
   */
  openUrl(
    href: string,
    name: string,
    page: { origin: string; protocol: string },
    progress?: MessagePort,
  ): Promise<OpenResult>;
  /** Aborts the open in progress (its promise resolves with cancelled: true). */
  cancel(): void;
  /** Drops the open model. */
  close(): void;
  panel(device: number): Promise<PanelAnswer>;
  /** Uses a counters sidecar (its JSON text) for the report's checks; null drops it. Throws the parser's message. */
  setCounters(text: string | null, name: string): Promise<void>;
  timeline(q: TimelineQuery): Promise<TimelineAnswer>;
  bands(q: BandsQuery): Promise<BandsAnswer>;
  allocation(device: number, alloc: number): Promise<AllocationDetail | null>;
  /** Allocation ids whose stacks resolve to this call site (for highlighting). */
  siteAllocations(device: number, site: string, by?: SiteMatch): Promise<Int32Array>;
  segmentMap(q: SegmentMapQuery): Promise<SegmentMapAnswer>;
  block(q: SegmentMapQuery, ref: number): Promise<BlockDetail | null>;
  fullStack(q: FullStackQuery): Promise<FrameText[]>;
  /** Allocator health of a device (workers/health.ts): verdicts, pending frees, fragmentation. */
  health(device: number): Promise<HealthAnswer>;
  /** Steps of this device's trace and what grows between them (workers/leaks.ts, core traceLeaks). */
  leaks(device: number): Promise<LeaksAnswer>;
  /** The health curves (cached, pending, inactive split) bucketed like `timeline`, for its overlay. */
  healthTimeline(q: TimelineQuery): Promise<HealthTimelineAnswer>;
  /** What if (workers/whatif.ts): the ranked suggestions for getting the peak down (no curves). */
  whatIfSuggest(q: WhatIfSuggestQuery): Promise<WhatIfSuggestAnswer>;
  /** One what-if (CLI options): its new peak and composition. */
  whatIf(q: WhatIfQuery): Promise<WhatIfAnswer>;
  /** The what-if's allocated curve, bucketed like `timeline`, for the timeline's dashed overlay. */
  whatIfCurve(q: WhatIfCurveQuery): Promise<WhatIfCurveAnswer>;
  /** The CLI options for "what if this selection were gone / halved / freed early / recomputed". */
  whatIfSpecs(q: WhatIfSpecsQuery): Promise<WhatIfSpecsAnswer>;
  /** The HTML report (`peakscope report FILE --html`) of the open file, as one string (workers/save-report.ts). */
  reportHtml(): Promise<ReportHtmlAnswer>;
  /** The call tree of the live allocated memory at a moment, pruned (workers/tree.ts). */
  tree(q: TreeQuery): Promise<TreeAnswer>;
  /** The whole call tree as folded stacks, JSON or CSV text (for a download made in the page). */
  treeExport(q: TreeQuery, format: TreeExportFormat): Promise<string>;
  /** The search's matching live bytes over the timeline, bucketed like `timeline`. */
  treeSearchTimeline(q: TreeSearchTimelineQuery): Promise<TreeSearchTimelineAnswer>;
  /** The "each allocation" bands whose stack matches the search. */
  treeSearchBands(q: BandsQuery & { search: string; ownCodeOnly: boolean }): Promise<BandsAnswer>;
  /** The segment map refs (blocks at the snapshot, allocations at an event) whose stack matches. */
  treeSearchRefs(q: TreeSearchRefsQuery): Promise<Int32Array>;
  /** The trace's compile_context regions (runs of events with the same context). */
  compileRegions(device: number): Promise<CompileRegionsAnswer>;
}

/** The comparison of the two open files, computed where both models live (one worker, two engines). */
export interface CompareAnswer {
  /**
   * `buildReport(A, { other: B, counters: A's sidecar, otherCounters: B's sidecar }).compare`: exactly the
   * `compare` section of `peakscope report A --compare B --json` (other − base = B − A): the snapshots, and
   * `compare.atPeaks` each file at its peak (null when either has no trace to replay).
   */
  compare: CompareJson;
  baseFile: string;
  baseTotals: TotalsJson;
}

/**
 * The worker's root interface: two engines (side 0 = A, the base; side 1 = B, the other), each behind its
 * own PeakscopeApi proxy, and the comparison between them. The page ends the whole worker (a fresh one
 * serves the next file) whenever it opens a file on its own, so a replaced model never lingers.
 */
export interface WorkerApi {
  /** The API of one side; a comlink proxy (answers are still transferred). */
  side(index: 0 | 1): PeakscopeApi & ProxyMarked;
  /** `base` is the side compared against (A); the other is B. Both must be open. */
  compare(base: 0 | 1): Promise<CompareAnswer>;
  /**
   * Opens a small snapshot (workers/warm-up.ts) `rounds` times and forgets it, so that the parser,
   * attribution and replay are compiled before the user's file arrives. Stops when a side opens a file.
   */
  warmUp(rounds: number): Promise<void>;
  /**
   * The rank overview (workers/ranks.ts): reads one snapshot, summarises it as `peakscope ranks` does, keeps
   * a ≤ 400-point curve and drops the model. Used in workers of its own, never beside an open side.
   */
  rankSummary(
    file: Blob,
    name: string,
    counters: { text: string; name: string } | null,
  ): Promise<RankFileResult>;
  /**
   * The series view (workers/series.ts): reads one dump, summarises it (core summarizeDump) and drops the
   * model. Used in workers of its own, two at a time, like rankSummary.
   */
  seriesSummary(
    file: Blob,
    name: string,
    counters: { text: string; name: string } | null,
  ): Promise<SeriesFileResult>;
  /** The call tree B − A (workers/tree.ts `treeDiff`), `base` being A; both sides open. */
  treeDiff(base: 0 | 1, q: TreeDiffQuery): Promise<TreeDiffAnswer>;
  /**
   * Before the page ends this worker: stops the warm-up and the sides' loads, and ends the reader worker
   * this one started (workers/parallel-reader.ts `stopReader`), answering once the reader has had time to
   * end. The page terminates the worker after the answer (or after a timeout, if it is busy).
   */
  shutdown(): Promise<void>;
}
