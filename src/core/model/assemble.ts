// Turns unpickled values (or parsed JSON, converted to the same value classes) into a SnapshotModel.
// The hooks run while the pickle streams in: frame lists become stack ids as soon as they are complete,
// trace entries go straight into typed-array columns, and the memo's references to them are dropped,
// so a 1 GB file never exists as millions of JS objects.

import { SnapshotReadError } from "../formats/errors";
import { Memo } from "../pickle/memo";
import type { UnpickleHooks } from "../pickle/unpickler";
import { describeValue, isSequence, PyDict, PyList, PySet, sequenceItems } from "../pickle/values";
import { ModelBuilder, type RowSet, TraceColumns } from "./builder";
import { type LoadPreview, PreviewAccumulator } from "./preview";
import { setAside } from "./recycled-memory";
import { CONSUMED, type EntrySink, StackRef, StagedEntry, TraceEntryScanner } from "./trace-scanner";
import {
  Action,
  EMPTY_STACK,
  type HostSegment,
  NO_STRING,
  type SnapshotModel,
  type SnapshotSource,
  type TraceTable,
} from "./types";
import { StagedRun, WasmTraceScanner } from "./wasm-scanner";
import { BLOCK_FIELDS, Blk, Has, SEGMENT_FIELDS, Seg, SegmentRun } from "./wasm-segments";

const KNOWN_TOP_KEYS = new Set([
  "segments",
  "device_traces",
  "allocator_settings",
  "external_annotations",
  "host_segments",
  "host_traces",
]);

export class SnapshotAssembler implements EntrySink {
  readonly builder = new ModelBuilder();
  /** Trace rows in file order; each device list records which rows it holds. */
  readonly staging = new TraceColumns();
  private readonly previewRows = new PreviewAccumulator();
  private readonly stackRefs: StackRef[] = [];
  // small, so that the warm-up file grows it (see StackBytesCache)
  private frameScratch = new Int32Array(8);
  private memo = new Memo();
  /**
   * Parses trace entries straight from the pickle bytes (the unpickler offers it every dict): the
   * WebAssembly scanner, which hands what it gives up on to the JavaScript one.
   */
  readonly scanner: WasmTraceScanner;
  private readonly notes: string[] = [];
  private lostPrecision = false;

  /**
   * `wasm: false` parses trace entries with the JavaScript scanner alone (for comparisons).
   * `sharedMemory`: the WebAssembly scanner's memory is shared (a big file read with a warmer thread);
   * `sliceBytes` of it are then for the file's slices to be read into (WasmTraceScanner.sliceMemory).
   */
  constructor(options: { wasm?: boolean; sharedMemory?: boolean; sliceBytes?: number } = {}) {
    this.scanner = new WasmTraceScanner(
      this,
      new TraceEntryScanner(this),
      options.wasm ?? true,
      options.sharedMemory ?? false,
      options.sliceBytes ?? 0,
    );
  }

  readonly hooks: UnpickleHooks = {
    onSetItem: (key, value) =>
      key === "frames" ? this.toStack(value) : key === "forward_frames" ? this.toForwardStack(value) : value,
    // Fast path: a trace entry dict (torch writes "action" first) goes straight into columns.
    setItemsBatch: (dict, items, from) => {
      if (dict.k.length !== 0 || items[from] !== "action") return false;
      dict.row = this.stageTracePairs(items, from, items.length);
      return true;
    },
    // Fast path: a frame list is interned from the unpickler's stack without being built. Python
    // batches APPENDS by 1000, so a batch of exactly 1000 may continue: leave that to the slow path.
    // A batch of entries the scanner staged goes into the list as its rows.
    appendBatch: (list, items, from) => {
      const n = items.length - from;
      if (items[from] instanceof StagedRun || items[from] instanceof StagedEntry)
        return this.appendStaged(list, items, from);
      if (list.items.length !== 0 || list.rowCount !== 0 || n === 1000) return false;
      if (this.frameScratch.length < n) this.frameScratch = new Int32Array(n * 2);
      const ids = this.frameScratch;
      for (let i = 0; i < n; i++) {
        const f = items[from + i];
        if (!(f instanceof PyDict)) return false;
        if (f.tag >= 0) ids[i] = f.tag;
        else if (f.has("filename")) ids[i] = this.frameId(f);
        else return false;
      }
      list.tag = this.builder.internStack(ids, n);
      return true;
    },
    consume: (list, item) => {
      if (item instanceof StagedEntry) {
        list.addRow(item.row);
        return true;
      }
      if (item instanceof StagedRun) {
        list.addRows(item.row, item.count);
        return true;
      }
      if (!(item instanceof PyDict)) return false;
      if (item.row < 0) {
        if (item.tag >= 0 || (item.k[0] !== "action" && !item.has("action"))) return false;
        item.row = this.stageTraceEntry(item);
      }
      list.addRow(item.row);
      if (item.memo >= 0) this.memo.set(item.memo, CONSUMED, true);
      return true;
    },
  };

