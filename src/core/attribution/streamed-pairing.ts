// Pass 1 (replay/pairing.ts) made by the attribution helper while the file is still being read.
//
// Why: after a big read the reading thread paired the trace (≈ 0.2 s at 1 GB) before the helper could
// start attributing, and both the attribution and the replays wait for that pairing; meanwhile, during
// the read, the helper idled. The columns pass 1 reads are in shared memory from the first few MB of
// entries on (model/builder.ts moveToShared), so the reading thread tells the helper where they are and,
// as the read goes, how many rows are written; the helper pairs them as they come, and at the read's end
// only the last rows are left. Its pairing goes back to the reading thread for the replays (its columns
// in shared memory, not copied) and stays on the helper for the attribution.
//
// The pairing is of the rows in the order staged, which is one device's trace only where the model has
// a single trace made of all the staged rows from the first: the reading thread checks that at the end
// (streamedTrace) and otherwise pairs each trace itself, as without a helper.

import type { SharedRegion } from "../model/recycled-memory";
import type { TraceTable } from "../model/types";
import { AddressMap } from "../replay/addr-map";
import {
  type ColumnSource,
  noAnomalies,
  type Paired,
  type PairingAnomalies,
  type PairingColumns,
  type PairingRun,
  pairUpTo,
  startPairing,
} from "../replay/pairing";
import type { AllocationTable } from "../replay/types";

/** The shared columns the reading thread writes the staged rows to, `rows` of them at most. */
export interface StreamStart {
  columns: PairingColumns;
  rows: number;
  /** Memory faulted in (or being faulted in) by the warmer for the analysis: the pairing's columns. */
  analysis: SharedRegion | null;
}

/** What the reading thread sends the helper about the staged rows. */
export type StreamMessage =
  | { stream: StreamStart }
  /** Rows 0…rows-1 are written. */
  | { streamRows: number }
  /** The columns moved (they grew): what was paired is of no use. */
  | { streamStop: true };

export function isStreamMessage(m: object): m is StreamMessage {
  return "stream" in m || "streamRows" in m || "streamStop" in m;
}

/** The allocation table's columns, each in shared memory. */
type TableColumns = Omit<AllocationTable, "length" | "entries">;

/** A Paired as it crosses to the other thread: its columns shared, the rest copied. */
export interface SharedPaired {
  count: number;
  table: TableColumns;
  eventAllocation: Int32Array;
  eventKind: Uint8Array;
  implicitCloses: Map<number, number>;
  mapKeys: Float64Array;
  mapValues: Int32Array;
  mapSecond: Int32Array | null;
  mapSize: number;
  anomalies: PairingAnomalies;
}

/**
 * Columns for a pairing another thread reads: zero-filled shared memory, the often written ones cut from
 * `region` (fresh from the warmer: zeros already) while it lasts.
 */
function sharedColumns(region: SharedRegion | null): ColumnSource {
  let at = region ? Math.ceil(region.byteOffset / 8) * 8 : 0;
  const end = region ? region.byteOffset + region.byteLength : 0;
  const cut = (bytes: number): { buffer: SharedArrayBuffer; offset: number } => {
    if (region !== null && at + bytes <= end) {
      const offset = at;
      at = Math.ceil((at + bytes) / 8) * 8;
      return { buffer: region.buffer, offset };
    }
    return { buffer: new SharedArrayBuffer(Math.max(8, bytes)), offset: 0 };
  };
  const fresh = {
    f64: (n: number) => new Float64Array(new SharedArrayBuffer(n * 8)),
    i32: (n: number) => new Int32Array(new SharedArrayBuffer(n * 4)),
    u8: (n: number) => new Uint8Array(new SharedArrayBuffer(n)),
  };
  return {
    often: {
      f64: (n) => {
        const c = cut(n * 8);
        return new Float64Array(c.buffer, c.offset, n);
      },
      i32: (n) => {
        const c = cut(n * 4);
        return new Int32Array(c.buffer, c.offset, n);
      },
      u8: (n) => {
        const c = cut(n);
        return new Uint8Array(c.buffer, c.offset, n);
      },
    },
    rarely: fresh,
  };
}

/** Allocations per staged row the table first makes room for (an alloc, a free_requested, a free_completed each). */
const ALLOCATIONS_PER_ROW = 1 / 3;

