// Memory another thread has already written, asked for ahead of need; and, where threads share memory,
// the trace's columns made in shared memory for another thread to read as they are written.
//
// Why it was made: the first write to a page of fresh memory costs a page fault, and on the virtual
// machine these figures are measured on that was 3–7 ms per MB: on a 1 GB file, the trace's own columns
// (29 bytes an entry, ≈ 200 MB) cost the parsing thread more than a second of faults. A thread with
// nothing else to do took those faults instead. Since 2026-12-05 the product starts no such thread
// (workers/memory-warmer.ts, src/cli/warm-memory.ts): faults there now cost 0.4–1 ms per MB, and the
// warmer's work on the second core made every big load slower (docs/speed.md). The sessions they make
// have no warmer (`ask` never comes; `prefaultShared` makes the columns shared and faults nothing), and
// the shared columns remain for the attribution helper (attribution/streamed-pairing.ts). The mechanism
// stays tested with warmers of the tests' own.
//
// The core only knows this interface. Without one (a test's own read), the columns are plain fresh
// memory.

/** A request for warm memory: `take()` gives the buffer once it has come (null until then). */
export interface WarmRequest {
  /** The zero-filled buffer, once (later calls return null); null while it has not come. */
  take(): ArrayBuffer | null;
  /** The buffer is no longer wanted (dropped when it comes). */
  cancel(): void;
}

export interface WarmMemory {
  /** Asks for `bytes` of zero-filled memory whose pages are already faulted in. */
  ask(bytes: number): WarmRequest;
  /** The fewest bytes worth asking for (default: MIN_WARM_BYTES; tests ask for small files too). */
  readonly minBytes?: number;
  /**
   * Warm memory for the analysis's columns too, this many bytes a trace entry, asked for after the
   * trace's and handed to the recycled memory once the read is over (model/recycled-memory.ts). Default
   * 0; the warmers' sessions ask for ANALYSIS_WARM_BYTES_PER_ROW.
   */
  readonly analysisBytesPerRow?: number;
  /**
   * Where threads can share memory (Node's worker threads; a page only when cross-origin isolated): the
   * columns every entry writes live in SharedArrayBuffers from the start, and the warmer faults in their
   * pages in row order (every column's rows 0…k, then the next rows), ahead of the parser, which then
   * writes to memory already there. Instead of `ask` for those columns: a buffer asked for whole comes
   * when all of it is faulted in, and on a 1 GB file the parser had by then written a third of its rows
   * to fresh memory, and copied them over. Returns a function that stops the warmer.
   */
  readonly prefaultShared?: (
    buffers: SharedArrayBuffer[],
    bytesPerRow: number[],
    rows: number,
    /** Where each buffer's row 0 is (default 0). */
    offsets?: number[],
  ) => () => void;
  /**
   * Told where the shared columns are (prefaultShared) for another thread to read the rows as they are
   * written (attribution/streamed-pairing.ts), with the analysis's shared memory. Answers whether it took
   * that memory (the read then does not hand it on), and what to call when the columns are left.
   */
  readonly onSharedColumns?: (columns: SharedTraceColumns) => { tookAnalysis: boolean; left(): void };
  /** Told, as the read goes, that rows 0…rows-1 of those columns are written. */
  readonly onRowsWritten?: (rows: number) => void;
}

/** The shared columns of the staged rows that pass 1 reads, `rows` of them at most. */
export interface SharedTraceColumns {
  action: Uint8Array;
  isWorkspace: Uint8Array;
  addr: Float64Array;
  sizeBytes: Float64Array;
  stack: Int32Array;
  rows: number;
  analysis: SharedArrayBuffer | null;
}

/** Below this, fresh memory costs too little to be worth another thread's work (≈ 1.1 M trace entries). */
export const MIN_WARM_BYTES = 32 << 20;

/**
 * Warm memory asked for the analysis's columns, bytes a trace entry. It was 16 (a warmer thread faulting
 * the analysis's memory in during the read: 3.78 → 3.66 s at 1.05 GB when faults cost 3–7 ms per MB).
 * With faults at 0.4–1 ms per MB, that work on the second core slowed the read (the reader worker fell
 * behind): 1.05 GB 2761 → 2506 ms, Node `report --json` 2.28 → 2.07 s (alternating; docs/speed.md).
 */
export const ANALYSIS_WARM_BYTES_PER_ROW = 0;

/**
 * The warmer thread's work for one request: `bytes` of zeros with every page written (a read of a fresh
 * page would only map the shared zero page, and the parser's write would fault again). Self-contained:
 * the page's warmer runs its source text (workers/memory-warmer.ts).
 */
export function faultedBuffer(bytes: number): ArrayBuffer | null {
  let buffer: ArrayBuffer;
  try {
    buffer = new ArrayBuffer(bytes);
  } catch {
    return null;
  }
  const u8 = new Uint8Array(buffer);
  for (let i = 0; i < bytes; i += 4096) u8[i] = 0;
  if (bytes > 0) u8[bytes - 1] = 0;
  return buffer;
}

