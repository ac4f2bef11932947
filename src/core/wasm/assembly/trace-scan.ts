// @ts-nocheck: AssemblyScript, not TypeScript. `node scripts/build-wasm.mjs` compiles it to
// ../trace-scan.wasm.ts (committed); tsc and the app never load this file.
//
// The trace-entry scanner of src/core/model/trace-scanner.ts, in WebAssembly: it parses a run of trace
// entries straight from the pickle bytes into rows, with no call into JavaScript per entry, so its speed
// does not depend on the JIT having warmed up. It handles the shape nearly every entry has (scalars,
// strs, a frames list of frame dicts, written out or memo references, or a memo reference to a frames
// list); anything else (a memo slot overwritten, a value of another kind, the bytes ending mid-entry)
// stops the run at that entry with the memo as it was, and JavaScript takes it (wasm-scanner.ts). The
// snapshot's segments, before the trace, are read here too (scanSegments, at the end of this file).
//
// The memo is shared with JavaScript: its Int32 codes (see src/core/pickle/memo.ts) live in this
// module's memory. What a code stands for (a str and which trace key it is, a stack, a frame) is asked
// of JavaScript once (classify) and kept in INFO, indexed by code; the str behind new bytes is asked
// once per distinct bytes (newString) and kept in a hash table.

// Host functions (wasm-scanner.ts)
declare function classify(code: i32): i32;
declare function frameOf(code: i32): i32;
declare function actionOf(code: i32): i32;
declare function internOf(code: i32): i32;
declare function numString(num: f64, isBool: i32): i32;
declare function emptyAction(): i32;
declare function newString(ptr: i32, len: i32): i32;
declare function internStack(ptr: i32, n: i32): i32;
declare function stackCodeOf(stack: i32): i32;
declare function streamNumber(raw: f64): i32;
declare function segmentKeyOf(code: i32): i32;
declare function newFrame(filenameCode: i32, line: f64, nameCode: i32): i32;
declare function newPair(a: f64, b: f64, index: i32): i32;

// Opcodes
const MARK: i32 = 0x28;
const EMPTY_DICT: i32 = 0x7d;
const EMPTY_LIST: i32 = 0x5d;
const MEMOIZE: i32 = 0x94;
const BINPUT: i32 = 0x71;
const LONG_BINPUT: i32 = 0x72;
const BINGET: i32 = 0x68;
const LONG_BINGET: i32 = 0x6a;
const SETITEMS: i32 = 0x75;
const APPENDS: i32 = 0x65;
const APPEND: i32 = 0x61;
const BININT1: i32 = 0x4b;
const BININT2: i32 = 0x4d;
const BININT: i32 = 0x4a;
const LONG1: i32 = 0x8a;
const BINFLOAT: i32 = 0x47;
const NONE: i32 = 0x4e;
const NEWTRUE: i32 = 0x88;
const NEWFALSE: i32 = 0x89;
const SHORT_BINUNICODE: i32 = 0x8c;
const BINUNICODE: i32 = 0x58;
const FRAME: i32 = 0x95;
const TUPLE2: i32 = 0x86;

// Trace entry keys (as trace-scanner.ts)
const K_ACTION: i32 = 1;
const K_ADDR: i32 = 2;
const K_SIZE: i32 = 3;
const K_STREAM: i32 = 4;
const K_TIME: i32 = 5;
const K_FRAMES: i32 = 6;
const K_DEVICE_FREE: i32 = 7;
const K_COMPILE_CONTEXT: i32 = 8;
const K_USER_METADATA: i32 = 9;
const K_CATEGORY: i32 = 10;
const K_POOL_ID: i32 = 11;

// What a memo code stands for (INFO, low 3 bits; the rest as noted)
export const I_OTHER: i32 = 1;
/** A str: bits 3–6 its key id, bit 7 set when empty, bits 8–15 its action id + 1 (0: not asked yet). */
export const I_STR: i32 = 2;
/** A frames list: bits 3– its stack id. */
export const I_STACK: i32 = 3;
/** A frame dict: bits 3– its frame id. */
export const I_FRAME: i32 = 4;
/** A dict not (yet) taken as a frame: frameOf() says. */
export const I_DICT: i32 = 5;
/** A pair of numbers (a segment_pool_id) this module read: bits 3– its index in PAIRS. */
export const I_PAIR: i32 = 6;

// Value kinds
const V_NUM: i32 = 1;
const V_STR: i32 = 2;
const V_NONE: i32 = 3;
const V_BOOL: i32 = 4;
const V_STACK: i32 = 5;

// scan() results
export const S_NOT_ENTRY: i32 = 0;
export const S_BAIL: i32 = 1;
export const S_ROWS_FULL: i32 = 2;

const NO_STRING: i32 = -1;
const EMPTY_STACK: i32 = 0;

// rowFlags(): what the rows of the last scan() hold beyond the common case, so that the JavaScript
// that copies them out skips a column with nothing to copy instead of reading all its rows
export const F_STREAM_RAW: i32 = 1; // some row's stream is not 0
export const F_STREAM: i32 = 2; // some row's stream number is not 0
export const F_DEVICE_FREE: i32 = 4; // some row recorded device_free, or is an oom entry
export const F_COMPILE_CONTEXT: i32 = 8; // the rows' compile_context ids are not all the first row's
export const F_USER_METADATA: i32 = 16; // the same for user_metadata
export const F_CATEGORY: i32 = 32; // the same for category
/** model/types.ts' Action.oom (wasm-scanner.ts checks that they agree). */
export const ACTION_OOM: i32 = 8;

// Sizes. Each table holds far more than real files need (the real-shaped 2.0 GB file: 218 frames lists
// cached in 40 KB, 458 strs in 40 KB, 173 stack codes, 7,116 info entries); a table that is full only
// sends what does not fit the slow way (a call into JavaScript, a list parsed again). Not larger: the
// whole memory counts towards V8's limit for a garbage collection (every byte of it, written or not), and
// tables of 130 MB had the parsing worker collect its garbage twice in the first 150 ms of a 101 MB load.
export const WINDOW_BYTES: i32 = 1 << 20;
export const MAX_ROWS: i32 = 8192;
const INFO_CAP: i32 = 1 << 18;
const STR_BUCKETS: i32 = 1 << 14;
const STR_CAP: i32 = 1 << 14;
const STR_MAX_BYTES: i32 = 256;
const STR_POOL_BYTES: i32 = 1 << 20;
const STACK_CODE_CAP: i32 = 1 << 16;
const CACHE_BUCKETS: i32 = 1 << 16;
const CACHE_CAP: i32 = 1 << 16;
const CACHE_POOL_BYTES: i32 = 8 << 20;
/** As stack-bytes-cache.ts: lists outside these sizes are parsed each time. */
const MIN_LIST_BYTES: i32 = 12;
const MAX_LIST_BYTES: i32 = 4096;
const FRAMES_CAP: i32 = 1 << 16;
const KEY_SLOT_CAP: i32 = 1 << 16;
/** Segments and blocks one scanSegments() writes at most (a real 101 MB file has 701 and 1,637). */
export const SEG_CAP: i32 = 1 << 12;
export const BLOCK_CAP: i32 = 1 << 14;
/** f64 per segment row and per block row (SEG_* and BLK_* below). */
export const SEG_FIELDS: i32 = 14;
export const BLOCK_FIELDS: i32 = 6;
const PAIR_CAP: i32 = 1 << 14;

