// A streaming, restricted unpickler for protocols 0–5. It accepts the opcodes CPython emits for builtin
// types and refuses every opcode that would look up or construct a class (GLOBAL, REDUCE, BUILD, …).
// Bytes arrive in chunks via feed(); an opcode whose argument straddles a chunk boundary waits for more.

import { PickleError } from "./errors";
import { Memo } from "./memo";
import { PyDict, PyList, PySet } from "./values";

export interface UnpickleHooks {
  /** Called when `value` is about to be stored under `key` in `dict`; returns what to store instead. */
  onSetItem?(key: unknown, value: unknown): unknown;
  /**
   * Called when `item` is about to be appended to `list`. Return true when the hook consumed the item
   * (e.g. wrote it into columns and recorded a row on the list); it is then not stored.
   */
  consume?(list: PyList, item: unknown): boolean;
  /**
   * Offered a whole APPENDS batch items[from..] before anything is stored; return true when the hook
   * took it (e.g. interned a frame list straight from the stack), false to append item by item.
   */
  appendBatch?(list: PyList, items: ArrayLike<unknown>, from: number): boolean;
  /** Offered a whole SETITEMS batch of key/value pairs items[from..]; true when the hook took it. */
  setItemsBatch?(dict: PyDict, items: ArrayLike<unknown>, from: number): boolean;
}

/**
 * A reader's fast path for the dicts that dominate big files (trace entries). At every EMPTY_DICT the
 * unpickler offers the bytes buf[pos..end) (pos is the EMPTY_DICT) to scan(). A scanner that recognises
 * the dict parses it whole, straight from the bytes, sets `value` to what stands for it on the stack,
 * and returns the position after the dict's last opcode. It returns -1 to leave the dict to the generic
 * path (anything unexpected, or the dict runs past `end`), and then it must have left the memo as it was.
 * `inList`: the dict sits in a MARK whose container is a list; the scanner may then take the dicts that
 * follow it as well, and `value` stands for `valueCount` items (a run, kept whole only for APPENDS:
 * before any other opcode the unpickler asks expand() for the items one by one). `listKey`: where that
 * list is a value of the root dict, its key (a snapshot's "segments" list is read whole that way).
 */
export interface DictScanner {
  value: unknown;
  valueCount: number;
  scan(
    buf: Uint8Array,
    pos: number,
    end: number,
    memo: Memo,
    maxMemoIndex: number,
    inList: boolean,
    listKey?: unknown,
  ): number;
  /** The items a run stands for, or null when `value` is not a run. */
  expand(value: unknown): unknown[] | null;
  /** Told when a PUT overwrites memo slot `slot`, so that nothing it remembers of the slot goes stale. */
  forget(slot: number): void;
  /** Told before each run over a buffer: what scan() saw in earlier buffers may have been overwritten. */
  newBytes?(): void;
}

export interface UnpickleLimits {
  /** Largest memo index accepted (real pickles number memo slots 0, 1, 2, …). */
  maxMemoIndex: number;
  /** Largest number of values on the stack at once. */
  maxStackDepth: number;
  /** Largest number of open MARKs at once. */
  maxMarkDepth: number;
  /** Largest single string/bytes argument when the total length is unknown. */
  maxArgumentBytes: number;
  /** Longest text line (protocol 0 INT/FLOAT/GET/PUT/STRING/UNICODE arguments). */
  maxLineBytes: number;
}

export const DEFAULT_LIMITS: UnpickleLimits = {
  maxMemoIndex: 1 << 28,
  maxStackDepth: 1 << 24,
  maxMarkDepth: 100_000,
  maxArgumentBytes: 1 << 30,
  maxLineBytes: 1 << 26,
};

const REFUSED: Record<number, string> = {
  99: "GLOBAL",
  147: "STACK_GLOBAL",
  82: "REDUCE",
  98: "BUILD",
  105: "INST",
  111: "OBJ",
  129: "NEWOBJ",
  146: "NEWOBJ_EX",
  80: "PERSID",
  81: "BINPERSID",
  130: "EXT1",
  131: "EXT2",
  132: "EXT4",
  151: "NEXT_BUFFER",
  152: "READONLY_BUFFER",
};

/** Bytes of a new chunk joined to the leftover of the last one (see bridge()). */
const BRIDGE_BYTES = 64 << 10;

const utf8 = new TextDecoder("utf-8");
const latin1 = new TextDecoder("latin1");
const TWO_32 = 4294967296;