/** A warmer thread's job for shared columns (WarmMemory.prefaultShared): see prefaultInOrder. */
export interface PrefaultJob {
  buffers: SharedArrayBuffer[];
  bytesPerRow: number[];
  rows: number;
  /** Where each buffer's row 0 is, in bytes (none: all at 0). */
  offsets?: number[];
  /** An Int32Array's memory: set to 1, the job stops at its next block of rows. */
  stop: SharedArrayBuffer;
}

/**
 * The warmer thread's work for shared columns: one byte per page of each column, a block of rows of every
 * column after another, so the pages come in the order the parser writes them. An atomic add of 0, since
 * the parser may be writing the same page (it changes no byte). Self-contained, like faultedBuffer.
 */
export function prefaultInOrder(job: PrefaultJob): void {
  const stop = new Int32Array(job.stop);
  const views = job.buffers.map((b) => new Uint8Array(b));
  const blockRows = 65536;
  for (let r0 = 0; r0 < job.rows; r0 += blockRows) {
    if (Atomics.load(stop, 0) !== 0) return;
    const r1 = Math.min(job.rows, r0 + blockRows);
    for (let k = 0; k < views.length; k++) {
      const u8 = views[k];
      const bytes = job.bytesPerRow[k];
      const at = job.offsets ? job.offsets[k] : 0;
      const to = Math.min(u8.length, at + r1 * bytes);
      for (let p = Math.ceil((at + r0 * bytes) / 4096) * 4096; p < to; p += 4096) Atomics.add(u8, p, 0);
    }
  }
}

/** The asking side of a warmer thread: requests by id, answered by `deliver`. */
export class WarmChannel {
  private readonly asked = new Map<number, { buffer: ArrayBuffer | null }>();
  private nextId = 0;

  /**
   * `send`: posts a request to the warmer thread, which answers with deliver(id, buffer). `sendPrefault`,
   * where threads share memory: posts a PrefaultJob, answered by nothing.
   */
  constructor(
    private readonly send: (id: number, bytes: number) => void,
    readonly sendPrefault?: (job: PrefaultJob) => void,
  ) {}

  /** Has the warmer fault in shared columns ahead of the parser; returns what stops it. */
  prefault(
    buffers: SharedArrayBuffer[],
    bytesPerRow: number[],
    rows: number,
    offsets?: number[],
  ): () => void {
    const stop = new SharedArrayBuffer(4);
    this.sendPrefault?.({ buffers, bytesPerRow, rows, offsets, stop });
    return () => Atomics.store(new Int32Array(stop), 0, 1);
  }

  /** The warmer's answer: the buffer, or null where it could not make one (take() stays null). */
  deliver(id: number, buffer: ArrayBuffer | null): void {
    const a = this.asked.get(id); // none when no longer wanted: the buffer is dropped
    if (!a) return;
    if (buffer !== null) a.buffer = buffer;
    else this.asked.delete(id);
  }

  /** The warmer stopped: nothing more comes. */
  clear(): void {
    this.asked.clear();
  }

  /** Asks for one buffer; `mine` records it for the load's release(). */
  ask(bytes: number, mine: Set<number>): WarmRequest {
    const id = this.nextId++;
    const a = { buffer: null as ArrayBuffer | null };
    this.asked.set(id, a);
    mine.add(id);
    this.send(id, bytes);
    const drop = () => {
      a.buffer = null;
      this.asked.delete(id);
      mine.delete(id);
    };
    return {
      take: () => {
        const buffer = a.buffer;
        if (buffer !== null) drop();
        return buffer;
      },
      cancel: drop,
    };
  }

  /** Drops the given requests' buffers (taken or not). */
  drop(ids: Set<number>): void {
    for (const id of ids) this.asked.delete(id);
    ids.clear();
  }
}

/** A request that never comes (where no warmer could start): the columns stay in fresh memory. */
const NEVER: WarmRequest = { take: () => null, cancel: () => undefined };

/**
 * Warm memory for one load from the warmer `channel()` gives (started at the first request: only a big
 * file asks; null where none can start). `release()` at the end of the load drops what was asked and not
 * taken: a buffer held there would be memory nobody uses.
 */
export function warmSession(
  channel: () => WarmChannel | null,
  opts: { shared?: boolean } = {},
): WarmMemory & { release(): void } {
  const mine = new Set<number>();
  const stops: (() => void)[] = [];
  let used: WarmChannel | null = null;
  const session: WarmMemory & { release(): void } = {
    analysisBytesPerRow: ANALYSIS_WARM_BYTES_PER_ROW,
    ask(bytes: number): WarmRequest {
      used = channel();
      return used === null ? NEVER : used.ask(bytes, mine);
    },
    release() {
      used?.drop(mine);
      for (const stop of stops.splice(0)) stop();
    },
  };
  if (!opts.shared) return session;
  return {
    ...session,
    // without a warmer, the shared columns are fresh memory, as the columns are without one
    prefaultShared(buffers, bytesPerRow, rows, offsets) {
      used = channel();
      const stop = used?.prefault(buffers, bytesPerRow, rows, offsets) ?? (() => undefined);
      stops.push(stop);
      return stop;
    },
  };
}
