// A streaming scan of a Chrome-trace JSON file: `{"traceEvents": [ {…}, {…} ], "distributedInfo": {…}}`
// (or the bare `[ {…}, … ]` form). The bytes arrive in slices and are never decoded as a whole: each
// element of `traceEvents` is cut out by counting brackets outside strings and handed over as a byte
// range (read field by field by the caller, which decodes only the few strings it keeps), so the file is
// never one string. Working on the UTF-8 bytes is safe: every byte the scan looks at (quotes, brackets,
// backslash) is ASCII, and no byte of a multi-byte UTF-8 character is below 0x80. Offsets are byte
// offsets. The other top-level values are kept only when small (deviceProperties, distributedInfo, baseTimeNanoseconds…). Nesting is bounded:
// a file nested deeper than MAX_DEPTH is refused where it happens, in bounded time and memory.

import { SnapshotReadError } from "../errors";

/** Deeper than any real trace (events are 3–5 levels deep); 100k-deep nesting is refused at once. */
export const MAX_DEPTH = 64;
/** A top-level value other than traceEvents larger than this is skipped, not kept. */
const MAX_KEPT_VALUE_BYTES = 1 << 20;
/** One event larger than this is not a profiler event: refused (bounded memory). */
const MAX_EVENT_BYTES = 64 << 20;

export interface TraceScanSink {
  /**
   * One element of traceEvents: `bytes[from, to)`, from its `{` to its `}`; `at` is its byte offset in the
   * decompressed file. The range is valid only during the call (the slice may be reused after it).
   */
  event(bytes: Uint8Array, from: number, to: number, at: number): void;
  /** A small top-level value (not traceEvents), parsed. */
  topLevel(key: string, value: unknown): void;
}

enum Mode {
  start,
  /** in the top-level object, before a key (or `}`) */
  objKey,
  /** reading a top-level key string */
  objKeyString,
  /** after a key, before `:` */
  objColon,
  /** after `:`, before the value */
  objValue,
  /** inside a top-level value other than traceEvents */
  objOther,
  /** after a top-level value, before `,` or `}` */
  objAfter,
  /** in the traceEvents array, between elements */
  events,
  /** inside one event */
  event,
  done,
}

const isSpace = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
/** The UTF-8 byte order mark (EF BB BF), skipped before the JSON as U+FEFF was. */
const isBom = (c: number) => c === 0xef || c === 0xbb || c === 0xbf;