  /** Adds a batch of staged entries to a device list as rows; false when the batch holds anything else. */
  private appendStaged(list: PyList, items: ArrayLike<unknown>, from: number): boolean {
    for (let i = from; i < items.length; i++) {
      const item = items[i];
      if (!(item instanceof StagedEntry) && !(item instanceof StagedRun)) return false;
    }
    for (let i = from; i < items.length; i++) {
      const item = items[i];
      if (item instanceof StagedRun) list.addRows(item.row, item.count);
      else list.addRow((item as StagedEntry).row);
    }
    return true;
  }

  /** Trace entries staged so far. */
  get stagedRows(): number {
    return this.staging.length;
  }

  /** Sizes the staging columns for about `rows` entries in all (an estimate from the bytes read). */
  expectRows(rows: number): void {
    this.staging.reserve(rows, () => this.scanner.memoColumn(rows));
  }

  /** Memory over the trace entries read so far (a first picture while a big file loads). */
  preview(buckets: number): LoadPreview {
    this.previewRows.update(this.staging);
    return this.previewRows.preview(buckets);
  }

  /** The unpickler's memo, so consumed values can be released from it. */
  attachMemo(memo: Memo): void {
    this.memo = memo;
  }

  stackRef(id: number): StackRef {
    let ref = this.stackRefs[id];
    if (ref === undefined) ref = this.stackRefs[id] = new StackRef(id);
    return ref;
  }

  /** Interns the frame dicts among items[from..to) as one stack, innermost first. */
  private internFrames(items: ArrayLike<unknown>, from: number, to: number): number {
    if (this.frameScratch.length < to - from) this.frameScratch = new Int32Array((to - from) * 2);
    const ids = this.frameScratch;
    let n = 0;
    for (let i = from; i < to; i++) {
      const f = items[i];
      if (f instanceof PyDict) ids[n++] = this.frameId(f);
    }
    return this.builder.internStack(ids, n);
  }

  /** A frames value (list, tuple, or an already interned list) as a StackRef; other values unchanged. */
  private toStack(value: unknown): unknown {
    if (value instanceof StackRef || !isSequence(value)) return value;
    let id: number;
    if (value instanceof PyList && value.tag >= 0) id = value.tag;
    else {
      const items = sequenceItems(value);
      id = this.internFrames(items, 0, items.length);
    }
    const ref = this.stackRef(id);
    if (value instanceof PyList && value.memo >= 0) this.memo.set(value.memo, ref, true);
    return ref;
  }

  /**
   * A forward_frames value (traceback strings, `  File "…", line N, in NAME\n    code`, outermost first as
   * anomaly mode stores them) as a StackRef of a stack innermost first; other values unchanged.
   */
  private toForwardStack(value: unknown): unknown {
    if (value instanceof StackRef || !isSequence(value)) return value;
    const items = sequenceItems(value);
    if (this.frameScratch.length < items.length) this.frameScratch = new Int32Array(items.length * 2);
    const ids = this.frameScratch;
    let n = 0;
    for (let i = items.length - 1; i >= 0; i--) {
      const s = items[i];
      if (typeof s !== "string") continue;
      const m = TRACEBACK_LINE.exec(s);
      ids[n++] = m
        ? this.builder.internFrame(m[1], Number(m[2]), m[3].trim())
        : this.builder.internFrame("", 0, s.trim().split("\n")[0]);
    }
    const ref = this.stackRef(this.builder.internStack(ids, n));
    if (value instanceof PyList && value.memo >= 0) this.memo.set(value.memo, ref, true);
    return ref;
  }

