// Trace entries through the WebAssembly scanner (../wasm/assembly/trace-scan.ts): at an EMPTY_DICT that
// starts a trace entry inside a list, it parses the entries that follow one another, straight from the
// bytes into rows, without a call into JavaScript per entry; its speed does not depend on the JIT having
// warmed up. An entry it gives up on goes to the JavaScript scanner (trace-scanner.ts), and from there to
// the generic unpickler, so all three paths give the same rows. The memo's codes live in the module's
// memory (Memo.storeCodesIn), where both sides read and write them; the bytes are copied in a window at a
// time. Where WebAssembly cannot be compiled (a page whose policy forbids it), the JavaScript scanner
// does all of it.
//
// A big file read where threads share memory gets an instance of the module built with a shared memory:
// a view of it stays valid as it grows, so the file's slices are read into it and scanned where they are
// (sliceMemory). (Its memo was faulted in ahead by a warmer thread, memoColumn; the product starts none.)

import type { Memo } from "../pickle/memo";
import { type DictScanner, decodeUtf8 } from "../pickle/unpickler";
import { PyDict, PyList } from "../pickle/values";
import { TRACE_SCAN_SHARED_WASM_BASE64, TRACE_SCAN_WASM_BASE64 } from "../wasm/trace-scan.wasm";
import { RowFlags, type SharedColumn, type TraceColumns } from "./builder";
import { recycleMemory } from "./recycled-memory";
import {
  CONSUMED,
  type EntrySink,
  KEY_IDS,
  StackRef,
  StagedEntry,
  type TraceEntryScanner,
} from "./trace-scanner";
import { Action } from "./types";
import {
  BLOCK_FIELDS,
  copySegments,
  joinSegments,
  type ScannedSegments,
  SEGMENT_FIELDS,
  SegmentRun,
  SK_OTHER,
  segmentKeyId,
} from "./wasm-segments";

/** A run of consecutive staged rows standing for as many entries on the unpickling stack. */
export class StagedRun {
  constructor(
    readonly row: number,
    readonly count: number,
  ) {}
}

/** What the scanner needs beyond EntrySink: the staging columns its rows are appended to. */
export interface RowSink extends EntrySink {
  readonly staging: TraceColumns;
}

// What a memo code stands for (as the module's I_*)
const I_OTHER = 1;
const I_STR = 2;
const I_STACK = 3;
const I_FRAME = 4;
const I_DICT = 5;
const I_PAIR = 6;
// scan() results (the third, S_BAIL = 1: an entry given up on)
const S_ROWS_FULL = 2;

/** A window is moved on when fewer bytes than this are left in it (an entry is far shorter). */
const MIN_ROOM = 64 << 10;
const PAGE = 65536;

/** The row columns in the module's order (its rowAddress()). */
const ROW_COLUMNS = [
  ["action", Uint8Array],
  ["addr", Float64Array],
  ["sizeBytes", Float64Array],
  ["streamRaw", Float64Array],
  ["stream", Int32Array],
  ["timeUs", Float64Array],
  ["stack", Int32Array],
  ["deviceFreeBytes", Float64Array],
  ["compileContext", Int32Array],
  ["userMetadata", Int32Array],
  ["category", Int32Array],
] as const;

export type RowColumnName = (typeof ROW_COLUMNS)[number][0];
export type RowViews = Record<RowColumnName, Uint8Array | Float64Array | Int32Array>;

interface Exports {
  memory: WebAssembly.Memory;
  init(sliceBytes: number): number;
  inputAddress(): number;
  sliceAddress(): number;
  memoAddress(): number;
  setInput(address: number): void;
  infoAddress(): number;
  auxAddress(): number;
  infoCapacity(): number;
  rowAddress(column: number): number;
  position(): number;
  rows(): number;
  memoLength(): number;
  rowFlags(): number;
  clearCache(): void;
  reset(): void;
  scan(pos: number, end: number, memoLen: number, maxMemo: number, maxRows: number, consumed: number): number;
  scanSegments(pos: number, end: number, memoLen: number, maxMemo: number, consumed: number): number;
  segments(): number;
  blocks(): number;
  resetPairs(): void;
  segmentRowsAddress(): number;
  blockRowsAddress(): number;
  segmentKeysAddress(): number;
  SEG_FIELDS: WebAssembly.Global;
  BLOCK_FIELDS: WebAssembly.Global;
  WINDOW_BYTES: WebAssembly.Global;
  MAX_ROWS: WebAssembly.Global;
  ACTION_OOM: WebAssembly.Global;
  F_STREAM_RAW: WebAssembly.Global;
  F_STREAM: WebAssembly.Global;
  F_DEVICE_FREE: WebAssembly.Global;
  F_COMPILE_CONTEXT: WebAssembly.Global;
  F_USER_METADATA: WebAssembly.Global;
  F_CATEGORY: WebAssembly.Global;
}