// Regions (byte addresses, set by init())
/** Where scan() reads its bytes: the window region (WINDOW), or a slice read in place (setInput). */
let IN: i32 = 0;
let WINDOW: i32 = 0;
let SLICES: i32 = 0;
let R_ACTION: i32 = 0;
let R_ADDR: i32 = 0;
let R_SIZE: i32 = 0;
let R_STREAM_RAW: i32 = 0;
let R_STREAM: i32 = 0;
let R_TIME: i32 = 0;
let R_STACK: i32 = 0;
let R_DEVICE_FREE: i32 = 0;
let R_COMPILE_CONTEXT: i32 = 0;
let R_USER_METADATA: i32 = 0;
let R_CATEGORY: i32 = 0;
let INFO: i32 = 0;
let AUX: i32 = 0;
let STR_HEADS: i32 = 0;
let STR_ENTRIES: i32 = 0;
let STR_POOL: i32 = 0;
let STACK_CODES: i32 = 0;
let CACHE_HEADS: i32 = 0;
let CACHE_ENTRIES: i32 = 0;
let CACHE_POOL: i32 = 0;
let FRAMES: i32 = 0;
let KEY_SLOTS: i32 = 0;
let SEG_ROWS: i32 = 0;
let BLOCK_ROWS: i32 = 0;
let PAIRS: i32 = 0;
let SEG_KEYS: i32 = 0;
let MEMO: i32 = 0;

// State
let P: i32 = 0;
let END: i32 = 0;
let MEMO_LEN: i32 = 0;
let MAX_MEMO: u32 = 0;
let strCount: i32 = 0;
let lastStrPtr: i32 = 0;
let lastStrLen: i32 = -1;
let lastStrCode: i32 = 0;
let strPoolUsed: i32 = 0;
let cacheCount: i32 = 0;
let stackCodesUsed: i32 = 0;
let cachePoolUsed: i32 = 0;
let matched: i32 = 0;
let lastStreamRaw: f64 = NaN;
let lastStream: i32 = 0;
// the value readValue() found
let vNum: f64 = 0;
let vCode: i32 = 0;
let vStack: i32 = 0;

function region(at: i32, bytes: i32): i32 {
  return (at + bytes + 15) & ~15;
}

/**
 * Lays out the regions, with `sliceBytes` for the file's slices to be read into (sliceAddress()); returns
 * the byte address of the memo (the last region: it grows).
 */
export function init(sliceBytes: i32): i32 {
  let at = (<i32>__heap_base + 65535) & ~65535;
  WINDOW = at;
  IN = at;
  at = region(at, WINDOW_BYTES + 64);
  SLICES = at;
  at = region(at, sliceBytes);
  R_ACTION = at;
  at = region(at, MAX_ROWS);
  R_ADDR = at;
  at = region(at, MAX_ROWS * 8);
  R_SIZE = at;
  at = region(at, MAX_ROWS * 8);
  R_STREAM_RAW = at;
  at = region(at, MAX_ROWS * 8);
  R_STREAM = at;
  at = region(at, MAX_ROWS * 4);
  R_TIME = at;
  at = region(at, MAX_ROWS * 8);
  R_STACK = at;
  at = region(at, MAX_ROWS * 4);
  R_DEVICE_FREE = at;
  at = region(at, MAX_ROWS * 8);
  R_COMPILE_CONTEXT = at;
  at = region(at, MAX_ROWS * 4);
  R_USER_METADATA = at;
  at = region(at, MAX_ROWS * 4);
  R_CATEGORY = at;
  at = region(at, MAX_ROWS * 4);
  INFO = at;
  at = region(at, INFO_CAP * 4);
  AUX = at;
  at = region(at, INFO_CAP * 4);
  STR_HEADS = at;
  at = region(at, STR_BUCKETS * 4);
  STR_ENTRIES = at;
  at = region(at, STR_CAP * 16);
  STR_POOL = at;
  at = region(at, STR_POOL_BYTES);
  STACK_CODES = at;
  at = region(at, STACK_CODE_CAP * 4);
  CACHE_HEADS = at;
  at = region(at, CACHE_BUCKETS * 8);
  CACHE_ENTRIES = at;
  at = region(at, CACHE_CAP * 16);
  CACHE_POOL = at;
  at = region(at, CACHE_POOL_BYTES);
  FRAMES = at;
  at = region(at, FRAMES_CAP * 4);
  KEY_SLOTS = at;
  at = region(at, KEY_SLOT_CAP);
  SEG_ROWS = at;
  at = region(at, SEG_CAP * SEG_FIELDS * 8);
  BLOCK_ROWS = at;
  at = region(at, BLOCK_CAP * BLOCK_FIELDS * 8);
  PAIRS = at;
  at = region(at, PAIR_CAP * 16);
  SEG_KEYS = at;
  at = region(at, INFO_CAP);
  MEMO = (at + 65535) & ~65535;
  return MEMO;
}

export function inputAddress(): i32 {
  return WINDOW;
}
export function sliceAddress(): i32 {
  return SLICES;
}
export function memoAddress(): i32 {
  return MEMO;
}
/**
 * Where the next scan() reads: the window region (0), or bytes already in this memory (a slice read into
 * the slice region): scanned where they are, without a copy into the window.
 */
export function setInput(address: i32): void {
  IN = address === 0 ? WINDOW : address;
}
export function infoAddress(): i32 {
  return INFO;
}
export function auxAddress(): i32 {
  return AUX;
}
export function infoCapacity(): i32 {
  return INFO_CAP;
}
export function segmentRowsAddress(): i32 {
  return SEG_ROWS;
}
export function blockRowsAddress(): i32 {
  return BLOCK_ROWS;
}
/** A u8 per info index: its segment key (SK_*) once segmentKeyOf() was asked, written by JavaScript. */
export function segmentKeysAddress(): i32 {
  return SEG_KEYS;
}
/** Row column addresses, in the order of wasm-scanner.ts's ROW_COLUMNS. */
export function rowAddress(column: i32): i32 {
  switch (column) {
    case 0:
      return R_ACTION;
    case 1:
      return R_ADDR;
    case 2:
      return R_SIZE;
    case 3:
      return R_STREAM_RAW;
    case 4:
      return R_STREAM;
    case 5:
      return R_TIME;
    case 6:
      return R_STACK;
    case 7:
      return R_DEVICE_FREE;
    case 8:
      return R_COMPILE_CONTEXT;
    case 9:
      return R_USER_METADATA;
    default:
      return R_CATEGORY;
  }
}

// Results of the last scan()
let outPos: i32 = 0;
let outRows: i32 = 0;
let outFlags: i32 = 0;
let firstCompileContext: i32 = 0;
let firstUserMetadata: i32 = 0;
let firstCategory: i32 = 0;
export function position(): i32 {
  return outPos;
}
/** The F_* that the rows of the last scan() have. */
export function rowFlags(): i32 {
  return outFlags;
}
export function rows(): i32 {
  return outRows;
}
export function memoLength(): i32 {
  return MEMO_LEN;
}

/** Makes the module ready for another file (its memory is reused: the pages are already there). */
export function reset(): void {
  memory.fill(STR_HEADS, 0, STR_BUCKETS * 4);
  strCount = 0;
  strPoolUsed = 0;
  lastStrLen = -1;
  memory.fill(STACK_CODES, 0, stackCodesUsed * 4);
  stackCodesUsed = 0;
  lastStreamRaw = NaN;
  clearCache();
}

/** Forgets every cached frames list (a memo slot was overwritten: cached bytes may mean other frames). */
export function clearCache(): void {
  memory.fill(CACHE_HEADS, 0, CACHE_BUCKETS * 8);
  memory.fill(KEY_SLOTS, 0, KEY_SLOT_CAP);
  cacheCount = 0;
  cachePoolUsed = 0;
}