  frameIdOf(d: PyDict): number {
    if (d.tag >= 0) return d.tag;
    return d.has("filename") ? this.frameId(d) : -1;
  }

  private frameId(d: PyDict): number {
    if (d.tag >= 0) return d.tag;
    const id = this.builder.internFrame(text(d.get("filename")), int(d.get("line")), text(d.get("name")));
    d.tag = id;
    return id;
  }

  private num(v: unknown): number {
    if (typeof v === "number") return v;
    if (typeof v === "bigint") {
      if (
        !this.lostPrecision &&
        (v > BigInt(Number.MAX_SAFE_INTEGER) || v < -BigInt(Number.MAX_SAFE_INTEGER))
      ) {
        this.lostPrecision = true;
        this.notes.push(`an address or size (${v}) is beyond 2^53; it is shown rounded to ${Number(v)}`);
      }
      return Number(v);
    }
    if (typeof v === "boolean") return v ? 1 : 0;
    return Number.NaN;
  }

  private optString(v: unknown): number {
    if (v === undefined || v === null) return NO_STRING;
    if (typeof v === "string") return this.builder.internString(v);
    return this.builder.internString(JSON.stringify(toPlain(v)));
  }

  private stageTraceEntry(d: PyDict): number {
    const pairs: unknown[] = [];
    for (let i = 0; i < d.k.length; i++) pairs.push(d.k[i], d.v[i]);
    return this.stageTracePairs(pairs, 0, pairs.length);
  }

  /** Writes one trace entry, given as key/value pairs items[from..to), as a staged row. */
  private stageTracePairs(items: ArrayLike<unknown>, from: number, to: number): number {
    let action = "";
    let addr = Number.NaN;
    let size = 0;
    let stream = 0;
    let time = Number.NaN;
    let stack = EMPTY_STACK;
    let deviceFree = Number.NaN;
    let compileContext = NO_STRING;
    let userMetadata = NO_STRING;
    let category = NO_STRING;
    let forward = EMPTY_STACK;
    for (let i = from; i + 1 < to; i += 2) {
      const v = items[i + 1];
      switch (items[i]) {
        case "action":
          action = typeof v === "string" ? v : String(v);
          break;
        case "addr":
          addr = this.num(v);
          break;
        case "size":
          size = this.num(v);
          break;
        case "stream":
          stream = this.num(v);
          break;
        case "time_us":
          time = this.num(v);
          break;
        case "frames": {
          const ref = this.toStack(v);
          if (ref instanceof StackRef) stack = ref.id;
          break;
        }
        case "device_free":
          deviceFree = this.num(v);
          break;
        case "compile_context":
          compileContext = this.optString(v);
          break;
        case "user_metadata":
          userMetadata = v === "" ? NO_STRING : this.optString(v);
          break;
        case "category":
          category = this.optString(v);
          break;
        case "forward_frames": {
          const ref = this.toForwardStack(v);
          if (ref instanceof StackRef) forward = ref.id;
          break;
        }
      }
    }
    const row = this.stageRow(
      this.builder.actionId(action),
      addr,
      size,
      stream,
      time,
      stack,
      deviceFree,
      compileContext,
      userMetadata,
      category,
    );
    if (forward !== EMPTY_STACK) this.staging.forward.set(row, forward);
    return row;
  }

  /** Stages one trace entry's row (the device is known only when its list closes). */
  stageRow(
    action: number,
    addr: number,
    sizeBytes: number,
    streamRaw: number,
    timeUs: number,
    stack: number,
    deviceFreeBytes: number,
    compileContext: number,
    userMetadata: number,
    category: number,
  ): number {
    return this.staging.pushRow(
      action,
      addr,
      sizeBytes,
      streamRaw,
      this.builder.streamNumber(streamRaw),
      timeUs,
      stack,
      deviceFreeBytes,
      compileContext,
      userMetadata,
      category,
    );
  }

