// A series of dumps of one rank, taken after different steps. Each dump is summarised apart (summarizeDump:
// bytes per call site and category over its active_allocated blocks, its parameter blocks, its peak), so only
// small summaries are kept however many files there are; seriesLeaks orders them by step (file names, else the
// sidecars' tags, else the order given), refuses files of different ranks or plainly different runs, and
// gives the growth verdict per (call site, category). Call sites match across dumps on their portable key.

import { type Attribution, attribute } from "../attribution";
import { CATEGORY_NAMES } from "../attribution/rules";
import { type Comparison, compareTallies, type Tally } from "../compare";
import { BlockState, type CountersSidecar, type SnapshotModel } from "../model/types";
import { rankFromFileName } from "../ranks/index";
import { prepareReplays } from "../replay/report";
import { replayInputs } from "../report";
import { formatMiB } from "../report/format";
import { deviceCapacity } from "../whatif/suggest";
import { analyseGrowth, type GrowthOptions, growthRule, projectOomStep } from "./growth";
import { verdictMessage, warmUpText } from "./message";
import { leaksDevice } from "./trace";
import type { LeakStepJson, LeaksJson } from "./types";

export interface DumpSite {
  /** Portable `file:line:function` (what matches across dumps). */
  key: string;
  /** The call-site string as written in the file (what `report` prints). */
  site: string;
  label: string;
  category: string;
  bytes: number;
}

/** One dump, summarised: small enough to keep for hundreds of files. */
export interface DumpSummary {
  file: string;
  stepFromName: number | null;
  stepFromTag: number | null;
  rankFromName: number | null;
  rankFromSidecar: number | null;
  /** Σ segment allocated_size (rounded block bytes). */
  allocatedBytes: number;
  reservedBytes: number;
  /** The sidecar's max_memory_allocated, else the highest replayed peak; null without either. */
  peakBytes: number | null;
  categories: Record<string, number>;
  sites: DumpSite[];
  /** The parameter blocks ("parameters" category, active): sizes ascending, and their addresses. */
  parameterSizes: number[];
  parameterAddresses: number[];
  capacity: { bytes: number; source: string; detail: string } | null;
}

export class SeriesInputError extends Error {}

/** `…step3…`, `_s3_`, `-s3` in the file name (last path part): the step it was taken after. */
export function stepFromFileName(file: string): number | null {
  const base = file.split(/[\\/]/).pop() ?? file;
  const m = /step[_-]?(\d+)/i.exec(base) ?? /(?:^|[_-])s(\d+)(?=[_.-]|$)/i.exec(base);
  return m ? Number(m[1]) : null;
}

/** The sidecar's tag: `step3`, `s3`, `3`. */
export function stepFromTag(tag: string | null | undefined): number | null {
  if (typeof tag !== "string") return null;
  const m = /^\s*(?:step[_-]?|s)?(\d+)\s*$/i.exec(tag) ?? /step[_-]?(\d+)/i.exec(tag);
  return m ? Number(m[1]) : null;
}

export interface SummarizeOptions {
  counters?: CountersSidecar | null;
  /** The sidecar's `rank` (distributed runs), when there is one. */
  sidecarRank?: number | null;
  attribution?: Attribution;
}