/**
 * Parses the trace entries that follow one another from IN + pos (an EMPTY_DICT), at most maxRows, into
 * the row columns; IN + end is where the bytes stop. Returns why it stopped (S_*); position() is where
 * (an entry's EMPTY_DICT when it was S_BAIL), rows() how many rows it wrote, memoLength() the memo's new
 * length. The memo has room for memoLen + (end - pos) slots.
 */
export function scan(pos: i32, end: i32, memoLen: i32, maxMemo: i32, maxRows: i32, consumedCode: i32): i32 {
  P = pos;
  END = end;
  MEMO_LEN = memoLen;
  MAX_MEMO = <u32>maxMemo;
  outFlags = 0;
  let n = 0;
  let status = S_NOT_ENTRY;
  for (;;) {
    const q = P;
    // (entry() gives up on a dict whose first key is not "action": not a trace entry)
    if (q >= END || <i32>load<u8>(IN + q) !== EMPTY_DICT) break;
    if (n >= maxRows) {
      status = S_ROWS_FULL;
      break;
    }
    const memoStart = MEMO_LEN;
    if (!entry(q, n, consumedCode)) {
      if (MEMO_LEN > memoStart) memory.fill(MEMO + (memoStart << 2), 0, (MEMO_LEN - memoStart) << 2);
      MEMO_LEN = memoStart;
      P = q;
      status = S_BAIL;
      break;
    }
    n++;
    // FRAME hints between entries
    while (P + 9 <= END && <i32>load<u8>(IN + P) === FRAME) P += 9;
  }
  outPos = P;
  outRows = n;
  return status;
}

function u32at(q: i32): i32 {
  return load<i32>(IN + q);
}

function memoCode(slot: u32): i32 {
  return slot < <u32>MEMO_LEN ? load<i32>(MEMO + ((<i32>slot) << 2)) : 0;
}

// What a memo code stands for: Info.of(code). A static method so that it can carry @inline (on a plain
// function the decorator is not TypeScript syntax, and the linter would not parse the file); inlined, the
// per-key lookup is ≈ 0.1 s less on a 1 GB file.
// biome-ignore lint/complexity/noStaticOnlyClass: the static method exists only to carry @inline
class Info {
  @inline
  static of(code: i32): i32 {
    // shared codes (strs, stacks: nearly all asked) first
    if (code > 0 && code < INFO_CAP >> 1) {
      const v = load<i32>(INFO + (code << 3));
      if (v !== 0) return v;
    }
    return infoSlow(code);
  }

  /** The interned string id of the str with memo code `code`. */
  @inline
  static intern(code: i32): i32 {
    const idx = infoIndex(code);
    if (<u32>idx < <u32>INFO_CAP) {
      const s = load<i32>(AUX + (idx << 2));
      if (s !== 0) return s - 1;
    }
    return internOf(code);
  }
}

function infoSlow(code: i32): i32 {
  if (code === 0) return I_OTHER;
  const idx = code > 0 ? code << 1 : (-code << 1) | 1;
  if (<u32>idx < <u32>INFO_CAP) {
    const v = load<i32>(INFO + (idx << 2));
    if (v !== 0) return v;
  }
  return classify(code);
}

function infoIndex(code: i32): i32 {
  return code > 0 ? code << 1 : (-code << 1) | 1;
}

/** The opcode at P after any FRAME hints, or -1 at the end. */
function nextOp(): i32 {
  let q = P;
  while (q < END && <i32>load<u8>(IN + q) === FRAME) {
    if (q + 9 > END) return -1;
    q += 9;
  }
  P = q;
  return q < END ? <i32>load<u8>(IN + q) : -1;
}

// biome-ignore lint/complexity/noStaticOnlyClass: the static method exists only to carry @inline
class Memo {
  /** storeMemo(), its usual case (MEMOIZE, three times an entry) inlined. */
  @inline
  static put(code: i32): i32 {
    const q = P;
    if (q < END && <i32>load<u8>(IN + q) === MEMOIZE && <u32>MEMO_LEN <= MAX_MEMO) {
      const slot = MEMO_LEN;
      store<i32>(MEMO + (slot << 2), code);
      MEMO_LEN = slot + 1;
      P = q + 1;
      return slot;
    }
    return storeMemo(code);
  }
}

/**
 * Stores `code` as the memo op at P says. Returns the slot, -1 when there is no memo op, -2 to give the
 * entry up (out of bytes, a slot past the limit, or a slot other than the next one: JavaScript judges).
 */
function storeMemo(code: i32): i32 {
  const q = P;
  if (q >= END) return -2;
  const op = <i32>load<u8>(IN + q);
  let slot: i32;
  if (op === MEMOIZE) {
    slot = MEMO_LEN;
    P = q + 1;
  } else if (op === BINPUT) {
    if (q + 2 > END) return -2;
    slot = <i32>load<u8>(IN + q + 1);
    P = q + 2;
  } else if (op === LONG_BINPUT) {
    if (q + 5 > END) return -2;
    slot = u32at(q + 1);
    P = q + 5;
  } else return -1;
  if (slot !== MEMO_LEN || <u32>slot > MAX_MEMO) return -2;
  store<i32>(MEMO + (slot << 2), code);
  MEMO_LEN = slot + 1;
  return slot;
}

/** The memo code of the str in bytes IN + at .. + n (asked of JavaScript once per distinct bytes). */
function stringCode(at: i32, n: i32): i32 {
  // torch writes per-entry strs (compile_context) as new objects with the same bytes: the last one
  // usually applies
  if (n === lastStrLen && sameBytes(IN + at, lastStrPtr, n)) return lastStrCode;
  if (n > STR_MAX_BYTES) return newString(IN + at, n);
  let h: u32 = <u32>n;
  for (let i = 0; i < n; i++) h = (h ^ <u32>load<u8>(IN + at + i)) * 0x01000193;
  const bucket = STR_HEADS + ((<i32>(h & <u32>(STR_BUCKETS - 1))) << 2);
  for (let e1 = load<i32>(bucket); e1 !== 0; ) {
    const e = STR_ENTRIES + ((e1 - 1) << 4);
    if (load<i32>(e + 4) === n && sameBytes(load<i32>(e), IN + at, n)) {
      lastStrPtr = load<i32>(e);
      lastStrLen = n;
      lastStrCode = load<i32>(e + 8);
      return lastStrCode;
    }
    e1 = load<i32>(e + 12);
  }
  const code = newString(IN + at, n);
  if (strCount < STR_CAP && strPoolUsed + n <= STR_POOL_BYTES) {
    const ptr = STR_POOL + strPoolUsed;
    memory.copy(ptr, IN + at, n);
    strPoolUsed += n;
    const e = STR_ENTRIES + (strCount << 4);
    store<i32>(e, ptr);
    store<i32>(e + 4, n);
    store<i32>(e + 8, code);
    store<i32>(e + 12, load<i32>(bucket));
    strCount++;
    store<i32>(bucket, strCount);
    lastStrPtr = ptr;
    lastStrLen = n;
    lastStrCode = code;
  }
  return code;
}

