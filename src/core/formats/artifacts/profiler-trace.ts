// torch.profiler traces (Chrome-trace JSON, plain or gzip; `*.pt.trace.json[.gz]`) → the model.
// Only `[memory]` / `[OutOfMemory]` events and the complete (`ph: "X"`) spans are kept from the stream
// (json-events.ts cuts the elements out of the bytes; trace-event-bytes.ts reads their few fields without
// decoding them, and only an event outside its plain shape is decoded and JSON.parse'd). Each memory event becomes one
// allocation or free on its device's trace; its op and, with `with_stack=True`, its Python frames come
// from the spans on the same pid/tid that contain its `ts` (the innermost first), so the attribution's
// call-site rules read them as a stack. See docs/artifacts.md.

import { ModelBuilder } from "../../model/builder";
import { EMPTY_STACK, type SnapshotModel, type SourceDevice } from "../../model/types";
import { SnapshotReadError } from "../errors";
import { ChromeTraceScanner } from "./json-events";
import {
  decideSpanCategories,
  FACT_ACCUMULATE_GRAD,
  FACT_BACKWARD,
  FACT_PYTHON,
  type SpanFacts,
} from "./span-categories";
import { containsText, EventFields, Kind, readEventFields, readMemoryArgs } from "./trace-event-bytes";

/** c10::DeviceType → our name. */
const DEVICE_TYPES: Record<number, string> = {
  0: "cpu",
  1: "cuda",
  2: "mkldnn",
  3: "opengl",
  4: "opencl",
  5: "ideep",
  6: "hip",
  7: "fpga",
  8: "maia",
  9: "xla",
  10: "vulkan",
  11: "metal",
  12: "xpu",
  13: "mps",
  14: "meta",
  15: "hpu",
  16: "ve",
  17: "lazy",
  18: "ipu",
  19: "mtia",
  20: "privateuse1",
};

/** The most frames one reconstructed stack keeps (the innermost). */
const MAX_STACK_FRAMES = 256;
/** Numbers above this are not byte counts a real trace holds. */
const MAX_SAFE = Number.MAX_SAFE_INTEGER;

export const PROFILE_MEMORY_HELP =
  'Record it with torch.profiler.profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], profile_memory=True, record_shapes=True, with_stack=True) and prof.export_chrome_trace("trace.json") (or the TensorBoard handler).';

class Columns {
  length = 0;
  private cap = 1024;
  cols: Float64Array[];
  constructor(readonly width: number) {
    this.cols = Array.from({ length: width }, () => new Float64Array(this.cap));
  }
  push(values: number[]): void {
    if (this.length === this.cap) {
      this.cap *= 2; // few growths: each copies every column
      this.cols = this.cols.map((c) => {
        const next = new Float64Array(this.cap);
        next.set(c);
        return next;
      });
    }
    const at = this.length;
    const cols = this.cols;
    for (let k = 0; k < cols.length; k++) cols[k][at] = values[k];
    this.length = at + 1;
  }
}

// memory event columns
const M_TS = 0;
const M_THREAD = 1;
const M_DEVICE = 2;
const M_BYTES = 3;
const M_ADDR = 4;
const M_TOTAL_ALLOC = 5;
const M_TOTAL_RESERVED = 6;
const M_OOM = 7;
// span columns
const S_THREAD = 0;
const S_TS = 1;
const S_END = 2;
const S_NAME = 3;
const S_CAT = 4;

interface RawEvent {
  ph?: unknown;
  name?: unknown;
  cat?: unknown;
  pid?: unknown;
  tid?: unknown;
  ts?: unknown;
  dur?: unknown;
  args?: Record<string, unknown>;
}

