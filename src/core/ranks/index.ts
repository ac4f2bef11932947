// Ranks overview: one row per rank of a distributed job (peak, totals, categories, checks) and the ranks
// whose peak stands out from the median, with the category that makes the difference. Pure: it takes small
// per-rank summaries (from a snapshot's report, or from a `peakscope report --json` object) and no files.

import { infoFailures, realFailures } from "../checks/index";
import { formatMiB } from "../report/format";
import type { ReportJson } from "../report/index";

/** What each rank contributes: small enough to post back from a worker. */
export interface RankSummary {
  /** The path or name as given. */
  file: string;
  /** `rank` from the counters sidecar, when it has one. */
  sidecarRank: number | null;
  worldSize: number | null;
  /** The peak used: the sidecar's max_memory_allocated when there is one, else the replayed peak. */
  peakBytes: number | null;
  peakSource: "counters" | "trace" | null;
  /** The replayed trace's peak (the window's, when the counters' peak is higher). */
  replayPeakBytes: number | null;
  countersPeakBytes: number | null;
  /** At the snapshot. */
  allocatedBytes: number;
  reservedBytes: number;
  activeBytes: number;
  categories: Record<string, number>;
  /** Bytes per category at the peak; {} when the peak's composition is unknown (counters only). */
  peakCategories: Record<string, number>;
  /** "fail" only for a real failure (checks severity `error`); snapshot-vs-peak is information. */
  checks: "pass" | "fail";
  /** Ids of the really failed checks (severity `error`). */
  failedChecks: string[];
  /** Ids of failed checks that are information (snapshot-vs-peak: the dump is not the peak). */
  infoChecks: string[];
  input: "snapshot" | "report-json";
}

export interface RankRow {
  file: string;
  rank: number;
  /** Where `rank` came from. */
  rankSource: "file-name" | "sidecar" | "order";
  peakBytes: number | null;
  peakSource: "counters" | "trace" | null;
  allocatedBytes: number;
  reservedBytes: number;
  categories: Record<string, number>;
  peakCategories: Record<string, number>;
  /** reserved − allocated at the snapshot (bytes the cache holds beyond live tensors). */
  fragmentation: number;
  checks: "pass" | "fail";
  failedChecks: string[];
  /** Failed checks that are information, not failures (snapshot-vs-peak). */
  infoChecks: string[];
  /** peakBytes − the median peak; null without a peak. */
  aboveMedianBytes: number | null;
}

export interface RankOutlier {
  rank: number;
  file: string;
  peakBytes: number;
  aboveMedianBytes: number;
  /** aboveMedianBytes / the median peak. */
  aboveMedianFraction: number;
  /** The category with the largest excess over that category's median. */
  category: string | null;
  categoryExcessBytes: number;
  /** Which composition the category comes from: at the peak, or at the snapshot when the peak has none. */
  basis: "peak" | "snapshot";
}

export interface RanksJson {
  ranks: RankRow[];
  outliers: RankOutlier[];
  medianPeakBytes: number | null;
  /** The rule, in words (thresholds included). */
  rule: string;
}

export interface RanksOptions {
  /** A peak more than this fraction above the median is an outlier (default 0.05)… */
  fraction?: number;
  /** …or more than this many bytes above it (default 1 GiB). */
  bytes?: number;
}

const GiB = 1024 ** 3;

/** The rank a file name says: `rank3`, `rank_3`, `rank-3`, `-r3` (the last path part first, then folders). */
export function rankFromFileName(file: string): number | null {
  const parts = file.split(/[\\/]/).filter(Boolean).reverse();
  for (const p of parts) {
    const m = /rank[_-]?(\d+)/i.exec(p) ?? /-r(\d+)(?![a-z0-9])/i.exec(p);
    if (m) return Number(m[1]);
  }
  return null;
}

/** Median: the middle value, or the mean of the two middle values for an even count. */
export function median(values: number[]): number | null {
  if (values.length === 0) return null;
  const v = [...values].sort((a, b) => a - b);
  const mid = v.length >> 1;
  return v.length % 2 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
}

/** Is this a `peakscope report --json` object? */
export function isReportJson(x: unknown): x is ReportJson {
  if (typeof x !== "object" || x === null || Array.isArray(x)) return false;
  const o = x as Record<string, unknown>;
  const t = o.totals as Record<string, unknown> | undefined;
  return (
    typeof t === "object" &&
    t !== null &&
    typeof t.allocatedBytes === "number" &&
    typeof t.reservedBytes === "number" &&
    typeof o.categories === "object" &&
    o.categories !== null &&
    Array.isArray(o.checks) &&
    "peak" in o
  );
}