/** A str written in the bytes at P (its opcode is op), memoised as its memo op says: its code, or 0. */
function readNewString(op: i32): i32 {
  const q = P;
  let n: i32;
  let at: i32;
  if (op === SHORT_BINUNICODE) {
    if (q + 2 > END) return 0;
    n = <i32>load<u8>(IN + q + 1);
    at = q + 2;
  } else {
    if (q + 5 > END) return 0;
    n = u32at(q + 1);
    at = q + 5;
    if (n < 0) return 0;
  }
  if (n > END - at) return 0;
  const code = stringCode(at, n);
  P = at + n;
  if (Memo.put(code) === -2) return 0;
  return code;
}

/** Reads the value at P (a scalar, a str, or when framesKey a frames list): its kind, or 0 to give up. */
function readValue(framesKey: bool): i32 {
  const op = nextOp();
  const q = P;
  switch (op) {
    case BININT1:
      if (q + 2 > END) return 0;
      vNum = <f64>load<u8>(IN + q + 1);
      P = q + 2;
      return V_NUM;
    case BININT2:
      if (q + 3 > END) return 0;
      vNum = <f64>load<u16>(IN + q + 1);
      P = q + 3;
      return V_NUM;
    case BININT:
      if (q + 5 > END) return 0;
      vNum = <f64>u32at(q + 1);
      P = q + 5;
      return V_NUM;
    case LONG1: {
      if (q + 2 > END) return 0;
      const n = <i32>load<u8>(IN + q + 1);
      if (n > 8 || q + 2 + n > END) return 0;
      let v: i64 = 0;
      for (let i = n - 1; i >= 0; i--) v = (v << 8) | <i64>load<u8>(IN + q + 2 + i);
      if (n > 0 && n < 8) {
        const shift = <i64>(64 - 8 * n);
        v = (v << shift) >> shift; // sign-extend
      }
      // beyond 2^53: JavaScript takes the entry (and notes the lost precision)
      if (v > 9007199254740991 || v < -9007199254740991) return 0;
      vNum = <f64>v;
      P = q + 2 + n;
      return V_NUM;
    }
    case BINFLOAT:
      if (q + 9 > END) return 0;
      vNum = reinterpret<f64>(bswap<u64>(load<u64>(IN + q + 1)));
      P = q + 9;
      return V_NUM;
    case NONE:
      P = q + 1;
      return V_NONE;
    case NEWTRUE:
    case NEWFALSE:
      vNum = op === NEWTRUE ? 1 : 0;
      P = q + 1;
      return V_BOOL;
    case SHORT_BINUNICODE:
    case BINUNICODE: {
      const code = readNewString(op);
      if (code === 0) return 0;
      vCode = code;
      return V_STR;
    }
    case BINGET:
    case LONG_BINGET: {
      const width = op === BINGET ? 2 : 5;
      if (q + width > END) return 0;
      const code = memoCode(op === BINGET ? <u32>load<u8>(IN + q + 1) : <u32>u32at(q + 1));
      const v = Info.of(code);
      if ((v & 7) === I_STR) {
        vCode = code;
        P = q + width;
        return V_STR;
      }
      if (!framesKey || (v & 7) !== I_STACK) return 0;
      vStack = v >>> 3;
      P = q + width;
      return V_STACK;
    }
    case EMPTY_LIST: {
      if (!framesKey) return 0;
      const stack = framesList();
      if (stack < 0) return 0;
      vStack = stack;
      return V_STACK;
    }
    default:
      return 0;
  }
}

/** A frames list at P (its EMPTY_LIST), memoised: its stack id, or -1 to give up. */
function framesList(): i32 {
  P++;
  const slot = Memo.put(0);
  if (slot === -2) return -1;
  let listStart = -1;
  if (nextOp() === MARK) {
    // Seen these exact bytes before? Then it is the same stack.
    listStart = P;
    const hit = cacheMatch(listStart);
    if (hit >= 0) {
      P = listStart + matched;
      return endList(slot, hit);
    }
  }
  let n = 0;
  let batches = 0;
  let batchEnd = -1;
  for (;;) {
    const op = nextOp();
    if (op === MARK) {
      // a batch: MARK item… APPENDS
      P++;
      for (;;) {
        const item = nextOp();
        if (item === APPENDS) {
          P++;
          break;
        }
        const id = readFrame(item);
        if (id < 0 || n >= FRAMES_CAP) return -1;
        store<i32>(FRAMES + (n << 2), id);
        n++;
      }
      batches++;
      batchEnd = P;
      continue;
    }
    // a lone item is followed by APPEND; anything but a frame ends the list (the entry's next key)
    const id = readFrame(op);
    if (id === -1) break;
    if (id < 0 || n >= FRAMES_CAP) return -1;
    if (nextOp() !== APPEND) return -1;
    P++;
    store<i32>(FRAMES + (n << 2), id);
    n++;
    batches = 2; // not one plain batch: never cached
  }
  const stack = internStack(FRAMES, n);
  if (batches === 1 && listStart >= 0 && n < 1000) cacheAdd(listStart, batchEnd, stack);
  return endList(slot, stack);
}

function endList(slot: i32, stack: i32): i32 {
  if (slot >= 0) {
    let code: i32;
    if (stack < STACK_CODE_CAP) {
      code = load<i32>(STACK_CODES + (stack << 2));
      if (code === 0) {
        code = stackCodeOf(stack);
        store<i32>(STACK_CODES + (stack << 2), code);
        if (stack >= stackCodesUsed) stackCodesUsed = stack + 1;
      }
    } else code = stackCodeOf(stack);
    store<i32>(MEMO + (slot << 2), code);
  }
  return stack;
}

/** A frame at P: its frame id; -1 if it is not a frame (the list has ended); -2 to give up. */
function readFrame(op: i32): i32 {
  if (op === BINGET || op === LONG_BINGET) {
    const q = P;
    const width = op === BINGET ? 2 : 5;
    if (q + width > END) return -2;
    const code = memoCode(op === BINGET ? <u32>load<u8>(IN + q + 1) : <u32>u32at(q + 1));
    const v = Info.of(code);
    const kind = v & 7;
    if (kind === I_FRAME) {
      P = q + width;
      return v >>> 3;
    }
    if (kind !== I_DICT) return -1;
    // a dict not yet taken as a frame: JavaScript interns it (or says it is not a frame)
    const id = frameOf(code);
    if (id < 0) return -2;
    P = q + width;
    return id;
  }
  // a frame dict written out in full (the first time it is met): read here, JavaScript makes the dict
  if (op === EMPTY_DICT) return frameDict();
  return op < 0 ? -2 : -1;
}

// Two tables share the cached lists. A list of PREFIX_BYTES or more is found by a hash of its first
// PREFIX_BYTES (loaded 8 at a time, without stepping through its ops), a shorter one by a hash of the
// whole list (hashList). A hash of only the first few bytes is not enough: with C++ frames recorded,
// every stack starts with the same allocator frames (on a real training file its 183 stacks had 2
// distinct first 8 bytes, and a lookup walked 17 lists; 93 distinct first 48 bytes).
const PREFIX_BYTES: i32 = 48;
let listBytes: i32 = 0;
let listKey: u32 = 0;

/**
 * Steps over the list at IN + start (its MARK): memo references up to APPENDS. Sets listBytes (MARK …
 * APPENDS) and listKey (its hash); false if the list holds anything else, is longer than the cache
 * keeps, or comes within 5 bytes of the bytes' end (such a list is parsed as if it were not cached).
 */