/** Whether a trace's text head looks like a Chrome trace (not a snapshot converted to JSON). */
export function looksLikeChromeTrace(head: string): boolean {
  return (
    /"traceEvents"\s*:/.test(head) ||
    /"schemaVersion"\s*:/.test(head) ||
    /^\s*\[\s*\{\s*"(?:ph|name|pid|tid|ts|cat|args)"\s*:/.test(head)
  );
}

const KEY_VALUE = /"(ph|cat|name|pid|tid|ts|dur)"\s*:\s*("(?:[^"\\]|\\.)*"|-?[\d.eE+-]+)/g;

/**
 * The fields of a complete span read from its text up to `"args"` (Kineto and the Python exporter
 * write them first); null when they are not all there as expected (then the event is JSON.parse'd).
 */
export function quickSpan(
  t: string,
): { name: string; cat: string; pid: string; tid: string; ts: number; dur: number } | null {
  const argsAt = t.indexOf('"args"');
  const head = argsAt < 0 ? t : t.slice(0, argsAt);
  let name: string | null = null;
  let cat = "";
  let pid: string | null = null;
  let tid: string | null = null;
  let ts = Number.NaN;
  let dur = Number.NaN;
  KEY_VALUE.lastIndex = 0;
  for (let m = KEY_VALUE.exec(head); m !== null; m = KEY_VALUE.exec(head)) {
    const raw = m[2];
    const str = raw.charCodeAt(0) === 0x22;
    const text = str ? (raw.includes("\\") ? (JSON.parse(raw) as string) : raw.slice(1, -1)) : raw;
    switch (m[1]) {
      case "ph":
        if (text !== "X") return null;
        break;
      case "cat":
        cat = text;
        break;
      case "name":
        name = text;
        break;
      // pid/tid keyed as JSON.stringify would give them to threadOf (a number's text, a string as is)
      case "pid":
        pid = str ? text : String(Number(text));
        break;
      case "tid":
        tid = str ? text : String(Number(text));
        break;
      case "ts":
        ts = str ? Number.NaN : Number(text);
        break;
      case "dur":
        dur = str ? Number.NaN : Number(text);
        break;
    }
  }
  if (name === null || pid === null || tid === null || !Number.isFinite(ts) || !Number.isFinite(dur))
    return null;
  return { name, cat, pid, tid, ts, dur };
}

function num(v: unknown): number {
  if (typeof v === "number") return v;
  if (typeof v === "string" && v.trim() !== "" && Number.isFinite(Number(v))) return Number(v);
  return Number.NaN;
}

/** Whether `b[from, to)` equals `own`. */
function sameBytes(own: Uint8Array, b: Uint8Array, from: number, to: number): boolean {
  if (own.length !== to - from) return false;
  for (let k = 0; k < own.length; k++) if (own[k] !== b[from + k]) return false;
  return true;
}

export async function readProfilerTrace(
  chunks: AsyncIterable<Uint8Array>,
  fileName: string,
  byteLength: number,
  gzip: boolean,
): Promise<SnapshotModel> {
  const strings: string[] = [];
  const stringIds = new Map<string, number>();
  const intern = (s: string) => {
    let id = stringIds.get(s);
    if (id === undefined) {
      id = strings.length;
      // a copy: a slice of the text would keep its whole 16 MB slice of the file alive
      const own = JSON.parse(JSON.stringify(s)) as string;
      strings.push(own);
      stringIds.set(own, id);
    }
    return id;
  };
  const threads = new Map<string, number>();
  const threadOf = (pid: unknown, tid: unknown) => {
    const k = `${String(pid)}\u0000${String(tid)}`;
    let id = threads.get(k);
    if (id === undefined) {
      id = threads.size;
      threads.set(k, id);
    }
    return id;
  };
  const deviceKeys = new Map<string, number>();
  const deviceList: { type: number; id: number }[] = [];
  const mem = new Columns(8);
  const spans = new Columns(5);
  let hasAddr = false;
  let hasTotals = false;
  let pythonSpans = 0;
  let top: Record<string, unknown> = {};

  // The fast path's helpers: no string and no object per event.
  const decoder = new TextDecoder("utf-8");
  /** A name's or category's bytes → its string id, by a hash of the bytes (decoded once, when first seen). */
  const idByHash = new Map<number, number>();
  const bytesOfId: (Uint8Array | undefined)[] = [];
  const internBytes = (b: Uint8Array, from: number, to: number) => {
    let h = 0x811c9dc5 ^ (to - from);
    for (let k = from; k < to; k++) h = Math.imul(h ^ b[k], 0x01000193);
    const seen = idByHash.get(h);
    if (seen !== undefined) {
      const own = bytesOfId[seen];
      if (own !== undefined && sameBytes(own, b, from, to)) return seen;
    }
    // first seen (or a hash collision, then decoded each time: correct, only slower)
    const id = intern(decoder.decode(b.subarray(from, to)));
    if (seen === undefined) {
      idByHash.set(h, id);
      bytesOfId[id] = b.slice(from, to);
    }
    return id;
  };
  /** Numeric pid/tid → thread id (the same id threadOf gives their String()), the last pair remembered. */
  const threadsByNumber = new Map<number, Map<number, number>>();
  let lastPid = Number.NaN;
  let lastTid = Number.NaN;
  let lastThread = -1;
  const threadOfField = (f: EventFields, b: Uint8Array) => {
    if (f.pidKind === Kind.number && f.tidKind === Kind.number) {
      if (f.pid === lastPid && f.tid === lastTid) return lastThread;
      let byTid = threadsByNumber.get(f.pid);
      if (!byTid) threadsByNumber.set(f.pid, (byTid = new Map()));
      let id = byTid.get(f.tid);
      if (id === undefined) byTid.set(f.tid, (id = threadOf(f.pid, f.tid)));
      lastPid = f.pid;
      lastTid = f.tid;
      lastThread = id;
      return id;
    }
    const pid = f.pidKind === Kind.number ? f.pid : decoder.decode(b.subarray(f.pidFrom, f.pidTo));
    const tid = f.tidKind === Kind.number ? f.tid : decoder.decode(b.subarray(f.tidFrom, f.tidTo));
    return threadOf(pid, tid);
  };
  let lastDevType = Number.NaN;
  let lastDevId = Number.NaN;
  let lastDev = -1;
  const deviceOf = (type: number, devId: number) => {
    if (type === lastDevType && devId === lastDevId) return lastDev;
    const dk = `${type}:${devId}`;
    let dev = deviceKeys.get(dk);
    if (dev === undefined) {
      dev = deviceList.length;
      deviceKeys.set(dk, dev);
      deviceList.push({ type, id: devId });
    }
    lastDevType = type;
    lastDevId = devId;
    lastDev = dev;
    return dev;
  };
  const memRow = new Array<number>(8);
  const spanRow = new Array<number>(5);
  const f = new EventFields();
  const plainId = (k: Kind) => k === Kind.number || k === Kind.string;

  /**
   * The fast path: true when the event was read (kept or skipped) from its bytes; false when it is not in
   * the plain shape or breaks a rule whose message the JSON.parse path gives (then that path reads it).
   */
  const fastEvent = (b: Uint8Array, from: number, to: number): boolean => {
    if (!readEventFields(b, from, to, f)) return false;
    if (f.memoryName !== 0) {
      if (f.unchecked || !readMemoryArgs(b, f)) return false;
      if (f.tsKind !== Kind.number || !plainId(f.pidKind) || !plainId(f.tidKind)) return false;
      const { bytes, deviceType: type, deviceId: id, addr, totalAllocated: ta, totalReserved: tr } = f;
      if (!Number.isFinite(bytes) || !Number.isFinite(type)) return false;
      if (!(Math.abs(bytes) <= MAX_SAFE) || Math.abs(addr) > MAX_SAFE || Math.abs(ta) > MAX_SAFE)
        return false;
      if (Math.abs(tr) > MAX_SAFE) return false;
      const devId = Number.isFinite(id) ? id : type === 0 ? -1 : 0;
      if (Number.isFinite(addr)) hasAddr = true;
      if (Number.isFinite(ta)) hasTotals = true;
      memRow[0] = f.ts;
      memRow[1] = threadOfField(f, b);
      memRow[2] = deviceOf(type, devId);
      memRow[3] = bytes;
      memRow[4] = addr;
      memRow[5] = ta;
      memRow[6] = tr;
      memRow[7] = f.memoryName === 2 ? 1 : 0;
      mem.push(memRow);
      return true;
    }
    if (f.phX) {
      if (f.nameKind !== Kind.string || f.tsKind !== Kind.number || f.durKind !== Kind.number) return false;
      if (!plainId(f.pidKind) || !plainId(f.tidKind)) return false;
      const cat = f.catKind === Kind.string ? internBytes(b, f.catFrom, f.catTo) : intern("");
      if (strings[cat] === "python_function") pythonSpans++;
      spanRow[0] = threadOfField(f, b);
      spanRow[1] = f.ts;
      spanRow[2] = f.ts + Math.max(0, f.dur);
      spanRow[3] = internBytes(b, f.nameFrom, f.nameTo);
      spanRow[4] = cat;
      spans.push(spanRow);
      return true;
    }
    // neither: skipped, unless it mentions a memory event's name (then JSON.parse checks it, as before)
    return !containsText(b, from, to, "[memory]") && !containsText(b, from, to, "[OutOfMemory]");
  };

  const scanner = new ChromeTraceScanner(
    {
      event(b, from, to, at) {
        if (!fastEvent(b, from, to)) slowEvent(decoder.decode(b.subarray(from, to)), at);
      },
      topLevel(key, value) {
        if (key === "distributedInfo" || key === "baseTimeNanoseconds" || key === "with_stack")
          top = { ...top, [key]: value };
        if (key === "profile_memory" || key === "schemaVersion") top = { ...top, [key]: value };
      },
    },
    fileName,
  );

  /** The event as text, read as before this reader had a fast path (quickSpan, else JSON.parse). */
  function slowEvent(t: string, at: number): void {
    {
      // cheap filters before parsing: a memory event, or a complete span
      const isMem = t.includes("[memory]") || t.includes("[OutOfMemory]");
      if (!isMem && !/"ph"\s*:\s*"X"/.test(t)) return;
      if (!isMem) {
        // a span: its few fields are read from the text before "args", without parsing the args
        const q = quickSpan(t);
        if (q) {
          if (q.cat === "python_function") pythonSpans++;
          spans.push([
            threadOf(q.pid, q.tid),
            q.ts,
            q.ts + Math.max(0, q.dur),
            intern(q.name),
            intern(q.cat),
          ]);
          return;
        }
      }
      let e: RawEvent;
      try {
        e = JSON.parse(t) as RawEvent;
      } catch (err) {
        throw new SnapshotReadError(
          "corrupt",
          `${fileName}: the trace event at byte ${at} is not valid JSON (${(err as Error).message}). Export the trace again.`,
          at,
        );
      }
      if (isMem && (e.name === "[memory]" || e.name === "[OutOfMemory]")) {
        const a = e.args ?? {};
        const ts = num(e.ts);
        const bytes = num(a.Bytes);
        const type = num(a["Device Type"]);
        const id = num(a["Device Id"]);
        if (!Number.isFinite(ts) || !Number.isFinite(bytes) || !Number.isFinite(type)) {
          throw new SnapshotReadError(
            "corrupt",
            `${fileName}: the ${e.name} event at byte ${at} lacks a number for ts, Bytes or Device Type. Export the trace again.`,
            at,
          );
        }
        const addr = num(a.Addr);
        const ta = num(a["Total Allocated"]);
        const tr = num(a["Total Reserved"]);
        for (const [what, v] of [
          ["Bytes", bytes],
          ["Addr", addr],
          ["Total Allocated", ta],
          ["Total Reserved", tr],
        ] as const) {
          if (Math.abs(v) > MAX_SAFE) {
            throw new SnapshotReadError(
              "corrupt",
              `${fileName}: the ${e.name} event at byte ${at} has ${what} = ${v}, beyond any real byte count or address (2^53). The file is damaged; export the trace again.`,
              at,
            );
          }
        }
        const devId = Number.isFinite(id) ? id : type === 0 ? -1 : 0;
        const dk = `${type}:${devId}`;
        let dev = deviceKeys.get(dk);
        if (dev === undefined) {
          dev = deviceList.length;
          deviceKeys.set(dk, dev);
          deviceList.push({ type, id: devId });
        }
        if (Number.isFinite(addr)) hasAddr = true;
        if (Number.isFinite(ta)) hasTotals = true;
        mem.push([ts, threadOf(e.pid, e.tid), dev, bytes, addr, ta, tr, e.name === "[OutOfMemory]" ? 1 : 0]);
        return;
      }
      if (e.ph !== "X") return;
      const ts = num(e.ts);
      const dur = num(e.dur);
      if (!Number.isFinite(ts) || !Number.isFinite(dur) || typeof e.name !== "string") return;
      const cat = typeof e.cat === "string" ? e.cat : "";
      if (cat === "python_function") pythonSpans++;
      spans.push([threadOf(e.pid, e.tid), ts, ts + Math.max(0, dur), intern(e.name), intern(cat)]);
    }
  }
  for await (const chunk of chunks) scanner.feed(chunk);
  scanner.finish();

  if (mem.length === 0) {
    throw new SnapshotReadError(
      "not-snapshot",
      `${fileName} is a profiler trace with ${scanner.events} events but no [memory] events: it was recorded without profile_memory=True, so it holds no allocations. ${PROFILE_MEMORY_HELP}`,
    );
  }
  return buildModel({
    fileName,
    byteLength,
    gzip,
    mem,
    spans,
    strings,
    deviceList,
    hasAddr,
    hasTotals,
    pythonSpans,
    top,
    threadCount: threads.size,
  });
}

interface Collected {
  fileName: string;
  byteLength: number;
  gzip: boolean;
  mem: Columns;
  spans: Columns;
  strings: string[];
  deviceList: { type: number; id: number }[];
  hasAddr: boolean;
  hasTotals: boolean;
  pythonSpans: number;
  top: Record<string, unknown>;
  threadCount: number;
}

/** Trace index per device: accelerators first (at their id when one type, ids small), CPU after. */
function placeDevices(list: { type: number; id: number }[]): { index: number[]; devices: SourceDevice[] } {
  const accel = list.map((d, i) => ({ ...d, i })).filter((d) => d.type !== 0);
  const cpu = list.map((d, i) => ({ ...d, i })).filter((d) => d.type === 0);
  accel.sort((a, b) => a.type - b.type || a.id - b.id);
  const oneType = accel.every((d) => d.type === accel[0].type);
  const atId = oneType && accel.every((d) => d.id >= 0 && d.id < 64);
  const index = new Array<number>(list.length).fill(-1);
  const devices: SourceDevice[] = [];
  let next = 0;
  for (const d of accel) {
    const at = atId ? d.id : next;
    while (devices.length < at)
      devices.push({ deviceType: DEVICE_TYPES[d.type] ?? `type ${d.type}`, deviceId: devices.length });
    index[d.i] = at;
    devices[at] = { deviceType: DEVICE_TYPES[d.type] ?? `type ${d.type}`, deviceId: d.id };
    next = at + 1;
  }
  cpu.sort((a, b) => a.id - b.id);
  for (const d of cpu) {
    index[d.i] = devices.length;
    devices.push({ deviceType: "cpu", deviceId: d.id });
  }
  return { index, devices };
}

/** `path/to/model.py(42): forward` → a Python frame; anything else (nn.Module: X, <built-in …>) → null. */
export function parsePythonFunction(name: string): { filename: string; line: number; name: string } | null {
  const m = /^(.+?)\((\d+)\): (.+)$/.exec(name);
  if (!m) return null;
  return { filename: m[1], line: Number(m[2]), name: m[3] };
}

// what a span's name says (nameFlags in buildModel; 0: not yet read)
const NAME_READ = 1;
const NAME_ACCUMULATE_GRAD = 2;
const NAME_BACKWARD = 4;
const NAME_OPTIMIZER_STEP = 8;

function buildModel(c: Collected): SnapshotModel {
  const { mem, spans, strings } = c;
  const n = mem.length;
  const mTs = mem.cols[M_TS];
  // events in time order (file order among equal times)
  const order = Int32Array.from({ length: n }, (_, i) => i);
  // most files write them in time order already: sort only when they are not (the sort is stable)
  let inOrder = true;
  for (let i = 1; i < n && inOrder; i++) if (mTs[i] < mTs[i - 1]) inOrder = false;
  if (!inOrder) order.sort((a, b) => mTs[a] - mTs[b] || a - b);

  // spans of the threads that allocated, per thread, sorted by start then longest first
  const memThreads = new Set<number>();
  for (let i = 0; i < n; i++) memThreads.add(mem.cols[M_THREAD][i]);
  const spansByThread = new Map<number, number[]>();
  for (let s = 0; s < spans.length; s++) {
    const th = spans.cols[S_THREAD][s];
    if (!memThreads.has(th)) continue;
    let list = spansByThread.get(th);
    if (!list) spansByThread.set(th, (list = []));
    list.push(s);
  }
  const sTs = spans.cols[S_TS];
  const sEnd = spans.cols[S_END];
  for (const list of spansByThread.values()) list.sort((a, b) => sTs[a] - sTs[b] || sEnd[b] - sEnd[a]);

  // per memory event: the open spans (innermost first) → frames and facts
  const b = new ModelBuilder();
  const stackOf = new Int32Array(n);
  const factFlags = new Uint8Array(n);
  const stepEnd = new Float64Array(n).fill(Number.NaN);
  const pyCat = strings.indexOf("python_function");
  const byThread = new Map<number, number[]>();
  for (const i of order) {
    const th = mem.cols[M_THREAD][i];
    let list = byThread.get(th);
    if (!list) byThread.set(th, (list = []));
    list.push(i);
  }
  const frameIds: number[] = [];
  /** The frame of each (name, category) pair (-2: a python_function name that is not a frame). */
  const frameOfName = new Map<number, number>();
  const nameFlags = new Uint8Array(strings.length);
  /** What the last walk found besides the stack (FACT_* bits, the optimizer step's end). */
  let walkFlags = 0;
  let walkStepEnd = Number.NaN;
  /** The stack of the spans open[0..top] that contain t, innermost first (at most 256 frames). */
  const walk = (open: number[], top: number, t: number): number => {
    frameIds.length = 0;
    walkFlags = 0;
    walkStepEnd = Number.NaN;
    for (let k = top; k >= 0 && frameIds.length < MAX_STACK_FRAMES; k--) {
      const s = open[k];
      // a span that ended before an inner one began is left under it: skip spans that do not contain t
      if (sEnd[s] < t) continue;
      const nameId = spans.cols[S_NAME][s];
      const cat = spans.cols[S_CAT][s];
      // a span's frame depends only on its name and category: interned once per distinct pair
      const nameKey = nameId * strings.length + cat;
      let frame = frameOfName.get(nameKey);
      if (cat === pyCat) {
        if (frame === undefined) {
          const py = parsePythonFunction(strings[nameId]);
          frame = py ? b.internFrame(py.filename, py.line, py.name) : -2;
          frameOfName.set(nameKey, frame);
        }
        if (frame >= 0) {
          frameIds.push(frame);
          walkFlags |= FACT_PYTHON;
        }
        continue;
      }
      // what the name says, worked out once per distinct name (not per event and enclosing span)
      let flags = nameFlags[nameId];
      if (flags === 0) {
        const name = strings[nameId];
        flags =
          NAME_READ |
          (name.includes("AccumulateGrad") ? NAME_ACCUMULATE_GRAD : 0) |
          (name.startsWith("autograd::engine::evaluate_function") ? NAME_BACKWARD : 0) |
          (name.startsWith("Optimizer.step#") ? NAME_OPTIMIZER_STEP : 0);
        nameFlags[nameId] = flags;
      }
      if (flags & NAME_ACCUMULATE_GRAD) walkFlags |= FACT_ACCUMULATE_GRAD;
      if (flags & NAME_BACKWARD) walkFlags |= FACT_BACKWARD;
      if (flags & NAME_OPTIMIZER_STEP && Number.isNaN(walkStepEnd)) walkStepEnd = sEnd[s];
      if (frame === undefined) {
        frame = b.internFrame(strings[cat] || "op", 0, strings[nameId]);
        frameOfName.set(nameKey, frame);
      }
      frameIds.push(frame);
    }
    return frameIds.length > 0 ? b.internStack(frameIds) : EMPTY_STACK;
  };
  for (const [th, events] of byThread) {
    const list = spansByThread.get(th) ?? [];
    const open: number[] = [];
    // Per position k of `open`: the earliest end among open[0..k], and the walk's answer for open[0..k]
    // once an event needed it. While every open span contains the event's time (t ≤ minEnd[top]) the walk
    // of the same open spans gives the same answer: events inside one op (and the many under one Python
    // frame) then cost a lookup, not a walk over their spans. An event under a span that ended earlier
    // (left under an inner one) is walked on its own.
    const minEnd: number[] = [];
    const knownStack: number[] = [];
    const knownFlags: number[] = [];
    const knownStepEnd: number[] = [];
    const push = (s: number) => {
      const k = open.length;
      open.push(s);
      minEnd[k] = k > 0 ? Math.min(minEnd[k - 1], sEnd[s]) : sEnd[s];
      knownStack[k] = -2;
    };
    let next = 0;
    for (const i of events) {
      const t = mTs[i];
      while (next < list.length && sTs[list[next]] <= t) {
        const s = list[next++];
        while (open.length > 0 && sEnd[open[open.length - 1]] < sTs[s]) open.pop();
        push(s);
      }
      while (open.length > 0 && sEnd[open[open.length - 1]] < t) open.pop();
      const top = open.length - 1;
      if (top < 0) {
        stackOf[i] = EMPTY_STACK; // flags 0 and step end NaN as filled
        continue;
      }
      if (t <= minEnd[top]) {
        if (knownStack[top] === -2) {
          knownStack[top] = walk(open, top, t);
          knownFlags[top] = walkFlags;
          knownStepEnd[top] = walkStepEnd;
        }
        stackOf[i] = knownStack[top];
        factFlags[i] = knownFlags[top];
        stepEnd[i] = knownStepEnd[top];
      } else {
        stackOf[i] = walk(open, top, t);
        factFlags[i] = walkFlags;
        stepEnd[i] = walkStepEnd;
      }
    }
  }
  const facts: SpanFacts = { flags: factFlags, optimizerStepEnd: stepEnd };

  const placed = placeDevices(c.deviceList);
  const perDevice: number[][] = placed.devices.map(() => []);
  for (const i of order) perDevice[placed.index[mem.cols[M_DEVICE][i]]].push(i);

  const lacks: string[] = [
    "No segments: a profiler trace records each allocation and free, not the allocator's segments, so there is no segment map, no fragmentation and no state at a snapshot.",
  ];
  if (!c.hasTotals) {
    lacks.push(
      "No Total Allocated (an older profiler): each device's curve is the running sum of Bytes, starting at what the trace proves was allocated before it (frees of allocations it never saw). Memory allocated before profiling and never freed in it is not seen, so the peak is the recorded window's, not the run's.",
    );
  }
  if (!c.hasAddr) {
    lacks.push(
      "No addresses (Addr): each free is paired with the latest open allocation of the same size on its device, so lifetimes are inferred.",
    );
  }
  if (c.pythonSpans === 0) {
    lacks.push(
      "No Python stacks (recorded without with_stack=True): call sites are the ops that allocated, not lines of your code.",
    );
  }
  lacks.push(
    "Categories only where the spans show them (AccumulateGrad → gradients; Optimizer.step → optimizer state or temporary by lifetime; forward outputs freed in backward → activations; made and freed in backward → temporary), marked inferred; the rest follows the Python stack when there is one, else stays unknown: a trace has no tensor identities.",
  );

  const notes: string[] = [];
  for (let d = 0; d < perDevice.length; d++) {
    const events = perDevice[d];
    if (events.length === 0) continue;
    emitDevice(b, c, d, events, stackOf, facts, notes, placed.devices[d]);
  }
  b.ensureDevices(placed.devices.length);
  const dist = c.top.distributedInfo as Record<string, unknown> | undefined;
  const rank = dist && typeof dist.rank === "number" ? dist.rank : null;
  const worldSize = dist && typeof dist.world_size === "number" ? dist.world_size : null;
  return b.finish({
    kind: "profiler-trace",
    lacks,
    noSegments: true,
    exactSizes: true,
    devices: placed.devices,
    rank,
    worldSize,
    fileName: c.fileName,
    byteLength: c.byteLength,
    format: c.gzip ? "chrome-trace+gzip" : "chrome-trace",
    pickleProtocol: null,
    notes,
  });
}

/** A synthetic address space for allocations the file gives no address. */
const SYNTHETIC_ADDRESS = 2 ** 50;
/**
 * Where the reserved line's stand-in segments go: `Total Reserved` has no addresses, so the device's
 * reserved bytes are one pile of synthetic segments there (grown by segment_alloc on top, shrunk by
 * segment_free from the top), far from every allocation's address so that no block is fitted to them.
 */
const RESERVED_BASE = 2 ** 51;

function emitDevice(
  b: ModelBuilder,
  c: Collected,
  device: number,
  events: number[],
  stackOf: Int32Array,
  facts: SpanFacts,
  notes: string[],
  dev: SourceDevice,
): void {
  const { mem } = c;
  const bytesCol = mem.cols[M_BYTES];
  const ts = mem.cols[M_TS];
  const oomCol = mem.cols[M_OOM];
  const taCol = mem.cols[M_TOTAL_ALLOC];
  const n = events.length;
  // Pair allocations and frees: by Addr, else by size (the latest open allocation of that size).
  const addrOf = new Float64Array(n);
  const freeOf = new Int32Array(n).fill(-1); // alloc position → its free's position
  const isFree = new Uint8Array(n);
  const open = new Map<number, number>();
  const bySize = new Map<number, number[]>();
  const fileAddr = mem.cols[M_ADDR];
  let synthetic = 0;
  let preFreedBytes = 0;
  let running = 0;
  let firstOffset = Number.NaN;
  let disagreements = 0;
  for (let p = 0; p < n; p++) {
    const i = events[p];
    if (oomCol[i]) continue;
    const bytes = bytesCol[i];
    running += bytes;
    const addr = fileAddr[i];
    if (bytes >= 0) {
      let a = addr;
      if (!c.hasAddr || Number.isNaN(a)) a = SYNTHETIC_ADDRESS + 512 * synthetic++;
      addrOf[p] = a;
      open.set(a, p);
      if (!c.hasAddr) {
        let l = bySize.get(bytes);
        if (!l) bySize.set(bytes, (l = []));
        l.push(p);
      }
    } else {
      isFree[p] = 1;
      let j: number | undefined;
      if (c.hasAddr && !Number.isNaN(addr)) {
        j = open.get(addr);
        addrOf[p] = addr;
      } else {
        j = bySize.get(-bytes)?.pop();
        addrOf[p] = j === undefined ? SYNTHETIC_ADDRESS + 512 * synthetic++ : addrOf[j];
      }
      if (j !== undefined) {
        open.delete(addrOf[j]);
        freeOf[j] = p;
      } else preFreedBytes += -bytes;
    }
    const ta = taCol[i];
    if (!Number.isNaN(ta)) {
      const offset = ta - running;
      if (Number.isNaN(firstOffset)) firstOffset = offset;
      else if (offset !== firstOffset) disagreements++;
    }
  }
  // What was allocated before the first event and is never freed in the trace.
  const baseline = Number.isNaN(firstOffset) ? 0 : firstOffset - preFreedBytes;
  const name = `${dev.deviceType}:${dev.deviceId}`;
  if (disagreements > 0) {
    notes.push(
      `${name}: Total Allocated disagrees with the running sum of Bytes at ${disagreements} events (events missing from the trace); the curve follows the events.`,
    );
  }
  if (baseline < 0) {
    notes.push(`${name}: Total Allocated is below what the events add up to; the curve follows the events.`);
  }
  const cats = decideSpanCategories(events, freeOf, isFree, facts, ts);
  const t0 = n > 0 ? ts[events[0]] : 0;
  // The reserved line, from Total Reserved (the value after each event): the pile is raised to the first
  // value before the first event, then follows each change.
  const trCol = mem.cols[M_TOTAL_RESERVED];
  let pile = 0;
  const reserveTo = (target: number, timeUs: number) => {
    if (!(target >= 0) || target === pile) return;
    if (target > pile) {
      b.addTraceEntry(device, {
        action: "segment_alloc",
        addr: RESERVED_BASE + pile,
        sizeBytes: target - pile,
        timeUs,
      });
    } else {
      b.addTraceEntry(device, {
        action: "segment_free",
        addr: RESERVED_BASE + target,
        sizeBytes: pile - target,
        timeUs,
      });
    }
    pile = target;
  };
  for (let p = 0; p < n; p++) {
    const tr = trCol[events[p]];
    if (Number.isFinite(tr)) {
      reserveTo(tr, t0);
      break;
    }
  }
  if (baseline > 0) {
    b.addTraceEntry(device, {
      action: "alloc",
      addr: SYNTHETIC_ADDRESS / 2,
      sizeBytes: baseline,
      timeUs: t0,
      category: "span:unknown",
    });
    notes.push(
      `${name}: ${baseline} bytes were allocated before the profiler's first event and not freed in the trace (Total Allocated minus the events); they are one unknown allocation at the start.`,
    );
  }
  for (let p = 0; p < n; p++) {
    const i = events[p];
    const bytes = bytesCol[i];
    const timeUs = ts[i];
    const stack = stackOf[i];
    reserveTo(trCol[i], timeUs);
    // object literals of one shape each (no spread): these run once per event
    if (oomCol[i]) {
      b.addTraceEntry(device, { action: "oom", sizeBytes: Math.abs(bytes), timeUs, stack });
      continue;
    }
    const addr = addrOf[p];
    if (!isFree[p]) {
      b.addTraceEntry(device, {
        action: "alloc",
        addr,
        sizeBytes: bytes,
        category: cats[p] ?? undefined,
        timeUs,
        stack,
      });
    } else {
      b.addTraceEntry(device, { action: "free_requested", addr, sizeBytes: -bytes, timeUs, stack });
      b.addTraceEntry(device, { action: "free_completed", addr, sizeBytes: -bytes, timeUs, stack });
    }
  }
}