/** Marks on the value stack are positions kept in a separate array; this object is never a value. */
export class Unpickler {
  private readonly hooks: UnpickleHooks;
  private readonly scanner: DictScanner | null;
  private readonly limits: UnpickleLimits;
  private readonly totalBytes: number | null;

  readonly memo = new Memo();
  private readonly stack: unknown[] = [];
  private readonly marks: number[] = [];
  /** Runs (see DictScanner) on the stack, all above the last MARK. */
  private runs = 0;

  /** Unconsumed bytes: pending chunks that together hold the next opcode(s). */
  private pending: Uint8Array[] = [];
  private pendingBytes = 0;
  /** Bytes needed before the next attempt can make progress. */
  private needBytes = 1;
  /** Stream offset of the first pending byte. */
  private baseOffset = 0;

  protocol: number | null = null;
  done = false;
  result: unknown = undefined;
  /** Bytes that followed STOP. */
  trailingBytes = 0;
  opcodeCount = 0;

  constructor(
    options: {
      hooks?: UnpickleHooks;
      scanner?: DictScanner;
      limits?: Partial<UnpickleLimits>;
      totalBytes?: number;
    } = {},
  ) {
    this.hooks = options.hooks ?? {};
    this.scanner = options.scanner ?? null;
    this.limits = { ...DEFAULT_LIMITS, ...options.limits };
    this.totalBytes = options.totalBytes ?? null;
  }

  /** Stream offset of the next unread byte. */
  get offset(): number {
    return this.baseOffset;
  }

  /** Takes the next bytes; keeps no reference to `chunk` once it returns (the caller may reuse it). */
  feed(chunk: Uint8Array): void {
    this.take(chunk);
    // what stays pending is copied out of the caller's buffer (usually the few bytes of one opcode)
    const pending = this.pending;
    for (let i = 0; i < pending.length; i++)
      if (pending[i].buffer === chunk.buffer) pending[i] = pending[i].slice();
  }

  private take(chunk: Uint8Array): void {
    if (this.done) {
      this.trailingBytes += chunk.length;
      return;
    }
    if (chunk.length === 0) return;
    this.pending.push(chunk);
    this.pendingBytes += chunk.length;
    if (this.pendingBytes < this.needBytes) return;
    if (this.pending.length > 1 && chunk.length > BRIDGE_BYTES) {
      this.bridge(chunk);
      if (this.done || this.pendingBytes < this.needBytes) return;
    }
    const buf = this.pending.length === 1 ? this.pending[0] : concat(this.pending, this.pendingBytes);
    const used = this.run(buf);
    this.baseOffset += used;
    if (this.done) {
      this.trailingBytes += buf.length - used;
      this.pending = [];
      this.pendingBytes = 0;
      return;
    }
    const rest = buf.subarray(used);
    this.pending = rest.length > 0 ? [rest] : [];
    this.pendingBytes = rest.length;
  }

  /**
   * Crosses a chunk boundary without copying the whole new chunk: runs the leftover bytes joined to
   * the start of `chunk` (the last pending piece), then leaves the rest of `chunk` pending on its own.
   */
  private bridge(chunk: Uint8Array): void {
    const headBytes = this.pendingBytes - chunk.length;
    const take = Math.min(chunk.length, Math.max(this.needBytes - headBytes, BRIDGE_BYTES));
    this.pending[this.pending.length - 1] = chunk.subarray(0, take);
    const joined = concat(this.pending, headBytes + take);
    const used = this.run(joined);
    this.baseOffset += used;
    const after = chunk.length - take;
    if (this.done) {
      this.trailingBytes += joined.length - used + after;
      this.pending = [];
      this.pendingBytes = 0;
    } else if (used >= headBytes) {
      this.pending = [chunk.subarray(used - headBytes)];
      this.pendingBytes = chunk.length - (used - headBytes);
    } else {
      // the opcode at the boundary needs more than the joined bytes: keep everything pending
      this.pending = [joined.subarray(used), chunk.subarray(take)];
      this.pendingBytes = joined.length - used + after;
    }
  }

  /** Call after the last chunk. Returns the unpickled value or throws "truncated". */
  finish(): unknown {
    if (!this.done) {
      const at = this.baseOffset + this.pendingBytes;
      throw new PickleError(
        "truncated",
        `the pickle ends at byte ${at} without its STOP opcode (the opcode at byte ${this.baseOffset} needs ${this.needBytes} bytes, ${this.pendingBytes} remain)`,
        at,
      );
    }
    return this.result;
  }

  private fail(kind: "corrupt" | "unsafe" | "limit", message: string, pos: number): never {
    throw new PickleError(kind, message, this.baseOffset + pos);
  }

