// The attribution handed to another thread, whatever the thread: a worker of the page
// (workers/attribution-helper.ts) or a worker thread of the CLI (src/cli/attribution-thread.ts). After a
// big read the attribution and the replays ran one after the other while another core idled. Both read
// the replay's pass 1 (replay/pairing.ts), and the replay's sizes, sweep and peak need nothing else of
// the attribution (replay/prepare.ts startReplay): so each trace is paired once, the reading thread hands
// a helper the model and the pairing (their big columns in memory both threads share: not copied),
// replays while the helper attributes, and gives the replays their categories once the attribution is in
// (finishReplay; report/index.ts attributedReplays). The pairing is the helper's own where it paired the
// trace as the file was read (streamed-pairing.ts: the usual case), else the reading thread's, made after
// the read. Where the trace columns are not in shared memory (smaller files; a page that is not
// cross-origin isolated) copying them would cost the reading thread more than a helper saves: the
// attribution stays where the model is, as it does for the few files whose traces have torch_npu
// workspace entries or profiler categories, and wherever the helper fails.

import {
  dropRecycledMemory,
  preferShared,
  recycleMemory,
  type SharedRegion,
  takeSharedRegions,
} from "../model/recycled-memory";
import { NO_STRING, type SnapshotModel, type TraceTable } from "../model/types";
import type { WarmMemory } from "../model/warm-memory";
import { AddressMap } from "../replay/addr-map";
import {
  keepPairing,
  newAllocationTable,
  type Paired,
  type PairingRun,
  tracePairing,
} from "../replay/pairing";
import type { StartOptions } from "../replay/prepare";
import { type AttributionData, attributeData, blockWorkspaceOf } from "./index";
import { CATEGORY_NAMES } from "./rules";
import {
  isStreamMessage,
  pairedFrom,
  type SharedPaired,
  StreamedPairing,
  StreamFeed,
  type StreamMessage,
  type StreamStart,
  sharedPaired,
} from "./streamed-pairing";

/** The trace columns the attribution reads per entry (it and replay/pairing.ts), besides isWorkspace. */
const READ_COLUMNS = ["action", "addr", "sizeBytes", "stack"] as const;

/** A trace as the helper gets it: the columns the attribution reads, shared. */
interface HelperTrace extends Pick<TraceTable, "device" | "length" | (typeof READ_COLUMNS)[number]> {}

/**
 * A trace's pass 1 (replay/pairing.ts) as the attribution reads it (trace-rules.ts lifetimesOf): which
 * allocation each entry opens or closes, each allocation's origin and events, shared; and the map's
 * entries at the snapshot's block addresses (the last alloc at each), the only addresses it looks up.
 */
interface HelperPairing {
  count: number;
  eventAllocation: Int32Array;
  origin: Uint8Array;
  allocEvent: Int32Array;
  freeRequestedEvent: Int32Array;
  freeCompletedEvent: Int32Array;
  mapKeys: Float64Array;
  mapValues: Int32Array;
  mapSecond: Int32Array;
}

export interface HelperRequest {
  model: Omit<SnapshotModel, "traces">;
  traces: HelperTrace[];
  pairings: (HelperPairing | null)[];
  /** The trace the helper paired as the file was read (streamed-pairing.ts), or -1 (its pairing null). */
  streamed: number;
  /** Memory of this thread's pool, faulted in already, for the helper's columns (recycled-memory.ts). */
  memory: SharedRegion[];
}

/** What the reading thread sends a helper: a request, or what it is told of the rows as they are read. */
export type HelperMessage = HelperRequest | StreamMessage;

export type HelperReply =
  | { up: true }
  /** The streamed trace's pass 1, for the replays (null: not paired there after all). */
  | { paired: SharedPaired | null }
  | { ok: true; data: AttributionData }
  | { ok: false; message: string };

/**
 * Recycled memory the helper is given, per trace entry: about what the attribution's own columns take
 * (its per-entry category, site and rule, the trace rules' scratch). Fresh, its page faults cost the
 * helper a third of its time at 1 GB (Node: 130 against 20 MB of faults, 0.79 against 0.52 s). More (24)
 * left the reading thread's own pass to fault more, and the load took longer (docs/speed.md).
 */