let compiled: WebAssembly.Module | null | undefined;
let compiledShared: WebAssembly.Module | null | undefined;

/** An instance and the scanner it works for now (its imports call that scanner). */
interface Slot {
  x: Exports;
  owner: WasmTraceScanner | null;
  /** One past the highest info index written (cleared before the next file). */
  infoUsed: number;
  /** The most memo slots a file used (cleared before the next file). */
  memoUsed: number;
}

/**
 * A finished read's instance, kept for the next (one per thread): making one costs more than a small
 * read (its memory is new, and its first use faults every page in), and the warm-up reads dozens.
 */
let spare: Slot | null = null;
/**
 * An instance whose memo grew past this is not kept: a big file's memo makes it large (≈ 70 MB after a
 * 1 GB file), and the page reads each file in a worker of its own, so keeping it would only hold that
 * memory for as long as the file is open. The warm-up's small reads stay well below. (Its fixed regions,
 * ≈ 17 MB below the memo, are reserved, not written: only the pages the reads wrote are memory.)
 */
const MAX_SPARE_BYTES = 32 << 20;

function isShared(buffer: ArrayBufferLike): boolean {
  return typeof SharedArrayBuffer === "function" && buffer instanceof SharedArrayBuffer;
}

/** Whether the module's F_* and its oom action are RowFlags' and Action.oom (a test checks they are). */
function flagsAgree(x: Exports): boolean {
  return (
    x.ACTION_OOM?.value === Action.oom &&
    x.F_STREAM_RAW?.value === RowFlags.streamRaw &&
    x.F_STREAM?.value === RowFlags.stream &&
    x.F_DEVICE_FREE?.value === RowFlags.deviceFree &&
    x.F_COMPILE_CONTEXT?.value === RowFlags.compileContext &&
    x.F_USER_METADATA?.value === RowFlags.userMetadata &&
    x.F_CATEGORY?.value === RowFlags.category
  );
}

function compile(base64: string): WebAssembly.Module | null {
  try {
    const text = atob(base64);
    const bytes = new Uint8Array(text.length);
    for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
    return new WebAssembly.Module(bytes);
  } catch {
    return null;
  }
}

/** The compiled module, or null where WebAssembly is unavailable or forbidden. */
function traceScanModule(): WebAssembly.Module | null {
  if (compiled === undefined) compiled = compile(TRACE_SCAN_WASM_BASE64);
  return compiled;
}

/** The module built with a shared memory, or null where threads cannot share memory. */
function sharedTraceScanModule(): WebAssembly.Module | null {
  if (compiledShared === undefined)
    compiledShared = typeof SharedArrayBuffer === "function" ? compile(TRACE_SCAN_SHARED_WASM_BASE64) : null;
  return compiledShared;
}

/**
 * A fresh instance's slot (with `sliceBytes` of its memory for the file's slices), or null where it
 * cannot be made (a shared memory refused).
 */
function newSlot(module: WebAssembly.Module, sliceBytes = 0): Slot | null {
  const s: Slot = { x: null as unknown as Exports, owner: null, infoUsed: 0, memoUsed: 0 };
  try {
    const instance = new WebAssembly.Instance(module, { "trace-scan": hostImports(s) });
    s.x = instance.exports as unknown as Exports;
  } catch {
    return null;
  }
  s.x.init(sliceBytes);
  return s;
}

/** Grows the module's memory to at least `bytes` (by a quarter at least: it grows with the memo). */
function growMemory(x: Exports, bytes: number): void {
  const have = x.memory.buffer.byteLength;
  if (bytes > have) x.memory.grow(Math.ceil((Math.max(bytes, have + (have >> 2)) - have) / PAGE));
}

