// The rank overview's state: more than two snapshots opened at once (dropped, picked, a folder, or `#src`
// URLs) become one row per file. Each file is read in a worker of its own (two at a time, each worker one
// file after another), summarised as `peakscope ranks` does, with a ≤ 400-point curve, and its model is
// dropped at once — the page keeps only the File handles (or URLs) and the small summaries, so 16 files of
// 100 MB open on a 2-core machine. A row opens its file in the normal view (the sides' worker), two checked
// rows open the existing comparison; "Back to the rank overview" returns without reading anything again.

import { create } from "zustand";
import type { RankFileResult } from "../../../../workers/api";
import { type RankSummary, type RanksJson, rankOverview } from "../../../core/ranks/index";
import { manyFiles, refreshPageState, useApp } from "../../state/app";
import { checkUrl, nameOfUrl } from "../../state/download";
import { beginWork, endWork } from "../../state/idle";
import { replaceHash } from "../../state/linkSync";
import { writeManySources } from "../../state/ranksLink";
import { type ManySource, manyReader } from "../../state/read-many";

export type RankSource = ManySource;

export interface RankEntry {
  /** Position in the order given. */
  id: number;
  /** Unique among the entries: the file's name (its path inside a dropped folder), or the URL's name. */
  name: string;
  source: RankSource;
  status: "waiting" | "downloading" | "reading" | "done" | "error";
  result: Extract<RankFileResult, { ok: true }> | null;
  error: string | null;
}

export interface RanksState {
  entries: RankEntry[];
  /** The overview is on screen; false while one rank (or a comparison of two) is open from it. */
  shown: boolean;
  status: "idle" | "loading" | "ready";
  /** core rankOverview over the files read so far (rows sorted by rank). */
  overview: RanksJson | null;
  /** Entry ids ticked for "Compare" (at most two: a third replaces the oldest). */
  checked: number[];
  /** Which entry is open in the normal view (for the way back). */
  openedFrom: number[];
  /** The hash the overview was opened with (URLs), put back on the way back. */
  hash: string;
  startedAt: number;
  finishedAt: number;

  openFiles(snapshots: File[], counters: (File | null)[]): Promise<void>;
  openUrls(urls: string[]): Promise<void>;
  /** Opens one entry in the normal view. */
  openRank(id: number): Promise<void>;
  /** Opens the two checked entries side by side (the existing comparison). */
  compareChecked(): Promise<void>;
  toggleChecked(id: number): void;
  /** Back from a rank's file to the overview (the file's worker is ended). */
  back(): void;
  /** Stops reading the files still waiting. */
  stop(): void;
  /** Forgets the overview (another file was opened on its own). */
  dismiss(): void;
}

/** Where a dropped folder's file lies inside it (DropTarget's folder walk sets it). */
export const relativePath = new WeakMap<File, string>();

let generation = 0;
/** >0 while the overview itself opens or closes a side: the fresh start it causes is not a replacement. */
let internal = 0;
const reader = manyReader();
const endWorkers = reader.endAll;

function uniqueNames(names: string[]): string[] {
  const seen = new Map<string, number>();
  return names.map((n) => {
    const k = (seen.get(n) ?? 0) + 1;
    seen.set(n, k);
    return k === 1 ? n : `${n} (${k})`;
  });
}