const HELPER_MEMORY_BYTES_PER_ENTRY = 12;

/** Whether the trace columns the helper reads are in shared memory, and it has nothing only a few files have. */
function helperCanRead(model: SnapshotModel): boolean {
  if (typeof SharedArrayBuffer !== "function") return false;
  for (const t of model.traces) {
    if (t.length === 0) continue;
    for (const name of READ_COLUMNS) if (!(t[name].buffer instanceof SharedArrayBuffer)) return false;
    // (torch_npu workspace entries, profiler categories: attributed here)
    if (t.category.varies || t.category.base !== NO_STRING) return false;
    if (t.isWorkspace.indexOf(1) >= 0) return false;
  }
  return true;
}

/** `xs` if in shared memory, else a copy in shared memory. */
function shared<T extends Uint8Array | Int32Array | Float64Array>(
  xs: T,
  make: (b: SharedArrayBuffer) => T,
): T {
  if (xs.buffer instanceof SharedArrayBuffer) return xs;
  const copy = make(new SharedArrayBuffer(xs.byteLength));
  copy.set(xs as never);
  return copy;
}

/** Pass 1 of `t` (paired here, kept for its replay) as the helper reads it. */
function helperPairing(model: SnapshotModel, t: TraceTable): HelperPairing {
  const p = tracePairing(model, t);
  const n = p.count;
  const { table, map } = p;
  const keys: number[] = [];
  const values: number[] = [];
  const second: number[] = [];
  for (let b = 0; b < model.blocks.length; b++) {
    const addr = model.blocks.address[b];
    const slot = map.find(addr);
    if (slot < 0) continue;
    keys.push(addr);
    values.push(map.values[slot]);
    second.push(map.second ? map.second[slot] : -1);
  }
  return {
    count: n,
    eventAllocation: shared(p.eventAllocation, (b) => new Int32Array(b)),
    origin: shared(table.origin.subarray(0, n), (b) => new Uint8Array(b)),
    allocEvent: shared(table.allocEvent.subarray(0, n), (b) => new Int32Array(b)),
    freeRequestedEvent: shared(table.freeRequestedEvent.subarray(0, n), (b) => new Int32Array(b)),
    freeCompletedEvent: shared(table.freeCompletedEvent.subarray(0, n), (b) => new Int32Array(b)),
    mapKeys: Float64Array.from(keys),
    mapValues: Int32Array.from(values),
    mapSecond: Int32Array.from(second),
  };
}

/**
 * The model as the helper gets it, or null where a column it reads is not in shared memory (see
 * helperCanRead). Pairs every trace here first but the one the helper paired as it was read, `streamed`
 * (pass 1, kept for the replays): the attribution reads its lifetimes off it, so it is done once, in shared
 * memory where the recycled memory has it. The rest of the model (strings, frames, stacks, segments,
 * blocks: a few MB) is copied.
 */
export function helperRequest(model: SnapshotModel, streamed = -1): HelperRequest | null {
  if (!helperCanRead(model)) return null;
  preferShared();
  const traces: HelperTrace[] = [];
  const pairings: (HelperPairing | null)[] = [];
  for (const [d, t] of model.traces.entries()) {
    traces.push({
      device: t.device,
      length: t.length,
      action: t.action,
      addr: t.addr,
      sizeBytes: t.sizeBytes,
      stack: t.stack,
    });
    pairings.push(t.length > 0 && d !== streamed ? helperPairing(model, t) : null);
  }
  const { traces: _, ...rest } = model;
  return { model: rest, traces, pairings, streamed, memory: [] };
}

const NONE = { diff: new Int32Array(0), base: NO_STRING, varies: false };

/**
 * The model a HelperRequest stands for, on the helper: the columns the attribution does not read empty;
 * each trace's pass 1 kept for the attribution to read (pairing.ts keepPairing).
 */
