// The one model every input variant is normalised into. Columnar: bulk data lives in typed arrays,
// every string once in `strings`, every distinct frame once in `frames`, every distinct stack once in
// `stacks`. Indices are plain numbers; the aliases below say what they index into.

export type IndexIntoStrings = number;
export type IndexIntoFrames = number;
/** Index into the stack table. EMPTY_STACK (0) is the empty stack: no frames recorded. */
export type IndexIntoStacks = number;
export type IndexIntoSegments = number;
export type IndexIntoBlocks = number;

export const EMPTY_STACK: IndexIntoStacks = 0;
/** Column value for "field absent" in Int32 string-index columns. */
export const NO_STRING = -1;

/** Known trace actions get fixed ids; unknown ones are appended to `actionNames` after these. */
export const Action = {
  alloc: 0,
  free_requested: 1,
  free_completed: 2,
  segment_alloc: 3,
  segment_free: 4,
  segment_map: 5,
  segment_unmap: 6,
  snapshot: 7,
  oom: 8,
  workspace_snapshot: 9,
  annotate: 10,
} as const;
export const KNOWN_ACTIONS: readonly string[] = Object.keys(Action);

export const BlockState = {
  inactive: 0,
  active_allocated: 1,
  active_pending_free: 2,
  unknown: 3,
} as const;
export const BLOCK_STATE_NAMES = ["inactive", "active_allocated", "active_pending_free", "unknown"] as const;

export const SegmentType = { small: 0, large: 1, unknown: 2 } as const;

export interface FrameTable {
  length: number;
  filename: Int32Array; // IndexIntoStrings
  /** Float64: a real file holds line 2^64−1 (an unknown line), which Int32 would wrap. */
  line: Float64Array;
  name: Int32Array; // IndexIntoStrings
}

/** Stack s holds frameIds[offsets[s] .. offsets[s+1]), innermost frame first. Stack 0 is empty. */
export interface StackTable {
  length: number;
  offsets: Int32Array; // length + 1 entries
  frameIds: Int32Array; // IndexIntoFrames
}

export interface SegmentTable {
  length: number;
  device: Int32Array;
  address: Float64Array;
  totalSizeBytes: Float64Array;
  allocatedSizeBytes: Float64Array;
  activeSizeBytes: Float64Array;
  requestedSizeBytes: Float64Array; // NaN when absent
  /** The raw stream id from the file (pointer-like ints are normal). */
  streamRaw: Float64Array;
  /** Display number: index into SnapshotModel.streams. */
  stream: Int32Array;
  segmentType: Uint8Array; // SegmentType
  poolId0: Float64Array; // segment_pool_id[0], 0 when absent
  poolId1: Float64Array; // segment_pool_id[1], 0 when absent
  isExpandable: Uint8Array;
  stack: Int32Array; // IndexIntoStacks of the cudaMalloc
  firstBlock: Int32Array; // IndexIntoBlocks
  blockCount: Int32Array;
}

export interface BlockTable {
  length: number;
  segment: Int32Array; // IndexIntoSegments
  address: Float64Array;
  /** 1 when the file had no block address (torch 2.0) and it was computed from the segment. */
  addressComputed: Uint8Array;
  sizeBytes: Float64Array; // rounded
  requestedSizeBytes: Float64Array; // NaN when absent
  state: Uint8Array; // BlockState
  stack: Int32Array; // IndexIntoStacks
  /**
   * The forward stack (`forward_frames`, anomaly mode) of blocks allocated during backward, as a stack
   * (innermost first; EMPTY_STACK for none). Absent when no block in the file has one.
   */
  forwardStack?: Int32Array;
}

/**
 * A column of string ids (IndexIntoStrings or NO_STRING) stored as their difference from `base`, the
 * first entry's id: read with `idAt`. A column that never changes (no user_metadata, no category, the same
 * "N/A" compile context on every entry: most files) is then all zeros, and its pages are never written,
 * where -1 or an id on every entry was 12 bytes of fresh memory per entry (docs/speed.md).
 */
export interface IdColumn {
  readonly diff: Int32Array;
  readonly base: number;
  /** False when every entry's id is `base` (diff all zeros): loops may skip reading it. */
  readonly varies: boolean;
}

/** Entry i's id in an IdColumn. */
export function idAt(column: IdColumn, i: number): number {
  return column.diff[i] + column.base;
}

export interface TraceTable {
  device: number;
  length: number;
  action: Uint8Array; // index into SnapshotModel.actionNames
  addr: Float64Array; // NaN when absent (oom)
  sizeBytes: Float64Array; // requested (unrounded) size, see snapshot-format.md
  streamRaw: Float64Array;
  stream: Int32Array; // display number
  timeUs: Float64Array; // NaN when absent
  stack: Int32Array; // IndexIntoStacks
  deviceFreeBytes: Float64Array; // device_free where recorded (oom entries); an oom entry without: NaN; others 0
  compileContext: IdColumn; // IndexIntoStrings or NO_STRING
  userMetadata: IdColumn; // IndexIntoStrings or NO_STRING
  /** Profiler-made snapshots carry a category per entry; IndexIntoStrings or NO_STRING. */
  category: IdColumn;
  /** 1 for torch_npu's workspace-allocator entries prepended to the device list. */
  isWorkspace: Uint8Array;
  /**
   * `forward_frames` (anomaly mode: the forward stack of the autograd node whose backward made the entry)
   * as a stack, innermost first; EMPTY_STACK for none. Absent when no entry of the file has one.
   */
  forwardStack?: Int32Array;
  /**
   * True when every entry is on the default stream (0), as in most files: `stream` and `streamRaw` are
   * then zeros never written, and a pass over the entries need not read them (reading memory never
   * written faults its pages in as writing does, the costliest thing a big load does).
   */
  defaultStreamOnly?: boolean;
}

