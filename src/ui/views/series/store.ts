// The series view's state: several dumps of one rank opened at once (dropped or picked, or `#src` URLs whose
// names give steps) become one story — allocated and each category per dump, the growth table, the verdict.
// Each dump is read in a worker of its own, two at a time, summarised (core summarizeDump) and its model
// dropped, as the rank overview reads its files (state/read-many), so memory stays bounded whatever the
// number of dumps. It plugs in before the rank overview: files that are a series come here, the rest go on
// to the overview (state/app `manyFiles`).

import { create } from "zustand";
import type { SeriesFileResult } from "../../../../workers/api";
import { type DumpSummary, type LeaksJson, SeriesInputError, seriesLeaks } from "../../../core/leaks/index";
import { manyFiles, refreshPageState } from "../../state/app";
import { checkUrl, nameOfUrl } from "../../state/download";
import { beginWork, endWork } from "../../state/idle";
import { replaceHash } from "../../state/linkSync";
import { type SeriesPick, seriesPick, writeManySources } from "../../state/ranksLink";
import { type ManySource, manyReader } from "../../state/read-many";
import "../ranks/store"; // the rank overview plugs into manyFiles first; this wraps it
import { isSeries } from "./detect";

export type SeriesSource = ManySource;

export interface SeriesEntry {
  id: number;
  name: string;
  source: SeriesSource;
  status: "waiting" | "downloading" | "reading" | "done" | "error";
  summary: DumpSummary | null;
  error: string | null;
}

export interface SeriesState {
  entries: SeriesEntry[];
  shown: boolean;
  status: "idle" | "loading" | "ready";
  /** core seriesLeaks over the dumps read so far (null until two are read, or when refused: `refusal`). */
  result: LeaksJson | null;
  refusal: string | null;
  /** The growth-table row picked (site + category), shown as its live bytes per dump. */
  selected: { site: string; category: string } | null;
  /** The two dumps compared (entry names), B − A. */
  pair: [string, string] | null;
  openFiles(snapshots: File[], counters: (File | null)[]): Promise<void>;
  openUrls(urls: string[]): Promise<void>;
  select(row: { site: string; category: string } | null): void;
  setPair(pair: [string, string]): void;
  dismiss(): void;
}

let generation = 0;
/** The user picked the compared pair: keep it while more dumps arrive (else: the first and the last). */
let pairByUser = false;
/** A link's picks, applied once its dumps are read (the pair when both dumps are in the series). */
let wanted: SeriesPick = { row: null, pair: null };
const reader = manyReader();
const endWorkers = reader.endAll;

async function sidecarJson(f: File | null): Promise<{ tag?: unknown; rank?: unknown } | null> {
  if (!f) return null;
  try {
    return JSON.parse(await f.text());
  } catch {
    return null;
  }
}