export function modelOf(req: HelperRequest, streamed: Paired | null = null): SnapshotModel {
  const traces: TraceTable[] = req.traces.map((t, d) => {
    const table: TraceTable = {
      ...t,
      streamRaw: new Float64Array(0),
      stream: new Int32Array(0),
      timeUs: new Float64Array(0),
      deviceFreeBytes: new Float64Array(0),
      compileContext: NONE,
      userMetadata: NONE,
      category: NONE,
      // (no workspace entry: helperCanRead checked; zeros, their pages not written)
      isWorkspace: new Uint8Array(t.length),
    };
    const p = req.pairings[d];
    if (p) keepPairing(table, pairedOf(p, table));
    else if (d === req.streamed && streamed) keepPairing(table, streamed);
    // (a streamed trace the helper could not pair after all is paired by the attribution, here)
    return table;
  });
  return { ...req.model, traces };
}

/** A Paired with what the attribution reads of it (the rest empty: the replay is made on the other thread). */
function pairedOf(p: HelperPairing, t: TraceTable): Paired {
  const map = new AddressMap(p.mapKeys.length, true);
  for (let j = 0; j < p.mapKeys.length; j++) {
    const slot = map.slot(p.mapKeys[j], p.mapValues[j]);
    (map.second as Int32Array)[slot] = p.mapSecond[j];
  }
  const table = newAllocationTable(0, { addr: t.addr, sizeBytes: t.sizeBytes, stack: t.stack });
  table.length = p.count;
  table.origin = p.origin;
  table.allocEvent = p.allocEvent;
  table.freeRequestedEvent = p.freeRequestedEvent;
  table.freeCompletedEvent = p.freeCompletedEvent;
  return {
    table,
    count: p.count,
    eventAllocation: p.eventAllocation,
    eventKind: new Uint8Array(0),
    implicitCloses: new Map(),
    map,
  };
}

/** The buffers of the typed arrays in `data` (at its top and in its lists), to transfer rather than copy. */
export function transferablesOf(data: AttributionData): ArrayBuffer[] {
  const out = new Set<ArrayBuffer>();
  const add = (v: unknown) => {
    if (ArrayBuffer.isView(v) && v.buffer instanceof ArrayBuffer) out.add(v.buffer);
  };
  for (const v of Object.values(data)) {
    if (Array.isArray(v)) v.forEach(add);
    else add(v);
  }
  return [...out];
}

/** What startReplay needs from the attribution before it has run: its category count and workspace blocks. */
export function startOptions(model: SnapshotModel): StartOptions {
  return { blockWorkspace: blockWorkspaceOf(model), categoryCount: CATEGORY_NAMES.length };
}

/** The helper's answer to one request, and the buffers to transfer with it (its own columns). */
export function answerRequest(
  req: HelperRequest,
  streamed: Paired | null = null,
): { reply: HelperReply; transfer: ArrayBuffer[] } {
  let data: AttributionData;
  try {
    for (const r of req.memory) recycleMemory(r.buffer, r.byteOffset, r.byteLength);
    data = attributeData(modelOf(req, streamed));
  } catch (err) {
    return { reply: { ok: false, message: err instanceof Error ? err.message : String(err) }, transfer: [] };
  } finally {
    dropRecycledMemory();
  }
  // (columns taken from the shared memory given are shared back, not transferred)
  return { reply: { ok: true, data }, transfer: transferablesOf(data) };
}

/**
 * A helper's program over any transport: each message of the reading thread's in, its replies out (a
 * request's: the streamed trace's pass 1 first, then the attribution).
 */
export function helperServer(
  post: (reply: HelperReply, transfer: ArrayBuffer[]) => void,
): (m: HelperMessage) => void {
  const stream = new StreamedPairing();
  return (m) => {
    if (isStreamMessage(m)) {
      stream.receive(m);
      return;
    }
    let run: PairingRun | null = null;
    if (m.streamed >= 0) {
      run = stream.finish(m.traces[m.streamed].length);
      post({ paired: run ? sharedPaired(run) : null }, []);
    }
    const { reply, transfer } = answerRequest(m, run);
    post(reply, transfer);
  };
}

