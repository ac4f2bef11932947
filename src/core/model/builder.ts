// Builds a SnapshotModel incrementally: interns strings, frames and stacks as they stream in and
// appends rows to typed-array columns. The readers (pickle, JSON) and tests construct models with it.

import { Growable } from "./growable";
import { recycleMemory } from "./recycled-memory";
import {
  Action,
  type Annotation,
  BlockState,
  EMPTY_STACK,
  type IndexIntoFrames,
  type IndexIntoStacks,
  type IndexIntoStrings,
  KNOWN_ACTIONS,
  NO_STRING,
  SegmentType,
  type SnapshotModel,
  type SnapshotSource,
  type TraceTable,
} from "./types";
import { MIN_WARM_BYTES, type WarmMemory, type WarmRequest } from "./warm-memory";

export interface SegmentInput {
  device: number;
  address: number;
  totalSizeBytes: number;
  allocatedSizeBytes: number;
  activeSizeBytes: number;
  requestedSizeBytes?: number;
  streamRaw?: number;
  segmentType?: string;
  poolId?: [number, number];
  isExpandable?: boolean;
  stack?: IndexIntoStacks;
}

export interface BlockInput {
  /** Omit to compute from the segment address plus the sizes of the blocks before it. */
  address?: number;
  sizeBytes: number;
  requestedSizeBytes?: number;
  state: string;
  stack?: IndexIntoStacks;
}

export interface TraceEntryInput {
  action: string;
  addr?: number;
  sizeBytes?: number;
  streamRaw?: number;
  timeUs?: number;
  stack?: IndexIntoStacks;
  deviceFreeBytes?: number;
  compileContext?: string;
  userMetadata?: string;
  category?: string;
  isWorkspace?: boolean;
}

const BLOCK_STATES: Record<string, number> = {
  inactive: BlockState.inactive,
  active_allocated: BlockState.active_allocated,
  active_pending_free: BlockState.active_pending_free,
  // The docstring's spelling; real files use active_pending_free.
  active_awaiting_free: BlockState.active_pending_free,
};

/** Rows to take from staged columns: a list of row numbers, or a run of consecutive rows. */
export type RowSet = ArrayLike<number> | { readonly start: number; readonly count: number };

const TRACE_COLUMNS = [
  "action",
  "addr",
  "sizeBytes",
  "streamRaw",
  "stream",
  "timeUs",
  "stack",
  "deviceFreeBytes",
  "compileContext",
  "userMetadata",
  "category",
  "isWorkspace",
] as const;

/**
 * Memory outside the columns that the parser writes a few bytes of per row, from `offsetBytes` of
 * `buffer` on (the WebAssembly scanner's memo: wasm-scanner.ts memoColumn): the warmer faults it in
 * along with the rows (moveToShared).
 */
export interface SharedColumn {
  buffer: SharedArrayBuffer;
  offsetBytes: number;
  bytesPerRow: number;
}

/**
 * Rows the staging columns first make room for: what a big file stages before its rows are counted
 * (readSnapshot sizes them from the bytes per entry after 8 MiB, about 50 000 rows), so that they are not
 * grown (and copied) eight times before that. Room never written costs no memory, only address space.
 */
const FIRST_ROWS = 65536;

/**
 * The columns every trace entry writes (the others stay zero on most files, unwritten), with their bytes
 * per row: what warm memory is asked for, one buffer each, the narrowest first (it comes soonest, and
 * each column moves as soon as its own buffer has come: fewer of its rows are written twice). And
 * isWorkspace: zeros on all but torch_npu's files, but read by every pass over the entries, and the
 * first read of memory never written faults its pages in as a write does (25 ms at 1.05 GB in Node, on
 * the thread that must pair the trace before the attribution helper can start).
 */
const WARM_COLUMNS = [
  ["action", 1],
  ["isWorkspace", 1],
  ["stack", 4],
  ["addr", 8],
  ["sizeBytes", 8],
  ["timeUs", 8],
] as const;
type WarmColumnName = (typeof WARM_COLUMNS)[number][0];
const WARM_BYTES_PER_ROW = WARM_COLUMNS.reduce((sum, [, bytes]) => sum + bytes, 0);

/** The columns of string ids: stored as IdColumns (their difference from the first row's id). */
type IdColumnName = "compileContext" | "userMetadata" | "category";
function isIdColumn(name: string): name is IdColumnName {
  return name === "compileContext" || name === "userMetadata" || name === "category";
}

/**
 * What a batch of rows holds beyond the common case, a column each (the WebAssembly scanner's F_*, its
 * rowFlags()): a stream other than 0, a device_free or an oom entry, ids that differ from the first
 * row's. `all` where nothing is known.
 */