  private stackOf(v: unknown): number {
    const ref = v instanceof StackRef ? v : this.toStack(v);
    return ref instanceof StackRef ? ref.id : EMPTY_STACK;
  }

  private addSegments(list: unknown): void {
    if (!isSequence(list))
      throw notSnapshot(`"segments" holds ${describeValue(list)}, not a list of segments`);
    let skipped = 0;
    for (const seg of sequenceItems(list)) {
      if (seg instanceof SegmentRun) {
        this.addScannedSegments(seg);
        continue;
      }
      if (!(seg instanceof PyDict)) {
        skipped++;
        continue;
      }
      const pool = seg.get("segment_pool_id");
      const poolItems = isSequence(pool) ? sequenceItems(pool) : null;
      this.builder.addSegment({
        device: int(seg.get("device")),
        address: this.num(seg.get("address")),
        totalSizeBytes: this.num(seg.get("total_size")) || 0,
        allocatedSizeBytes: this.num(seg.get("allocated_size")) || 0,
        activeSizeBytes: this.num(seg.get("active_size")) || 0,
        requestedSizeBytes: seg.has("requested_size") ? this.num(seg.get("requested_size")) : undefined,
        streamRaw: this.num(seg.get("stream")) || 0,
        segmentType:
          typeof seg.get("segment_type") === "string" ? (seg.get("segment_type") as string) : undefined,
        poolId:
          poolItems && poolItems.length >= 2 ? [this.num(poolItems[0]), this.num(poolItems[1])] : undefined,
        isExpandable: seg.get("is_expandable") === true,
        stack: this.stackOf(seg.get("frames")),
      });
      const blocks = seg.get("blocks");
      if (!isSequence(blocks)) continue;
      for (const b of sequenceItems(blocks)) {
        if (!(b instanceof PyDict)) continue;
        let stack = this.stackOf(b.get("frames"));
        let requested = b.has("requested_size") ? this.num(b.get("requested_size")) : undefined;
        const history = b.get("history");
        if (!b.has("frames") && isSequence(history)) {
          // torch 2.0: the stack and the requested size live in history[0]
          this.builder.legacyHistory = true;
          const first = sequenceItems(history)[0];
          if (first instanceof PyDict) {
            stack = this.stackOf(first.get("frames"));
            if (requested === undefined && first.has("real_size"))
              requested = this.num(first.get("real_size"));
          }
        }
        const id = this.builder.addBlock({
          address: b.has("address") ? this.num(b.get("address")) : undefined,
          sizeBytes: this.num(b.get("size")) || 0,
          requestedSizeBytes: requested,
          state: typeof b.get("state") === "string" ? (b.get("state") as string) : "unknown",
          stack,
        });
        if (b.has("forward_frames")) {
          const ref = this.toForwardStack(b.get("forward_frames"));
          if (ref instanceof StackRef && ref.id !== EMPTY_STACK) this.builder.blockForward.set(id, ref.id);
        }
      }
    }
    if (skipped > 0)
      this.notes.push(`${skipped} entries of "segments" are not segment dicts and were skipped`);
  }

  /** addSegments() for the segments the WebAssembly scanner read: the same fields from its rows. */
  private addScannedSegments(run: SegmentRun): void {
    const { segments: S, blocks: B, segmentTypes, states } = run.rows;
    let b = run.rows.firstBlock(run.first);
    for (let i = run.first; i < run.first + run.count; i++) {
      const r = i * SEGMENT_FIELDS;
      const has = S[r + Seg.has];
      this.builder.addSegment({
        device: S[r + Seg.device],
        address: S[r + Seg.address],
        totalSizeBytes: S[r + Seg.total] || 0,
        allocatedSizeBytes: S[r + Seg.allocated] || 0,
        activeSizeBytes: S[r + Seg.active] || 0,
        requestedSizeBytes: has & Has.requested ? S[r + Seg.requested] : undefined,
        streamRaw: S[r + Seg.stream] || 0,
        segmentType: segmentTypes[i],
        poolId: has & Has.pool ? [S[r + Seg.poolA], S[r + Seg.poolB]] : undefined,
        isExpandable: S[r + Seg.expandable] === 1,
        stack: S[r + Seg.stack],
      });
      for (const last = b + S[r + Seg.blocks]; b < last; b++) {
        const k = b * BLOCK_FIELDS;
        const blockHas = B[k + Blk.has];
        this.builder.addBlock({
          address: blockHas & Has.address ? B[k + Blk.address] : undefined,
          sizeBytes: B[k + Blk.size] || 0,
          requestedSizeBytes: blockHas & Has.requested ? B[k + Blk.requested] : undefined,
          state: states[b],
          stack: B[k + Blk.stack],
        });
      }
    }
  }

