// The fast path for trace entries, which are nearly all of a big snapshot's bytes. At each EMPTY_DICT
// whose first key is "action", the entry is parsed straight from the pickle bytes into a staged row:
// no dict, list or frame object is built, and a frames list becomes a stack id as its bytes go by.
// Anything this scanner does not expect (a container where a scalar belongs, an integer beyond 2^53,
// the chunk ending mid-entry) returns -1 with the memo restored, and the generic unpickler takes the
// entry instead, through the same staging code, so both paths give the same row.

import type { Memo } from "../pickle/memo";
import type { DictScanner } from "../pickle/unpickler";
import { decodeLong, decodeUtf8, u32 } from "../pickle/unpickler";
import { PyDict, PyList } from "../pickle/values";
import type { ModelBuilder } from "./builder";
import { StackBytesCache } from "./stack-bytes-cache";
import { EMPTY_STACK, NO_STRING } from "./types";

/** A frames list after interning: stands in for the list in dicts and in the memo. */
export class StackRef {
  constructor(readonly id: number) {}
}

/** A trace entry on the unpickling stack after it was written to a staged row. */
export class StagedEntry {
  constructor(readonly row: number) {}
}

/** What a memo slot holds once its trace entry was written to columns. */
export const CONSUMED = Object.freeze({ consumed: true });

/** What the scanner needs from the assembler. */
export interface EntrySink {
  readonly builder: ModelBuilder;
  stackRef(id: number): StackRef;
  /** The frame id of a frame dict, or -1 when the dict is not a frame (no "filename"). */
  frameIdOf(d: PyDict): number;
  /** Writes a staged row (the generic path writes through it too). */
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
  ): number;
}

// Opcodes
const MARK = 0x28;
const EMPTY_DICT = 0x7d;
const EMPTY_LIST = 0x5d;
const MEMOIZE = 0x94;
const BINPUT = 0x71;
const LONG_BINPUT = 0x72;
const BINGET = 0x68;
const LONG_BINGET = 0x6a;
const SETITEMS = 0x75;
const APPENDS = 0x65;
const APPEND = 0x61;
const BININT1 = 0x4b;
const BININT2 = 0x4d;
const BININT = 0x4a;
const LONG1 = 0x8a;
const BINFLOAT = 0x47;
const NONE = 0x4e;
const NEWTRUE = 0x88;
const NEWFALSE = 0x89;
const SHORT_BINUNICODE = 0x8c;
const BINUNICODE = 0x58;
const FRAME = 0x95;
const TUPLE2 = 0x86;

// Trace entry keys
const K_OTHER = 0;
const K_ACTION = 1;
const K_ADDR = 2;
const K_SIZE = 3;
const K_STREAM = 4;
const K_TIME = 5;
const K_FRAMES = 6;
const K_DEVICE_FREE = 7;
const K_COMPILE_CONTEXT = 8;
const K_USER_METADATA = 9;
const K_CATEGORY = 10;
const K_POOL_ID = 11;
export const KEY_IDS = new Map<string, number>([
  ["action", K_ACTION],
  ["addr", K_ADDR],
  ["size", K_SIZE],
  ["stream", K_STREAM],
  ["time_us", K_TIME],
  ["frames", K_FRAMES],
  ["device_free", K_DEVICE_FREE],
  ["compile_context", K_COMPILE_CONTEXT],
  ["user_metadata", K_USER_METADATA],
  ["category", K_CATEGORY],
  ["pool_id", K_POOL_ID],
]);

// What readValue() found (the value itself is left in num / str / stackId)
const BAIL = -1;
const V_NUM = 1;
const V_STR = 2;
const V_NONE = 3;
const V_BOOL = 4;
const V_STACK = 5;

/** Memo slots beyond this are looked up in the memo itself (bounds the map at 64 MiB). */
const MAX_FRAME_SLOTS = 1 << 24;

/** Memo slots below this remember which key (or action) their str is (see keySlotId). */
const SLOT_CACHE = 1 << 16;

export class TraceEntryScanner implements DictScanner {
  value: unknown = null;
  readonly valueCount = 1;
  /** Entries this scanner staged (the rest took the generic path). */
  entries = 0;