export const useSeries = create<SeriesState>()((set, get) => {
  function recompute(): void {
    const done = get()
      .entries.filter((e) => e.summary)
      .map((e) => e.summary as DumpSummary);
    if (done.length < 2) {
      set({ result: null, refusal: null });
      return;
    }
    try {
      const result = seriesLeaks(done);
      const files = result.steps.map((s) => s.file as string);
      const w = wanted.pair;
      if (w && files.includes(w[0]) && files.includes(w[1]) && get().status === "ready") {
        set({ pair: w });
        pairByUser = true;
        wanted = { ...wanted, pair: null };
      }
      const pair = get().pair;
      set({
        result,
        refusal: null,
        pair:
          pairByUser && pair && files.includes(pair[0]) && files.includes(pair[1])
            ? pair
            : [files[0], files[files.length - 1]],
      });
    } catch (e) {
      if (e instanceof SeriesInputError) set({ result: null, refusal: e.message });
      else throw e;
    }
  }

  function patch(id: number, p: Partial<SeriesEntry>): void {
    set({ entries: get().entries.map((e) => (e.id === id ? { ...e, ...p } : e)) });
  }

  async function readAll(mine: number): Promise<void> {
    await reader.read<Omit<Extract<SeriesFileResult, { ok: true }>, "ok">>({
      entries: () => get().entries,
      current: () => generation === mine,
      mark: patch,
      done: (id, result) => {
        patch(id, { status: "done", summary: result.summary, error: null });
        recompute();
      },
      summarize: (root, blob, name, counters) => root.seriesSummary(blob, name, counters),
    });
    if (generation === mine) set({ status: "ready" });
  }

  async function begin(entries: SeriesEntry[]): Promise<void> {
    const mine = ++generation;
    pairByUser = false;
    endWorkers();
    set({
      entries,
      shown: true,
      status: "loading",
      result: null,
      refusal: null,
      selected: wanted.row,
      pair: null,
    });
    beginWork();
    try {
      await readAll(mine);
      if (generation === mine && wanted.pair) recompute(); // the link's pair, now that every dump is in
    } finally {
      endWork();
    }
  }

  /** A series opened from URLs keeps its picks in the link (a dropped file's series has no link). */
  function writePicks(): void {
    const { entries, selected, pair } = get();
    if (entries.length === 0 || entries.some((e) => e.source.kind !== "url")) return;
    const urls = entries.map((e) => (e.source as { url: string }).url);
    replaceHash(`#${writeManySources(urls, { row: selected, pair: pairByUser ? pair : null })}`);
  }

  return {
    entries: [],
    shown: false,
    status: "idle",
    result: null,
    refusal: null,
    selected: null,
    pair: null,
    openFiles(snapshots, counters) {
      wanted = { row: null, pair: null };
      replaceHash(""); // a link never carries a dropped file
      return begin(
        snapshots.map((file, i) => ({
          id: i,
          name: file.name,
          source: { kind: "file", file, counters: counters[i] ?? null },
          status: "waiting",
          summary: null,
          error: null,
        })),
      );
    },
    openUrls(urls) {
      wanted = seriesPick(typeof location === "undefined" ? "" : location.hash);
      replaceHash(`#${writeManySources(urls, wanted)}`);
      return begin(
        urls.map((url, i) => {
          const c = checkUrl(url);
          return {
            id: i,
            name: "error" in c ? url : nameOfUrl(c.url),
            source: { kind: "url", url },
            status: "waiting",
            summary: null,
            error: null,
          };
        }),
      );
    },
    select(row) {
      set({ selected: row });
      writePicks();
    },
    setPair(pair) {
      pairByUser = true;
      wanted = { ...wanted, pair: null };
      set({ pair });
      writePicks();
    },
    dismiss() {
      if (!get().shown && get().entries.length === 0) return;
      generation++;
      endWorkers();
      set({
        entries: [],
        shown: false,
        status: "idle",
        result: null,
        refusal: null,
        selected: null,
        pair: null,
      });
    },
  };
});

// Plug in before the rank overview: a series comes here, anything else goes on to it.
const ranks = { ...manyFiles };
manyFiles.open = async (snapshots, counters) => {
  const sidecars = await Promise.all(counters.map(sidecarJson));
  if (
    isSeries(
      snapshots.map((f) => f.name),
      sidecars,
    )
  ) {
    ranks.onFresh?.(); // the overview, if it was on screen, goes
    return useSeries.getState().openFiles(snapshots, counters);
  }
  useSeries.getState().dismiss();
  return ranks.open?.(snapshots, counters);
};
manyFiles.openUrls = async (urls) => {
  const names = urls.map((u) => {
    const c = checkUrl(u);
    return "error" in c ? u : nameOfUrl(c.url);
  });
  if (
    isSeries(
      names,
      names.map(() => null),
    )
  ) {
    ranks.onFresh?.();
    return useSeries.getState().openUrls(urls);
  }
  useSeries.getState().dismiss();
  return ranks.openUrls?.(urls);
};
manyFiles.onFresh = () => {
  useSeries.getState().dismiss();
  ranks.onFresh?.();
};
manyFiles.pageState = () => {
  const s = useSeries.getState();
  if (s.shown)
    return {
      state: s.status === "loading" ? "loading" : "ready",
      mode: "series",
      title: `Series (${s.entries.length} dumps) — peakscope`,
    };
  return ranks.pageState?.() ?? null;
};
useSeries.subscribe(refreshPageState);