/** One pinned host block (`host_segments`: one segment per block, device -1). */
export interface HostSegment {
  address: number;
  totalSizeBytes: number;
  allocatedSizeBytes: number;
  requestedSizeBytes: number; // NaN when absent
  /** The block's stack when allocated, else the segment's. */
  stack: IndexIntoStacks;
}

/** Pinned host memory (`record_pinned_host_memory=True`): its own lane, never mixed with the devices. */
export interface HostMemory {
  segments: HostSegment[];
  /** `host_traces`: one flat list (device -1); sizes are rounded block sizes. */
  trace: TraceTable;
}

export interface Annotation {
  name: string;
  stage: string; // "START" | "END" as written
  device: number;
  timeUs: number; // NaN when absent
}

export type InputFormat =
  | "pickle"
  | "pickle+gzip"
  | "zip"
  | "json"
  | "segment-list"
  | "chrome-trace"
  | "chrome-trace+gzip"
  | "timeline-json"
  | "html";

/** What kind of file the model was read from (`report --json` source.kind). */
export type SourceKind = "snapshot" | "profiler-trace" | "memory-timeline" | "memoryviz-html";

/** A trace table's device as the file names it (`deviceType` "cuda", "cpu", …; CPU's id is -1). */
export interface SourceDevice {
  deviceType: string;
  deviceId: number;
}

export interface SnapshotSource {
  /** Absent: "snapshot". Set by the readers of other artifacts (src/core/formats/artifacts/). */
  kind?: SourceKind;
  /**
   * What this kind of file cannot contain, one sentence each (no segments, no stacks, a window-only
   * peak…): the views and the report show these instead of an empty panel.
   */
  lacks?: string[];
  /** The file has no segments: no segment map, no fragmentation, no state at a snapshot. */
  noSegments?: boolean;
  /** Trace sizes are the blocks' own sizes (a profiler's Bytes, a timeline's rows): replay them unrounded. */
  exactSizes?: boolean;
  /** Per trace table (model.traces index): the device as the file names it. Absent: CUDA, index = id. */
  devices?: SourceDevice[];
  /** The rank and world size when the file says (a profiler trace's distributedInfo). */
  rank?: number | null;
  worldSize?: number | null;
  fileName: string;
  byteLength: number;
  format: InputFormat;
  /** Protocol of the PROTO opcode; null when there was none (protocol 0/1) or the input is JSON. */
  pickleProtocol: number | null;
  /** Things worth telling the user that are not errors (trailing bytes after STOP, unknown keys…). */
  notes: string[];
  /**
   * Trace entries the WebAssembly scanner parsed (the rest went to the JavaScript one): 0 where
   * WebAssembly is unavailable or forbidden (a page whose CSP lacks 'wasm-unsafe-eval').
   */
  traceEntriesByWasm?: number;
  /**
   * The file's slices read into the WebAssembly scanner's shared memory and scanned there, without a
   * copy (a big file read where threads share memory: model/wasm-scanner.ts sliceMemory).
   */
  slicesReadInPlace?: number;
}

export interface SnapshotModel {
  source: SnapshotSource;
  /** "dict": {segments, device_traces, …}; "segment-list": the legacy bare list of segments. */
  layout: "dict" | "segment-list";
  /** torch 2.0 blocks with `history` instead of `frames`. */
  legacyHistory: boolean;
  strings: string[];
  frames: FrameTable;
  stacks: StackTable;
  segments: SegmentTable;
  blocks: BlockTable;
  /** One table per device index, in file order (device_traces[i]). May be empty. */
  traces: TraceTable[];
  /** Action id → name. The first KNOWN_ACTIONS.length are fixed; unknown actions follow. */
  actionNames: string[];
  /** Raw stream id of each display stream number, in order of first appearance. */
  streams: number[];
  annotations: Annotation[];
  allocatorSettings: Record<string, unknown> | null;
  /** Number of host (pinned memory) segments and trace entries, kept as counts only. */
  hostSegmentCount: number;
  hostTraceCount: number;
  /** host_segments / host_traces when the file has either (non-empty); else null or absent. */
  host?: HostMemory | null;
}

/** Counters sidecar: `<dump>.counters.json`, written by the process beside the dump. */
export interface CountersSidecar {
  memoryAllocatedBytes: number | null;
  memoryReservedBytes: number | null;
  maxMemoryAllocatedBytes: number | null;
  maxMemoryReservedBytes: number | null;
  device: number | null;
  tag: string | null;
  memoryStats: Record<string, number> | null;
  /** The device's total memory (`device_total_bytes`, from torch.cuda.mem_get_info()[1]); null when absent. */
  deviceTotalBytes?: number | null;
}