export const RowFlags = {
  streamRaw: 1,
  stream: 2,
  deviceFree: 4,
  compileContext: 8,
  userMetadata: 16,
  category: 32,
  all: 63,
} as const;

const ID_FLAG: Record<IdColumnName, number> = {
  compileContext: RowFlags.compileContext,
  userMetadata: RowFlags.userMetadata,
  category: RowFlags.category,
};

function allZero(xs: Float64Array | Int32Array | Uint8Array): boolean {
  for (let i = 0; i < xs.length; i++) if (xs[i] !== 0) return false;
  return true;
}

/**
 * Append-only columns of one device's trace (or of rows staged before their device is known). The
 * columns are contiguous, so a device whose rows are one run of staged rows gets views of them, not a
 * copy: on a big file, writing fresh memory costs more than the parsing (each page is zeroed and faulted
 * in), so every copy avoided counts. `reserve()` sizes them once from an estimate; growth copies.
 */
export class TraceColumns {
  length = 0;
  private capacity = 0;
  action = new Uint8Array(0);
  addr = new Float64Array(0);
  sizeBytes = new Float64Array(0);
  streamRaw = new Float64Array(0);
  stream = new Int32Array(0);
  timeUs = new Float64Array(0);
  stack = new Int32Array(0);
  deviceFreeBytes = new Float64Array(0);
  compileContext = new Int32Array(0);
  userMetadata = new Int32Array(0);
  category = new Int32Array(0);
  isWorkspace = new Uint8Array(0);
  /** The id columns' bases (IdColumn.base): the first row's ids; the columns above hold differences. */
  private readonly idBase: Record<IdColumnName, number> = { compileContext: 0, userMetadata: 0, category: 0 };
  /** The columns some row was written to (the others are all zeros, and are not copied on growth). */
  private readonly written = Object.fromEntries(TRACE_COLUMNS.map((name) => [name, false])) as Record<
    (typeof TRACE_COLUMNS)[number],
    boolean
  >;
  /**
   * The staged rows whose id differs from its base lie in [from, to), per id column (empty: from ≥ to).
   * A table varies (IdColumn.varies) only where its rows meet that span: the staging holds every table
   * of the file, and the host trace's entries ("" as compile_context where a device's say "N/A") would
   * otherwise make each device's column vary, which sends the replay and attribution down their
   * per-entry paths.
   */
  private readonly varying: Record<IdColumnName, { from: number; to: number }> = {
    compileContext: { from: Number.POSITIVE_INFINITY, to: 0 },
    userMetadata: { from: Number.POSITIVE_INFINITY, to: 0 },
    category: { from: Number.POSITIVE_INFINITY, to: 0 },
  };

  /** Rows [from, to) of an id column hold ids other than its base (some of them, at least). */
  private markVarying(name: IdColumnName, from: number, to: number): void {
    const v = this.varying[name];
    if (from < v.from) v.from = from;
    if (to > v.to) v.to = to;
    this.written[name] = true;
  }

  /** Where warm memory comes from, if anywhere (see warm-memory.ts); set before the first reserve(). */
  warmMemory: WarmMemory | null = null;
  /** Warm memory asked for at reserve() for `capacity` rows, by column: moved to by a push once come. */
  private warm: Partial<Record<WarmColumnName, WarmRequest>> | null = null;
  /** The columns living in warm memory: all `capacity` rows of them are (or, shared, will be) faulted in. */
  private readonly warmed = new Set<WarmColumnName>();
  /** Warm memory for the analysis's columns (WarmMemory.analysisBytesPerRow), handed on after the read. */
  private analysis: WarmRequest | null = null;
  /** Stops the warmer faulting in the shared columns (moveToShared), once they are left for bigger ones. */
  private stopPrefault: (() => void) | null = null;
  /** The analysis's shared memory (moveToShared), handed on after the read. */
  private sharedAnalysis: SharedArrayBuffer | null = null;