  /** The staged row of a trace entry left in a list or tuple (not consumed on the way), or -1. */
  private rowOf(item: unknown): number {
    if (item instanceof StagedEntry) return item.row;
    if (!(item instanceof PyDict)) return -1;
    if (item.row >= 0) return item.row;
    return item.has("action") ? (item.row = this.stageTraceEntry(item)) : -1;
  }

  private rowsOf(list: PyList | readonly unknown[]): RowSet {
    // the usual case: a device list whose entries were all staged, one after another
    if (list instanceof PyList && list.items.length === 0 && list.extraRows === null && list.rowStart >= 0)
      return { start: list.rowStart, count: list.rowCount };
    const rows = list instanceof PyList ? list.rows() : [];
    for (const item of list instanceof PyList ? list.items : list) {
      const row = this.rowOf(item);
      if (row >= 0) rows.push(row);
    }
    return rows;
  }

  private addTraces(traces: unknown): void {
    if (!isSequence(traces)) {
      this.notes.push(`"device_traces" holds ${describeValue(traces)}, not a list; no trace was read`);
      return;
    }
    const workspace = this.builder.actionId("workspace_snapshot");
    const rowsByDevice = sequenceItems(traces).map((list) => (isSequence(list) ? this.rowsOf(list) : []));
    const tables = this.staging.gatherAll(rowsByDevice);
    for (const table of tables) markWorkspacePrefix(table, workspace);
    this.builder.setTraceTables(tables);
  }

  /** Pinned host memory: its segments (one per block) and its flat trace, kept apart from the devices. */
  private addHost(segments: unknown, traces: unknown): void {
    const segs: HostSegment[] = [];
    if (isSequence(segments)) {
      for (const seg of sequenceItems(segments)) {
        if (!(seg instanceof PyDict)) continue;
        const blocks = seg.get("blocks");
        const first = isSequence(blocks) ? sequenceItems(blocks)[0] : undefined;
        const blockStack = first instanceof PyDict ? this.stackOf(first.get("frames")) : EMPTY_STACK;
        segs.push({
          address: this.num(seg.get("address")),
          totalSizeBytes: this.num(seg.get("total_size")) || 0,
          allocatedSizeBytes: this.num(seg.get("allocated_size")) || 0,
          requestedSizeBytes: seg.has("requested_size") ? this.num(seg.get("requested_size")) : Number.NaN,
          stack: blockStack !== EMPTY_STACK ? blockStack : this.stackOf(seg.get("frames")),
        });
      }
    }
    const trace = isSequence(traces) ? this.staging.gatherAll([this.rowsOf(traces)])[0] : null;
    if (segs.length === 0 && (trace === null || trace.length === 0)) return;
    this.builder.host = {
      segments: segs,
      trace: trace ? { ...trace, device: -1 } : this.staging.gatherAll([[]])[0],
    };
  }

