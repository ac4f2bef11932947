// `peakscope leaks FILE... [--json] [--capacity SIZE] [--step-marker REGEX] [--threshold SIZE]`: what grows from
// one step to the next. One file: the steps inside its trace; several: a series of dumps of one rank. Files of a
// series are read one at a time and only their summaries kept (src/core/leaks/series.ts).
// Exit 0: no growth found; 2: a leak; 1: bad usage, an unreadable file, or files that are not one run's series.

import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { SnapshotReadError } from "../core/formats/errors";
import {
  type DumpSummary,
  type LeaksJson,
  SeriesInputError,
  StepMarkerError,
  seriesLeaks,
  summarizeDump,
  traceLeaks,
} from "../core/leaks/index";
import { CountersParseError, parseCounters } from "../core/report/counters";
import { formatMiB } from "../core/report/format";
import { parseSize } from "../core/units";
import type { CliIo, SnapshotDeps } from "./io";
import { readSnapshotFile } from "./read-file";

const USAGE =
  "usage: peakscope leaks FILE... [--json] [--capacity SIZE] [--step-marker REGEX] [--threshold SIZE]\n" +
  "  one FILE: the steps inside its trace; several: dumps of one rank after different steps\n";

class UsageError extends Error {}

interface Args {
  files: string[];
  json: boolean;
  capacity: number | null;
  stepMarker: RegExp | null;
  threshold: number | null;
}

function parseArgs(args: string[]): Args {
  const out: Args = { files: [], json: false, capacity: null, stepMarker: null, threshold: null };
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
    } else if (a === "--capacity" || a === "--threshold") {
      value ??= args[++i];
      const n = value === undefined ? null : parseSize(value);
      if (n === null)
        throw new UsageError(`${a} takes a size (80GiB, 80GB, 85899345920), not "${value ?? ""}"`);
      if (a === "--capacity") out.capacity = n;
      else out.threshold = n;
    } else if (a === "--step-marker") {
      value ??= args[++i];
      if (value === undefined || value === "")
        throw new UsageError("--step-marker takes a regular expression");
      try {
        out.stepMarker = new RegExp(value);
      } catch (e) {
        throw new UsageError(`--step-marker ${value}: not a regular expression (${(e as Error).message})`);
      }
    } else if (a.startsWith("--")) throw new UsageError(`unknown option ${a}`);
    else out.files.push(a);
  }
  if (out.files.length === 0) throw new UsageError("no snapshot file given");
  if (out.stepMarker && out.files.length > 1)
    throw new UsageError("--step-marker reads the steps inside one trace: give one file");
  return out;
}

/** FILE.counters.json beside the file: parsed, and its `rank` (distributed runs). */
async function sidecarOf(file: string) {
  const path = `${file}.counters.json`;
  if (!existsSync(path)) return { counters: null, rank: null };
  const text = await readFile(path, "utf8");
  const counters = parseCounters(text, path);
  let rank: number | null = null;
  try {
    const raw = JSON.parse(text) as { rank?: unknown };
    if (typeof raw.rank === "number" && Number.isInteger(raw.rank)) rank = raw.rank;
  } catch {
    // parseCounters has already said what is wrong
  }
  return { counters, rank };
}

const mib = (n: number | null | undefined) => (n === null || n === undefined ? "—" : formatMiB(n));