  /**
   * Makes room for `rows` rows in all (an estimate; more rows still fit, by growing), and asks for warm
   * memory for them: until it comes, rows are written to the fresh columns made here. Where threads share
   * memory, the columns are made in it instead, and faulted in ahead (moveToShared).
   */
  reserve(rows: number, more: () => SharedColumn | null = () => null): void {
    if (rows <= this.capacity) return;
    this.resize(rows);
    const memory = this.warmMemory;
    if (memory === null || rows * WARM_BYTES_PER_ROW < (memory.minBytes ?? MIN_WARM_BYTES)) return;
    if (memory.prefaultShared !== undefined && typeof SharedArrayBuffer === "function") {
      this.moveToShared(
        memory.prefaultShared,
        memory.analysisBytesPerRow ?? 0,
        more(),
        memory.onSharedColumns,
      );
      return;
    }
    const warm: Partial<Record<WarmColumnName, WarmRequest>> = {};
    for (const [name, bytes] of WARM_COLUMNS) warm[name] = memory.ask(rows * bytes);
    this.warm = warm;
    // last: the trace's own columns are needed first
    const analysisBytes = rows * (memory.analysisBytesPerRow ?? 0);
    if (analysisBytes > 0 && this.analysis === null) this.analysis = memory.ask(analysisBytes);
  }

  /**
   * Moves the columns every entry writes into shared memory of `capacity` rows (copying the rows so far),
   * whose pages the warmer thread faults in row by row ahead of the parser: no buffer to wait for, and no
   * copy when it comes (WarmMemory.prefaultShared). The analysis's memory is faulted in along with the
   * rows, so whatever part of it the warmer has reached by the end of the read is warm (a buffer asked for
   * whole, coming after the columns, sometimes came after the read and was dropped).
   */
  private moveToShared(
    prefault: NonNullable<WarmMemory["prefaultShared"]>,
    analysisBytesPerRow: number,
    more: SharedColumn | null,
    onShared: WarmMemory["onSharedColumns"],
  ): void {
    const buffers: SharedArrayBuffer[] = [];
    for (const [name, bytes] of WARM_COLUMNS) {
      const buffer = new SharedArrayBuffer(this.capacity * bytes);
      this.moveInto(name, bytes, buffer);
      buffers.push(buffer);
    }
    const bytesPerRow: number[] = WARM_COLUMNS.map(([, bytes]) => bytes);
    if (analysisBytesPerRow > 0) {
      this.sharedAnalysis = new SharedArrayBuffer(this.capacity * analysisBytesPerRow);
      buffers.push(this.sharedAnalysis);
      bytesPerRow.push(analysisBytesPerRow);
    }
    const offsets = buffers.map(() => 0);
    // the scanner's memo next to the columns (its rows are written as theirs are), the analysis's last
    if (more !== null) {
      buffers.splice(WARM_COLUMNS.length, 0, more.buffer);
      bytesPerRow.splice(WARM_COLUMNS.length, 0, more.bytesPerRow);
      offsets.splice(WARM_COLUMNS.length, 0, more.offsetBytes);
    }
    const stop = prefault(buffers, bytesPerRow, this.capacity, offsets);
    const told = onShared?.({
      action: this.action,
      isWorkspace: this.isWorkspace,
      addr: this.addr,
      sizeBytes: this.sizeBytes,
      stack: this.stack,
      rows: this.capacity,
      analysis: this.sharedAnalysis,
    });
    // (the analysis's memory, taken, is the other thread's: not handed on here)
    if (told?.tookAnalysis) this.sharedAnalysis = null;
    this.stopPrefault = () => {
      stop();
      told?.left();
    };
  }

  /** Moves each entry column whose warm memory has come into it (unless the columns grew meanwhile). */
  private adoptWarm(): void {
    const warm = this.warm as Partial<Record<WarmColumnName, WarmRequest>>;
    let left = 0;
    for (const [name, bytes] of WARM_COLUMNS) {
      const request = warm[name];
      if (request === undefined) continue;
      const buffer = request.take();
      if (buffer === null) {
        left++;
        continue;
      }
      delete warm[name];
      if (buffer.byteLength !== this.capacity * bytes) continue; // asked before a growth: too small
      this.moveInto(name, bytes, buffer);
    }
    if (left === 0) this.warm = null;
  }

  /** Moves a column into warm memory of `capacity` rows, copying the rows written so far. */
  private moveInto(name: WarmColumnName, bytes: number, buffer: ArrayBuffer | SharedArrayBuffer): void {
    const next =
      bytes === 8 ? new Float64Array(buffer) : bytes === 4 ? new Int32Array(buffer) : new Uint8Array(buffer);
    if (this.written[name]) next.set(this[name].subarray(0, this.length) as never);
    // a shared one is read and written as any column (their type names ArrayBuffer; none is transferred)
    (this as unknown as Record<WarmColumnName, typeof next>)[name] = next;
    this.warmed.add(name);
  }