/** A helper started for one load. */
export interface AttributionHelper {
  /** The attribution of `model` from the helper, or null where the helper cannot take it (helperRequest). */
  attribute(model: SnapshotModel): Promise<AttributionData> | null;
  /**
   * Resolved once the pass 1 of the last model given to `attribute` is kept here for its replays
   * (pairing.ts takePairing): at once, unless the helper paired a trace as the file was read. True where
   * the helper's pairing was kept (else the replays pair here).
   */
  paired(): Promise<boolean>;
  /** The staged rows' shared columns: the helper pairs them as they are read (streamed-pairing.ts). */
  streamColumns(start: StreamStart): void;
  /** Rows 0…rows-1 of the streamed columns are written. */
  streamRows(rows: number): void;
  /** The streamed columns are left (they grew): the helper drops what it paired. */
  streamStop(): void;
  close(): void;
}

/**
 * `warm` telling `helper` where the shared columns are as the read makes them and how many rows are
 * written, and giving it the analysis's shared memory for the pairing's columns.
 */
export function streamingTo(warm: WarmMemory, helper: AttributionHelper): WarmMemory {
  return {
    ...warm,
    onSharedColumns(c) {
      const { action, isWorkspace, addr, sizeBytes, stack, rows, analysis } = c;
      helper.streamColumns({
        columns: { action, isWorkspace, addr, sizeBytes, stack },
        rows,
        analysis: analysis ? { buffer: analysis, byteOffset: 0, byteLength: analysis.byteLength } : null,
      });
      return { tookAnalysis: analysis !== null, left: () => helper.streamStop() };
    },
    onRowsWritten: (rows) => helper.streamRows(rows),
  };
}

/** The reading thread's side of a helper, over any transport: it calls `received` and `failed`. */
export interface HelperClient extends AttributionHelper {
  /** A message from the helper. */
  received(reply: HelperReply): void;
  /** The helper failed (it then takes no more requests; one in flight is rejected). */
  failed(message: string): void;
  /** Resolved once the helper has said it is up (a load does not wait for it; tests do). */
  readonly up: Promise<void>;
}

/** The client of a helper that `send` posts to and `stop` ends. */
export function helperClient(send: (m: HelperMessage) => void, stop: () => void): HelperClient {
  let failure: string | null = null;
  // Used only once it has said it is up: one that never starts must not leave the load waiting for it.
  let up = false;
  let pending: { resolve(d: AttributionData): void; reject(e: Error): void } | null = null;
  const feed = new StreamFeed(send);
  let pairing: { trace: TraceTable; resolve(kept: boolean): void } | null = null;
  let paired: Promise<boolean> = Promise.resolve(false);
  let saidUp = () => {};
  const upPromise = new Promise<void>((resolve) => {
    saidUp = resolve;
  });
  return {
    up: upPromise,
    attribute(model) {
      if (failure !== null || !up || pending) {
        feed.stop();
        return null;
      }
      paired = Promise.resolve(false);
      const streamed = feed.streamedTrace(model.traces);
      const req = helperRequest(model, streamed);
      if (!req) return null;
      const entries = req.traces.reduce((n, t) => n + t.length, 0);
      req.memory = takeSharedRegions(entries * HELPER_MEMORY_BYTES_PER_ENTRY);
      if (streamed >= 0) {
        const trace = model.traces[streamed];
        paired = new Promise<boolean>((resolve) => {
          pairing = { trace, resolve };
        });
      }
      return new Promise<AttributionData>((resolve, reject) => {
        pending = { resolve, reject };
        send(req);
      });
    },
    paired: () => paired,
    streamColumns: (start) => feed.start(start),
    streamRows: (rows) => feed.rows(rows),
    streamStop: () => feed.stop(),
    received(reply) {
      if ("up" in reply) {
        up = true;
        saidUp();
        return;
      }
      if ("paired" in reply) {
        const p = pairing;
        pairing = null;
        // (null: the replay pairs the trace here, as without a helper)
        if (p && reply.paired)
          keepPairing(p.trace, pairedFrom(reply.paired, p.trace), reply.paired.anomalies);
        p?.resolve(reply.paired !== null);
        return;
      }
      const p = pending;
      pending = null;
      if (!p) return;
      if (reply.ok) p.resolve(reply.data);
      else p.reject(new Error(reply.message));
    },
    failed(message) {
      failure = message;
      const p = pending;
      pending = null;
      p?.reject(new Error(message));
      // (the replays pair here)
      const q = pairing;
      pairing = null;
      q?.resolve(false);
    },
    close() {
      stop();
    },
  };
}