/** Memo slots a new scanner makes room for at once. */
const FIRST_MEMO_SLOTS = 1 << 16;
/**
 * Memo slots the prepared instance has room for: a 101 MB file's 1.9 M and the window's worth more, so
 * that its memory does not grow during the read (each growth cost 3–7 ms there). Below MAX_SPARE_BYTES.
 */
const PREPARED_MEMO_SLOTS = 1 << 22;

/**
 * Makes the instance the next read takes (the spare) ahead of it. Compiling the module, making an
 * instance and growing its memory took a cold worker 9–46 ms (the page's file input, a file picked as the
 * page loads), after the file's first slice was in and before any of it was parsed; done as the worker
 * starts, while it waits for a file, that is off the load. Not where WebAssembly cannot be compiled.
 */
export function prepareScanner(): void {
  if (spare !== null) return;
  const module = traceScanModule();
  const slot = module !== null ? newSlot(module) : null;
  if (slot === null) return;
  const memory = slot.x.memory;
  const want = slot.x.memoAddress() + 4 * PREPARED_MEMO_SLOTS;
  if (want > memory.buffer.byteLength) memory.grow(Math.ceil((want - memory.buffer.byteLength) / PAGE));
  spare = slot;
}

/** Whether reads here go through the WebAssembly scanner. */
export function wasmScannerAvailable(): boolean {
  return traceScanModule() !== null;
}

export class WasmTraceScanner implements DictScanner {
  value: unknown = null;
  valueCount = 1;
  /** Entries the WebAssembly scanner staged. */
  wasmEntries = 0;
  /** Segments (of the root's "segments" list) the WebAssembly scanner read. */
  wasmSegments = 0;

  private readonly x: Exports | null = null;
  private readonly slot: Slot | null = null;
  private memo: Memo | null = null;
  private consumedCode = 0;
  private u8 = new Uint8Array(0);
  private i32 = new Int32Array(0);
  private info = new Int32Array(0);
  private aux = new Int32Array(0);
  private segmentKeys = new Uint8Array(0);
  /** Whether the module lays its segment and block rows out as wasm-segments.ts reads them. */
  private readonly segmentsKnown: boolean = false;
  private rowViews: RowViews | null = null;
  private memoBase = 0;
  private inputBase = 0;
  private windowBytes = 0;
  private maxRows = 0;
  /** Whether the module's row flags mean what RowFlags says (else every column is read row by row). */
  private flagsKnown = false;
  private infoCap = 0;
  // the window: buf[winStart .. winEnd) is at inputBase, or where it is when the bytes are in place
  private winBuf: Uint8Array | null = null;
  /** Whether the module reads the bytes where they are (a slice of sliceMemory()) instead of the window. */
  private inPlace = false;
  /** sliceMemory()'s region: its start, its size, how much of it is handed out. */
  private sliceBase = 0;
  private sliceCap = 0;
  private sliceUsed = 0;
  /** The buffers of the slices handed out (a shared memory's buffer object changes as it grows). */
  private readonly sliceBuffers = new Set<ArrayBufferLike>();
  private winStart = 0;
  private winEnd = 0;