  private resize(capacity: number): void {
    this.stopPrefault?.();
    this.stopPrefault = null;
    if (this.warm !== null) {
      // warm memory asked for the old capacity no longer fits
      for (const [name] of WARM_COLUMNS) this.warm[name]?.cancel();
      this.warm = null;
    }
    this.warmed.clear();
    const n = this.length;
    const written = this.written;
    // A column nothing was written to is all zeros, and so is its new array: only written ones are
    // copied (a copy writes fresh memory, the costliest thing a big read does; zeros were most of it).
    const grow = <T extends Float64Array | Int32Array | Uint8Array>(
      name: (typeof TRACE_COLUMNS)[number],
      old: T,
      make: (n: number) => T,
    ): T => {
      const next = make(capacity);
      if (written[name]) next.set(old.subarray(0, n) as never);
      return next;
    };
    this.action = grow("action", this.action, (c) => new Uint8Array(c));
    this.addr = grow("addr", this.addr, (c) => new Float64Array(c));
    this.sizeBytes = grow("sizeBytes", this.sizeBytes, (c) => new Float64Array(c));
    this.streamRaw = grow("streamRaw", this.streamRaw, (c) => new Float64Array(c));
    this.stream = grow("stream", this.stream, (c) => new Int32Array(c));
    this.timeUs = grow("timeUs", this.timeUs, (c) => new Float64Array(c));
    this.stack = grow("stack", this.stack, (c) => new Int32Array(c));
    this.deviceFreeBytes = grow("deviceFreeBytes", this.deviceFreeBytes, (c) => new Float64Array(c));
    this.compileContext = grow("compileContext", this.compileContext, (c) => new Int32Array(c));
    this.userMetadata = grow("userMetadata", this.userMetadata, (c) => new Int32Array(c));
    this.category = grow("category", this.category, (c) => new Int32Array(c));
    this.isWorkspace = grow("isWorkspace", this.isWorkspace, (c) => new Uint8Array(c));
    this.capacity = capacity;
  }

  /** Appends one row; returns its number. isWorkspace starts 0 (marked once the device lists are known). */
  pushRow(
    action: number,
    addr: number,
    sizeBytes: number,
    streamRaw: number,
    stream: number,
    timeUs: number,
    stack: number,
    deviceFreeBytes: number,
    compileContext: number,
    userMetadata: number,
    category: number,
  ): number {
    const row = this.length;
    if (row === this.capacity) this.resize(Math.max(FIRST_ROWS, Math.ceil(this.capacity * 1.5)));
    if (this.warm !== null && (row & 4095) === 0) this.adoptWarm();
    const base = this.idBase;
    const written = this.written;
    // (this rare path writes its values, zeros too; a stream is marked only when it is not the
    // default, so that defaultStreamOnly still holds)
    written.action = written.addr = written.sizeBytes = written.timeUs = written.stack = true;
    if (streamRaw !== 0) written.streamRaw = true;
    if (stream !== 0) written.stream = true;
    if (row === 0) {
      base.compileContext = compileContext;
      base.userMetadata = userMetadata;
      base.category = category;
    }
    this.action[row] = action;
    this.addr[row] = addr;
    this.sizeBytes[row] = sizeBytes;
    this.streamRaw[row] = streamRaw;
    this.stream[row] = stream;
    this.timeUs[row] = timeUs;
    this.stack[row] = stack;
    if (keepsDeviceFree(action, deviceFreeBytes)) {
      this.deviceFreeBytes[row] = deviceFreeBytes; // see pushRows
      written.deviceFreeBytes = true;
    }
    // (a difference of 0 is left unwritten: see IdColumn)
    if (compileContext !== base.compileContext) {
      this.compileContext[row] = compileContext - base.compileContext;
      this.markVarying("compileContext", row, row + 1);
    }
    if (userMetadata !== base.userMetadata) {
      this.userMetadata[row] = userMetadata - base.userMetadata;
      this.markVarying("userMetadata", row, row + 1);
    }
    if (category !== base.category) {
      this.category[row] = category - base.category;
      this.markVarying("category", row, row + 1);
    }
    this.length = row + 1;
    return row;
  }

  /** Staged row → forward stack, for the few entries that carry forward_frames (see TraceTable.forwardStack). */
  readonly forward = new Map<number, number>();

