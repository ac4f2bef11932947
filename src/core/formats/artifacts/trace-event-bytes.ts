// One Chrome-trace event read field by field from its UTF-8 bytes, without decoding it or building an
// object: the fast path of profiler-trace.ts (a 50 MB trace holds ~250k events, and decoding plus
// JSON.parse / regexes per event was most of the read). It reads only the plain shape Kineto and the
// Python exporter write: top-level keys and the strings we read without escapes, numbers in strict JSON
// grammar, a memory event's `args` flat. Anything else returns false and the caller decodes the event and
// JSON.parses it as before, so the result is the same as JSON.parse's wherever this path answers: the
// values are those JSON.parse gives (numbers below included), and a memory event it accepts is valid
// JSON (every value of it checked), as JSON.parse would have checked it.

/** A value's kind in `EventFields`. */
export enum Kind {
  absent = 0,
  string = 1,
  number = 2,
  /** true / false / null, or an object / array (kept as a byte range, not read). */
  other = 3,
}

/** The fields read from one event; reused from event to event (no allocation per event). */
export class EventFields {
  /** `ph` is the string "X" (a complete span). */
  phX = false;
  nameKind = Kind.absent;
  nameFrom = 0;
  nameTo = 0;
  /** 1: the name is "[memory]", 2: "[OutOfMemory]", 0: another name. */
  memoryName = 0;
  catKind = Kind.absent;
  catFrom = 0;
  catTo = 0;
  pidKind = Kind.absent;
  pid = 0;
  pidFrom = 0;
  pidTo = 0;
  tidKind = Kind.absent;
  tid = 0;
  tidFrom = 0;
  tidTo = 0;
  tsKind = Kind.absent;
  ts = 0;
  durKind = Kind.absent;
  dur = 0;
  /** `args` as a byte range from `{` to `}` inclusive (argsKind object) or absent. */
  argsObject = false;
  argsFrom = 0;
  argsTo = 0;
  /** A top-level value other than args was skipped unchecked (an object, an array, a string with escapes). */
  unchecked = false;
  // a memory event's args (NaN when absent or not a number, as num() gives for JSON.parse's values)
  deviceType = Number.NaN;
  deviceId = Number.NaN;
  addr = Number.NaN;
  bytes = Number.NaN;
  totalAllocated = Number.NaN;
  totalReserved = Number.NaN;
  /** Where a number's text ended (out-parameter of readNumber). */
  end = 0;
}

const POW10 = [1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15];

const isSpace = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
const isDigit = (c: number) => c >= 0x30 && c <= 0x39;

/**
 * A JSON number at `b[i]` (strict grammar: `-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?`); NaN when it is not
 * one. `f.end` is set past it. Up to 15 significant digits without an exponent the value is computed
 * exactly (an integer below 2^53 divided by an exact power of ten is correctly rounded, as Number()
 * rounds); anything longer goes through Number() on its text.
 */
export function readNumber(b: Uint8Array, i: number, to: number, f: EventFields): number {
  const start = i;
  let neg = false;
  if (b[i] === 0x2d) {
    neg = true;
    i++;
  }
  if (i >= to || !isDigit(b[i])) return Number.NaN;
  let m = 0;
  let digits = 0;
  if (b[i] === 0x30) {
    i++;
    digits = 1;
  } else {
    while (i < to && isDigit(b[i])) {
      m = m * 10 + (b[i] - 0x30);
      digits++;
      i++;
    }
  }
  let frac = 0;
  if (i < to && b[i] === 0x2e) {
    i++;
    if (i >= to || !isDigit(b[i])) return Number.NaN;
    while (i < to && isDigit(b[i])) {
      m = m * 10 + (b[i] - 0x30);
      digits++;
      frac++;
      i++;
    }
  }
  let exp = false;
  if (i < to && (b[i] === 0x65 || b[i] === 0x45)) {
    exp = true;
    i++;
    if (i < to && (b[i] === 0x2b || b[i] === 0x2d)) i++;
    if (i >= to || !isDigit(b[i])) return Number.NaN;
    while (i < to && isDigit(b[i])) i++;
  }
  f.end = i;
  if (!exp && digits <= 15) {
    const v = frac === 0 ? m : m / POW10[frac];
    return neg ? -v : v;
  }
  let text = "";
  for (let k = start; k < i; k++) text += String.fromCharCode(b[k]);
  return Number(text);
}

/** Past a string whose opening quote is at `i - 1`; -1 when it holds a backslash or a control character. */
function skipPlainString(b: Uint8Array, i: number, to: number): number {
  for (; i < to; i++) {
    const c = b[i];
    if (c === 0x22) return i + 1;
    if (c === 0x5c || c < 0x20) return -1;
  }
  return -1;
}