function concat(parts: Uint8Array[], total: number): Uint8Array {
  const out = new Uint8Array(total);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/**
 * The index of the `}` that closes the event whose `{` is just before `i` (brackets counted outside
 * strings); -1 when it is not in `b[i, n)` or nesting passes MAX_DEPTH (feed's general path then rescans
 * the event, carrying it to the next slice or refusing it where it is too deep).
 */
function eventEnd(b: Uint8Array, i: number, n: number): number {
  let depth = 1;
  for (; i < n; i++) {
    const d = b[i];
    if (d === 0x22) {
      // a string, to its closing quote (most of an event's bytes); an escaped byte is skipped
      for (i++; i < n; i++) {
        const e = b[i];
        if (e === 0x22) break;
        if (e === 0x5c) i++;
      }
    } else if (d === 0x7b || d === 0x5b) {
      if (++depth > MAX_DEPTH) return -1;
    } else if (d === 0x7d || d === 0x5d) {
      if (--depth === 0) return i;
    }
  }
  return -1;
}

export class ChromeTraceScanner {
  private mode = Mode.start;
  /** Bytes consumed before the current slice. */
  private base = 0;
  /** Parts of the element or value being read that began in earlier slices (copies). */
  private carry: Uint8Array[] = [];
  private carryBytes = 0;
  private depth = 0;
  private inString = false;
  private escape = false;
  /** The bytes of the top-level key being read (keys are short). */
  private keyBytes: number[] = [];
  private key = "";
  /** Where the element / value being read began (absolute byte offset). */
  private startAt = 0;
  /** The bare-array form (`[ {…} ]`): no top-level object. */
  private bare = false;
  private keepValue = false;
  sawTraceEvents = false;
  events = 0;

  constructor(
    private readonly sink: TraceScanSink,
    private readonly fileName: string,
  ) {}

  private fail(at: number, what: string): never {
    throw new SnapshotReadError(
      "corrupt",
      `${this.fileName} is not valid trace JSON at byte ${at}: ${what}. Export the trace again (prof.export_chrome_trace(path)).`,
      at,
    );
  }

  private tooDeep(at: number): never {
    throw new SnapshotReadError(
      "corrupt",
      `${this.fileName}: JSON nested more than ${MAX_DEPTH} levels deep at byte ${at}. A profiler trace is never nested this deep; the file is damaged or not a trace.`,
      at,
    );
  }

  feed(text: Uint8Array): void {
    const n = text.length;
    let i = 0;
    /** Start of the part of the current element / value that lies in this slice. */
    let partFrom = 0;
    while (i < n) {
      if (this.mode === Mode.events) {
        // the common case, in a small method that is optimized at once (not only by on-stack replacement
        // of this big loop, which in a fresh process left most of a 50 MB trace to the interpreter)
        i = this.wholeEvents(text, i, n);
        if (i >= n) break;
      }
      const c = text[i];
      switch (this.mode) {
        case Mode.start:
          if (isSpace(c) || isBom(c)) break;
          if (c === 0x7b) this.mode = Mode.objKey;
          else if (c === 0x5b) {
            this.bare = true;
            this.sawTraceEvents = true;
            this.mode = Mode.events;
          } else this.fail(this.base + i, "expected { or [");
          break;
        case Mode.objKey:
          if (isSpace(c) || c === 0x2c) break;
          if (c === 0x22) {
            this.mode = Mode.objKeyString;
            this.keyBytes.length = 0;
          } else if (c === 0x7d) this.mode = Mode.done;
          else this.fail(this.base + i, "expected a key");
          break;
        case Mode.objKeyString:
          // keys are short and plain: read up to the closing quote
          if (this.escape) this.escape = false;
          else if (c === 0x5c) this.escape = true;
          else if (c === 0x22) {
            this.key = new TextDecoder().decode(Uint8Array.from(this.keyBytes));
            this.mode = Mode.objColon;
            break;
          }
          this.keyBytes.push(c);
          if (this.keyBytes.length > 4096) this.fail(this.base + i, "a key longer than 4096 bytes");
          break;
        case Mode.objColon:
          if (isSpace(c)) break;
          if (c !== 0x3a) this.fail(this.base + i, "expected :");
          this.mode = Mode.objValue;
          break;
        case Mode.objValue:
          if (isSpace(c)) break;
          if (this.key === "traceEvents" && c === 0x5b) {
            this.sawTraceEvents = true;
            this.mode = Mode.events;
            break;
          }
          this.mode = Mode.objOther;
          this.depth = 0;
          this.inString = false;
          this.escape = false;
          this.startAt = this.base + i;
          this.keepValue = true;
          this.carry = [];
          this.carryBytes = 0;
          partFrom = i;
          continue; // read this character as part of the value
        case Mode.objOther: {
          if (this.inString) {
            if (this.escape) this.escape = false;
            else if (c === 0x5c) this.escape = true;
            else if (c === 0x22) {
              this.inString = false;
              if (this.depth === 0) {
                this.endValue(text, partFrom, i + 1);
                this.mode = Mode.objAfter;
              }
            }
            break;
          }
          if (c === 0x22) this.inString = true;
          else if (c === 0x7b || c === 0x5b) {
            if (++this.depth > MAX_DEPTH) this.tooDeep(this.base + i);
          } else if (c === 0x7d || c === 0x5d) {
            if (this.depth === 0) {
              // the end of the top-level object right after a bare value (number, true…)
              this.endValue(text, partFrom, i);
              this.mode = c === 0x7d ? Mode.done : this.fail(this.base + i, "unexpected ]");
              break;
            }
            if (--this.depth === 0) {
              this.endValue(text, partFrom, i + 1);
              this.mode = Mode.objAfter;
            }
          } else if (this.depth === 0 && (c === 0x2c || isSpace(c))) {
            this.endValue(text, partFrom, i);
            this.mode = c === 0x2c ? Mode.objKey : Mode.objAfter;
          }
          break;
        }
        case Mode.objAfter:
          if (isSpace(c)) break;
          if (c === 0x2c) this.mode = Mode.objKey;
          else if (c === 0x7d) this.mode = Mode.done;
          else this.fail(this.base + i, "expected , or }");
          break;
        case Mode.events:
          if (isSpace(c) || c === 0x2c) break;
          if (c === 0x5d) {
            this.mode = this.bare ? Mode.done : Mode.objAfter;
            break;
          }
          if (c !== 0x7b) this.fail(this.base + i, "expected an event object in traceEvents");
          this.mode = Mode.event;
          this.depth = 1;
          this.inString = false;
          this.escape = false;
          this.startAt = this.base + i;
          this.carry = [];
          this.carryBytes = 0;
          partFrom = i;
          break;
        case Mode.event: {
          // the hot loop: scan to the end of this event without leaving the case per character
          let depth = this.depth;
          let inString = this.inString;
          let esc = this.escape;
          if (inString) {
            // finish the string (and escape) the last slice ended in
            for (; i < n; i++) {
              if (esc) esc = false;
              else if (text[i] === 0x5c) esc = true;
              else if (text[i] === 0x22) {
                inString = false;
                i++;
                break;
              }
            }
          }
          if (!inString) {
            for (; i < n; i++) {
              const d = text[i];
              if (d === 0x22) {
                // a string, to its closing quote in a tight loop (most of an event's bytes are in strings)
                let j = i + 1;
                for (; j < n; j++) {
                  const e = text[j];
                  if (e === 0x22) break;
                  if (e === 0x5c) j++; // the escaped byte is skipped (an escaped quote does not end it)
                }
                if (j >= n) {
                  // the string goes on in the next slice; j === n + 1: it ended in a backslash
                  inString = true;
                  esc = j === n + 1;
                  i = n;
                  break;
                }
                i = j;
              } else if (d === 0x7b || d === 0x5b) {
                if (++depth > MAX_DEPTH) this.tooDeep(this.base + i);
              } else if (d === 0x7d || d === 0x5d) {
                if (--depth === 0) break;
              }
            }
          }
          this.depth = depth;
          this.inString = inString;
          this.escape = esc;
          if (i < n) {
            this.events++;
            if (this.carryBytes === 0) this.sink.event(text, partFrom, i + 1, this.startAt);
            else {
              // an event across slices: joined into its own bytes (rare: one per slice at most)
              this.carry.push(text.subarray(partFrom, i + 1));
              const whole = concat(this.carry, this.carryBytes + i + 1 - partFrom);
              this.carry = [];
              this.carryBytes = 0;
              this.sink.event(whole, 0, whole.length, this.startAt);
            }
            this.mode = Mode.events;
          }
          break;
        }
        case Mode.done:
          if (!isSpace(c) && c !== 0) this.fail(this.base + i, "text after the end of the JSON");
          break;
      }
      i++;
    }
    // keep what began in this slice and is not finished
    if (this.mode === Mode.event || (this.mode === Mode.objOther && this.keepValue)) {
      // a copy: the caller may reuse the slice's buffer
      const part = text.slice(partFrom);
      this.carry.push(part);
      this.carryBytes += part.length;
      if (this.mode === Mode.objOther && this.carryBytes > MAX_KEPT_VALUE_BYTES) {
        this.keepValue = false; // too big to be worth keeping (a huge array we do not read): skip it
        this.carry = [];
        this.carryBytes = 0;
      } else if (this.carryBytes > MAX_EVENT_BYTES) {
        throw new SnapshotReadError(
          "too-large",
          `${this.fileName}: one trace event at byte ${this.startAt} is longer than ${MAX_EVENT_BYTES >> 20} MiB; a profiler event is a few hundred bytes. The file is damaged or not a trace.`,
          this.startAt,
        );
      }
    }
    this.base += n;
  }

  /**
   * Events that lie whole in this slice, from `i`: each handed to the sink. Returns where it stopped: at
   * `n`, or at a byte it leaves to feed's general path (`]`, an event that goes on in the next slice or is
   * nested too deep — rescanned from its `{` there —, anything unexpected).
   */
  private wholeEvents(text: Uint8Array, i: number, n: number): number {
    while (i < n) {
      const c = text[i];
      if (c === 0x2c || isSpace(c)) {
        i++;
        continue;
      }
      if (c !== 0x7b) return i;
      const end = eventEnd(text, i + 1, n);
      if (end < 0) return i;
      this.events++;
      this.sink.event(text, i, end + 1, this.base + i);
      i = end + 1;
    }
    return i;
  }

  private endValue(text: Uint8Array, from: number, to: number): void {
    if (!this.keepValue) return;
    this.carry.push(text.subarray(from, to));
    const whole = concat(this.carry, this.carryBytes + to - from);
    this.carry = [];
    this.carryBytes = 0;
    let value: unknown;
    try {
      value = JSON.parse(new TextDecoder().decode(whole));
    } catch (e) {
      this.fail(this.startAt, `the value of "${this.key}" (${(e as Error).message})`);
    }
    this.sink.topLevel(this.key, value);
  }

  /** Call after the last slice: a file cut short is reported with where it stopped. */
  finish(): void {
    if (this.mode === Mode.done) return;
    if (this.mode === Mode.objAfter && !this.bare && this.sawTraceEvents) return; // lenient: a missing final }
    throw new SnapshotReadError(
      "truncated",
      `${this.fileName} ends at byte ${this.base} in the middle of the JSON (${this.events} trace events read). The trace was cut short; export or copy it again.`,
      this.base,
    );
  }
}