function hashList(start: i32): bool {
  // Locals, one bound per op, and a Fletcher sum (two adds) rather than a multiply per op: the loop is
  // bound by its chain of dependent instructions, 40-odd ops a stack.
  const base = IN;
  const lim = base + min(END - 5, start + MAX_LIST_BYTES);
  let q = base + start + 1;
  let a: u32 = 0;
  let b: u32 = 0;
  for (;;) {
    if (q >= lim) return false;
    const op = <i32>load<u8>(q);
    if (op === BINGET) {
      a += <u32>load<u8>(q + 1);
      q += 2;
    } else if (op === LONG_BINGET) {
      a += load<u32>(q + 1);
      q += 5;
    } else if (op === APPENDS) break;
    else return false;
    b += a;
  }
  listBytes = q + 1 - (base + start);
  listKey = (b * 0x9e3779b1 + a) * 0x85ebca6b + <u32>listBytes;
  return true;
}

function cacheHead(): i32 {
  return CACHE_HEADS + ((<i32>((listKey >>> 16) & <u32>(CACHE_BUCKETS - 1))) << 2);
}

/** hi · 2^32 + lo (folded to a constant where the arguments are: -O3 inlines it). */
function u64of(hi: u32, lo: u32): u64 {
  return ((<u64>hi) << 32) | <u64>lo;
}

/** The bucket of the lists whose first PREFIX_BYTES are those at IN + start (start + PREFIX_BYTES ≤ END). */
function prefixHead(start: i32): i32 {
  const p = IN + start;
  // independent multiplies, summed: no chain from one word to the next (each odd 64-bit constant
  // written as two halves: a literal past 2^53 is not a JavaScript number, and the linter reads this file)
  let h: u64 =
    load<u64>(p) * u64of(0x9e3779b9, 0x7f4a7c15) +
    load<u64>(p + 8) * u64of(0xc2b2ae3d, 0x27d4eb4f) +
    load<u64>(p + 16) * u64of(0x165667b1, 0x9e3779f9) +
    load<u64>(p + 24) * u64of(0x27d4eb2f, 0x165667c5) +
    load<u64>(p + 32) * u64of(0x85ebca77, 0xc2b2ae63) +
    load<u64>(p + 40) * u64of(0xff51afd7, 0xed558ccd);
  h ^= h >>> 29;
  const bucket = <i32>(<u32>(h >>> 40) & <u32>(CACHE_BUCKETS - 1));
  return CACHE_HEADS + ((CACHE_BUCKETS + bucket) << 2);
}

/** The stack of the cached list whose bytes start at IN + start (its MARK), or -1; sets `matched`. */
function cacheMatch(start: i32): i32 {
  if (start + PREFIX_BYTES <= END) {
    const hit = cacheWalk(prefixHead(start), start, -1);
    if (hit >= 0) return hit;
  }
  if (!hashList(start)) return -1;
  return cacheWalk(cacheHead(), start, listBytes);
}

/**
 * The stack of the list in chain `head` whose bytes are those at IN + start (of length `n` when n ≥ 0).
 * A chain found by the first PREFIX_BYTES holds every cached list that starts alike (on a real-shaped
 * training file, 5 a lookup on average; 2.3 visited with the move to the front): a list of another
 * length is passed over on one byte of the input, the APPENDS it would end with, without reading its
 * cached bytes; a list of this length is compared from after the prefix (where lists that start alike
 * differ), the prefix last.
 */
function cacheWalk(head: i32, start: i32, n: i32): i32 {
  let prev = 0;
  const at = IN + start;
  for (let e1 = load<i32>(head); e1 !== 0; ) {
    const e = CACHE_ENTRIES + ((e1 - 1) << 4);
    const next = load<i32>(e + 12);
    const len = load<i32>(e + 4);
    if (
      (n < 0 ? len <= END - start && <i32>load<u8>(at + len - 1) === APPENDS : len === n) &&
      sameList(at, load<i32>(e), len)
    ) {
      if (prev !== 0) {
        // move to the front: the stacks in use now are likely to be met again soon
        store<i32>(CACHE_ENTRIES + ((prev - 1) << 4) + 12, next);
        store<i32>(e + 12, load<i32>(head));
        store<i32>(head, e1);
      }
      matched = len;
      return load<i32>(e + 8);
    }
    prev = e1;
    e1 = next;
  }
  return -1;
}

/** sameBytes() of two lists, the bytes after the first PREFIX_BYTES compared first. */
function sameList(a: i32, b: i32, n: i32): bool {
  if (n < PREFIX_BYTES + 8) return sameBytes(a, b, n);
  return sameBytes(a + PREFIX_BYTES, b + PREFIX_BYTES, n - PREFIX_BYTES) && sameBytes(a, b, PREFIX_BYTES);
}

function sameBytes(a: i32, b: i32, n: i32): bool {
  let i = 0;
  for (; i + 8 <= n; i += 8) if (load<u64>(a + i) !== load<u64>(b + i)) return false;
  for (; i < n; i++) if (load<u8>(a + i) !== load<u8>(b + i)) return false;
  return true;
}

/** Remembers IN + start .. stop (MARK … APPENDS) as `stack`, if it is a list of memo references only. */
function cacheAdd(start: i32, stop: i32, stack: i32): void {
  const n = stop - start;
  if (n < MIN_LIST_BYTES || n > MAX_LIST_BYTES) return;
  if (cacheCount >= CACHE_CAP || cachePoolUsed + n > CACHE_POOL_BYTES) return;
  if (!hashList(start) || listBytes !== n) return;
  const ptr = CACHE_POOL + cachePoolUsed;
  memory.copy(ptr, IN + start, n);
  cachePoolUsed += n;
  const head = n >= PREFIX_BYTES ? prefixHead(start) : cacheHead();
  const e = CACHE_ENTRIES + (cacheCount << 4);
  store<i32>(e, ptr);
  store<i32>(e + 4, n);
  store<i32>(e + 8, stack);
  store<i32>(e + 12, load<i32>(head));
  cacheCount++;
  store<i32>(head, cacheCount);
}

function strAction(code: i32, v: i32): i32 {
  const a = (v >>> 8) & 0xff;
  return a !== 0 ? a - 1 : actionOf(code);
}

/** As the JavaScript scanner's optString(): None is no string; numbers and booleans as JSON text. */
function optString(kind: i32): i32 {
  if (kind === V_STR) return Info.intern(vCode);
  if (kind === V_NUM) return numString(vNum, 0);
  if (kind === V_BOOL) return numString(vNum, 1);
  return NO_STRING;
}

/**
 * Parses the entry whose EMPTY_DICT is at IN + pos into row `row`; false to give it up. The usual
 * opcodes are read here, with the position in a local; the rest through readValue() and framesList().
 */