/** Past a string whose opening quote is at `i - 1`, escapes skipped unchecked; -1 when it does not end. */
function skipString(b: Uint8Array, i: number, to: number): number {
  for (; i < to; i++) {
    const c = b[i];
    if (c === 0x5c) i++;
    else if (c === 0x22) return i + 1;
  }
  return -1;
}

/** Past an object or array starting at `b[i]` (brackets counted outside strings; the scanner checked depth). */
function skipNested(b: Uint8Array, i: number, to: number): number {
  let depth = 0;
  let inString = false;
  for (; i < to; i++) {
    const c = b[i];
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) depth++;
    else if (c === 0x7d || c === 0x5d) {
      if (--depth === 0) return i + 1;
    }
  }
  return -1;
}

/** Past `true`, `false` or `null` at `b[i]`; -1 otherwise. */
function skipLiteral(b: Uint8Array, i: number, to: number): number {
  const c = b[i];
  if (c === 0x74 && i + 4 <= to && b[i + 1] === 0x72 && b[i + 2] === 0x75 && b[i + 3] === 0x65) return i + 4;
  if (c === 0x6e && i + 4 <= to && b[i + 1] === 0x75 && b[i + 2] === 0x6c && b[i + 3] === 0x6c) return i + 4;
  if (
    c === 0x66 &&
    i + 5 <= to &&
    b[i + 1] === 0x61 &&
    b[i + 2] === 0x6c &&
    b[i + 3] === 0x73 &&
    b[i + 4] === 0x65
  )
    return i + 5;
  return -1;
}

/** Whether `b[from, to)` holds exactly the ASCII text `s`. */
function isText(b: Uint8Array, from: number, to: number, s: string): boolean {
  if (to - from !== s.length) return false;
  for (let k = 0; k < s.length; k++) if (b[from + k] !== s.charCodeAt(k)) return false;
  return true;
}

// top-level keys we read, told apart by length and first letter before a full compare
function keyId(b: Uint8Array, from: number, to: number): number {
  switch (to - from) {
    case 2:
      if (b[from] === 0x70 && b[from + 1] === 0x68) return 1; // ph
      if (b[from] === 0x74 && b[from + 1] === 0x73) return 6; // ts
      return 0;
    case 3:
      if (isText(b, from, to, "cat")) return 3;
      if (isText(b, from, to, "pid")) return 4;
      if (isText(b, from, to, "tid")) return 5;
      if (isText(b, from, to, "dur")) return 7;
      return 0;
    case 4:
      if (isText(b, from, to, "name")) return 2;
      if (isText(b, from, to, "args")) return 8;
      return 0;
    default:
      return 0;
  }
}

/**
 * Reads the top-level fields of the event `b[from, to)` (from its `{` to its `}`) into `f`; false when
 * the event is not in the plain shape (a key or read string with an escape, a number out of grammar,
 * anything unexpected): the caller then takes the JSON.parse path.
 */
export function readEventFields(b: Uint8Array, from: number, to: number, f: EventFields): boolean {
  f.phX = false;
  f.nameKind = f.catKind = f.pidKind = f.tidKind = f.tsKind = f.durKind = Kind.absent;
  f.memoryName = 0;
  f.argsObject = false;
  f.unchecked = false;
  let i = from + 1;
  while (i < to && isSpace(b[i])) i++;
  if (b[i] === 0x7d) return i === to - 1;
  for (;;) {
    if (b[i] !== 0x22) return false;
    const keyFrom = i + 1;
    i = skipPlainString(b, keyFrom, to);
    if (i < 0) return false;
    const key = keyId(b, keyFrom, i - 1);
    while (i < to && isSpace(b[i])) i++;
    if (b[i] !== 0x3a) return false;
    i++;
    while (i < to && isSpace(b[i])) i++;
    const c = b[i];
    const valueFrom = i;
    let kind: Kind;
    let value = 0;
    if (c === 0x22) {
      const end = skipPlainString(b, i + 1, to);
      if (end < 0) {
        // an escape in a string we read: the JSON.parse path decodes it; in one we do not, skip it
        if (key !== 0) return false;
        i = skipString(b, i + 1, to);
        if (i < 0) return false;
        f.unchecked = true;
      } else i = end;
      kind = Kind.string;
    } else if (c === 0x2d || isDigit(c)) {
      value = readNumber(b, i, to, f);
      if (Number.isNaN(value)) return false;
      i = f.end;
      kind = Kind.number;
    } else if (c === 0x7b || c === 0x5b) {
      i = skipNested(b, i, to);
      if (i < 0) return false;
      kind = Kind.other;
      if (key === 8 && c === 0x7b) {
        f.argsObject = true;
        f.argsFrom = valueFrom;
        f.argsTo = i;
      } else f.unchecked = true;
    } else {
      i = skipLiteral(b, i, to);
      if (i < 0) return false;
      kind = Kind.other;
    }
    switch (key) {
      case 1:
        f.phX = kind === Kind.string && i - valueFrom === 3 && b[valueFrom + 1] === 0x58;
        break;
      case 2:
        f.nameKind = kind;
        f.nameFrom = valueFrom + 1;
        f.nameTo = i - 1;
        f.memoryName =
          kind !== Kind.string
            ? 0
            : isText(b, f.nameFrom, f.nameTo, "[memory]")
              ? 1
              : isText(b, f.nameFrom, f.nameTo, "[OutOfMemory]")
                ? 2
                : 0;
        break;
      case 3:
        f.catKind = kind;
        f.catFrom = valueFrom + 1;
        f.catTo = i - 1;
        break;
      case 4:
        f.pidKind = kind;
        f.pid = value;
        f.pidFrom = valueFrom + 1;
        f.pidTo = i - 1;
        break;
      case 5:
        f.tidKind = kind;
        f.tid = value;
        f.tidFrom = valueFrom + 1;
        f.tidTo = i - 1;
        break;
      case 6:
        f.tsKind = kind;
        f.ts = value;
        break;
      case 7:
        f.durKind = kind;
        f.dur = value;
        break;
      case 8:
        if (kind !== Kind.other || c !== 0x7b) f.argsObject = false;
        break;
    }
    while (i < to && isSpace(b[i])) i++;
    if (b[i] === 0x2c) {
      i++;
      while (i < to && isSpace(b[i])) i++;
      continue;
    }
    return b[i] === 0x7d && i === to - 1;
  }
}