/** One dump's summary. The model can be let go afterwards. */
export function summarizeDump(model: SnapshotModel, file: string, opts: SummarizeOptions = {}): DumpSummary {
  const a = opts.attribution ?? attribute(model);
  const counters = opts.counters ?? null;
  const B = model.blocks;
  const perKey = new Map<string, DumpSite>();
  const categories: Record<string, number> = Object.fromEntries(CATEGORY_NAMES.map((c) => [c, 0]));
  const params: [number, number][] = [];
  const P = CATEGORY_NAMES.indexOf("parameters");
  for (let b = 0; b < B.length; b++) {
    if (B.state[b] !== BlockState.active_allocated) continue;
    const size = B.sizeBytes[b];
    const c = a.blockCategory[b];
    const cat = CATEGORY_NAMES[c] ?? "unknown";
    categories[cat] += size;
    if (c === P) params.push([size, B.address[b]]);
    const s = a.sites[a.blockSite[b]];
    const k = `${s.portableKey}\u0000${cat}`;
    const row = perKey.get(k);
    if (row) row.bytes += size;
    else perKey.set(k, { key: s.portableKey, site: s.key, label: s.label, category: cat, bytes: size });
  }
  params.sort((x, y) => x[0] - y[0] || x[1] - y[1]);
  let allocatedBytes = 0;
  let reservedBytes = 0;
  for (let i = 0; i < model.segments.length; i++) {
    allocatedBytes += model.segments.allocatedSizeBytes[i];
    reservedBytes += model.segments.totalSizeBytes[i];
  }
  const replays = prepareReplays(model, replayInputs(a));
  let replayPeak: number | null = null;
  for (const r of replays.values())
    if (r.peakEvent !== null) replayPeak = Math.max(replayPeak ?? 0, r.peakAllocatedBytes);
  const fromCounters = counters?.maxMemoryAllocatedBytes ?? null;
  const device = leaksDevice(replays, counters);
  const cap =
    device !== null
      ? deviceCapacity(replays.get(device) as NonNullable<ReturnType<typeof replays.get>>, counters)
      : null;
  return {
    file,
    stepFromName: stepFromFileName(file),
    stepFromTag: stepFromTag(counters?.tag),
    rankFromName: rankFromFileName(file),
    rankFromSidecar: opts.sidecarRank ?? null,
    allocatedBytes,
    reservedBytes,
    peakBytes:
      fromCounters !== null && Number.isFinite(fromCounters)
        ? Math.max(fromCounters, replayPeak ?? 0)
        : replayPeak,
    categories,
    sites: [...perKey.values()].sort((x, y) => y.bytes - x.bytes || x.key.localeCompare(y.key)),
    parameterSizes: params.map((p) => p[0]),
    parameterAddresses: params.map((p) => p[1]),
    capacity: cap ? { bytes: cap.bytes, source: cap.source, detail: cap.detail } : null,
  };
}

const baseName = (f: string) => f.split(/[\\/]/).pop() ?? f;

/** Steps of the dumps: from the file names when every one names a distinct step, else the tags, else order. */
export function seriesSteps(d: DumpSummary[]): {
  steps: number[];
  source: LeakStepJson["stepSource"] & string;
} {
  const distinct = (xs: (number | null)[]) => xs.every((x) => x !== null) && new Set(xs).size === xs.length;
  const names = d.map((x) => x.stepFromName);
  if (distinct(names)) return { steps: names as number[], source: "file-name" };
  const tags = d.map((x) => x.stepFromTag);
  if (distinct(tags)) return { steps: tags as number[], source: "sidecar-tag" };
  return { steps: d.map((_x, i) => i + 1), source: "order" };
}

/** Refuses, with words, dumps of different ranks or plainly different runs. */
export function checkOneRun(d: DumpSummary[]): void {
  const rankOf = (x: DumpSummary) =>
    x.rankFromName !== null
      ? { rank: x.rankFromName, how: "its name" }
      : x.rankFromSidecar !== null
        ? { rank: x.rankFromSidecar, how: "its sidecar" }
        : null;
  const first = d.find((x) => rankOf(x) !== null);
  if (first) {
    const r0 = rankOf(first) as { rank: number; how: string };
    const other = d.find((x) => {
      const r = rankOf(x);
      return r !== null && r.rank !== r0.rank;
    });
    if (other) {
      const r1 = rankOf(other) as { rank: number; how: string };
      throw new SeriesInputError(
        `these dumps are of different ranks: ${baseName(first.file)} is rank ${r0.rank} (from ${r0.how}), ` +
          `${baseName(other.file)} is rank ${r1.rank} (from ${r1.how}). A series is one rank's dumps after ` +
          "different steps; give one rank's files (for many ranks side by side: peakscope ranks).",
      );
    }
  }
  const withParams = d.filter((x) => x.parameterSizes.length > 0);
  for (let i = 1; i < withParams.length; i++) {
    const a = withParams[0];
    const b = withParams[i];
    const sameSizes =
      a.parameterSizes.length === b.parameterSizes.length &&
      a.parameterSizes.every((s, j) => s === b.parameterSizes[j]);
    const sum = (xs: number[]) => xs.reduce((s, x) => s + x, 0);
    if (!sameSizes) {
      throw new SeriesInputError(
        `${baseName(a.file)} and ${baseName(b.file)} are plainly different runs: their parameter blocks differ ` +
          `(${a.parameterSizes.length} blocks, ${formatMiB(sum(a.parameterSizes))} against ` +
          `${b.parameterSizes.length} blocks, ${formatMiB(sum(b.parameterSizes))}). A series is one run's dumps ` +
          "after different steps; to compare two runs use peakscope report A --compare B.",
      );
    }
    const at = new Set(a.parameterAddresses);
    if (!b.parameterAddresses.some((x) => at.has(x))) {
      throw new SeriesInputError(
        `${baseName(a.file)} and ${baseName(b.file)} are plainly different runs: the same parameter sizes, but ` +
          "not one parameter at the same address (a process keeps its parameters where they are). A series is " +
          "one run's dumps; to compare two runs use peakscope report A --compare B.",
      );
    }
  }
}