function entry(pos: i32, row: i32, consumedCode: i32): bool {
  const end = END;
  // memo slots below this were set before the entry (an entry given up on takes its own slots back)
  const committed = <u32>MEMO_LEN;
  P = pos + 1;
  if (Memo.put(consumedCode) === -2) return false;
  if (nextOp() !== MARK) return false;
  let p = P + 1;
  let action = -1;
  let addr: f64 = NaN;
  let size: f64 = 0;
  let stream: f64 = 0;
  let time: f64 = NaN;
  let stack = EMPTY_STACK;
  let deviceFree: f64 = NaN;
  let compileContext = NO_STRING;
  let userMetadata = NO_STRING;
  let category = NO_STRING;
  for (;;) {
    // room for a key and a fixed-size value: an entry this close to the end is left to JavaScript
    if (p + 16 > end) return false;
    let op = <i32>load<u8>(IN + p);
    if (op === SETITEMS) {
      p++;
      break;
    }
    // the key: nearly always a memo reference to a str seen before, its key kept per slot (KEY_SLOTS:
    // key + 1; one load instead of the memo's code and then the code's INFO)
    let key: i32;
    if (op === BINGET || op === LONG_BINGET) {
      const slot = op === BINGET ? <u32>load<u8>(IN + p + 1) : <u32>load<i32>(IN + p + 1);
      p += op === BINGET ? 2 : 5;
      let k = slot < <u32>KEY_SLOT_CAP ? <i32>load<u8>(KEY_SLOTS + <i32>slot) : 0;
      if (k === 0) {
        const ki = Info.of(memoCode(slot));
        if ((ki & 7) !== I_STR) return false;
        k = ((ki >>> 3) & 15) + 1;
        if (slot < committed && slot < <u32>KEY_SLOT_CAP) store<u8>(KEY_SLOTS + <i32>slot, <u8>k);
      }
      key = k - 1;
    } else if (op === SHORT_BINUNICODE || op === BINUNICODE || op === FRAME) {
      P = p;
      op = nextOp();
      if (op !== SHORT_BINUNICODE && op !== BINUNICODE) return false;
      const code = readNewString(op);
      if (code === 0) return false;
      p = P;
      const ki = Info.of(code);
      if ((ki & 7) !== I_STR) return false;
      key = (ki >>> 3) & 15;
    } else return false;
    if (action < 0 && key !== K_ACTION) return false;
    if (key === K_POOL_ID) {
      // torch ≥ 2.10 writes every entry's pool as a new (a, b) tuple; the model keeps pools on segments
      P = p;
      if (!readPair()) return false;
      p = P;
      continue;
    }
    // the value (p + 11 <= end here)
    op = <i32>load<u8>(IN + p);
    let kind: i32;
    let num: f64 = NaN;
    let strInfo = 0; // Info.of(vCode) where the value's branch has it already
    if (op === BININT1) {
      num = <f64>load<u8>(IN + p + 1);
      p += 2;
      kind = V_NUM;
    } else if (op === BININT) {
      num = <f64>load<i32>(IN + p + 1);
      p += 5;
      kind = V_NUM;
    } else if (op === LONG1 && <i32>load<u8>(IN + p + 1) <= 7) {
      // one 8-byte load (p + 10 <= end here), its low n bytes kept and sign-extended. n = 7 is every
      // time_us (microseconds since 1970 take 51 bits and a sign); past 2^53 JavaScript takes the entry
      const n = <i32>load<u8>(IN + p + 1);
      const shift = <i64>(64 - 8 * n);
      const v: i64 = n > 0 ? (load<i64>(IN + p + 2) << shift) >> shift : 0;
      if (v > 9007199254740991 || v < -9007199254740991) return false;
      num = <f64>v;
      p += 2 + n;
      kind = V_NUM;
    } else if (op === BINGET || op === LONG_BINGET) {
      const vc = memoCode(op === BINGET ? <u32>load<u8>(IN + p + 1) : <u32>load<i32>(IN + p + 1));
      const v = Info.of(vc);
      if ((v & 7) === I_STR) {
        vCode = vc;
        strInfo = v;
        kind = V_STR;
      } else if (key === K_FRAMES && (v & 7) === I_STACK) {
        vStack = v >>> 3;
        kind = V_STACK;
      } else return false;
      p += op === BINGET ? 2 : 5;
    } else if (op === EMPTY_LIST && key === K_FRAMES) {
      // a frames list written out (as readValue() takes it, without the call)
      P = p;
      const st = framesList();
      if (st < 0) return false;
      vStack = st;
      kind = V_STACK;
      p = P;
    } else if (
      op === SHORT_BINUNICODE &&
      <i32>load<u8>(IN + p + 1) === lastStrLen &&
      p + 2 + lastStrLen <= end &&
      sameBytes(IN + p + 2, lastStrPtr, lastStrLen)
    ) {
      // the str read last, written anew (torch writes compile_context "N/A" in every entry): as
      // readNewString() would find it, without the calls
      P = p + 2 + lastStrLen;
      if (Memo.put(lastStrCode) === -2) return false;
      vCode = lastStrCode;
      kind = V_STR;
      p = P;
    } else {
      P = p;
      kind = readValue(key === K_FRAMES);
      if (kind === 0) return false;
      if (kind === V_NUM || kind === V_BOOL) num = vNum;
      p = P;
    }
    switch (key) {
      case K_ACTION: {
        if (kind !== V_STR) return false;
        action = strAction(vCode, strInfo !== 0 ? strInfo : Info.of(vCode));
        break;
      }
      case K_ADDR:
        addr = num;
        break;
      case K_SIZE:
        size = num;
        break;
      case K_STREAM:
        stream = num;
        break;
      case K_TIME:
        time = num;
        break;
      case K_DEVICE_FREE:
        deviceFree = num;
        break;
      case K_FRAMES:
        // as the generic path: a frames value that is not a list leaves the entry without a stack
        if (kind === V_STACK) stack = vStack;
        break;
      case K_COMPILE_CONTEXT:
        compileContext = kind === V_STR ? Info.intern(vCode) : optString(kind);
        break;
      case K_USER_METADATA:
        userMetadata =
          kind === V_STR && ((strInfo !== 0 ? strInfo : Info.of(vCode)) & 0x80) !== 0
            ? NO_STRING
            : optString(kind);
        break;
      case K_CATEGORY:
        category = optString(kind);
        break;
      default:
        break;
    }
  }
  P = p;
  if (action < 0) action = emptyAction();
  let streamId: i32;
  if (stream === lastStreamRaw) streamId = lastStream;
  else {
    streamId = streamNumber(stream);
    lastStreamRaw = stream;
    lastStream = streamId;
  }
  let flags = outFlags;
  if (stream !== 0) flags |= F_STREAM_RAW;
  if (streamId !== 0) flags |= F_STREAM;
  // recorded (not the NaN an entry without device_free keeps), or an oom entry
  // biome-ignore lint/suspicious/noSelfCompare: a NaN test, without the global isNaN biome warns of
  if (deviceFree === deviceFree || action === ACTION_OOM) flags |= F_DEVICE_FREE;
  if (row === 0) {
    firstCompileContext = compileContext;
    firstUserMetadata = userMetadata;
    firstCategory = category;
  } else {
    if (compileContext !== firstCompileContext) flags |= F_COMPILE_CONTEXT;
    if (userMetadata !== firstUserMetadata) flags |= F_USER_METADATA;
    if (category !== firstCategory) flags |= F_CATEGORY;
  }
  outFlags = flags;
  store<u8>(R_ACTION + row, <u8>action);
  store<f64>(R_ADDR + (row << 3), addr);
  store<f64>(R_SIZE + (row << 3), size);
  store<f64>(R_STREAM_RAW + (row << 3), stream);
  store<i32>(R_STREAM + (row << 2), streamId);
  store<f64>(R_TIME + (row << 3), time);
  store<i32>(R_STACK + (row << 2), stack);
  store<f64>(R_DEVICE_FREE + (row << 3), deviceFree);
  store<i32>(R_COMPILE_CONTEXT + (row << 2), compileContext);
  store<i32>(R_USER_METADATA + (row << 2), userMetadata);
  store<i32>(R_CATEGORY + (row << 2), category);
  return true;
}

// ---------------------------------------------------------------------------------------------------
// Segments. The snapshot's "segments" list comes first in the file, before any trace entry: ≈ 200 KB
// and 75 thousand opcodes at 101 MB (segment dicts, their block dicts, the frames of every block, the
// frame dicts written out in full the first time they are met). Read by JavaScript's opcode loop they
// cost a cold load 60–100 ms, and V8 compiles that loop five times meanwhile; read here, the loop never
// gets hot. scanSegments() takes the segment dicts that follow one another in the root's "segments"
// list (wasm-scanner.ts asks only there) into segment and block rows; anything else in a segment (a key
// it does not know, a value of another kind, torch 2.0's block history, the bytes ending) stops the run
// at that segment with the memo as it was, and JavaScript reads it as before.