// memory event args we read
function argId(b: Uint8Array, from: number, to: number): number {
  switch (to - from) {
    case 4:
      return isText(b, from, to, "Addr") ? 3 : 0;
    case 5:
      return isText(b, from, to, "Bytes") ? 4 : 0;
    case 9:
      return isText(b, from, to, "Device Id") ? 2 : 0;
    case 11:
      return isText(b, from, to, "Device Type") ? 1 : 0;
    case 14:
      return isText(b, from, to, "Total Reserved") ? 6 : 0;
    case 15:
      return isText(b, from, to, "Total Allocated") ? 5 : 0;
    default:
      return 0;
  }
}

/**
 * A memory event's `args` (`f.argsFrom…argsTo`), flat: every value a plain string, a number or a
 * literal, each checked. False for anything else (a nested value, an escape, a numeric string, which
 * JSON.parse's path reads): the caller falls back to it.
 */
export function readMemoryArgs(b: Uint8Array, f: EventFields): boolean {
  f.deviceType = f.deviceId = f.addr = f.bytes = f.totalAllocated = f.totalReserved = Number.NaN;
  if (!f.argsObject) return false;
  const to = f.argsTo;
  let i = f.argsFrom + 1;
  while (i < to && isSpace(b[i])) i++;
  if (b[i] === 0x7d) return i === to - 1;
  for (;;) {
    if (b[i] !== 0x22) return false;
    const keyFrom = i + 1;
    i = skipPlainString(b, keyFrom, to);
    if (i < 0) return false;
    const key = argId(b, keyFrom, i - 1);
    while (i < to && isSpace(b[i])) i++;
    if (b[i] !== 0x3a) return false;
    i++;
    while (i < to && isSpace(b[i])) i++;
    const c = b[i];
    let value = Number.NaN;
    if (c === 0x22) {
      // a string where we want a number: JSON.parse's path reads numeric strings; let it
      if (key !== 0) return false;
      i = skipPlainString(b, i + 1, to);
      if (i < 0) return false;
    } else if (c === 0x2d || isDigit(c)) {
      value = readNumber(b, i, to, f);
      if (Number.isNaN(value)) return false;
      i = f.end;
    } else {
      i = skipLiteral(b, i, to);
      if (i < 0) return false;
    }
    switch (key) {
      case 1:
        f.deviceType = value;
        break;
      case 2:
        f.deviceId = value;
        break;
      case 3:
        f.addr = value;
        break;
      case 4:
        f.bytes = value;
        break;
      case 5:
        f.totalAllocated = value;
        break;
      case 6:
        f.totalReserved = value;
        break;
    }
    while (i < to && isSpace(b[i])) i++;
    if (b[i] === 0x2c) {
      i++;
      while (i < to && isSpace(b[i])) i++;
      continue;
    }
    return b[i] === 0x7d && i === to - 1;
  }
}

/** Whether `b[from, to)` contains the ASCII text `s` (which starts with `[`). */
export function containsText(b: Uint8Array, from: number, to: number, s: string): boolean {
  const first = s.charCodeAt(0);
  for (let i = b.indexOf(first, from); i >= 0 && i + s.length <= to; i = b.indexOf(first, i + 1))
    if (isText(b, i, i + s.length, s)) return true;
  return false;
}