  private checkArgLength(len: number, pos: number, opname: string): void {
    const at = this.baseOffset + pos;
    if (this.totalBytes !== null && len > this.totalBytes - at) {
      throw new PickleError(
        "truncated",
        `${opname} at byte ${at} declares ${len} bytes but only ${Math.max(0, this.totalBytes - at)} remain in the file`,
        at,
      );
    }
    if (len > this.limits.maxArgumentBytes) {
      this.fail(
        "limit",
        `${opname} at byte ${at} declares ${len} bytes, more than the ${this.limits.maxArgumentBytes}-byte limit`,
        pos,
      );
    }
  }

  private push(v: unknown, pos: number): void {
    if (this.stack.length >= this.limits.maxStackDepth) {
      this.fail("limit", `more than ${this.limits.maxStackDepth} values on the unpickling stack`, pos);
    }
    this.stack.push(v);
  }

  private memoGet(i: number, pos: number): unknown {
    const v = this.memo.get(i);
    if (v === undefined) this.fail("corrupt", `memo get of slot ${i}, which was never stored`, pos);
    return v;
  }

  private memoPut(i: number, pos: number): void {
    if (i > this.limits.maxMemoIndex || i > this.memo.length + 1_000_000) {
      this.fail("limit", `memo slot ${i} is beyond the limit`, pos);
    }
    const v = this.top(pos);
    if (v instanceof PyDict || v instanceof PyList) if (v.memo < 0) v.memo = i;
    if (i < this.memo.length) this.scanner?.forget(i);
    this.memo.set(i, v);
  }

  private top(pos: number): unknown {
    if (this.stack.length === 0 || this.stack.length === this.markTop()) {
      this.fail("corrupt", "stack underflow", pos);
    }
    return this.stack[this.stack.length - 1];
  }

  /** The value just below stack position `at` (the container a closed MARK's items go into). */
  private below(at: number, pos: number): unknown {
    if (at === 0 || at <= this.markTop()) this.fail("corrupt", "stack underflow", pos);
    return this.stack[at - 1];
  }

  private markTop(): number {
    return this.marks.length > 0 ? this.marks[this.marks.length - 1] : 0;
  }

  private pop(pos: number): unknown {
    if (this.stack.length <= this.markTop()) this.fail("corrupt", "stack underflow", pos);
    return this.stack.pop();
  }

  /** Closes the last MARK and returns the stack position it marked (items above it stay). */
  private popMarkPosition(pos: number): number {
    if (this.marks.length === 0) this.fail("corrupt", "an opcode needs a MARK but none is open", pos);
    return this.marks.pop() as number;
  }

  /** Pops everything above the last MARK, and the MARK. */
  private popMark(pos: number): unknown[] {
    if (this.marks.length === 0) this.fail("corrupt", "an opcode needs a MARK but none is open", pos);
    const at = this.marks.pop() as number;
    const items = this.stack.slice(at);
    this.stack.length = at;
    return items;
  }

  /** Appends items[from..] to a list (or set), offering each to the consume hook first. */
  private appendItems(list: unknown, items: ArrayLike<unknown>, pos: number, from = 0): void {
    if (list instanceof PyList) {
      if (list.tag >= 0)
        this.fail("corrupt", "a list was extended after a reader had taken it as complete", pos);
      const batch = this.hooks.appendBatch;
      if (batch !== undefined && from > 0 && batch(list, items, from)) return;
      const consume = this.hooks.consume;
      for (let i = from; i < items.length; i++) {
        const item = items[i];
        // Frame dicts (tagged by the reader) are never consumed: skip the call for them.
        if (consume === undefined || (item instanceof PyDict && item.tag >= 0) || !consume(list, item)) {
          list.push(item);
        }
      }
    } else if (list instanceof PySet && !list.frozen) {
      for (let i = from; i < items.length; i++) list.items.push(items[i]);
    } else this.fail("corrupt", "APPEND to something that is not a list", pos);
  }

  /**
   * Stores key/value pairs items[from..] in a dict. Keys are appended without a duplicate check;
   * PyDict.get searches from the end, so a repeated key behaves as in Python (the last value wins).
   */
  private setItems(dict: unknown, items: ArrayLike<unknown>, pos: number, from = 0): void {
    if (!(dict instanceof PyDict)) this.fail("corrupt", "SETITEM on something that is not a dict", pos);
    if ((items.length - from) % 2 !== 0) this.fail("corrupt", "SETITEMS with an odd number of values", pos);
    const batch = this.hooks.setItemsBatch;
    if (batch !== undefined && from > 0 && batch(dict, items, from)) return;
    const hook = this.hooks.onSetItem;
    for (let i = from; i < items.length; i += 2) {
      const key = items[i];
      dict.add(key, hook ? hook(key, items[i + 1]) : items[i + 1]);
    }
  }