  /**
   * Appends `count` rows given as columns (all but isWorkspace, which starts 0); returns the first's
   * number. `has` (the WebAssembly scanner's RowFlags for these rows) names the columns that hold more
   * than the common case; a column it leaves out is not read row by row.
   */
  pushRows(from: Record<string, ArrayLike<number>>, count: number, has: number = RowFlags.all): number {
    const row = this.length;
    if (row + count > this.capacity)
      this.resize(Math.max(FIRST_ROWS, row + count, Math.ceil(this.capacity * 1.5)));
    if (this.warm !== null) this.adoptWarm();
    const written = this.written;
    for (const name of TRACE_COLUMNS) {
      if (name === "isWorkspace") continue;
      if (isIdColumn(name)) {
        const ids = from[name] as Int32Array;
        if (row === 0 && count > 0) this.idBase[name] = ids[0];
        const base = this.idBase[name];
        const column = this[name];
        if ((has & ID_FLAG[name]) === 0 && count > 0) {
          // every row holds the first's id
          if (ids[0] !== base) {
            column.fill(ids[0] - base, row, row + count);
            this.markVarying(name, row, row + count);
          }
          continue;
        }
        let first = -1;
        let last = -1;
        for (let j = 0; j < count; j++) {
          if (ids[j] !== base) {
            column[row + j] = ids[j] - base;
            if (first < 0) first = j;
            last = j;
          }
        }
        if (first >= 0) this.markVarying(name, row + first, row + last + 1);
        continue;
      }
      if (name === "deviceFreeBytes") {
        // Only the entries that recorded a device_free (oom entries) are written, and an oom entry that
        // did not (NaN); the rest stay 0, unwritten: NaN there was 8 bytes of fresh memory per entry.
        if ((has & RowFlags.deviceFree) === 0) continue; // none recorded, no oom entry
        const action = from.action as Uint8Array;
        const free = from.deviceFreeBytes as Float64Array;
        const column = this.deviceFreeBytes;
        for (let j = 0; j < count; j++)
          if (keepsDeviceFree(action[j], free[j])) {
            column[row + j] = free[j];
            written.deviceFreeBytes = true;
          }
        continue;
      }
      if (name === "streamRaw" && (has & RowFlags.streamRaw) === 0) continue;
      if (name === "stream" && (has & RowFlags.stream) === 0) continue;
      const part = (from[name] as Float64Array | Int32Array | Uint8Array).subarray(0, count);
      // Rows past `length` were never written, so they are zero: a run of zeros (the default stream in
      // `stream` and `streamRaw`, the only one most files have) is left unwritten. Memory never written
      // costs nothing, and writing fresh memory is most of what a big read spends.
      if (allZero(part)) continue;
      (this[name] as typeof part).set(part as never, row);
      written[name] = true;
    }
    this.length = row + count;
    return row;
  }

  /** One table per device from the given rows, in the order given: views for runs, copies for lists. */
  gatherAll(rowsByDevice: RowSet[]): TraceTable[] {
    return rowsByDevice.map((rows, device) => {
      const table =
        "start" in rows
          ? this.view(device, rows.start, rows.count)
          : (() => {
              const t = { device, length: rows.length } as Record<string, unknown>;
              for (const name of TRACE_COLUMNS) t[name] = this.column(name, pick(this[name], rows), rows);
              return t as unknown as TraceTable;
            })();
      if (this.forward.size > 0) {
        // only files with forward_frames pay for the column
        const col = new Int32Array(table.length);
        let any = false;
        for (let i = 0; i < table.length; i++) {
          const row = "start" in rows ? rows.start + i : rows[i];
          const s = this.forward.get(row);
          if (s !== undefined) {
            col[i] = s;
            any = true;
          }
        }
        if (any) table.forwardStack = col;
      }
      return table;
    });
  }

  finish(device: number): TraceTable {
    return this.view(device, 0, this.length);
  }

  /**
   * The read is over: a warm column's rows past `length` (the estimate's slack, ≈ 27 MB on a 1 GB file)
   * were faulted in by the warmer and no table views them, so they go to the recycled memory, for the
   * analysis's columns to take instead of fresh memory, and so does the warm memory asked for the
   * analysis (if it has come). Nothing may be pushed afterwards.
   */
  handOnWarmMemory(): void {
    const request = this.analysis;
    this.analysis = null;
    const analysis = request?.take() ?? null;
    if (analysis !== null) recycleMemory(analysis);
    else request?.cancel(); // not come yet: dropped when it does
    if (this.sharedAnalysis !== null) recycleMemory(this.sharedAnalysis);
    this.sharedAnalysis = null;
    for (const [name, bytes] of WARM_COLUMNS) {
      if (!this.warmed.has(name)) continue;
      const column = this[name];
      const from = column.byteOffset + this.length * bytes;
      recycleMemory(column.buffer, from, (this.capacity - this.length) * bytes);
    }
    this.warmed.clear();
    // a push from here on would grow (copying) rather than write into memory handed on
    this.capacity = this.length;
  }