  private p = 0;
  private memoStart = 0;
  private maxMemo = 0;
  private readonly undoSlots: number[] = [];
  private readonly undoCodes: number[] = [];
  /** Memo codes of the values this scanner stores over and over (see Memo). */
  private consumedCode = 0;
  // (starting sizes small enough for the warm-up file to grow them; see StackBytesCache)
  private stackCodes = new Int32Array(64);
  private lastCodeString: string | null = null;
  private lastStringCode = 0;
  /** The last (a, b) pair readPair() memoised, and its memo code (0: none yet). */
  private lastPair: [number, number] = [0, 0];
  private lastPairCode = 0;
  /** The value readValue() / readString() found. */
  private num = 0;
  private str = "";
  private stackId = 0;
  /** Memo slot of the last string readString() returned, or -1 for a string from the bytes. */
  private strSlot = -1;
  private frameIds = new Int32Array(8);
  /** Frame id + 1 of the frame dict in each memo slot (0: not a frame, or not seen yet). */
  private frameBySlot = new Int32Array(1024);
  private readonly stackBytes = new StackBytesCache();
  private viewBuf: Uint8Array | null = null;
  private view: DataView<ArrayBufferLike> = new DataView(new ArrayBuffer(0));
  private lastOptString: string | null = null;
  private lastOptId = NO_STRING;
  /**
   * The key id / action id of the str in each of the first memo slots (-1: unknown). Kept right by
   * forget() and bail(), the only ways a slot's value changes, so the memo need not be read.
   */
  private readonly keySlotId = new Int8Array(SLOT_CACHE).fill(-1);
  private readonly actionSlotId = new Int16Array(SLOT_CACHE).fill(-1);

  constructor(private readonly sink: EntrySink) {}

  scan(buf: Uint8Array, pos: number, end: number, memo: Memo, maxMemoIndex: number): number {
    if (!isTraceEntryStart(buf, pos, end, memo)) return -1;
    this.memoStart = memo.length;
    this.maxMemo = maxMemoIndex;
    if (this.undoSlots.length > 0) {
      this.undoSlots.length = 0;
      this.undoCodes.length = 0;
    }
    this.p = pos + 1;
    const row = this.entry(buf, end, memo);
    if (row < 0) return this.bail(memo);
    this.value = new StagedEntry(row);
    this.entries++;
    return this.p;
  }

  expand(): null {
    return null;
  }