export const useRanks = create<RanksState>()((set, get) => {
  function recompute(): void {
    const summaries: RankSummary[] = [];
    for (const e of get().entries) if (e.result) summaries.push(e.result.summary);
    set({ overview: summaries.length > 0 ? rankOverview(summaries) : null });
  }

  function patch(id: number, p: Partial<RankEntry>): void {
    set({ entries: get().entries.map((e) => (e.id === id ? { ...e, ...p } : e)) });
  }

  /** Reads every waiting entry, PARALLEL at a time, each worker one file after another. */
  async function readAll(mine: number): Promise<void> {
    await reader.read<Omit<Extract<RankFileResult, { ok: true }>, "ok">>({
      entries: () => get().entries,
      current: () => generation === mine,
      mark: patch,
      done: (id, result) => {
        patch(id, { status: "done", result, error: null });
        recompute();
      },
      summarize: (root, blob, name, counters) => root.rankSummary(blob, name, counters),
    });
    if (generation === mine) set({ status: "ready", finishedAt: performance.now() });
  }

  async function begin(entries: RankEntry[], hash: string): Promise<void> {
    const mine = ++generation;
    endWorkers();
    set({
      entries,
      shown: true,
      status: "loading",
      overview: null,
      checked: [],
      openedFrom: [],
      hash,
      startedAt: performance.now(),
      finishedAt: 0,
    });
    beginWork();
    try {
      await readAll(mine);
    } finally {
      endWork();
    }
  }

  /** Runs an open of the sides on the overview's behalf (its fresh start does not dismiss the overview). */
  async function asOverview<T>(fn: () => Promise<T> | T): Promise<T> {
    internal++;
    try {
      return await fn();
    } finally {
      internal--;
    }
  }

  return {
    entries: [],
    shown: false,
    status: "idle",
    overview: null,
    checked: [],
    openedFrom: [],
    hash: "",
    startedAt: 0,
    finishedAt: 0,

    openFiles(snapshots, counters) {
      const names = uniqueNames(snapshots.map((f) => relativePath.get(f) ?? f.name));
      const entries: RankEntry[] = snapshots.map((file, i) => ({
        id: i,
        name: names[i],
        source: { kind: "file", file, counters: counters[i] ?? null },
        status: "waiting",
        result: null,
        error: null,
      }));
      // Dropped files have no link (a link never carries a file): the hash of what was open before goes.
      replaceHash("");
      return begin(entries, "");
    },

    openUrls(urls) {
      useApp.getState().reset();
      const names = uniqueNames(
        urls.map((u) => {
          const c = checkUrl(u);
          return "error" in c ? u : nameOfUrl(c.url);
        }),
      );
      const entries: RankEntry[] = urls.map((url, i) => ({
        id: i,
        name: names[i],
        source: { kind: "url", url },
        status: "waiting",
        result: null,
        error: null,
      }));
      const hash = `#${writeManySources(urls)}`;
      replaceHash(hash);
      return begin(entries, hash);
    },

    async openRank(id) {
      const e = get().entries.find((x) => x.id === id);
      if (!e) return;
      set({ shown: false, openedFrom: [id] });
      const app = useApp.getState();
      await asOverview(() =>
        e.source.kind === "file"
          ? app.openFiles(e.source.counters ? [e.source.file, e.source.counters] : [e.source.file], "replace")
          : app.openUrls(e.source.url, null),
      );
    },

    async compareChecked() {
      const [a, b] = get().checked.map((id) => get().entries.find((x) => x.id === id));
      if (!a || !b) return;
      set({ shown: false, openedFrom: [a.id, b.id] });
      const app = useApp.getState();
      await asOverview(() => {
        if (a.source.kind === "file" && b.source.kind === "file") {
          const files = [a.source.file, b.source.file];
          if (a.source.counters) files.push(a.source.counters);
          if (b.source.counters) files.push(b.source.counters);
          return app.openFiles(files, "replace");
        }
        if (a.source.kind === "url" && b.source.kind === "url")
          return app.openUrls(a.source.url, b.source.url);
      });
    },

    toggleChecked(id) {
      const c = get().checked;
      if (c.includes(id)) set({ checked: c.filter((x) => x !== id) });
      else set({ checked: [...c, id].slice(-2) });
    },

    back() {
      void asOverview(() => useApp.getState().reset());
      replaceHash(get().hash);
      set({ shown: true, openedFrom: [] });
    },

    stop() {
      if (get().status !== "loading") return;
      generation++;
      endWorkers();
      set({
        status: "ready",
        finishedAt: performance.now(),
        entries: get().entries.map((e) =>
          e.status === "done" || e.status === "error"
            ? e
            : { ...e, status: "error", error: "Not read: reading was stopped." },
        ),
      });
    },

    dismiss() {
      if (get().entries.length === 0 && !get().shown) return;
      generation++;
      endWorkers();
      set({
        entries: [],
        shown: false,
        status: "idle",
        overview: null,
        checked: [],
        openedFrom: [],
        hash: "",
      });
    },
  };
});

// Plug into the page (state/app.ts): more than two files come here; a file opened on its own ends the
// overview; while the overview is on screen it is the page's state.
manyFiles.open = (snapshots, counters) => useRanks.getState().openFiles(snapshots, counters);
manyFiles.openUrls = (urls) => useRanks.getState().openUrls(urls);
manyFiles.onFresh = () => {
  if (internal === 0) useRanks.getState().dismiss();
};
manyFiles.pageState = () => {
  const r = useRanks.getState();
  if (!r.shown) return null;
  return {
    state: r.status === "loading" ? "loading" : "ready",
    mode: "ranks",
    title: `Rank overview (${r.entries.length} files) — peakscope`,
  };
};
useRanks.subscribe(refreshPageState);