function renderText(j: LeaksJson): string {
  const lines: string[] = [];
  if (j.mode === "trace") {
    lines.push(
      `peakscope leaks: ${j.steps.length} step(s) in ${j.file ?? "the trace"} (device ${j.device ?? "—"})`,
    );
    lines.push(`steps: ${j.stepSource.detail}`);
    if (j.steps.length > 0) {
      lines.push(
        `  ${"step".padStart(5)}  ${"events".padEnd(15)}  ${"start".padStart(12)}  ${"end".padStart(12)}  ${"peak".padStart(12)}  ${"kept into next".padStart(14)}`,
      );
      for (const s of j.steps)
        lines.push(
          `  ${String(s.step).padStart(5)}  ${`${s.startEvent}–${s.endEvent}`.padEnd(15)}  ${mib(s.startAllocatedBytes).padStart(12)}  ${mib(s.allocatedBytes).padStart(12)}  ${mib(s.peakBytes).padStart(12)}  ${mib(s.retainedBytes).padStart(14)}`,
        );
    }
  } else {
    lines.push(`peakscope leaks: a series of ${j.steps.length} dump(s)`);
    lines.push(`steps: ${j.stepSource.detail}`);
    lines.push(`  ${"step".padStart(5)}  ${"allocated".padStart(12)}  ${"peak".padStart(12)}  file`);
    for (const s of j.steps)
      lines.push(
        `  ${String(s.step).padStart(5)}  ${mib(s.allocatedBytes).padStart(12)}  ${mib(s.peakBytes).padStart(12)}  ${s.file}`,
      );
  }
  const changed = j.growth.filter((g) => g.kind !== "steady").slice(0, 10);
  if (changed.length > 0) {
    lines.push("growth (live MiB at each step's end, per call site and category):");
    for (const g of changed)
      lines.push(
        `  ${g.kind.padEnd(8)}  ${g.label} (${g.category}): ${g.liveBytesByStep.map((v) => (v / 2 ** 20).toFixed(2)).join(" → ")}`,
      );
  }
  lines.push(j.message);
  for (const l of j.leaks)
    lines.push(
      `  leak: ${l.site} (${l.category}) +${formatMiB(l.bytesPerStep)} per step (${l.bytesPerStep} B), steps ${l.steps.join(", ")}`,
    );
  if (j.verdict === "leak" && j.projectedOomStep === null)
    lines.push("  out of memory: unknown (give --capacity SIZE, or a sidecar / an OOM entry that says it)");
  lines.push(j.warmUp.text);
  lines.push(`rule: ${j.rule.text}`);
  return `${lines.join("\n")}\n`;
}

const message = (e: unknown) => (e instanceof Error ? e.message : String(e));

/** `args` are the words after `peakscope leaks`. */
export async function runLeaks(args: string[], io: CliIo, deps: Partial<SnapshotDeps> = {}): Promise<number> {
  let a: Args;
  try {
    a = parseArgs(args);
  } catch (e) {
    io.stderr(`peakscope leaks: ${message(e)}\n${USAGE}`);
    return 1;
  }
  const read = deps.readSnapshot ?? readSnapshotFile;
  const growth = a.threshold !== null ? { thresholdBytes: a.threshold } : {};
  let out: LeaksJson;
  try {
    if (a.files.length === 1) {
      const file = a.files[0];
      const side = await sidecarOf(file);
      const model = await read(file);
      out = traceLeaks(model, {
        counters: side.counters,
        capacityBytes: a.capacity,
        stepMarker: a.stepMarker,
        ...growth,
      });
      out.file = file;
    } else {
      // One file at a time: each model is let go once summarised.
      const summaries: DumpSummary[] = [];
      for (const file of a.files) {
        const side = await sidecarOf(file);
        const model = await read(file);
        summaries.push(summarizeDump(model, file, { counters: side.counters, sidecarRank: side.rank }));
      }
      out = seriesLeaks(summaries, { capacityBytes: a.capacity, ...growth });
    }
  } catch (e) {
    if (
      e instanceof SnapshotReadError ||
      e instanceof SeriesInputError ||
      e instanceof StepMarkerError ||
      e instanceof CountersParseError
    ) {
      io.stderr(`peakscope leaks: ${e.message}\n`);
      return 1;
    }
    throw e;
  }
  io.stdout(a.json ? `${JSON.stringify(out)}\n` : renderText(out));
  return out.verdict === "leak" ? 2 : 0;
}