  constructor(
    private readonly sink: RowSink,
    /** Takes the entries this scanner gives up on. */
    readonly fallback: TraceEntryScanner,
    useWasm = true,
    /** A fresh instance whose memory is shared (a big file, read where threads share memory). */
    sharedMemory = false,
    /** With a shared memory: this many bytes of it for the file's slices (sliceMemory). */
    sliceBytes = 0,
  ) {
    const module = useWasm ? traceScanModule() : null;
    if (module === null) return;
    const sharedModule = sharedMemory ? sharedTraceScanModule() : null;
    let slot = sharedModule !== null ? newSlot(sharedModule, sliceBytes) : null;
    const sliced = slot !== null && sliceBytes > 0;
    if (slot === null && spare !== null) {
      slot = spare;
      spare = null;
      slot.x.reset();
      new Int32Array(slot.x.memory.buffer, slot.x.infoAddress(), slot.infoUsed).fill(0);
      new Int32Array(slot.x.memory.buffer, slot.x.auxAddress(), slot.infoUsed).fill(0);
      new Uint8Array(slot.x.memory.buffer, slot.x.segmentKeysAddress(), slot.infoUsed).fill(0);
      slot.x.resetPairs();
      slot.infoUsed = 0;
      new Int32Array(slot.x.memory.buffer, slot.x.memoAddress(), slot.memoUsed).fill(0);
      slot.memoUsed = 0;
    }
    slot ??= newSlot(module);
    if (slot === null) return;
    slot.owner = this;
    const x = slot.x;
    this.slot = slot;
    this.memoBase = x.memoAddress();
    this.inputBase = x.inputAddress();
    if (sliced) {
      this.sliceBase = x.sliceAddress();
      this.sliceCap = sliceBytes;
    }
    this.windowBytes = x.WINDOW_BYTES.value;
    this.maxRows = x.MAX_ROWS.value;
    this.flagsKnown = flagsAgree(x);
    this.segmentsKnown = x.SEG_FIELDS?.value === SEGMENT_FIELDS && x.BLOCK_FIELDS?.value === BLOCK_FIELDS;
    this.infoCap = x.infoCapacity();
    this.x = x;
    this.growTo(this.memoBase + 4 * FIRST_MEMO_SLOTS);
  }

  /** The read is over: the instance may serve the next one. */
  release(): void {
    const slot = this.slot;
    if (slot === null || slot.owner !== this) return;
    slot.owner = null;
    if (this.inPlace) slot.x.setInput(0);
    slot.memoUsed = Math.max(slot.memoUsed, this.memo?.length ?? 0);
    const buffer = slot.x.memory.buffer;
    // (its fixed regions are below memoBase: reserved, and faulted in only where the reads wrote)
    if (!isShared(buffer) && buffer.byteLength - this.memoBase <= MAX_SPARE_BYTES) spare = slot;
    // Not kept: the memo's codes (≈ 70 MB after a 1 GB file), written all through the read, serve the
    // next columns. Nothing reads them after the read (the memo's values are JavaScript objects).
    else recycleMemory(slot.x.memory.buffer, this.memoBase, 4 * (this.memo?.length ?? 0));
  }

  /**
   * The memo as a column for the warmer (TraceColumns.reserve), where this instance's memory is shared:
   * the memory grown now to hold `rows` entries' memo at the slots per entry so far (growing reserves,
   * it writes nothing), and row r's slots taken to be about memoBase + r × that many bytes.
   */
  memoColumn(rows: number): SharedColumn | null {
    const x = this.x;
    const memo = this.memo;
    const staged = this.sink.staging.length;
    if (x === null || memo === null || !isShared(x.memory.buffer) || staged === 0 || rows <= staged)
      return null;
    const slotsPerRow = memo.length / staged;
    memo.reserve(Math.ceil(rows * slotsPerRow));
    return {
      buffer: x.memory.buffer as unknown as SharedArrayBuffer,
      offsetBytes: this.memoBase,
      bytesPerRow: 4 * slotsPerRow,
    };
  }

  /** Whether the WebAssembly scanner is in use. */
  get wasm(): boolean {
    return this.x !== null;
  }

  /**
   * `length` bytes of the module's memory for a slice of the file to be read into, or null when its
   * slice region (the constructor's sliceBytes) has no more room. The module scans such a slice where it
   * is, without the copy into its window (≈ 0.14 s at 1 GB in Node); the memory is shared, so a view of
   * it stays valid as the memory grows.
   */
  sliceMemory(length: number): Uint8Array | null {
    const x = this.x;
    const at = (this.sliceUsed + 7) & ~7;
    if (x === null || this.sliceCap - at < length) return null;
    const view = new Uint8Array(x.memory.buffer, this.sliceBase + at, length);
    this.sliceUsed = at + length;
    this.sliceBuffers.add(view.buffer);
    return view;
  }

  /** Entries staged by either scanner. */
  get entries(): number {
    return this.wasmEntries + this.fallback.entries;
  }