// Segment keys (SK_*): what segmentKeyOf() says a str is (0: not asked yet, SK_OTHER: none of these)
const SK_DEVICE: i32 = 1;
const SK_ADDRESS: i32 = 2;
const SK_TOTAL_SIZE: i32 = 3;
const SK_ALLOCATED_SIZE: i32 = 4;
const SK_ACTIVE_SIZE: i32 = 5;
const SK_REQUESTED_SIZE: i32 = 6;
const SK_STREAM: i32 = 7;
const SK_SEGMENT_TYPE: i32 = 8;
const SK_SEGMENT_POOL_ID: i32 = 9;
const SK_IS_EXPANDABLE: i32 = 10;
const SK_FRAMES: i32 = 11;
const SK_BLOCKS: i32 = 12;
const SK_SIZE: i32 = 13;
const SK_STATE: i32 = 14;
const SK_FILENAME: i32 = 15;
const SK_LINE: i32 = 16;
const SK_NAME: i32 = 17;

// A segment row's fields (f64 each; wasm-scanner.ts reads them by these indices)
const SEG_DEVICE: i32 = 0;
const SEG_ADDRESS: i32 = 1;
const SEG_TOTAL: i32 = 2;
const SEG_ALLOCATED: i32 = 3;
const SEG_ACTIVE: i32 = 4;
const SEG_REQUESTED: i32 = 5;
const SEG_STREAM: i32 = 6;
const SEG_POOL_A: i32 = 7;
const SEG_POOL_B: i32 = 8;
const SEG_TYPE: i32 = 9; // the str's memo code, 0 when absent
const SEG_EXPANDABLE: i32 = 10;
const SEG_STACK: i32 = 11;
const SEG_BLOCKS: i32 = 12; // how many block rows follow the last segment's
const SEG_HAS: i32 = 13; // HAS_* of the keys present
// A block row's fields
const BLK_ADDRESS: i32 = 0;
const BLK_SIZE: i32 = 1;
const BLK_REQUESTED: i32 = 2;
const BLK_STATE: i32 = 3; // the str's memo code, 0 when absent
const BLK_STACK: i32 = 4;
const BLK_HAS: i32 = 5;
// Keys present (SEG_HAS, BLK_HAS)
const HAS_ADDRESS: i32 = 1;
const HAS_REQUESTED: i32 = 2;
const HAS_POOL: i32 = 4;

let outSegments: i32 = 0;
let outBlocks: i32 = 0;
let pairCount: i32 = 0;
export function segments(): i32 {
  return outSegments;
}
export function blocks(): i32 {
  return outBlocks;
}
/** Before another file: pairs are numbered from 0 again (their INFO entries are cleared by JavaScript). */
export function resetPairs(): void {
  pairCount = 0;
  lastPairCode = 0;
}

/**
 * Parses the segment dicts that follow one another from IN + pos (an EMPTY_DICT), as scan() does trace
 * entries: segments() rows and blocks() block rows written, position() where it stopped (the EMPTY_DICT
 * of a segment it gave up on, or what follows the last), memoLength() the memo's new length.
 */
export function scanSegments(pos: i32, end: i32, memoLen: i32, maxMemo: i32, consumedCode: i32): i32 {
  P = pos;
  END = end;
  MEMO_LEN = memoLen;
  MAX_MEMO = <u32>maxMemo;
  let n = 0;
  let nb = 0;
  let status = S_NOT_ENTRY;
  for (;;) {
    const q = P;
    if (q >= END || <i32>load<u8>(IN + q) !== EMPTY_DICT) break;
    if (n >= SEG_CAP) {
      status = S_ROWS_FULL;
      break;
    }
    const memoStart = MEMO_LEN;
    const got = segment(q, n, nb, consumedCode);
    if (got < 0) {
      if (MEMO_LEN > memoStart) memory.fill(MEMO + (memoStart << 2), 0, (MEMO_LEN - memoStart) << 2);
      MEMO_LEN = memoStart;
      P = q;
      status = S_BAIL;
      break;
    }
    nb += got;
    n++;
    while (P + 9 <= END && <i32>load<u8>(IN + P) === FRAME) P += 9;
  }
  outPos = P;
  outSegments = n;
  outBlocks = nb;
  return status;
}

/** The SK_* of the key at P (a memo reference to a str, or a str written out), or 0 to give up. */
function readSegmentKey(): i32 {
  const op = nextOp();
  const q = P;
  let code: i32;
  if (op === BINGET || op === LONG_BINGET) {
    const width = op === BINGET ? 2 : 5;
    if (q + width > END) return 0;
    code = memoCode(op === BINGET ? <u32>load<u8>(IN + q + 1) : <u32>u32at(q + 1));
    if ((Info.of(code) & 7) !== I_STR) return 0;
    P = q + width;
  } else if (op === SHORT_BINUNICODE || op === BINUNICODE) {
    code = readNewString(op);
    if (code === 0) return 0;
  } else return 0;
  const idx = infoIndex(code);
  if (<u32>idx >= <u32>INFO_CAP) return 0;
  const k = <i32>load<u8>(SEG_KEYS + idx);
  return k !== 0 ? k : segmentKeyOf(code);
}

/** A number (an int, or a float) at P into vNum; false to give up (None, a bool, anything else). */
function readNumber(): bool {
  return readValue(false) === V_NUM;
}

/** A str at P: its memo code, or 0 to give up. */
function readStr(): i32 {
  return readValue(false) === V_STR ? vCode : 0;
}

/** The SEG_* a segment key's number goes to (SK_DEVICE … SK_STREAM), or -1. */
function segmentNumberField(key: i32): i32 {
  switch (key) {
    case SK_DEVICE:
      return SEG_DEVICE;
    case SK_ADDRESS:
      return SEG_ADDRESS;
    case SK_TOTAL_SIZE:
      return SEG_TOTAL;
    case SK_ALLOCATED_SIZE:
      return SEG_ALLOCATED;
    case SK_ACTIVE_SIZE:
      return SEG_ACTIVE;
    case SK_REQUESTED_SIZE:
      return SEG_REQUESTED;
    case SK_STREAM:
      return SEG_STREAM;
    default:
      return -1;
  }
}

/**
 * The segment dict at IN + pos into segment row `row`, its blocks from block row `block` on: how many
 * blocks it has, or -1 to give it up. (A row given up on is left half written: nothing counts it.)
 */
