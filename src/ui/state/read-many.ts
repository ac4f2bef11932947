// Many files, each read in a worker of its own: PARALLEL at a time, each worker one file after another,
// summarised there and its model dropped, so that memory stays bounded whatever the number of files. The
// rank overview and the series view both read this way; they differ in what they ask the worker for and
// what they keep of each answer.

import type * as Comlink from "comlink";
import type { WorkerApi } from "../../../workers/api";
import { endWorker, separateWorker } from "./client";
import { checkUrl, DownloadError, download } from "./download";

/** How many files are read at once (each in its own worker). */
export const PARALLEL = 2;

export type ManySource = { kind: "file"; file: File; counters: File | null } | { kind: "url"; url: string };

/** What a worker answers for one file: the summary the caller keeps, or why there is none. */
export type ManyAnswer<T> = ({ ok: true } & T) | { ok: false; message: string };

export interface ManyEntry {
  id: number;
  name: string;
  source: ManySource;
}

export interface ManyRead<T> {
  /** The view's entries as they are now (read in this order). */
  entries(): readonly ManyEntry[];
  /** False once a newer read (or a stop) has replaced this one: nothing more is reported. */
  current(): boolean;
  /** An entry's progress, or why it could not be read. */
  mark(id: number, p: { status: "downloading" | "reading" } | { status: "error"; error: string }): void;
  done(id: number, answer: { ok: true } & T): void;
  /** Asks the worker for one file's summary. */
  summarize(
    root: Comlink.Remote<WorkerApi>,
    blob: Blob,
    name: string,
    counters: { text: string; name: string } | null,
  ): Promise<ManyAnswer<T>>;
}

const message = (e: unknown) => (e instanceof Error ? e.message : String(e));

/** The workers one view reads with; endAll() ends them (a new read, a stop, the view dismissed). */
export function manyReader(): { read<T>(r: ManyRead<T>): Promise<void>; endAll(): void } {
  let workers: { terminate: () => void }[] = [];
  const end = (handle: { terminate: () => void }) => {
    handle.terminate();
    workers = workers.filter((x) => x !== handle);
  };

  async function source(r: ManyRead<unknown>, id: number, src: ManySource) {
    if (src.kind === "file") {
      const c = src.counters;
      return { blob: src.file as Blob, counters: c ? { text: await c.text(), name: c.name } : null };
    }
    r.mark(id, { status: "downloading" });
    const checked = checkUrl(src.url);
    if ("error" in checked) throw new DownloadError(`${src.url} cannot be loaded: ${checked.error}.`);
    const controller = new AbortController();
    const timer = setInterval(() => !r.current() && controller.abort(), 250);
    try {
      return { blob: await download(checked.url, () => {}, controller.signal), counters: null };
    } finally {
      clearInterval(timer);
    }
  }

  async function one<T>(r: ManyRead<T>, queue: number[]): Promise<void> {
    let w: Awaited<ReturnType<typeof separateWorker>> | null = null;
    let handle: { terminate: () => void } | null = null;
    try {
      while (queue.length > 0 && r.current()) {
        const id = queue.shift() as number;
        const entry = r.entries().find((e) => e.id === id);
        if (!entry) continue;
        let input: { blob: Blob; counters: { text: string; name: string } | null };
        try {
          input = await source(r, id, entry.source);
        } catch (e) {
          if (!r.current()) return;
          r.mark(id, { status: "error", error: message(e) });
          continue;
        }
        if (!r.current()) return;
        r.mark(id, { status: "reading" });
        let answer: ManyAnswer<T>;
        try {
          if (!w) {
            const started = await separateWorker();
            w = started;
            handle = { terminate: () => endWorker(started.worker, started.root) };
            workers.push(handle);
          }
          answer = await Promise.race([r.summarize(w.root, input.blob, entry.name, input.counters), w.ended]);
        } catch (e) {
          // The worker crashed (out of memory?): this file fails, the next one gets a fresh worker.
          answer = { ok: false, message: `The worker reading it stopped: ${message(e)}` };
          if (handle) end(handle);
          handle = null;
          w = null;
        }
        if (!r.current()) return;
        if (answer.ok) r.done(id, answer);
        else r.mark(id, { status: "error", error: answer.message });
      }
    } finally {
      if (handle) end(handle);
    }
  }

  return {
    async read<T>(r: ManyRead<T>): Promise<void> {
      const queue = r.entries().map((e) => e.id);
      const n = Math.min(PARALLEL, queue.length);
      await Promise.all(Array.from({ length: n }, () => one(r, queue)));
    },
    endAll(): void {
      for (const w of workers) w.terminate();
      workers = [];
    },
  };
}