  /** A table's column (its `rows`): the stored values, as an IdColumn for the id columns. */
  private column(
    name: (typeof TRACE_COLUMNS)[number],
    values: Float64Array | Int32Array | Uint8Array,
    rows: RowSet,
  ): unknown {
    if (!isIdColumn(name)) return values;
    const v = this.varying[name];
    // a list of rows: whether any staged row varies (they are few, or the trace is interleaved)
    const varies = "start" in rows ? v.from < rows.start + rows.count && v.to > rows.start : v.from < v.to;
    return { diff: values, base: this.idBase[name], varies };
  }

  private view(device: number, start: number, count: number): TraceTable {
    const table = { device, length: count } as Record<string, unknown>;
    for (const name of TRACE_COLUMNS)
      table[name] = this.column(name, this[name].subarray(start, start + count), { start, count });
    if (!this.written.stream && !this.written.streamRaw) table.defaultStreamOnly = true;
    return table as unknown as TraceTable;
  }
}

/**
 * Whether an entry's device_free is stored: when it was recorded (an oom entry's), and on an oom entry
 * that did not record one (as NaN). Every other entry reads 0 (TraceTable.deviceFreeBytes).
 */
function keepsDeviceFree(action: number, deviceFreeBytes: number): boolean {
  return Number.isNaN(deviceFreeBytes) ? action === Action.oom : deviceFreeBytes !== 0;
}

function pick<T extends Float64Array | Int32Array | Uint8Array>(column: T, rows: ArrayLike<number>): T {
  const out = new (column.constructor as { new (n: number): T })(rows.length);
  for (let i = 0; i < rows.length; i++) out[i] = column[rows[i]];
  return out;
}

export class ModelBuilder {
  readonly strings: string[] = [];
  private readonly stringIds = new Map<string, IndexIntoStrings>();

  private readonly frameFilename = new Growable(Int32Array);
  private readonly frameLine = new Growable(Float64Array);
  private readonly frameName = new Growable(Int32Array);
  private readonly frameIds = new Map<string, IndexIntoFrames>();

  private readonly stackOffsets = new Growable(Int32Array);
  private readonly stackFrames = new Growable(Int32Array);
  /** hash → first stack with that hash; collisions chain through stackNext. */
  private readonly stackByHash = new Map<number, IndexIntoStacks>();
  private readonly stackNext = new Growable(Int32Array);

  private readonly seg = {
    device: new Growable(Int32Array, 64),
    address: new Growable(Float64Array, 64),
    total: new Growable(Float64Array, 64),
    allocated: new Growable(Float64Array, 64),
    active: new Growable(Float64Array, 64),
    requested: new Growable(Float64Array, 64),
    streamRaw: new Growable(Float64Array, 64),
    stream: new Growable(Int32Array, 64),
    type: new Growable(Uint8Array, 64),
    pool0: new Growable(Float64Array, 64),
    pool1: new Growable(Float64Array, 64),
    expandable: new Growable(Uint8Array, 64),
    stack: new Growable(Int32Array, 64),
    firstBlock: new Growable(Int32Array, 64),
    blockCount: new Growable(Int32Array, 64),
  };
  private readonly blk = {
    segment: new Growable(Int32Array),
    address: new Growable(Float64Array),
    computed: new Growable(Uint8Array),
    size: new Growable(Float64Array),
    requested: new Growable(Float64Array),
    state: new Growable(Uint8Array),
    stack: new Growable(Int32Array),
  };
  /** Address where the next block of the open segment starts, for files without block addresses. */
  private nextBlockAddress = 0;

  private readonly traceColumns: TraceColumns[] = [];
  readonly actionNames: string[] = [...KNOWN_ACTIONS];
  private readonly actionIds = new Map<string, number>(KNOWN_ACTIONS.map((name, i) => [name, i]));
  readonly streams: number[] = [];
  private readonly streamIds = new Map<number, number>();
  /** The last stream looked up (nearly every entry is on the same stream as the one before). */
  private lastStreamRaw = Number.NaN;
  private lastStreamId = 0;

  annotations: Annotation[] = [];
  allocatorSettings: Record<string, unknown> | null = null;
  hostSegmentCount = 0;
  hostTraceCount = 0;
  host: import("./types").HostMemory | null = null;
  /** Block index → forward stack, for the few blocks that carry forward_frames. */
  readonly blockForward = new Map<number, number>();
  layout: "dict" | "segment-list" = "dict";
  legacyHistory = false;

  constructor() {
    this.stackOffsets.push(0);
    this.stackOffsets.push(0); // stack 0: the empty stack
    this.stackNext.push(-1);
  }