/** The rank summary of one report (buildReport's object or its JSON). */
export function summaryFromReport(
  report: ReportJson,
  file: string,
  sidecar: { rank?: unknown; world_size?: unknown } | null = null,
  input: RankSummary["input"] = "snapshot",
): RankSummary {
  const p = report.peak;
  const countersPeak = p?.countersPeakBytes ?? null;
  const replayPeak = p
    ? p.source === "trace"
      ? p.allocatedBytes
      : (p.windowPeak?.allocatedBytes ?? null)
    : null;
  const peakBytes = countersPeak ?? replayPeak;
  // A real failure only (severity error; report JSON older than `severity` goes by the check's id).
  const failed = realFailures(report.checks).map((c) => c.id);
  const info = infoFailures(report.checks).map((c) => c.id);
  const int = (v: unknown) => (typeof v === "number" && Number.isInteger(v) && v >= 0 ? v : null);
  return {
    file,
    // a profiler trace names its rank itself (distributedInfo), as a sidecar does
    sidecarRank: int(sidecar?.rank) ?? int(report.source?.rank),
    worldSize: int(sidecar?.world_size) ?? int(report.source?.worldSize),
    peakBytes,
    peakSource: countersPeak !== null ? "counters" : replayPeak !== null ? "trace" : null,
    replayPeakBytes: replayPeak,
    countersPeakBytes: countersPeak,
    allocatedBytes: report.totals.allocatedBytes,
    reservedBytes: report.totals.reservedBytes,
    activeBytes: report.totals.activeBytes,
    categories: { ...report.categories },
    peakCategories: p?.source === "trace" ? { ...p.categories } : {},
    checks: failed.length > 0 ? "fail" : "pass",
    failedChecks: failed,
    infoChecks: info,
    input,
  };
}

function assignRanks(s: RankSummary[]): { rank: number; source: RankRow["rankSource"] }[] {
  const distinct = (xs: (number | null)[]) => xs.every((x) => x !== null) && new Set(xs).size === xs.length;
  const names = s.map((x) => rankFromFileName(x.file));
  if (distinct(names)) return names.map((r) => ({ rank: r as number, source: "file-name" }));
  const side = s.map((x) => x.sidecarRank);
  if (distinct(side)) return side.map((r) => ({ rank: r as number, source: "sidecar" }));
  return s.map((_, i) => ({ rank: i, source: "order" }));
}

/**
 * The overview. Ranks: from the file names when every file names a distinct rank, else the sidecars' `rank`
 * when every file has a distinct one, else the order given. An outlier's peak is more than `fraction` of
 * the median peak, or more than `bytes`, above it.
 */
export function rankOverview(summaries: RankSummary[], opts: RanksOptions = {}): RanksJson {
  const fraction = opts.fraction ?? 0.05;
  const bytes = opts.bytes ?? GiB;
  const ranks = assignRanks(summaries);
  const med = median(summaries.flatMap((s) => (s.peakBytes === null ? [] : [s.peakBytes])));
  const rows: RankRow[] = summaries.map((s, i) => ({
    file: s.file,
    rank: ranks[i].rank,
    rankSource: ranks[i].source,
    peakBytes: s.peakBytes,
    peakSource: s.peakSource,
    allocatedBytes: s.allocatedBytes,
    reservedBytes: s.reservedBytes,
    categories: s.categories,
    peakCategories: s.peakCategories,
    fragmentation: s.reservedBytes - s.allocatedBytes,
    checks: s.checks,
    failedChecks: s.failedChecks,
    infoChecks: s.infoChecks ?? [],
    aboveMedianBytes: s.peakBytes !== null && med !== null ? s.peakBytes - med : null,
  }));
  rows.sort((a, b) => a.rank - b.rank || a.file.localeCompare(b.file));

  const hasPeakComp = (r: RankRow) => Object.keys(r.peakCategories).length > 0;
  const categoryMedians = (pick: (r: RankRow) => Record<string, number>, among: RankRow[]) => {
    const names = new Set(among.flatMap((r) => Object.keys(pick(r))));
    const out = new Map<string, number>();
    for (const c of names) out.set(c, median(among.map((r) => pick(r)[c] ?? 0)) ?? 0);
    return out;
  };
  const withPeak = rows.filter(hasPeakComp);
  const peakMedians = categoryMedians((r) => r.peakCategories, withPeak);
  const snapMedians = categoryMedians((r) => r.categories, rows);

  const outliers: RankOutlier[] = [];
  if (med !== null) {
    for (const r of rows) {
      if (r.peakBytes === null) continue;
      const above = r.peakBytes - med;
      if (!(above > fraction * med || above > bytes)) continue;
      const basis = hasPeakComp(r) ? "peak" : "snapshot";
      const comp = basis === "peak" ? r.peakCategories : r.categories;
      const meds = basis === "peak" ? peakMedians : snapMedians;
      let category: string | null = null;
      let excess = 0;
      for (const [c, v] of Object.entries(comp)) {
        const d = v - (meds.get(c) ?? 0);
        if (d > excess) {
          excess = d;
          category = c;
        }
      }
      outliers.push({
        rank: r.rank,
        file: r.file,
        peakBytes: r.peakBytes,
        aboveMedianBytes: above,
        aboveMedianFraction: med > 0 ? above / med : 0,
        category,
        categoryExcessBytes: excess,
        basis,
      });
    }
  }
  return {
    ranks: rows,
    outliers,
    medianPeakBytes: med,
    rule: `a rank is an outlier when its peak is more than ${(fraction * 100).toFixed(0)} % or ${formatMiB(bytes)} above the median peak; the category named is the one with the largest excess over that category's median (at the peak, or at the snapshot when the peak's composition is unknown)`,
  };
}