  scan(
    buf: Uint8Array,
    pos: number,
    end: number,
    memo: Memo,
    maxMemoIndex: number,
    inList: boolean,
    listKey?: unknown,
  ): number {
    const x = this.x;
    if (x === null) return this.scanJs(buf, pos, end, memo, maxMemoIndex);
    if (memo !== this.memo) this.attach(memo);
    if (listKey === "segments" && this.segmentsKnown) {
      const next = this.scanSegments(x, buf, pos, end, memo, maxMemoIndex);
      if (next >= 0) return next;
    }
    const limit = inList ? Number.MAX_SAFE_INTEGER : 1;
    let at = pos;
    let total = 0;
    let firstRow = -1;
    for (;;) {
      this.ready(buf, at, end, memo);
      const status = x.scan(
        at - this.winStart,
        this.winEnd - this.winStart,
        memo.length,
        maxMemoIndex,
        Math.min(this.maxRows, limit - total),
        this.consumedCode,
      );
      memo.length = x.memoLength();
      const n = x.rows();
      if (n > 0) {
        const row = this.sink.staging.pushRows(
          this.rowViews as RowViews,
          n,
          this.flagsKnown ? x.rowFlags() : RowFlags.all,
        );
        if (firstRow < 0) firstRow = row;
        total += n;
      }
      at = this.winStart + x.position();
      if (status === S_ROWS_FULL) {
        if (total < limit) continue;
        break;
      }
      // stopped near the window's end (not the bytes'): the rest may fit in the next window
      if (this.winEnd < end && this.winEnd - at < MIN_ROOM) continue;
      break;
    }
    if (total === 0) return this.scanJs(buf, pos, end, memo, maxMemoIndex);
    this.wasmEntries += total;
    this.valueCount = total;
    this.value = total === 1 ? new StagedEntry(firstRow) : new StagedRun(firstRow, total);
    return at;
  }

  /**
   * The segment dicts from buf[pos] on through the module (scanSegments), as one SegmentRun; -1 when it
   * read none (the first one is left to JavaScript).
   */
  private scanSegments(
    x: Exports,
    buf: Uint8Array,
    pos: number,
    end: number,
    memo: Memo,
    maxMemoIndex: number,
  ): number {
    let at = pos;
    const parts: ScannedSegments[] = [];
    for (;;) {
      this.ready(buf, at, end, memo);
      const status = x.scanSegments(
        at - this.winStart,
        this.winEnd - this.winStart,
        memo.length,
        maxMemoIndex,
        this.consumedCode,
      );
      memo.length = x.memoLength();
      const n = x.segments();
      if (n > 0)
        parts.push(
          copySegments(
            x.memory.buffer,
            x.segmentRowsAddress(),
            n,
            x.blockRowsAddress(),
            x.blocks(),
            this.memo as Memo,
          ),
        );
      at = this.winStart + x.position();
      if (status === S_ROWS_FULL) continue;
      // stopped near the window's end (not the bytes'): the rest may fit in the next window
      if (n > 0 && this.winEnd < end && this.winEnd - at < MIN_ROOM) continue;
      break;
    }
    if (parts.length === 0) return -1;
    const rows = parts.length === 1 ? parts[0] : joinSegments(parts);
    const count = rows.segments.length / SEGMENT_FIELDS;
    this.wasmSegments += count;
    this.value = new SegmentRun(rows, 0, count);
    this.valueCount = count;
    return at;
  }

  /**
   * The window over buf[at..end) (moved where fewer than MIN_ROOM bytes of it are left before the
   * bytes' end), and room in the memo for a slot per byte of it (the most a scan can store).
   */
  private ready(buf: Uint8Array, at: number, end: number, memo: Memo): void {
    if (buf !== this.winBuf || at < this.winStart || (this.winEnd < end && this.winEnd - at < MIN_ROOM))
      this.window(buf, at, end);
    memo.reserve(memo.length + (this.winEnd - at) + 16);
  }

  private scanJs(buf: Uint8Array, pos: number, end: number, memo: Memo, maxMemoIndex: number): number {
    const next = this.fallback.scan(buf, pos, end, memo, maxMemoIndex);
    this.value = this.fallback.value;
    this.valueCount = 1;
    return next;
  }

  expand(value: unknown): unknown[] | null {
    if (value instanceof SegmentRun) {
      const out: unknown[] = [];
      for (let i = 0; i < value.count; i++) out.push(new SegmentRun(value.rows, value.first + i, 1));
      return out;
    }
    if (!(value instanceof StagedRun)) return null;
    const out: unknown[] = [];
    for (let i = 0; i < value.count; i++) out.push(new StagedEntry(value.row + i));
    return out;
  }