  /** Runs opcodes over buf; returns how many bytes were consumed. Sets needBytes when it stops early. */
  private run(buf: Uint8Array): number {
    this.scanner?.newBytes?.();
    const end = buf.length;
    const stack = this.stack;
    const memo = this.memo;
    const marks = this.marks;
    const maxDepth = this.limits.maxStackDepth;
    const maxMemo = this.limits.maxMemoIndex;
    const scanner = this.scanner;
    let pos = 0;
    let ops = 0;
    let runs = this.runs;
    // Bytes the opcode at pos needs, when it does not fit: one local for every opcode (stored once,
    // below), so that an opcode first met at the end of a slice costs V8 no new type feedback.
    let need = 1;
    loop: for (;;) {
      // One bound for every push below: each opcode adds at most one value.
      if (stack.length >= maxDepth) {
        this.fail("limit", `more than ${maxDepth} values on the unpickling stack`, pos);
      }
      if (pos >= end) {
        need = 1;
        break;
      }
      const op = buf[pos];
      ops++;
      // a run stays whole only until the APPENDS that takes it (more entries and FRAME hints may come first)
      if (runs !== 0 && op !== 0x65 && op !== 0x7d && op !== 0x95) {
        this.expandRuns();
        runs = 0;
      }
      switch (op) {
        case 0x68: {
          // BINGET
          if (pos + 2 > end) {
            need = 2;
            break loop;
          }
          const i = buf[pos + 1];
          const v = memo.get(i);
          if (v === undefined) this.memoGet(i, pos);
          stack.push(v);
          pos += 2;
          continue;
        }
        case 0x6a: {
          // LONG_BINGET
          if (pos + 5 > end) {
            need = 5;
            break loop;
          }
          const i = u32(buf, pos + 1);
          const v = memo.get(i);
          if (v === undefined) this.memoGet(i, pos);
          stack.push(v);
          pos += 5;
          continue;
        }
        case 0x94: {
          // MEMOIZE (inline: the second most frequent opcode)
          const n = stack.length;
          if (n === 0 || n === (marks.length > 0 ? marks[marks.length - 1] : 0)) this.top(pos);
          if (memo.length > maxMemo) this.memoPut(memo.length, pos);
          const v = stack[n - 1];
          if ((v instanceof PyDict || v instanceof PyList) && v.memo < 0) v.memo = memo.length;
          memo.push(v);
          pos += 1;
          continue;
        }
        case 0x71: // BINPUT
          if (pos + 2 > end) {
            need = 2;
            break loop;
          }
          this.memoPut(buf[pos + 1], pos);
          pos += 2;
          continue;
        case 0x72: // LONG_BINPUT
          if (pos + 5 > end) {
            need = 5;
            break loop;
          }
          this.memoPut(u32(buf, pos + 1), pos);
          pos += 5;
          continue;
        case 0x4b: // BININT1
          if (pos + 2 > end) {
            need = 2;
            break loop;
          }
          stack.push(buf[pos + 1]);
          pos += 2;
          continue;
        case 0x4d: // BININT2
          if (pos + 3 > end) {
            need = 3;
            break loop;
          }
          stack.push(buf[pos + 1] | (buf[pos + 2] << 8));
          pos += 3;
          continue;
        case 0x4a: // BININT
          if (pos + 5 > end) {
            need = 5;
            break loop;
          }
          stack.push(buf[pos + 1] | (buf[pos + 2] << 8) | (buf[pos + 3] << 16) | (buf[pos + 4] << 24));
          pos += 5;
          continue;
        case 0x8a: {
          // LONG1
          if (pos + 2 > end) {
            need = 2;
            break loop;
          }
          const n = buf[pos + 1];
          if (pos + 2 + n > end) {
            need = 2 + n;
            break loop;
          }
          stack.push(decodeLong(buf, pos + 2, n));
          pos += 2 + n;
          continue;
        }
        case 0x8b: {
          // LONG4
          if (pos + 5 > end) {
            need = 5;
            break loop;
          }
          const n = u32(buf, pos + 1);
          this.checkArgLength(n, pos, "LONG4");
          if (n > 65536)
            this.fail("limit", `LONG4 of ${n} bytes: an integer far too large for a snapshot`, pos);
          if (pos + 5 + n > end) {
            need = 5 + n;
            break loop;
          }
          stack.push(decodeLong(buf, pos + 5, n));
          pos += 5 + n;
          continue;
        }
        case 0x7d: // EMPTY_DICT
          if (scanner !== null) {
            const m = marks.length > 0 ? marks[marks.length - 1] : 0;
            const inList = m > 0 && stack[m - 1] instanceof PyList;
            // (a list that is a value of the root dict: its key)
            const key = inList && marks.length === 2 && m >= 2 ? stack[m - 2] : undefined;
            const next = scanner.scan(buf, pos, end, memo, maxMemo, inList, key);
            if (next >= 0) {
              stack.push(scanner.value);
              if (scanner.valueCount > 1) runs++;
              pos = next;
              continue;
            }
          }
          stack.push(new PyDict());
          pos += 1;
          continue;
        case 0x5d: // EMPTY_LIST
          stack.push(new PyList());
          pos += 1;
          continue;
        case 0x29: // EMPTY_TUPLE
          stack.push([]);
          pos += 1;
          continue;
        case 0x28: // MARK
          if (this.marks.length >= this.limits.maxMarkDepth) {
            this.fail("limit", `more than ${this.limits.maxMarkDepth} nested MARKs`, pos);
          }
          this.marks.push(stack.length);
          pos += 1;
          continue;
        case 0x75: {
          // SETITEMS
          const at = this.popMarkPosition(pos);
          this.setItems(this.below(at, pos), stack, pos, at);
          stack.length = at;
          pos += 1;
          continue;
        }
        case 0x73: {
          // SETITEM
          const value = this.pop(pos);
          const key = this.pop(pos);
          this.setItems(this.top(pos), [key, value], pos);
          pos += 1;
          continue;
        }
        case 0x65: {
          // APPENDS: items stay on the stack while they are appended (no intermediate array)
          const at = this.popMarkPosition(pos);
          this.appendItems(this.below(at, pos), stack, pos, at);
          stack.length = at;
          runs = 0;
          pos += 1;
          continue;
        }
        case 0x61: {
          // APPEND
          const item = this.pop(pos);
          this.appendItems(this.top(pos), [item], pos);
          pos += 1;
          continue;
        }
        case 0x8c: {
          // SHORT_BINUNICODE
          if (pos + 2 > end) {
            need = 2;
            break loop;
          }
          const n = buf[pos + 1];
          if (pos + 2 + n > end) {
            need = 2 + n;
            break loop;
          }
          stack.push(decodeUtf8(buf, pos + 2, n));
          pos += 2 + n;
          continue;
        }
        case 0x58: {
          // BINUNICODE
          if (pos + 5 > end) {
            need = 5;
            break loop;
          }
          const n = u32(buf, pos + 1);
          this.checkArgLength(n, pos, "BINUNICODE");
          if (pos + 5 + n > end) {
            need = 5 + n;
            break loop;
          }
          stack.push(decodeUtf8(buf, pos + 5, n));
          pos += 5 + n;
          continue;
        }
        case 0x8d: {
          // BINUNICODE8
          if (pos + 9 > end) {
            need = 9;
            break loop;
          }
          const n = u64(buf, pos + 1);
          this.checkArgLength(n, pos, "BINUNICODE8");
          if (pos + 9 + n > end) {
            need = 9 + n;
            break loop;
          }
          stack.push(decodeUtf8(buf, pos + 9, n));
          pos += 9 + n;
          continue;
        }
        case 0x43: // SHORT_BINBYTES
        case 0x55: {
          // SHORT_BINSTRING
          if (pos + 2 > end) {
            need = 2;
            break loop;
          }
          const n = buf[pos + 1];
          if (pos + 2 + n > end) {
            need = 2 + n;
            break loop;
          }
          const bytes = buf.slice(pos + 2, pos + 2 + n);
          stack.push(op === 0x43 ? bytes : latin1.decode(bytes));
          pos += 2 + n;
          continue;
        }
        case 0x42: // BINBYTES
        case 0x54: {
          // BINSTRING (a Python 2 str: bytes read as latin-1 text)
          if (pos + 5 > end) {
            need = 5;
            break loop;
          }
          const n = op === 0x54 ? i32(buf, pos + 1) : u32(buf, pos + 1);
          if (n < 0) this.fail("corrupt", "BINSTRING with a negative length", pos);
          this.checkArgLength(n, pos, op === 0x42 ? "BINBYTES" : "BINSTRING");
          if (pos + 5 + n > end) {
            need = 5 + n;
            break loop;
          }
          const bytes = buf.slice(pos + 5, pos + 5 + n);
          stack.push(op === 0x42 ? bytes : latin1.decode(bytes));
          pos += 5 + n;
          continue;
        }
        case 0x8e: // BINBYTES8
        case 0x96: {
          // BYTEARRAY8
          if (pos + 9 > end) {
            need = 9;
            break loop;
          }
          const n = u64(buf, pos + 1);
          this.checkArgLength(n, pos, op === 0x8e ? "BINBYTES8" : "BYTEARRAY8");
          if (pos + 9 + n > end) {
            need = 9 + n;
            break loop;
          }
          stack.push(buf.slice(pos + 9, pos + 9 + n));
          pos += 9 + n;
          continue;
        }
        case 0x4e: // NONE
          stack.push(null);
          pos += 1;
          continue;
        case 0x88: // NEWTRUE
          stack.push(true);
          pos += 1;
          continue;
        case 0x89: // NEWFALSE
          stack.push(false);
          pos += 1;
          continue;
        case 0x47: {
          // BINFLOAT (big-endian double)
          if (pos + 9 > end) {
            need = 9;
            break loop;
          }
          stack.push(new DataView(buf.buffer, buf.byteOffset + pos + 1, 8).getFloat64(0, false));
          pos += 9;
          continue;
        }
        case 0x85: // TUPLE1
          stack.push([this.pop(pos)]);
          pos += 1;
          continue;
        case 0x86: {
          // TUPLE2
          const b = this.pop(pos);
          const a = this.pop(pos);
          stack.push([a, b]);
          pos += 1;
          continue;
        }
        case 0x87: {
          // TUPLE3
          const c = this.pop(pos);
          const b = this.pop(pos);
          const a = this.pop(pos);
          stack.push([a, b, c]);
          pos += 1;
          continue;
        }
        case 0x74: // TUPLE
          stack.push(this.popMark(pos));
          pos += 1;
          continue;
        case 0x6c: {
          // LIST
          const items = this.popMark(pos);
          const list = new PyList();
          this.appendItems(list, items, pos);
          stack.push(list);
          pos += 1;
          continue;
        }
        case 0x64: {
          // DICT
          const items = this.popMark(pos);
          const dict = new PyDict();
          this.setItems(dict, items, pos);
          stack.push(dict);
          pos += 1;
          continue;
        }
        case 0x8f: // EMPTY_SET
          stack.push(new PySet([], false));
          pos += 1;
          continue;
        case 0x90: {
          // ADDITEMS
          const items = this.popMark(pos);
          const set = this.top(pos);
          if (!(set instanceof PySet) || set.frozen)
            this.fail("corrupt", "ADDITEMS to something that is not a set", pos);
          for (const item of items) set.items.push(item);
          pos += 1;
          continue;
        }
        case 0x91: // FROZENSET
          stack.push(new PySet(this.popMark(pos), true));
          pos += 1;
          continue;
        case 0x30: // POP
          if (stack.length > this.markTop()) stack.pop();
          else if (this.marks.length > 0)
            this.marks.pop(); // POP of a MARK
          else this.fail("corrupt", "POP on an empty stack", pos);
          pos += 1;
          continue;
        case 0x31: // POP_MARK
          this.popMark(pos);
          pos += 1;
          continue;
        case 0x32: // DUP
          stack.push(this.top(pos));
          pos += 1;
          continue;
        case 0x80: {
          // PROTO
          if (pos + 2 > end) {
            need = 2;
            break loop;
          }
          const proto = buf[pos + 1];
          if (proto > 5)
            this.fail("corrupt", `unsupported pickle protocol ${proto} (this reader knows 0–5)`, pos);
          if (this.protocol === null) this.protocol = proto;
          pos += 2;
          continue;
        }
        case 0x95: {
          // FRAME: a length hint only
          if (pos + 9 > end) {
            need = 9;
            break loop;
          }
          pos += 9;
          continue;
        }
        case 0x2e: // STOP
          if (stack.length !== 1 || this.marks.length > 0) {
            this.fail("corrupt", `STOP with ${stack.length} values on the stack (expected exactly 1)`, pos);
          }
          this.result = stack.pop();
          this.done = true;
          pos += 1;
          this.opcodeCount += ops;
          this.runs = 0;
          return pos;
        // Text opcodes of protocols 0 and 1: the argument is a line ending in "\n".
        case 0x49: // INT
        case 0x4c: // LONG
        case 0x46: // FLOAT
        case 0x67: // GET
        case 0x70: // PUT
        case 0x53: // STRING
        case 0x56: {
          // UNICODE
          const nl = findNewline(buf, pos + 1, end, this.limits.maxLineBytes);
          if (nl === -2)
            this.fail("limit", `text argument longer than ${this.limits.maxLineBytes} bytes`, pos);
          if (nl < 0) {
            need = end - pos + 1;
            break loop;
          }
          this.textOp(op, buf, pos, nl);
          pos = nl + 1;
          continue;
        }
        default: {
          const refused = REFUSED[op];
          if (refused !== undefined) {
            this.fail(
              "unsafe",
              `opcode ${refused} at byte ${this.baseOffset + pos} would import or construct a Python object; peakscope never does that, and a memory snapshot never needs it`,
              pos,
            );
          }
          this.fail(
            "corrupt",
            `unknown opcode 0x${op.toString(16).padStart(2, "0")} at byte ${this.baseOffset + pos}`,
            pos,
          );
        }
      }
    }
    this.needBytes = need;
    this.opcodeCount += ops;
    this.runs = runs;
    return pos;
  }