  internString(s: string): IndexIntoStrings {
    let id = this.stringIds.get(s);
    if (id === undefined) {
      id = this.strings.length;
      this.strings.push(s);
      this.stringIds.set(s, id);
    }
    return id;
  }

  internFrame(filename: string, line: number, name: string): IndexIntoFrames {
    const key = `${filename}\u0000${line}\u0000${name}`;
    let id = this.frameIds.get(key);
    if (id === undefined) {
      id = this.frameLine.length;
      this.frameFilename.push(this.internString(filename));
      this.frameLine.push(line);
      this.frameName.push(this.internString(name));
      this.frameIds.set(key, id);
    }
    return id;
  }

  /** Interns a stack given its frame ids innermost first; identical sequences share one id. */
  internStack(frameIds: ArrayLike<number>, count = frameIds.length): IndexIntoStacks {
    if (count === 0) return EMPTY_STACK;
    let h = count | 0;
    for (let i = 0; i < count; i++) h = (Math.imul(h ^ frameIds[i], 0x9e3779b1) + 0x7f4a7c15) | 0;
    const offsets = this.stackOffsets.data;
    const frames = this.stackFrames.data;
    for (let s = this.stackByHash.get(h) ?? -1; s >= 0; s = this.stackNext.data[s]) {
      const start = offsets[s];
      if (offsets[s + 1] - start !== count) continue;
      let same = true;
      for (let i = 0; i < count; i++) {
        if (frames[start + i] !== frameIds[i]) {
          same = false;
          break;
        }
      }
      if (same) return s;
    }
    const id = this.stackOffsets.length - 1;
    for (let i = 0; i < count; i++) this.stackFrames.push(frameIds[i]);
    this.stackOffsets.push(this.stackFrames.length);
    this.stackNext.push(this.stackByHash.get(h) ?? -1);
    this.stackByHash.set(h, id);
    return id;
  }

  get stackCount(): number {
    return this.stackOffsets.length - 1;
  }

  streamNumber(raw: number): number {
    if (raw === this.lastStreamRaw) return this.lastStreamId;
    let id = this.streamIds.get(raw);
    if (id === undefined) {
      id = this.streams.length;
      this.streams.push(raw);
      this.streamIds.set(raw, id);
    }
    this.lastStreamRaw = raw;
    this.lastStreamId = id;
    return id;
  }

  actionId(name: string): number {
    let id = this.actionIds.get(name);
    if (id === undefined) {
      if (this.actionNames.length >= 255) id = this.actionId("<other unknown action>");
      else {
        id = this.actionNames.length;
        this.actionNames.push(name);
        this.actionIds.set(name, id);
      }
    }
    return id;
  }

  /** Opens a segment; the blocks added next belong to it. */
  addSegment(s: SegmentInput): number {
    const id = this.seg.device.length;
    const streamRaw = s.streamRaw ?? 0;
    this.seg.device.push(s.device);
    this.seg.address.push(s.address);
    this.seg.total.push(s.totalSizeBytes);
    this.seg.allocated.push(s.allocatedSizeBytes);
    this.seg.active.push(s.activeSizeBytes);
    this.seg.requested.push(s.requestedSizeBytes ?? Number.NaN);
    this.seg.streamRaw.push(streamRaw);
    this.seg.stream.push(this.streamNumber(streamRaw));
    this.seg.type.push(
      s.segmentType === "small"
        ? SegmentType.small
        : s.segmentType === "large"
          ? SegmentType.large
          : SegmentType.unknown,
    );
    this.seg.pool0.push(s.poolId?.[0] ?? 0);
    this.seg.pool1.push(s.poolId?.[1] ?? 0);
    this.seg.expandable.push(s.isExpandable ? 1 : 0);
    this.seg.stack.push(s.stack ?? EMPTY_STACK);
    this.seg.firstBlock.push(this.blk.size.length);
    this.seg.blockCount.push(0);
    this.nextBlockAddress = s.address;
    return id;
  }

  /** Adds a block to the most recently added segment. */
  /** The blocks' forward stacks as a column (only built when some block has one). */
  private blockForwardColumn(n: number): Int32Array {
    const col = new Int32Array(n);
    for (const [b, s] of this.blockForward) if (b < n) col[b] = s;
    return col;
  }