  finish(root: unknown, source: SnapshotSource): SnapshotModel {
    this.scanner.release();
    const b = this.builder;
    if (root instanceof PyDict) {
      if (!root.has("segments") && !root.has("device_traces")) {
        throw notSnapshot(
          `the file holds ${describeValue(root)}, not a memory snapshot (no "segments" or "device_traces")`,
        );
      }
      if (root.has("segments")) this.addSegments(root.get("segments"));
      if (root.has("device_traces")) this.addTraces(root.get("device_traces"));
      else b.setTraceTables([]);
      const settings = root.get("allocator_settings");
      if (settings instanceof PyDict) b.allocatorSettings = toPlain(settings) as Record<string, unknown>;
      const annotations = root.get("external_annotations");
      if (isSequence(annotations)) {
        for (const a of sequenceItems(annotations)) {
          if (!(a instanceof PyDict)) continue;
          b.annotations.push({
            name: text(a.get("name")),
            stage: text(a.get("stage")),
            device: int(a.get("device")),
            timeUs: this.num(a.get("time_us")),
          });
        }
      }
      const hostSegments = root.get("host_segments");
      if (isSequence(hostSegments)) b.hostSegmentCount = sequenceItems(hostSegments).length;
      const hostTraces = root.get("host_traces");
      if (hostTraces instanceof PyList) b.hostTraceCount = hostTraces.rowCount + hostTraces.items.length;
      this.addHost(hostSegments, hostTraces);
      const unknown = root.k.filter((k) => typeof k !== "string" || !KNOWN_TOP_KEYS.has(k));
      if (unknown.length > 0)
        this.notes.push(`unrecognised top-level keys kept aside: ${unknown.map(String).join(", ")}`);
    } else if (
      isSequence(root) &&
      sequenceItems(root).every((s) => s instanceof PyDict && (s.has("blocks") || s.has("total_size")))
    ) {
      b.layout = "segment-list";
      this.addSegments(root);
      b.setTraceTables([]);
    } else {
      throw notSnapshot(
        `the file holds ${describeValue(root)}, not a memory snapshot (expected a dict with "segments" and "device_traces", or a list of segments)`,
      );
    }
    const model = b.finish({
      ...source,
      notes: [...source.notes, ...this.notes],
      traceEntriesByWasm: this.scanner.wasmEntries,
    });
    this.staging.handOnWarmMemory();
    // The replay's per-event total (a float64 per entry of the trace replayed) is the biggest column
    // the analysis takes, and its last: its memory is set aside while the recycled regions are whole.
    let longest = 0;
    for (const t of model.traces) longest = Math.max(longest, t.length);
    setAside(8 * longest);
    return model;
  }
}

/**
 * torch_npu prepends its workspace allocator's entries to a device's list: per workspace block a
 * `workspace_snapshot` followed by that block's `segment_alloc` and `alloc` (same address). They are not
 * in time order with the rest of the list. Mark that leading run; keep file order.
 */
function markWorkspacePrefix(t: TraceTable, workspaceAction: number): void {
  let i = 0;
  while (i < t.length && t.action[i] === workspaceAction) {
    const addr = t.addr[i];
    t.isWorkspace[i++] = 1;
    for (let n = 0; n < 2 && i < t.length; n++, i++) {
      const a = t.action[i];
      if ((a !== Action.segment_alloc && a !== Action.alloc) || t.addr[i] !== addr) break;
      t.isWorkspace[i] = 1;
    }
  }
}

/** `  File "/path/model.py", line 42, in forward` (the first line of a traceback string). */
const TRACEBACK_LINE = /File "([^"]*)", line (\d+), in ([^\n]*)/;

function notSnapshot(message: string): SnapshotReadError {
  return new SnapshotReadError(
    "not-snapshot",
    `Not a memory snapshot: ${message}. Open a file written by torch.cuda.memory._dump_snapshot().`,
  );
}

function text(v: unknown): string {
  if (typeof v === "string") return v;
  if (v === undefined || v === null) return "";
  return String(v);
}

function int(v: unknown): number {
  if (typeof v === "number") return v;
  if (typeof v === "bigint") return Number(v);
  return 0;
}

/** Converts small unpickled values to plain JSON-safe data (depth-limited; keys become strings). */
export function toPlain(v: unknown, depth = 0): unknown {
  if (depth > 32) return "…";
  if (v instanceof PyDict) {
    return Object.fromEntries(v.k.map((k, i) => [String(k), toPlain(v.v[i], depth + 1)]));
  }
  if (v instanceof PyList) return v.items.map((x) => toPlain(x, depth + 1));
  if (Array.isArray(v)) return v.map((x) => toPlain(x, depth + 1));
  if (v instanceof PySet) return v.items.map((x) => toPlain(x, depth + 1));
  if (v instanceof StackRef) return `<stack ${v.id}>`;
  if (typeof v === "bigint") return v.toString();
  if (v instanceof Uint8Array) return `<${v.length} bytes>`;
  if (v === CONSUMED) return "<trace entry>";
  return v;
}