  /** Replaces each run on the stack (all above the last MARK) by the items it stands for. */
  private expandRuns(): void {
    const scanner = this.scanner as DictScanner;
    const stack = this.stack;
    const tail = stack.splice(this.markTop());
    for (const v of tail) {
      const items = scanner.expand(v);
      if (items === null) stack.push(v);
      else for (const item of items) stack.push(item);
    }
  }

  private textOp(op: number, buf: Uint8Array, pos: number, nl: number): void {
    const line = latin1.decode(buf.subarray(pos + 1, nl));
    switch (op) {
      case 0x49: {
        // INT: "01"/"00" are True/False in protocol 0
        if (line === "01" || line === "00") this.push(line === "01", pos);
        else
          this.push(
            parseIntText(line, () => this.fail("corrupt", `bad INT argument ${JSON.stringify(line)}`, pos)),
            pos,
          );
        return;
      }
      case 0x4c:
        this.push(
          parseIntText(line.endsWith("L") ? line.slice(0, -1) : line, () =>
            this.fail("corrupt", `bad LONG argument ${JSON.stringify(line)}`, pos),
          ),
          pos,
        );
        return;
      case 0x46: {
        const v = Number(line);
        if (Number.isNaN(v) && !/^[-+]?nan$/i.test(line.trim())) {
          this.fail("corrupt", `bad FLOAT argument ${JSON.stringify(line)}`, pos);
        }
        this.push(v, pos);
        return;
      }
      case 0x67:
      case 0x70: {
        const i = Number(line);
        if (!Number.isInteger(i) || i < 0)
          this.fail("corrupt", `bad memo index ${JSON.stringify(line)}`, pos);
        if (op === 0x67) this.push(this.memoGet(i, pos), pos);
        else this.memoPut(i, pos);
        return;
      }
      case 0x53:
        this.push(
          unquotePy2String(line, () => this.fail("corrupt", "bad STRING argument", pos)),
          pos,
        );
        return;
      case 0x56:
        this.push(rawUnicodeEscape(buf.subarray(pos + 1, nl)), pos);
        return;
    }
  }
}