  newBytes(): void {
    this.winBuf = null;
  }

  forget(slot: number): void {
    this.x?.clearCache();
    this.fallback.forget(slot);
  }

  /** Moves the memo's codes into the module's memory. */
  private attach(memo: Memo): void {
    this.memo = memo;
    this.consumedCode = memo.code(CONSUMED);
    memo.storeCodesIn((codes, length, slots) => {
      const x = this.x as Exports;
      const inPlace = codes.buffer === x.memory.buffer;
      this.growTo(this.memoBase + 4 * slots);
      const view = new Int32Array(
        x.memory.buffer,
        this.memoBase,
        (x.memory.buffer.byteLength - this.memoBase) >> 2,
      );
      if (!inPlace) view.set(codes.subarray(0, length));
      return view;
    });
  }

  /** Grows the memory to at least `bytes` (and remakes the views of it). */
  private growTo(bytes: number): void {
    const x = this.x as Exports;
    growMemory(x, bytes);
    if (this.u8.buffer === x.memory.buffer) return;
    const buffer = x.memory.buffer;
    this.u8 = new Uint8Array(buffer);
    this.i32 = new Int32Array(buffer);
    this.info = new Int32Array(buffer, x.infoAddress(), this.infoCap);
    this.aux = new Int32Array(buffer, x.auxAddress(), this.infoCap);
    if (this.segmentsKnown) this.segmentKeys = new Uint8Array(buffer, x.segmentKeysAddress(), this.infoCap);
    const views = {} as Record<string, Uint8Array | Float64Array | Int32Array>;
    ROW_COLUMNS.forEach(([name, Type], i) => {
      views[name] = new Type(buffer, x.rowAddress(i), this.maxRows);
    });
    this.rowViews = views as RowViews;
  }

  /**
   * Copies buf[from .. from + window) into the module's input, `from` being `at` or up to 7 bytes before
   * it, so that source and destination have the same address mod 8. V8 copies into shared memory (the
   * shared build's) a byte at a time when they differ, a word at a time when they agree: 264 against
   * 44 ms per GiB in Node 20 (memory not shared copies fast either way).
   */
  private window(buf: Uint8Array, at: number, end: number): void {
    const x = this.x as Exports;
    if (this.sliceBuffers.has(buf.buffer)) {
      // a slice read into this memory (sliceMemory): scanned where it is
      x.setInput(buf.byteOffset);
      this.inPlace = true;
      this.winBuf = buf;
      this.winStart = 0;
      this.winEnd = end;
      return;
    }
    if (this.inPlace) {
      x.setInput(0);
      this.inPlace = false;
    }
    const skew = (buf.byteOffset + at - this.inputBase) & 7;
    const from = skew <= at ? at - skew : at;
    const stop = Math.min(end, from + this.windowBytes);
    this.u8.set(buf.subarray(from, stop), this.inputBase);
    this.winBuf = buf;
    this.winStart = from;
    this.winEnd = stop;
  }

  private str(code: number): string {
    return (this.memo as Memo).valueOf(code) as string;
  }

  private index(code: number): number {
    return code > 0 ? code * 2 : -code * 2 + 1;
  }

  /** Records that info index `i` was written (so that reset clears it). */
  private wrote(i: number): void {
    const slot = this.slot as Slot;
    if (i >= slot.infoUsed) slot.infoUsed = i + 1;
  }