  addBlock(b: BlockInput): number {
    const segment = this.seg.device.length - 1;
    if (segment < 0) throw new Error("addBlock before addSegment");
    const id = this.blk.size.length;
    const computed = b.address === undefined;
    const address = computed ? this.nextBlockAddress : (b.address as number);
    this.blk.segment.push(segment);
    this.blk.address.push(address);
    this.blk.computed.push(computed ? 1 : 0);
    this.blk.size.push(b.sizeBytes);
    this.blk.requested.push(b.requestedSizeBytes ?? Number.NaN);
    this.blk.state.push(BLOCK_STATES[b.state] ?? BlockState.unknown);
    this.blk.stack.push(b.stack ?? EMPTY_STACK);
    this.seg.blockCount.data[segment]++;
    this.nextBlockAddress = address + b.sizeBytes;
    return id;
  }

  /** Replaces the per-device traces (readers that stage rows before knowing the device use this). */
  setTraceTables(tables: TraceTable[]): void {
    this.traceTables = tables;
  }
  private traceTables: TraceTable[] | null = null;

  private trace(device: number): TraceColumns {
    while (this.traceColumns.length <= device) this.traceColumns.push(new TraceColumns());
    return this.traceColumns[device];
  }

  /** Declares that device_traces has at least `count` lists, even empty ones. */
  ensureDevices(count: number): void {
    if (count > 0) this.trace(count - 1);
  }

  addTraceEntry(device: number, e: TraceEntryInput): void {
    const t = this.trace(device);
    const streamRaw = e.streamRaw ?? 0;
    const row = t.pushRow(
      this.actionId(e.action),
      e.addr ?? Number.NaN,
      e.sizeBytes ?? 0,
      streamRaw,
      this.streamNumber(streamRaw),
      e.timeUs ?? Number.NaN,
      e.stack ?? EMPTY_STACK,
      e.deviceFreeBytes ?? Number.NaN,
      e.compileContext === undefined ? NO_STRING : this.internString(e.compileContext),
      e.userMetadata === undefined ? NO_STRING : this.internString(e.userMetadata),
      e.category === undefined ? NO_STRING : this.internString(e.category),
    );
    t.isWorkspace[row] = e.isWorkspace ? 1 : 0;
  }

  finish(source: SnapshotSource): SnapshotModel {
    const s = this.seg;
    const b = this.blk;
    return {
      source,
      layout: this.layout,
      legacyHistory: this.legacyHistory,
      strings: this.strings,
      frames: {
        length: this.frameLine.length,
        filename: this.frameFilename.trim(),
        line: this.frameLine.trim(),
        name: this.frameName.trim(),
      },
      stacks: {
        length: this.stackCount,
        offsets: this.stackOffsets.trim(),
        frameIds: this.stackFrames.trim(),
      },
      segments: {
        length: s.device.length,
        device: s.device.trim(),
        address: s.address.trim(),
        totalSizeBytes: s.total.trim(),
        allocatedSizeBytes: s.allocated.trim(),
        activeSizeBytes: s.active.trim(),
        requestedSizeBytes: s.requested.trim(),
        streamRaw: s.streamRaw.trim(),
        stream: s.stream.trim(),
        segmentType: s.type.trim(),
        poolId0: s.pool0.trim(),
        poolId1: s.pool1.trim(),
        isExpandable: s.expandable.trim(),
        stack: s.stack.trim(),
        firstBlock: s.firstBlock.trim(),
        blockCount: s.blockCount.trim(),
      },
      blocks: {
        length: b.size.length,
        segment: b.segment.trim(),
        address: b.address.trim(),
        addressComputed: b.computed.trim(),
        sizeBytes: b.size.trim(),
        requestedSizeBytes: b.requested.trim(),
        state: b.state.trim(),
        stack: b.stack.trim(),
        ...(this.blockForward.size > 0 ? { forwardStack: this.blockForwardColumn(b.size.length) } : {}),
      },
      traces: this.traceTables ?? this.traceColumns.map((t, device) => t.finish(device)),
      actionNames: this.actionNames,
      streams: this.streams,
      annotations: this.annotations,
      allocatorSettings: this.allocatorSettings,
      hostSegmentCount: this.hostSegmentCount,
      hostTraceCount: this.hostTraceCount,
      host: this.host,
    };
  }
}

/** Frames of a stack, innermost first, as plain objects (for display and tests). */
export function stackFrames(
  model: SnapshotModel,
  stack: IndexIntoStacks,
): { filename: string; line: number; name: string }[] {
  const { offsets, frameIds } = model.stacks;
  const out = [];
  for (let i = offsets[stack]; i < offsets[stack + 1]; i++) {
    const f = frameIds[i];
    out.push({
      filename: model.strings[model.frames.filename[f]],
      line: model.frames.line[f],
      name: model.strings[model.frames.name[f]],
    });
  }
  return out;
}