function concat(chunks: Uint8Array[], total: number): Uint8Array {
  const out = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

export function u32(b: Uint8Array, p: number): number {
  return (b[p] | (b[p + 1] << 8) | (b[p + 2] << 16) | (b[p + 3] << 24)) >>> 0;
}

function i32(b: Uint8Array, p: number): number {
  return b[p] | (b[p + 1] << 8) | (b[p + 2] << 16) | (b[p + 3] << 24);
}

/** An 8-byte little-endian length; anything ≥ 2^53 is returned as Infinity (always "too long"). */
function u64(b: Uint8Array, p: number): number {
  const hi = u32(b, p + 4);
  if (hi >= 0x200000) return Number.POSITIVE_INFINITY;
  return hi * TWO_32 + u32(b, p);
}

/** Little-endian two's-complement integer of n bytes: a number when exact, else a BigInt. */
export function decodeLong(b: Uint8Array, p: number, n: number): number | bigint {
  if (n === 0) return 0;
  if (n <= 6) {
    let v = 0;
    for (let i = n - 1; i >= 0; i--) v = v * 256 + b[p + i];
    if (b[p + n - 1] & 0x80) v -= 2 ** (8 * n);
    return v;
  }
  if (n <= 8) {
    // lo + hi·2^32, with hi holding the top (n−4) bytes, signed
    const lo = u32(b, p);
    let hi = 0;
    for (let i = n - 1; i >= 4; i--) hi = hi * 256 + b[p + i];
    if (b[p + n - 1] & 0x80) hi -= 2 ** (8 * (n - 4));
    const v = hi * TWO_32 + lo;
    if (Number.isSafeInteger(v)) return v;
  }
  let big = 0n;
  for (let i = n - 1; i >= 0; i--) big = (big << 8n) | BigInt(b[p + i]);
  if (b[p + n - 1] & 0x80) big -= 1n << BigInt(8 * n);
  return big;
}

function parseIntText(s: string, bad: () => never): number | bigint {
  const t = s.trim();
  if (!/^[-+]?\d+$/.test(t)) bad();
  const v = Number(t);
  return Number.isSafeInteger(v) ? v : BigInt(t);
}

function findNewline(b: Uint8Array, from: number, end: number, maxLine: number): number {
  const limit = Math.min(end, from + maxLine + 1);
  for (let i = from; i < limit; i++) if (b[i] === 0x0a) return i;
  return limit < end ? -2 : -1;
}

// Short strings are interned by their bytes before decoding: torch writes per-entry strings (e.g.
// compile_context) as fresh objects, so the pickler cannot memoise them and the same bytes recur.
const INTERN_MAX_BYTES = 64;
const INTERN_SLOTS = 4096;
const internBytes: (Uint8Array | undefined)[] = new Array(INTERN_SLOTS);
const internStrings: string[] = new Array(INTERN_SLOTS);

/** UTF-8 of b[p .. p + n); a TextDecoder refuses shared memory (a WebAssembly scanner's), so that is copied. */
function utf8Of(b: Uint8Array, p: number, n: number): string {
  const shared = typeof SharedArrayBuffer === "function" && b.buffer instanceof SharedArrayBuffer;
  return utf8.decode(shared ? b.slice(p, p + n) : b.subarray(p, p + n));
}

export function decodeUtf8(b: Uint8Array, p: number, n: number): string {
  if (n > INTERN_MAX_BYTES) return utf8Of(b, p, n);
  let h = n;
  let ascii = true;
  for (let i = p; i < p + n; i++) {
    const c = b[i];
    h = Math.imul(h ^ c, 0x01000193);
    if (c >= 0x80) ascii = false;
  }
  const slot = (h >>> 0) & (INTERN_SLOTS - 1);
  const cached = internBytes[slot];
  if (cached !== undefined && cached.length === n) {
    let same = true;
    for (let i = 0; i < n; i++) {
      if (cached[i] !== b[p + i]) {
        same = false;
        break;
      }
    }
    if (same) return internStrings[slot];
  }
  const str = ascii
    ? String.fromCharCode.apply(null, b.subarray(p, p + n) as unknown as number[])
    : utf8Of(b, p, n);
  internBytes[slot] = b.slice(p, p + n);
  internStrings[slot] = str;
  return str;
}

/** Python 2 repr() of a str: 'abc' or "abc" with backslash escapes; bytes read as latin-1. */
function unquotePy2String(line: string, bad: () => never): string {
  const t = line.trimEnd();
  if (t.length < 2 || (t[0] !== "'" && t[0] !== '"') || t[t.length - 1] !== t[0]) bad();
  const body = t.slice(1, -1);
  let out = "";
  for (let i = 0; i < body.length; i++) {
    const c = body[i];
    if (c !== "\\") {
      out += c;
      continue;
    }
    const d = body[++i];
    const simple: Record<string, string> = {
      n: "\n",
      r: "\r",
      t: "\t",
      "\\": "\\",
      "'": "'",
      '"': '"',
      a: "\x07",
      b: "\b",
      f: "\f",
      v: "\v",
      "0": "\0",
    };
    if (d === "x") {
      out += String.fromCharCode(Number.parseInt(body.slice(i + 1, i + 3), 16));
      i += 2;
    } else if (d >= "0" && d <= "7") {
      let j = i;
      while (j < i + 3 && body[j] >= "0" && body[j] <= "7") j++;
      out += String.fromCharCode(Number.parseInt(body.slice(i, j), 8));
      i = j - 1;
    } else if (d in simple) out += simple[d];
    else out += `\\${d}`;
  }
  return out;
}

/** Protocol 0's raw-unicode-escape: latin-1 bytes with \uXXXX and \UXXXXXXXX escapes. */
function rawUnicodeEscape(bytes: Uint8Array): string {
  const s = latin1.decode(bytes);
  return s.replace(
    /\\u([0-9a-fA-F]{4})|\\U([0-9a-fA-F]{8})/g,
    (_m, u4: string | undefined, u8: string | undefined) =>
      String.fromCodePoint(Number.parseInt((u4 ?? u8) as string, 16)),
  );
}