/** The helper's side: pairs the rows as they are said to be written. */
export class StreamedPairing {
  private run: PairingRun | null = null;
  private rows = 0;

  /** Handles one message of the reading thread's. */
  receive(m: StreamMessage): void {
    if ("stream" in m) {
      const { columns, rows, analysis } = m.stream;
      const capacity = Math.ceil(rows * ALLOCATIONS_PER_ROW) + 1024;
      this.run = startPairing(columns, rows, capacity, noAnomalies(), sharedColumns(analysis));
      this.rows = rows;
    } else if ("streamRows" in m) {
      if (this.run) pairUpTo(this.run, Math.min(m.streamRows, this.rows));
    } else this.run = null;
  }

  /** Pass 1 of the first `n` rows (those paired so far and the rest), or null where it cannot be. */
  finish(n: number): PairingRun | null {
    const run = this.run;
    this.run = null;
    if (run === null || n > this.rows || run.next > n) return null;
    pairUpTo(run, n);
    return run;
  }
}

/** What crosses back to the reading thread of a finished run. */
export function sharedPaired(run: PairingRun): SharedPaired {
  const { table, map } = run;
  const { length: _, entries: __, ...columns } = table;
  return {
    count: run.count,
    table: columns,
    eventAllocation: run.eventAllocation,
    eventKind: run.eventKind,
    implicitCloses: run.implicitCloses,
    mapKeys: map.keys,
    mapValues: map.values,
    mapSecond: map.second,
    mapSize: map.size,
    anomalies: run.anomalies,
  };
}

/** The reading thread's Paired of `trace` from the helper's (the entries read from the trace's own columns). */
export function pairedFrom(p: SharedPaired, trace: TraceTable): Paired {
  const table: AllocationTable = {
    ...p.table,
    length: p.count,
    entries: { addr: trace.addr, sizeBytes: trace.sizeBytes, stack: trace.stack },
  };
  return {
    table,
    count: p.count,
    eventAllocation: p.eventAllocation,
    eventKind: p.eventKind,
    implicitCloses: p.implicitCloses,
    map: AddressMap.of(p.mapKeys, p.mapValues, p.mapSecond, p.mapSize),
  };
}

/** The reading thread's side: what it has told the helper. */
export class StreamFeed {
  private columns: PairingColumns | null = null;
  private sent = 0;

  constructor(
    private readonly send: (m: StreamMessage) => void,
    /**
     * Rows worth a message (fewer wait for the next). Each message costs the reading thread ≈ 0.2 ms in
     * the page here (every 32 768 rows: 42 ms of a 1.05 GB read in its profile), and the rows left to pair
     * when the read ends cost the helper ≈ 8 ms at most.
     */
    private readonly everyRows = 1 << 18,
  ) {}

  start(start: StreamStart): void {
    this.columns = start.columns;
    this.sent = 0;
    this.send({ stream: start });
  }

  /** Rows 0…rows-1 are written. */
  rows(rows: number): void {
    if (this.columns === null || rows - this.sent < this.everyRows) return;
    this.sent = rows;
    this.send({ streamRows: rows });
  }

  stop(): void {
    if (this.columns === null) return;
    this.columns = null;
    this.send({ streamStop: true });
  }

  /**
   * The index of the model's trace the helper has paired as it was read, or -1: the only trace with
   * entries, made of all the staged rows from the first, in the columns told (not grown since).
   */
  streamedTrace(traces: readonly TraceTable[]): number {
    const columns = this.columns;
    this.columns = null;
    if (columns === null) return -1;
    let found = -1;
    for (let d = 0; d < traces.length; d++) {
      const t = traces[d];
      if (t.length === 0) continue;
      if (found >= 0) return -1;
      found = d;
    }
    if (found < 0) return -1;
    const t = traces[found];
    // a view of the columns told from their first row, and at least every row said to be written
    const same = (a: ArrayBufferView, b: ArrayBufferView) =>
      a.buffer === b.buffer && a.byteOffset === b.byteOffset;
    if (
      !same(t.action, columns.action) ||
      !same(t.addr, columns.addr) ||
      !same(t.sizeBytes, columns.sizeBytes) ||
      !same(t.isWorkspace, columns.isWorkspace) ||
      t.length < this.sent
    )
      return -1;
    return found;
  }
}