function segment(pos: i32, row: i32, block: i32, consumedCode: i32): i32 {
  P = pos + 1;
  if (Memo.put(consumedCode) === -2) return -1;
  if (nextOp() !== MARK) return -1;
  P++;
  // what a key left out reads as (assemble.ts addSegments: address and requested_size as absent)
  const r = SEG_ROWS + row * SEG_FIELDS * 8;
  for (let f = 0; f < SEG_FIELDS; f++) store<f64>(r + f * 8, 0);
  store<f64>(r + SEG_ADDRESS * 8, NaN);
  store<f64>(r + SEG_STACK * 8, <f64>EMPTY_STACK);
  let has = 0;
  let blockCount = 0;
  for (;;) {
    if (nextOp() === SETITEMS) {
      P++;
      break;
    }
    const key = readSegmentKey();
    const field = segmentNumberField(key);
    if (field >= 0) {
      if (!readNumber()) return -1;
      store<f64>(r + field * 8, vNum);
      if (key === SK_ADDRESS) has |= HAS_ADDRESS;
      else if (key === SK_REQUESTED_SIZE) has |= HAS_REQUESTED;
      continue;
    }
    switch (key) {
      case SK_SEGMENT_TYPE: {
        const type = readStr();
        if (type === 0) return -1;
        store<f64>(r + SEG_TYPE * 8, <f64>type);
        break;
      }
      case SK_SEGMENT_POOL_ID:
        if (!readPair()) return -1;
        store<f64>(r + SEG_POOL_A * 8, pairA);
        store<f64>(r + SEG_POOL_B * 8, pairB);
        has |= HAS_POOL;
        break;
      case SK_IS_EXPANDABLE: {
        const b = nextOp();
        if (b !== NEWTRUE && b !== NEWFALSE) return -1;
        P++;
        store<f64>(r + SEG_EXPANDABLE * 8, b === NEWTRUE ? 1 : 0);
        break;
      }
      case SK_FRAMES:
        if (readValue(true) !== V_STACK) return -1;
        store<f64>(r + SEG_STACK * 8, <f64>vStack);
        break;
      case SK_BLOCKS:
        blockCount = blockList(block, consumedCode);
        if (blockCount < 0) return -1;
        break;
      default:
        return -1;
    }
  }
  store<f64>(r + SEG_BLOCKS * 8, <f64>blockCount);
  store<f64>(r + SEG_HAS * 8, <f64>has);
  return blockCount;
}

/**
 * The "blocks" list at P into block rows from `first` on (MARK … APPENDS batches, or a lone block and
 * APPEND): how many, or -1 to give up. A second "blocks" key in one segment is given up on.
 */
function blockList(first: i32, consumedCode: i32): i32 {
  if (nextOp() !== EMPTY_LIST) return -1;
  P++;
  if (Memo.put(consumedCode) === -2) return -1;
  let n = 0;
  for (;;) {
    const op = nextOp();
    if (op === MARK) {
      P++;
      for (;;) {
        const item = nextOp();
        if (item === APPENDS) {
          P++;
          break;
        }
        if (item !== EMPTY_DICT || first + n >= BLOCK_CAP || !block(first + n, consumedCode)) return -1;
        n++;
      }
    } else if (op === EMPTY_DICT) {
      if (first + n >= BLOCK_CAP || !block(first + n, consumedCode)) return -1;
      if (nextOp() !== APPEND) return -1;
      P++;
      n++;
    } else if (op < 0) return -1;
    else break; // the segment's next key, or its SETITEMS
  }
  return n;
}

/** The block dict at P (its EMPTY_DICT) into block row `row`; false to give it up. */
function block(row: i32, consumedCode: i32): bool {
  P++;
  if (Memo.put(consumedCode) === -2) return false;
  if (nextOp() !== MARK) return false;
  P++;
  const r = BLOCK_ROWS + row * BLOCK_FIELDS * 8;
  for (let f = 0; f < BLOCK_FIELDS; f++) store<f64>(r + f * 8, 0);
  store<f64>(r + BLK_ADDRESS * 8, NaN);
  store<f64>(r + BLK_REQUESTED * 8, NaN);
  store<f64>(r + BLK_STACK * 8, <f64>EMPTY_STACK);
  let has = 0;
  for (;;) {
    if (nextOp() === SETITEMS) {
      P++;
      break;
    }
    const key = readSegmentKey();
    if (key === SK_ADDRESS || key === SK_SIZE || key === SK_REQUESTED_SIZE) {
      if (!readNumber()) return false;
      const field = key === SK_ADDRESS ? BLK_ADDRESS : key === SK_SIZE ? BLK_SIZE : BLK_REQUESTED;
      store<f64>(r + field * 8, vNum);
      if (key === SK_ADDRESS) has |= HAS_ADDRESS;
      else if (key === SK_REQUESTED_SIZE) has |= HAS_REQUESTED;
    } else if (key === SK_STATE) {
      const state = readStr();
      if (state === 0) return false;
      store<f64>(r + BLK_STATE * 8, <f64>state);
    } else if (key === SK_FRAMES) {
      if (readValue(true) !== V_STACK) return false;
      store<f64>(r + BLK_STACK * 8, <f64>vStack);
    } else return false;
  }
  store<f64>(r + BLK_HAS * 8, <f64>has);
  return true;
}

let pairA: f64 = 0;
let pairB: f64 = 0;
/** The memo code of the pair read last from the bytes (pairA, pairB), 0 before any. */
let lastPairCode: i32 = 0;

/** A pair of numbers at P (two ints and TUPLE2, memoised; or a memo reference to one read here). */
function readPair(): bool {
  const op = nextOp();
  const q = P;
  if (op === BINGET || op === LONG_BINGET) {
    const width = op === BINGET ? 2 : 5;
    if (q + width > END) return false;
    const vc = memoCode(op === BINGET ? <u32>load<u8>(IN + q + 1) : <u32>u32at(q + 1));
    const v = Info.of(vc);
    if ((v & 7) !== I_PAIR) return false;
    const at = PAIRS + ((v >>> 3) << 4);
    pairA = load<f64>(at);
    pairB = load<f64>(at + 8);
    lastPairCode = vc;
    P = q + width;
    return true;
  }
  if (!readNumber()) return false;
  const a = vNum;
  if (!readNumber()) return false;
  const b = vNum;
  if (nextOp() !== TUPLE2) return false;
  P++;
  // the same pair as the last (torch writes a new tuple in every trace entry) shares its code
  if (pairCount > 0 && a === pairA && b === pairB && lastPairCode !== 0) {
    return storeMemo(lastPairCode) !== -2;
  }
  if (pairCount >= PAIR_CAP) return false;
  // JavaScript makes the tuple (a memo reference elsewhere may need it) and records its INFO as I_PAIR
  const code = newPair(a, b, pairCount);
  const at = PAIRS + (pairCount << 4);
  store<f64>(at, a);
  store<f64>(at + 8, b);
  pairCount++;
  pairA = a;
  pairB = b;
  lastPairCode = code;
  return storeMemo(code) !== -2;
}

/**
 * A frame dict written out in full at P (EMPTY_DICT, its memo op, MARK, "filename", "line" and "name",
 * SETITEMS): JavaScript interns it (newFrame) and makes the dict a later memo reference finds. Its frame
 * id, or -2 to give up (any other key, a value of another kind).
 */
function frameDict(): i32 {
  P++;
  const slot = Memo.put(0);
  if (slot === -2) return -2;
  if (nextOp() !== MARK) return -2;
  P++;
  let filename = 0;
  let name = 0;
  let line: f64 = NaN;
  for (;;) {
    const op = nextOp();
    if (op === SETITEMS) {
      P++;
      break;
    }
    switch (readSegmentKey()) {
      case SK_FILENAME:
        filename = readStr();
        if (filename === 0) return -2;
        break;
      case SK_LINE:
        if (!readNumber()) return -2;
        line = vNum;
        break;
      case SK_NAME:
        name = readStr();
        if (name === 0) return -2;
        break;
      default:
        return -2;
    }
  }
  // biome-ignore lint/suspicious/noSelfCompare: a NaN test, without the global isNaN biome warns of
  if (filename === 0 || name === 0 || line !== line) return -2;
  const code = newFrame(filename, line, name);
  if (slot >= 0) store<i32>(MEMO + (slot << 2), code);
  return Info.of(code) >>> 3;
}