  /** The module's calls into JavaScript (see its `declare function`s). */
  readonly host = {
    classify: (code: number): number => {
      const v = (this.memo as Memo).valueOf(code);
      let info: number;
      if (typeof v === "string") info = I_STR | ((KEY_IDS.get(v) ?? 0) << 3) | (v === "" ? 0x80 : 0);
      else if (v instanceof StackRef) info = I_STACK | (v.id << 3);
      else if (v instanceof PyList && v.tag >= 0) info = I_STACK | (v.tag << 3);
      else if (v instanceof PyDict && v.tag >= 0) info = I_FRAME | (v.tag << 3);
      // a list or dict may still be taken as a stack or frame: asked again each time
      else if (v instanceof PyList) return I_OTHER;
      else if (v instanceof PyDict) return I_DICT;
      else info = I_OTHER;
      const i = this.index(code);
      if (i < this.infoCap) {
        this.info[i] = info;
        this.wrote(i);
      }
      return info;
    },
    frameOf: (code: number): number => {
      const id = this.sink.frameIdOf((this.memo as Memo).valueOf(code) as PyDict);
      const i = this.index(code);
      if (id >= 0 && i < this.infoCap) {
        this.info[i] = I_FRAME | (id << 3);
        this.wrote(i);
      }
      return id;
    },
    actionOf: (code: number): number => {
      const id = this.sink.builder.actionId(this.str(code));
      const i = this.index(code);
      if (i < this.infoCap && this.info[i] !== 0) this.info[i] = (this.info[i] & 0xff) | ((id + 1) << 8);
      return id;
    },
    internOf: (code: number): number => {
      const id = this.sink.builder.internString(this.str(code));
      const i = this.index(code);
      if (i < this.infoCap) {
        this.aux[i] = id + 1;
        this.wrote(i);
      }
      return id;
    },
    numString: (num: number, isBool: number): number =>
      this.sink.builder.internString(isBool ? (num === 1 ? "true" : "false") : JSON.stringify(num)),
    emptyAction: (): number => this.sink.builder.actionId(""),
    newString: (ptr: number, len: number): number => (this.memo as Memo).code(decodeUtf8(this.u8, ptr, len)),
    internStack: (ptr: number, n: number): number =>
      this.sink.builder.internStack(this.i32.subarray(ptr >> 2, (ptr >> 2) + n), n),
    stackCodeOf: (stack: number): number => (this.memo as Memo).code(this.sink.stackRef(stack)),
    streamNumber: (raw: number): number => this.sink.builder.streamNumber(raw),
    segmentKeyOf: (code: number): number => {
      const v = (this.memo as Memo).valueOf(code);
      const key = typeof v === "string" ? segmentKeyId(v) : SK_OTHER;
      const i = this.index(code);
      if (i < this.infoCap) {
        this.segmentKeys[i] = key;
        this.wrote(i);
      }
      return key;
    },
    // a frame dict the module read written out in full: made as the unpickler makes it, and interned
    newFrame: (filenameCode: number, line: number, nameCode: number): number => {
      const memo = this.memo as Memo;
      const d = new PyDict();
      d.add("filename", memo.valueOf(filenameCode));
      d.add("line", line);
      d.add("name", memo.valueOf(nameCode));
      const id = this.sink.frameIdOf(d);
      const code = memo.objectCode(d);
      const i = this.index(code);
      if (i < this.infoCap) {
        this.info[i] = I_FRAME | (id << 3);
        this.wrote(i);
      }
      return code;
    },
    // a pair the module read (a segment_pool_id, a trace entry's pool_id): the tuple (a list here, as
    // TUPLE2 makes it), its INFO its index. A shared code: the module gives it to the equal tuples that
    // follow (torch writes a new one in every trace entry), and a shared value is never let go with a slot.
    newPair: (a: number, b: number, index: number): number => {
      const code = (this.memo as Memo).code([a, b]);
      const i = this.index(code);
      if (i < this.infoCap) {
        this.info[i] = I_PAIR | (index << 3);
        this.wrote(i);
      }
      return code;
    },
  };
}

/** Imports that call whichever scanner holds the slot now. */
function hostImports(slot: Slot): Record<string, (...args: number[]) => number> {
  const out: Record<string, (...args: number[]) => number> = {};
  for (const name of Object.keys(HOST_NAMES))
    out[name] = (a = 0, b = 0, c = 0) =>
      (slot.owner as WasmTraceScanner).host[name as keyof WasmTraceScanner["host"]](a, b, c);
  return out;
}

const HOST_NAMES = {
  classify: 1,
  frameOf: 1,
  actionOf: 1,
  internOf: 1,
  numString: 1,
  emptyAction: 1,
  newString: 1,
  internStack: 1,
  stackCodeOf: 1,
  streamNumber: 1,
  segmentKeyOf: 1,
  newFrame: 1,
  newPair: 1,
};
