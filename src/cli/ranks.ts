// `peakscope ranks FILE... [--json] [--jobs N]`: one row per rank (peak, totals, categories, checks) and the
// ranks whose peak stands out. Files are read in parallel, one worker thread per core (ranks-worker.mjs);
// a FILE ending in .json that is a `peakscope report --json` object is used as it is.
// Exit 0: no outlier; 2: some rank is an outlier; 1: bad usage or an unreadable file.

import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { availableParallelism } from "node:os";
import { Worker } from "node:worker_threads";
import {
  isReportJson,
  type RankSummary,
  type RanksJson,
  rankOverview,
  summaryFromReport,
} from "../core/ranks/index";
import { parseCounters } from "../core/report/counters";
import { formatMiB as formatBytes } from "../core/report/format";
import { buildReport } from "../core/report/index";
import type { CliIo } from "./io";
import { readSnapshotFile } from "./read-file";

export type RanksIo = CliIo;

export interface RanksDeps {
  /** Summarize files; default: worker threads (`jobs` of them), or in this thread when jobs is 1. */
  summarize?: (files: string[], jobs: number) => Promise<(RankSummary | FileError)[]>;
}

export interface FileError {
  file: string;
  error: string;
}

const USAGE = "usage: peakscope ranks FILE... [--json] [--jobs N]\n";

class UsageError extends Error {}

interface Args {
  files: string[];
  json: boolean;
  jobs: number | null;
}

function parseArgs(args: string[]): Args {
  const out: Args = { files: [], json: false, jobs: null };
  for (let i = 0; i < args.length; i++) {
    let a = args[i];
    let value: string | undefined;
    const eq = a.indexOf("=");
    if (a.startsWith("--") && eq > 0) {
      value = a.slice(eq + 1);
      a = a.slice(0, eq);
    }
    if (a === "--json") {
      if (value !== undefined) throw new UsageError("--json takes no value");
      out.json = true;
    } else if (a === "--jobs") {
      value ??= args[++i];
      const n = Number(value);
      if (value === undefined || !Number.isInteger(n) || n < 1)
        throw new UsageError(`--jobs takes a whole number ≥ 1${value === undefined ? "" : `, not ${value}`}`);
      out.jobs = n;
    } else if (a.startsWith("--")) throw new UsageError(`unknown option ${a}`);
    else out.files.push(a);
  }
  if (out.files.length === 0) throw new UsageError("no snapshot file given");
  return out;
}

/** The counters sidecar beside a file: raw (for rank / world_size) and parsed; null when there is none. */
async function sidecarOf(file: string) {
  const path = `${file}.counters.json`;
  if (!existsSync(path)) return null;
  const text = await readFile(path, "utf8");
  const counters = parseCounters(text, path);
  let raw: { rank?: unknown; world_size?: unknown } = {};
  try {
    raw = JSON.parse(text);
  } catch {
    // parseCounters has already said what is wrong
  }
  return { counters, raw };
}

/** One file's summary: a report JSON as it is, else the snapshot read and reported (with its sidecar). */
export async function summarizeFile(file: string): Promise<RankSummary> {
  const side = await sidecarOf(file);
  if (/\.json$/i.test(file)) {
    let parsed: unknown = null;
    try {
      parsed = JSON.parse(await readFile(file, "utf8"));
    } catch {
      parsed = null; // not JSON text (or unreadable): the snapshot reader says why
    }
    if (isReportJson(parsed)) return summaryFromReport(parsed, file, side?.raw ?? null, "report-json");
  }
  const model = await readSnapshotFile(file);
  const report = buildReport(model, { counters: side?.counters ?? null });
  return summaryFromReport(report, file, side?.raw ?? null, "snapshot");
}

const message = (e: unknown) => (e instanceof Error ? e.message : String(e));

async function summarizeInline(files: string[]): Promise<(RankSummary | FileError)[]> {
  const out: (RankSummary | FileError)[] = [];
  for (const file of files) {
    try {
      out.push(await summarizeFile(file));
    } catch (e) {
      out.push({ file, error: message(e) });
    }
  }
  return out;
}

