// A streaming scan of a Chrome-trace JSON file: `{"traceEvents": [ {…}, {…} ], "distributedInfo": {…}}`
// (or the bare `[ {…}, … ]` form). The text arrives in slices; each element of `traceEvents` is cut out
// by counting brackets outside strings and handed over as its own small text (JSON.parse'd by the
// caller only when it wants it), so the whole file is never one string. The other top-level values are
// kept only when small (deviceProperties, distributedInfo, baseTimeNanoseconds…). Nesting is bounded:
// a file nested deeper than MAX_DEPTH is refused where it happens, in bounded time and memory.

import { SnapshotReadError } from "../errors";

/** Deeper than any real trace (events are 3–5 levels deep); 100k-deep nesting is refused at once. */
export const MAX_DEPTH = 64;
/** A top-level value other than traceEvents larger than this is skipped, not kept. */
const MAX_KEPT_VALUE_CHARS = 1 << 20;
/** One event larger than this is not a profiler event: refused (bounded memory). */
const MAX_EVENT_CHARS = 64 << 20;

export interface TraceScanSink {
  /** One element of traceEvents, as text; `at` is its character offset in the decompressed text. */
  event(text: string, at: number): void;
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

export class ChromeTraceScanner {
  private mode = Mode.start;
  /** Characters consumed before the current slice. */
  private base = 0;
  /** Parts of the element or value being read that began in earlier slices. */
  private carry: string[] = [];
  private carryChars = 0;
  private depth = 0;
  private inString = false;
  private escape = false;
  private key = "";
  /** Where the element / value being read began (absolute character offset). */
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
      `${this.fileName} is not valid trace JSON at character ${at}: ${what}. Export the trace again (prof.export_chrome_trace(path)).`,
      at,
    );
  }

  private tooDeep(at: number): never {
    throw new SnapshotReadError(
      "corrupt",
      `${this.fileName}: JSON nested more than ${MAX_DEPTH} levels deep at character ${at}. A profiler trace is never nested this deep; the file is damaged or not a trace.`,
      at,
    );
  }

  feed(text: string): void {
    const n = text.length;
    let i = 0;
    /** Start of the part of the current element / value that lies in this slice. */
    let partFrom = 0;
    while (i < n) {
      const c = text.charCodeAt(i);
      switch (this.mode) {
        case Mode.start:
          if (isSpace(c) || c === 0xfeff) break;
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
            this.key = "";
            partFrom = i + 1;
          } else if (c === 0x7d) this.mode = Mode.done;
          else this.fail(this.base + i, "expected a key");
          break;
        case Mode.objKeyString:
          // keys are short and plain: read up to the closing quote
          if (this.escape) this.escape = false;
          else if (c === 0x5c) this.escape = true;
          else if (c === 0x22) {
            this.key += text.slice(partFrom, i);
            if (this.key.length > 4096) this.fail(this.base + i, "a key longer than 4096 characters");
            this.mode = Mode.objColon;
          }
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
          this.carryChars = 0;
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
          this.carryChars = 0;
          partFrom = i;
          break;
        case Mode.event: {
          // the hot loop: scan to the end of this event without leaving the case per character
          let depth = this.depth;
          let inString = this.inString;
          let esc = this.escape;
          for (; i < n; i++) {
            const d = text.charCodeAt(i);
            if (inString) {
              if (esc) esc = false;
              else if (d === 0x5c) esc = true;
              else if (d === 0x22) inString = false;
            } else if (d === 0x22) inString = true;
            else if (d === 0x7b || d === 0x5b) {
              if (++depth > MAX_DEPTH) this.tooDeep(this.base + i);
            } else if (d === 0x7d || d === 0x5d) {
              if (--depth === 0) break;
            }
          }
          this.depth = depth;
          this.inString = inString;
          this.escape = esc;
          if (i < n) {
            const part = text.slice(partFrom, i + 1);
            const whole = this.carryChars > 0 ? this.carry.join("") + part : part;
            this.carry = [];
            this.carryChars = 0;
            this.events++;
            this.sink.event(whole, this.startAt);
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
      const part = text.slice(partFrom);
      this.carry.push(part);
      this.carryChars += part.length;
      if (this.mode === Mode.objOther && this.carryChars > MAX_KEPT_VALUE_CHARS) {
        this.keepValue = false; // too big to be worth keeping (a huge array we do not read): skip it
        this.carry = [];
        this.carryChars = 0;
      } else if (this.carryChars > MAX_EVENT_CHARS) {
        throw new SnapshotReadError(
          "too-large",
          `${this.fileName}: one trace event at character ${this.startAt} is longer than ${MAX_EVENT_CHARS >> 20} MiB; a profiler event is a few hundred bytes. The file is damaged or not a trace.`,
          this.startAt,
        );
      }
    } else if (this.mode === Mode.objKeyString) this.key += text.slice(partFrom);
    this.base += n;
  }

  private endValue(text: string, from: number, to: number): void {
    if (!this.keepValue) return;
    const whole = this.carry.join("") + text.slice(from, to);
    this.carry = [];
    this.carryChars = 0;
    let value: unknown;
    try {
      value = JSON.parse(whole);
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
      `${this.fileName} ends at character ${this.base} in the middle of the JSON (${this.events} trace events read). The trace was cut short; export or copy it again.`,
      this.base,
    );
  }
}