  /** Parses the entry after its EMPTY_DICT; returns its staged row, or -1. */
  private entry(buf: Uint8Array, end: number, memo: Memo): number {
    if (this.consumedCode === 0) this.consumedCode = memo.code(CONSUMED);
    if (this.store(buf, end, memo, this.consumedCode) === -2) return -1;
    if (this.next(buf, end) !== MARK) return -1;
    const keySlotId = this.keySlotId;
    const actionSlotId = this.actionSlotId;
    let p = this.p + 1;
    let action = -1;
    let addr = Number.NaN;
    let size = 0;
    let stream = 0;
    let time = Number.NaN;
    let stack = EMPTY_STACK;
    let deviceFree = Number.NaN;
    let compileContext = NO_STRING;
    let userMetadata = NO_STRING;
    let category = NO_STRING;
    for (;;) {
      if (p + 5 > end) return -1;
      let op = buf[p];
      if (op === SETITEMS) {
        p++;
        break;
      }
      // The key: nearly always a memo reference to a str seen before.
      let key = -1;
      if (op === BINGET) {
        key = keySlotId[buf[p + 1]];
        if (key >= 0) p += 2;
      } else if (op === LONG_BINGET) {
        const slot = u32(buf, p + 1);
        if (slot < SLOT_CACHE) key = keySlotId[slot];
        if (key >= 0) p += 5;
      }
      if (key < 0) {
        this.p = p;
        if (!this.readString(this.next(buf, end), buf, end, memo)) return -1;
        key = this.keyId();
        p = this.p;
      }
      if (key === K_POOL_ID) {
        // torch ≥ 2.10 writes every entry's pool as a new (a, b) tuple; the model keeps pools on segments
        this.p = p;
        if (!this.readPair(buf, end, memo)) return -1;
        p = this.p;
        continue;
      }
      // The value: integers inline, anything else through readValue().
      if (p + 10 > end) return -1;
      op = buf[p];
      let kind: number;
      let num = 0;
      if (op === BININT1) {
        num = buf[p + 1];
        p += 2;
        kind = V_NUM;
      } else if (op === BININT) {
        num = buf[p + 1] | (buf[p + 2] << 8) | (buf[p + 3] << 16) | (buf[p + 4] << 24);
        p += 5;
        kind = V_NUM;
      } else if (key === K_ACTION && op === BINGET && actionSlotId[buf[p + 1]] >= 0) {
        action = actionSlotId[buf[p + 1]];
        p += 2;
        continue;
      } else if (key === K_ACTION && op === LONG_BINGET && actionIdAt(actionSlotId, u32(buf, p + 1)) >= 0) {
        action = actionSlotId[u32(buf, p + 1)];
        p += 5;
        continue;
      } else if (op === LONG1 && buf[p + 1] <= 6) {
        const n = buf[p + 1];
        for (let i = p + 1 + n; i > p + 1; i--) num = num * 256 + buf[i];
        if (n > 0 && buf[p + 1 + n] & 0x80) num -= 2 ** (8 * n);
        p += 2 + n;
        kind = V_NUM;
      } else {
        this.p = p;
        kind = this.readValue(buf, end, memo, key === K_FRAMES);
        if (kind === BAIL) return -1;
        num = this.num;
        p = this.p;
      }
      switch (key) {
        case K_ACTION:
          if (kind !== V_STR) return -1;
          action = this.actionId();
          break;
        case K_ADDR:
          addr = kind === V_NUM || kind === V_BOOL ? num : Number.NaN;
          break;
        case K_SIZE:
          size = kind === V_NUM || kind === V_BOOL ? num : Number.NaN;
          break;
        case K_STREAM:
          stream = kind === V_NUM || kind === V_BOOL ? num : Number.NaN;
          break;
        case K_TIME:
          time = kind === V_NUM || kind === V_BOOL ? num : Number.NaN;
          break;
        case K_DEVICE_FREE:
          deviceFree = kind === V_NUM || kind === V_BOOL ? num : Number.NaN;
          break;
        case K_FRAMES:
          // as the generic path: a frames value that is not a list leaves the entry without a stack
          if (kind === V_STACK) stack = this.stackId;
          break;
        case K_COMPILE_CONTEXT:
          compileContext = this.optString(kind, num);
          break;
        case K_USER_METADATA:
          userMetadata = kind === V_STR && this.str === "" ? NO_STRING : this.optString(kind, num);
          break;
        case K_CATEGORY:
          category = this.optString(kind, num);
          break;
      }
    }
    this.p = p;
    if (action < 0) action = this.sink.builder.actionId("");
    return this.sink.stageRow(
      action,
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
  }

  private bail(memo: Memo): number {
    for (let i = this.undoSlots.length - 1; i >= 0; i--) memo.setCode(this.undoSlots[i], this.undoCodes[i]);
    // Slots this scan added go away: so does what was learnt about them (the generic path relearns).
    const known = Math.min(memo.length, this.frameBySlot.length);
    if (this.memoStart < known) this.frameBySlot.fill(0, this.memoStart, known);
    const cached = Math.min(memo.length, SLOT_CACHE);
    if (this.memoStart < cached) {
      this.keySlotId.fill(-1, this.memoStart, cached);
      this.actionSlotId.fill(-1, this.memoStart, cached);
    }
    if (memo.length !== this.memoStart) memo.truncate(this.memoStart);
    return -1;
  }

  /** The opcode at p after any FRAME hints (which may sit between any two values), or -1 at the end. */
  private next(buf: Uint8Array, end: number): number {
    let p = this.p;
    while (p < end && buf[p] === FRAME) {
      if (p + 9 > end) return -1;
      p += 9;
    }
    this.p = p;
    return p < end ? buf[p] : -1;
  }

  /**
   * Stores `value` as the memo op at p says (MEMOIZE, BINPUT, LONG_BINPUT, or none). Returns the slot,
   * -1 when there is no memo op, -2 to bail (out of bytes, or a slot the generic path should judge).
   */
  private store(buf: Uint8Array, end: number, memo: Memo, code: number): number {
    const p = this.p;
    if (p >= end) return -2;
    const op = buf[p];
    let slot: number;
    if (op === MEMOIZE) {
      slot = memo.length;
      this.p = p + 1;
    } else if (op === BINPUT) {
      if (p + 2 > end) return -2;
      slot = buf[p + 1];
      this.p = p + 2;
    } else if (op === LONG_BINPUT) {
      if (p + 5 > end) return -2;
      slot = (buf[p + 1] | (buf[p + 2] << 8) | (buf[p + 3] << 16) | (buf[p + 4] << 24)) >>> 0;
      this.p = p + 5;
    } else return -1;
    if (slot === memo.length) {
      if (slot > this.maxMemo) return -2;
      memo.pushCode(code);
    } else if (slot < memo.length) {
      if (slot < this.memoStart) {
        this.undoSlots.push(slot);
        this.undoCodes.push(memo.codeAt(slot));
      }
      memo.setCode(slot, code);
      this.forget(slot);
    } else return -2;
    return slot;
  }

  /** Reads a str (from the memo or the bytes, then memoised) into `str`; false to bail. */
  private readString(op: number, buf: Uint8Array, end: number, memo: Memo): boolean {
    const p = this.p;
    let n: number;
    let at: number;
    if (op === BINGET || op === LONG_BINGET) {
      const width = op === BINGET ? 2 : 5;
      if (p + width > end) return false;
      const slot = refSlot(buf, p, op);
      const v = memo.get(slot);
      if (typeof v !== "string") return false;
      this.str = v;
      this.strSlot = slot;
      this.p = p + width;
      return true;
    }
    if (op === SHORT_BINUNICODE) {
      if (p + 2 > end) return false;
      n = buf[p + 1];
      at = p + 2;
    } else if (op === BINUNICODE) {
      if (p + 5 > end) return false;
      n = u32(buf, p + 1);
      at = p + 5;
    } else return false;
    if (at + n > end) return false;
    const s = decodeUtf8(buf, at, n);
    this.p = at + n;
    this.str = s;
    this.strSlot = this.store(buf, end, memo, this.stringCode(memo, s));
    return this.strSlot !== -2;
  }

  /** The key id of the string just read. */
  private keyId(): number {
    const slot = this.strSlot;
    if (slot >= 0 && slot < SLOT_CACHE && this.keySlotId[slot] >= 0) return this.keySlotId[slot];
    const id = KEY_IDS.get(this.str) ?? K_OTHER;
    if (slot >= 0 && slot < SLOT_CACHE) this.keySlotId[slot] = id;
    return id;
  }

  /** The action id of the string just read. */
  private actionId(): number {
    const slot = this.strSlot;
    if (slot >= 0 && slot < SLOT_CACHE && this.actionSlotId[slot] >= 0) return this.actionSlotId[slot];
    const id = this.sink.builder.actionId(this.str);
    if (slot >= 0 && slot < SLOT_CACHE) this.actionSlotId[slot] = id;
    return id;
  }

  /** As the generic path's optString(): None is no string; numbers and booleans as JSON text. */
  private optString(kind: number, num: number): number {
    if (kind === V_STR) {
      // torch writes per-entry strings as new objects with the same text: decodeUtf8 gives the same
      // JS string for the same bytes, so the last answer usually applies
      if (this.str === this.lastOptString) return this.lastOptId;
      this.lastOptString = this.str;
      return (this.lastOptId = this.sink.builder.internString(this.str));
    }
    if (kind === V_NUM) return this.sink.builder.internString(JSON.stringify(num));
    if (kind === V_BOOL) return this.sink.builder.internString(num === 1 ? "true" : "false");
    return NO_STRING;
  }

  /** Reads one scalar, str or (when `framesList`) frames list at p; returns its kind or BAIL. */
  private readValue(buf: Uint8Array, end: number, memo: Memo, framesList: boolean): number {
    const op = this.next(buf, end);
    const p = this.p;
    switch (op) {
      case BININT1:
        if (p + 2 > end) return BAIL;
        this.num = buf[p + 1];
        this.p = p + 2;
        return V_NUM;
      case BININT2:
        if (p + 3 > end) return BAIL;
        this.num = buf[p + 1] | (buf[p + 2] << 8);
        this.p = p + 3;
        return V_NUM;
      case BININT:
        if (p + 5 > end) return BAIL;
        this.num = buf[p + 1] | (buf[p + 2] << 8) | (buf[p + 3] << 16) | (buf[p + 4] << 24);
        this.p = p + 5;
        return V_NUM;
      case LONG1: {
        if (p + 2 > end) return BAIL;
        const n = buf[p + 1];
        if (n > 8 || p + 2 + n > end) return BAIL;
        const v = decodeLong(buf, p + 2, n);
        if (typeof v !== "number") return BAIL; // beyond 2^53: the generic path notes it
        this.num = v;
        this.p = p + 2 + n;
        return V_NUM;
      }
      case BINFLOAT:
        if (p + 9 > end) return BAIL;
        this.num = new DataView(buf.buffer, buf.byteOffset + p + 1, 8).getFloat64(0, false);
        this.p = p + 9;
        return V_NUM;
      case NONE:
        this.p = p + 1;
        return V_NONE;
      case NEWTRUE:
      case NEWFALSE:
        this.num = op === NEWTRUE ? 1 : 0;
        this.p = p + 1;
        return V_BOOL;
      case SHORT_BINUNICODE:
      case BINUNICODE:
        return this.readString(op, buf, end, memo) ? V_STR : BAIL;
      case BINGET:
      case LONG_BINGET: {
        const width = op === BINGET ? 2 : 5;
        if (p + width > end) return BAIL;
        const v = memo.get(refSlot(buf, p, op));
        if (typeof v === "string") return this.readString(op, buf, end, memo) ? V_STR : BAIL;
        if (!framesList) return BAIL;
        if (v instanceof StackRef) this.stackId = v.id;
        else if (v instanceof PyList && v.tag >= 0) this.stackId = v.tag;
        else return BAIL;
        this.p = p + width;
        return V_STACK;
      }
      case EMPTY_LIST:
        if (!framesList) return BAIL;
        return this.readFramesList(buf, end, memo) ? V_STACK : BAIL;
      default:
        return BAIL;
    }
  }

  /**
   * Reads a pair at p, its value not kept: a memo reference to one (a tuple the generic path made), or
   * two ints and TUPLE2, memoised as the generic path would (the same pair as the last shares its code).
   */
  private readPair(buf: Uint8Array, end: number, memo: Memo): boolean {
    const op = this.next(buf, end);
    const p = this.p;
    if (op === BINGET || op === LONG_BINGET) {
      const width = op === BINGET ? 2 : 5;
      if (p + width > end) return false;
      const v = memo.get(refSlot(buf, p, op));
      if (!Array.isArray(v) || v.length !== 2) return false;
      this.p = p + width;
      return true;
    }
    if (this.readValue(buf, end, memo, false) !== V_NUM) return false;
    const a = this.num;
    if (this.readValue(buf, end, memo, false) !== V_NUM) return false;
    const b = this.num;
    if (this.next(buf, end) !== TUPLE2) return false;
    this.p++;
    if (this.lastPairCode === 0 || a !== this.lastPair[0] || b !== this.lastPair[1]) {
      this.lastPair = [a, b];
      this.lastPairCode = memo.code(this.lastPair);
    }
    return this.store(buf, end, memo, this.lastPairCode) !== -2;
  }

  /** Reads a frames list at p (its EMPTY_LIST) into `stackId`, memoising its StackRef; false to bail. */
  private readFramesList(buf: Uint8Array, end: number, memo: Memo): boolean {
    this.p++;
    const slot = this.store(buf, end, memo, 0);
    if (slot === -2) return false;
    let listStart = -1;
    if (this.next(buf, end) === MARK) {
      // Seen these exact bytes before? Then it is the same stack.
      listStart = this.p;
      const hit = this.stackBytes.match(buf, this.viewOf(buf), listStart, end);
      if (hit >= 0) {
        this.p = listStart + this.stackBytes.matchedBytes;
        return this.endList(memo, slot, hit);
      }
    }
    let n = 0;
    let batches = 0;
    let batchEnd = -1;
    for (;;) {
      const op = this.next(buf, end);
      if (op === MARK) {
        // a batch: MARK item… APPENDS (Python writes batches of up to 1000)
        this.p++;
        for (;;) {
          n = this.knownFrames(buf, end, n);
          const item = this.next(buf, end);
          if (item === APPENDS) {
            this.p++;
            break;
          }
          const id = this.readFrame(item, buf, end, memo);
          if (id < 0) return false;
          n = this.addFrame(n, id);
        }
        batches++;
        batchEnd = this.p;
        continue;
      }
      // a lone item is followed by APPEND; a str from the memo is the entry's next key
      const id = this.readFrame(op, buf, end, memo);
      if (id === -1) break;
      if (id < 0 || this.next(buf, end) !== APPEND) return false;
      this.p++;
      n = this.addFrame(n, id);
      batches = 2; // not one plain batch: never cached
    }
    const stack = this.sink.builder.internStack(this.frameIds, n);
    if (batches === 1 && listStart >= 0 && n < 1000)
      this.stackBytes.add(buf, this.viewOf(buf), listStart, batchEnd, stack);
    return this.endList(memo, slot, stack);
  }

  /** The memo code of a str (a str that recurs, such as compile_context's, is registered once). */
  private stringCode(memo: Memo, s: string): number {
    if (s !== this.lastCodeString) {
      this.lastCodeString = s;
      this.lastStringCode = memo.code(s);
    }
    return this.lastStringCode;
  }

  /** The memo code of a stack's StackRef. */
  private stackCode(memo: Memo, stack: number): number {
    if (stack >= this.stackCodes.length) {
      const grown = new Int32Array(Math.max(stack + 1, this.stackCodes.length * 2));
      grown.set(this.stackCodes);
      this.stackCodes = grown;
    }
    let code = this.stackCodes[stack];
    if (code === 0) code = this.stackCodes[stack] = memo.code(this.sink.stackRef(stack));
    return code;
  }

  private endList(memo: Memo, slot: number, stack: number): boolean {
    this.stackId = stack;
    if (slot >= 0) memo.setCode(slot, this.stackCode(memo, stack));
    return true;
  }

  private viewOf(buf: Uint8Array): DataView {
    if (this.viewBuf !== buf) {
      this.viewBuf = buf;
      this.view = new DataView(buf.buffer, buf.byteOffset, buf.length);
    }
    return this.view;
  }

  /**
   * Takes the run of BINGET / LONG_BINGET at p whose memo slots are known frames (call it inside a
   * batch only: a lone item needs its APPEND checked, which the slow path does).
   */
  private knownFrames(buf: Uint8Array, end: number, n: number): number {
    const frameBySlot = this.frameBySlot;
    const known = frameBySlot.length;
    let ids = this.frameIds;
    let p = this.p;
    while (p + 5 <= end) {
      const op = buf[p];
      let slot: number;
      if (op === BINGET) slot = buf[p + 1];
      else if (op === LONG_BINGET)
        slot = (buf[p + 1] | (buf[p + 2] << 8) | (buf[p + 3] << 16) | (buf[p + 4] << 24)) >>> 0;
      else break;
      const id = slot < known ? frameBySlot[slot] - 1 : -1;
      if (id < 0) break;
      if (n === ids.length) {
        this.p = p;
        this.addFrame(n, id);
        ids = this.frameIds;
      }
      ids[n++] = id;
      p += op === BINGET ? 2 : 5;
    }
    this.p = p;
    return n;
  }

  private addFrame(n: number, id: number): number {
    if (n === this.frameIds.length) {
      const grown = new Int32Array(n * 2);
      grown.set(this.frameIds);
      this.frameIds = grown;
    }
    this.frameIds[n] = id;
    return n + 1;
  }

  /** Remembers that memo slot `slot` holds frame `id` (for knownFrames). */
  private knowFrame(slot: number, id: number): void {
    if (slot < 0 || slot >= MAX_FRAME_SLOTS) return;
    if (slot >= this.frameBySlot.length) {
      const grown = new Int32Array(
        Math.min(MAX_FRAME_SLOTS, Math.max(slot + 1, this.frameBySlot.length * 2)),
      );
      grown.set(this.frameBySlot);
      this.frameBySlot = grown;
    }
    this.frameBySlot[slot] = id + 1;
  }

  /** The unpickler overwrote memo slot `slot`: whatever it held is no longer known. */
  forget(slot: number): void {
    if (slot < this.frameBySlot.length) this.frameBySlot[slot] = 0;
    if (slot < SLOT_CACHE) {
      this.keySlotId[slot] = -1;
      this.actionSlotId[slot] = -1;
    }
    this.stackBytes.clear();
  }

  /** A frame (a frame dict from the memo, or a new one) at p: its frame id; -1 if not a frame; -2 to bail. */
  private readFrame(op: number, buf: Uint8Array, end: number, memo: Memo): number {
    const p = this.p;
    if (op === BINGET || op === LONG_BINGET) {
      const width = op === BINGET ? 2 : 5;
      if (p + width > end) return -2;
      const slot = refSlot(buf, p, op);
      const v = memo.get(slot);
      if (!(v instanceof PyDict)) return -1;
      const id = v.tag >= 0 ? v.tag : this.sink.frameIdOf(v);
      if (id < 0) return -2;
      this.knowFrame(slot, id);
      this.p = p + width;
      return id;
    }
    if (op === EMPTY_DICT) return this.readNewFrame(buf, end, memo);
    return op < 0 ? -2 : -1;
  }

  /** A frame dict written out in full (its first use in the file): builds and memoises it. */
  private readNewFrame(buf: Uint8Array, end: number, memo: Memo): number {
    this.p++;
    const d = new PyDict();
    const slot = this.store(buf, end, memo, memo.objectCode(d));
    if (slot === -2) return -2;
    d.memo = slot;
    if (this.next(buf, end) !== MARK) return -2;
    this.p++;
    for (;;) {
      const op = this.next(buf, end);
      if (op === SETITEMS) {
        this.p++;
        break;
      }
      if (!this.readString(op, buf, end, memo)) return -2;
      const key = this.str;
      const kind = this.readValue(buf, end, memo, false);
      if (kind === BAIL) return -2;
      d.add(
        key,
        kind === V_STR ? this.str : kind === V_NUM ? this.num : kind === V_BOOL ? this.num === 1 : null,
      );
    }
    const id = this.sink.frameIdOf(d);
    if (id < 0) return -2;
    this.knowFrame(slot, id);
    return id;
  }
}

/**
 * The memo slot a BINGET / LONG_BINGET at buf[p] names. The places that read a memo reference of
 * either width share it (the hottest ones, keys and frames, keep their own inline reads), so that V8's
 * type feedback for both widths is shared: a width one call site has not met yet would otherwise
 * deoptimise the whole opcode loop, in the middle of a user's file.
 */
function refSlot(buf: Uint8Array, p: number, op: number): number {
  return op === BINGET ? buf[p + 1] : u32(buf, p + 1);
}

/** EMPTY_DICT, an optional memo op, MARK, then the key "action" (from the memo or the bytes)? */
function isTraceEntryStart(buf: Uint8Array, pos: number, end: number, memo: Memo): boolean {
  let q = pos + 1;
  if (q + 8 > end) return false;
  const m = buf[q];
  q += m === MEMOIZE ? 1 : m === BINPUT ? 2 : m === LONG_BINPUT ? 5 : 0;
  if (buf[q] !== MARK) return false;
  q++;
  while (q < end && buf[q] === FRAME) q += 9;
  if (q + 8 > end) return false;
  const op = buf[q];
  if (op === BINGET || op === LONG_BINGET) return memo.get(refSlot(buf, q, op)) === "action";
  return (
    op === SHORT_BINUNICODE &&
    buf[q + 1] === 6 &&
    buf[q + 2] === 0x61 && // a
    buf[q + 3] === 0x63 && // c
    buf[q + 4] === 0x74 && // t
    buf[q + 5] === 0x69 && // i
    buf[q + 6] === 0x6f && // o
    buf[q + 7] === 0x6e // n
  );
}

function actionIdAt(actionSlotId: Int16Array, slot: number): number {
  return slot < SLOT_CACHE ? actionSlotId[slot] : -1;
}