export interface SeriesOptions extends GrowthOptions {
  capacityBytes?: number | null;
  tableRows?: number;
}

/** `peakscope leaks FILE FILE…`: what grows from one dump to the next. */
export function seriesLeaks(dumps: DumpSummary[], opts: SeriesOptions = {}): LeaksJson {
  if (dumps.length === 0) throw new SeriesInputError("no dump given");
  checkOneRun(dumps);
  const { steps: stepOf, source } = seriesSteps(dumps);
  const order = dumps.map((_d, i) => i).sort((i, j) => stepOf[i] - stepOf[j]);
  const d = order.map((i) => dumps[i]);
  const steps = order.map((i) => stepOf[i]);
  const rows = new Map<string, { site: string; label: string; category: string; live: number[] }>();
  d.forEach((x, j) => {
    for (const s of x.sites) {
      const k = `${s.key}\u0000${s.category}`;
      let row = rows.get(k);
      if (!row) {
        row = { site: s.site, label: s.label, category: s.category, live: new Array(d.length).fill(0) };
        rows.set(k, row);
      }
      row.live[j] += s.bytes;
    }
  });
  const g = analyseGrowth(steps, [...rows.values()], opts);
  const top = opts.tableRows ?? 50;
  const rule = {
    thresholdBytes: g.thresholdBytes,
    minGrowthSteps: g.minGrowthSteps,
    text: growthRule(g.thresholdBytes, g.minGrowthSteps),
  };
  const last = d[d.length - 1];
  const explicit = opts.capacityBytes ?? null;
  const capacity =
    explicit !== null
      ? { bytes: explicit, source: "option", detail: `given: ${formatMiB(explicit)}` }
      : ([...d].reverse().find((x) => x.capacity !== null)?.capacity ?? null);
  const perStep = g.leaks.reduce((s, l) => s + l.bytesPerStep, 0);
  const projectedOomStep =
    g.verdict === "leak"
      ? projectOomStep(
          steps[steps.length - 1],
          last.peakBytes ?? last.allocatedBytes,
          perStep,
          capacity?.bytes ?? null,
        )
      : null;
  const sourceDetail =
    source === "file-name"
      ? "steps from the file names (…step3…, _s3_, -s3)"
      : source === "sidecar-tag"
        ? "steps from the counters sidecars' tag"
        : "no step in the file names or sidecars: the order given (1, 2, 3, …)";
  return {
    mode: "series",
    steps: d.map((x, j) => ({
      step: steps[j],
      file: x.file,
      allocatedBytes: x.allocatedBytes,
      peakBytes: x.peakBytes,
      stepSource: source,
    })),
    leaks: g.leaks,
    verdict: g.verdict,
    projectedOomStep,
    message: verdictMessage(g, steps.length, projectedOomStep, capacity),
    stepSource: { kind: source, confidence: source === "order" ? "low" : "certain", detail: sourceDetail },
    rule,
    warmUp: { oneOff: g.oneOff.slice(0, top), firstStepRetainedBytes: null, text: warmUpText(g, null, null) },
    growth: g.table.filter((t) => t.kind !== "steady" || t.liveBytesByStep.some((v) => v > 0)).slice(0, top),
    capacity,
    files: d.map((x) => x.file),
  };
}

/** The tally of one dump, for compareDumps. */
function tallyOf(x: DumpSummary): Tally {
  const categories = CATEGORY_NAMES.map((c) => x.categories[c] ?? 0);
  const siteCat = new Map<string, number>();
  const labels = new Map<string, string>();
  for (const s of x.sites) {
    const k = `${s.key}\u0000${(CATEGORY_NAMES as readonly string[]).indexOf(s.category)}`;
    siteCat.set(k, (siteCat.get(k) ?? 0) + s.bytes);
    if (!labels.has(s.key)) labels.set(s.key, s.label);
  }
  return { categories, siteCat, labels };
}

/** Any two dumps of the series compared as `report A --compare B` compares two snapshots (B − A). */
export function compareDumps(base: DumpSummary, other: DumpSummary, maxSites = 20): Comparison {
  return compareTallies(tallyOf(base), tallyOf(other), maxSites);
}