/** Worker threads pulling files off one queue; results in the order of `files`. */
export async function summarizeInWorkers(
  files: string[],
  jobs: number,
): Promise<(RankSummary | FileError)[]> {
  const results: (RankSummary | FileError)[] = new Array(files.length);
  let next = 0;
  const url = new URL("./ranks-worker.mjs", import.meta.url);
  const one = () =>
    new Promise<void>((resolve) => {
      const w = new Worker(url);
      let current = -1;
      const feed = () => {
        if (next >= files.length) {
          void w.terminate().then(() => resolve());
          return;
        }
        current = next++;
        w.postMessage({ id: current, file: files[current] });
      };
      w.on("message", (m: { id: number; summary?: RankSummary; error?: string }) => {
        results[m.id] = m.summary ?? { file: files[m.id], error: m.error ?? "unknown error" };
        feed();
      });
      w.on("error", (e) => {
        // A crashed worker (out of memory, a loader failure): its file fails, the others go on elsewhere.
        if (current >= 0 && results[current] === undefined)
          results[current] = { file: files[current], error: message(e) };
        resolve();
      });
      w.on("exit", () => resolve());
      feed();
    });
  await Promise.all(Array.from({ length: Math.max(1, Math.min(jobs, files.length)) }, one));
  // Files a crashed worker never took: read them here.
  const missing = files.flatMap((_f, i) => (results[i] === undefined ? [i] : []));
  for (const i of missing) results[i] = (await summarizeInline([files[i]]))[0];
  return results;
}

function defaultSummarize(files: string[], jobs: number) {
  return jobs <= 1 || files.length === 1 ? summarizeInline(files) : summarizeInWorkers(files, jobs);
}

/** The reader's messages name the file already; others get it in front. */
const fileErrorText = (e: FileError) => (e.error.includes(e.file) ? e.error : `${e.file}: ${e.error}`);

function renderText(o: RanksJson, errors: FileError[]): string {
  const fmt = (n: number | null) => (n === null ? "—" : formatBytes(n));
  const lines = [
    `peakscope ranks: ${o.ranks.length} rank(s), median peak ${fmt(o.medianPeakBytes)}`,
    `  ${"rank".padStart(5)}  ${"peak".padStart(12)}  ${"allocated".padStart(12)}  ${"reserved".padStart(12)}  ${"cached".padStart(12)}  checks  file`,
    ...o.ranks.map(
      (r) =>
        `  ${String(r.rank).padStart(5)}  ${fmt(r.peakBytes).padStart(12)}  ${fmt(r.allocatedBytes).padStart(12)}  ${fmt(r.reservedBytes).padStart(12)}  ${fmt(r.fragmentation).padStart(12)}  ${r.checks.padEnd(6)}  ${r.file}`,
    ),
  ];
  if (o.outliers.length === 0) lines.push("no outlier: every peak is within 5 % and 1 GiB of the median");
  for (const x of o.outliers) {
    lines.push(
      `outlier: rank ${x.rank} peaks at ${formatBytes(x.peakBytes)}, ${formatBytes(x.aboveMedianBytes)} (${(100 * x.aboveMedianFraction).toFixed(1)} %) above the median` +
        (x.category
          ? `; most of it is ${x.category} (+${formatBytes(x.categoryExcessBytes)} over that category's median at the ${x.basis})`
          : ""),
    );
  }
  for (const e of errors) lines.push(`unreadable: ${fileErrorText(e)}`);
  return `${lines.join("\n")}\n`;
}

/** `args` are the words after `peakscope ranks`. */
export async function runRanks(args: string[], io: RanksIo, deps: RanksDeps = {}): Promise<number> {
  let a: Args;
  try {
    a = parseArgs(args);
  } catch (e) {
    io.stderr(`peakscope ranks: ${message(e)}\n${USAGE}`);
    return 1;
  }
  const jobs = a.jobs ?? availableParallelism();
  const results = await (deps.summarize ?? defaultSummarize)(a.files, jobs);
  const errors = results.filter((r): r is FileError => "error" in r);
  const summaries = results.filter((r): r is RankSummary => !("error" in r));
  const overview = rankOverview(summaries);
  if (a.json) io.stdout(`${JSON.stringify(errors.length > 0 ? { ...overview, errors } : overview)}\n`);
  else io.stdout(renderText(overview, errors));
  for (const e of errors) io.stderr(`peakscope ranks: ${fileErrorText(e)}\n`);
  if (errors.length > 0) return 1;
  return overview.outliers.length > 0 ? 2 : 0;
}
