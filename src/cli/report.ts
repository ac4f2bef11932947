// `peakscope report FILE [--counters SIDECAR] [--compare OTHER [--counters-other SIDECAR]] [--json]
//                       [--html OUT.html]`
// Exit 0: every check passed or was skipped; 2: a check failed; 1: unreadable input or bad usage.
// --html also writes one self-contained HTML file (src/report-html) from the same report object.

import { writeFile } from "node:fs/promises";
import type { AttributionHelper } from "../core/attribution/handoff";
import { attribute } from "../core/attribution/index";
import { SnapshotReadError } from "../core/formats/errors";
import type { CountersSidecar, SnapshotModel } from "../core/model/types";
import { stateAtReport } from "../core/replay/report";
import { CountersParseError } from "../core/report/counters";
import { formatBytes, formatMiB } from "../core/report/format";
import { attributedReplays, buildReport, replayInputs } from "../core/report/index";
import { renderReportText } from "../core/report/text";
import { parseSize } from "../core/units";
import { buildReportPictures, renderReportHtml } from "../report-html/index";
import { attributionHelperFor } from "./attribution-helper";
import type { CliIo, SnapshotDeps } from "./io";
import { readSnapshotFile } from "./read-file";
import { sidecarFor } from "./sidecar";
import { peakscopeVersion, toolInfo } from "./version";

export type ReportIo = CliIo;

export interface ReportDeps extends SnapshotDeps {
  /** `helper`: the file's attribution helper, told of its trace as it is read (read-file.ts). */
  readSnapshot(path: string, helper?: AttributionHelper | null): Promise<SnapshotModel>;
  /** A thread to attribute the file at this path on, where one is worth it (attribution-helper.ts). */
  attributionHelper?(path: string): AttributionHelper | null;
}

const USAGE =
  "usage: peakscope report FILE [--counters SIDECAR] [--compare OTHER [--counters-other SIDECAR]] [--at EVENT [--device N]] [--json] [--html OUT.html] [--device-total SIZE]\n";

interface Args {
  file: string;
  counters: string | null;
  compare: string | null;
  countersOther: string | null;
  json: boolean;
  /** --at EVENT: the state at one trace event instead of the snapshot report. */
  at: number | null;
  device: number | null;
  /** --html OUT: also write the report as one self-contained HTML file. */
  html: string | null;
  /** --device-total SIZE: the device's total memory (for the memory outside the allocator at an OOM). */
  deviceTotal: number | null;
}

class UsageError extends Error {}

/** `args` are the words after `peakscope report`. */
function parseArgs(args: string[]): Args {
  const out: Args = {
    file: "",
    counters: null,
    compare: null,
    countersOther: null,
    json: false,
    at: null,
    device: null,
    html: null,
    deviceTotal: null,
  };
  const files: string[] = [];
  const valued = new Set([
    "--counters",
    "--compare",
    "--counters-other",
    "--at",
    "--device",
    "--html",
    "--device-total",
  ]);
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
    } else if (valued.has(a)) {
      if (value === undefined) {
        value = args[++i];
        if (value === undefined || value.startsWith("--")) {
          throw new UsageError(
            `${a} needs ${a === "--at" ? "an event index" : a === "--device" ? "a device number" : a === "--html" ? "an output file (OUT.html)" : "a file"}`,
          );
        }
      }
      if (a === "--at" || a === "--device") {
        const n = Number(value);
        if (!Number.isInteger(n) || n < 0)
          throw new UsageError(`${a} takes a whole number ≥ 0, not ${value}`);
        if (a === "--at") out.at = n;
        else out.device = n;
      } else if (a === "--device-total") {
        out.deviceTotal = parseSize(value);
        if (out.deviceTotal === null)
          throw new UsageError(`--device-total takes a size (80GiB, 80GB, 85899345920), not "${value}"`);
      } else if (a === "--html") out.html = value;
      else if (a === "--counters") out.counters = value;
      else if (a === "--compare") out.compare = value;
      else out.countersOther = value;
    } else if (a.startsWith("--")) throw new UsageError(`unknown option ${a}`);
    else files.push(a);
  }
  if (files.length !== 1)
    throw new UsageError(files.length === 0 ? "no snapshot file given" : "give one snapshot file");
  if (out.countersOther && !out.compare) throw new UsageError("--counters-other needs --compare");
  if (out.at !== null && out.compare) throw new UsageError("--at and --compare do not go together");
  if (out.at !== null && out.html)
    throw new UsageError("--html writes the whole report; it does not go with --at");
  out.file = files[0];
  return out;
}

export async function reportCommand(
  argv: string[],
  io: ReportIo,
  deps: ReportDeps = {
    readSnapshot: (path, helper) => readSnapshotFile(path, undefined, helper),
    attributionHelper: attributionHelperFor,
  },
): Promise<number> {
  let args: Args;
  try {
    args = parseArgs(argv);
  } catch (e) {
    io.stderr(`peakscope report: ${(e as Error).message}\n${USAGE}`);
    return 1;
  }
  // A thread to attribute a big file while this one replays it, started now so that it is up by the
  // read's end (attribution-helper.ts).
  const helper = args.at === null ? (deps.attributionHelper?.(args.file) ?? null) : null;
  try {
    return await reportOn(args, io, deps, helper);
  } finally {
    helper?.close();
  }
}

async function reportOn(
  args: Args,
  io: ReportIo,
  deps: ReportDeps,
  helper: AttributionHelper | null,
): Promise<number> {
  let model: SnapshotModel;
  let other: SnapshotModel | null = null;
  let counters: CountersSidecar | null;
  let otherCounters: CountersSidecar | null = null;
  try {
    model = await deps.readSnapshot(args.file, helper);
    counters = await sidecarFor(args.file, args.counters);
    if (args.compare) {
      other = await deps.readSnapshot(args.compare);
      otherCounters = await sidecarFor(args.compare, args.countersOther);
    }
  } catch (e) {
    if (e instanceof SnapshotReadError || e instanceof CountersParseError) {
      io.stderr(`peakscope: ${e.message}\n`);
      return 1;
    }
    io.stderr(`peakscope: could not read the input: ${(e as Error).message ?? String(e)}\n`);
    return 1;
  }
  if (args.at !== null) return stateAtCommand(model, args, io);
  const { attribution, replays } = await attributedReplays(model, helper);
  helper?.close();
  const report = buildReport(model, {
    counters,
    other,
    otherCounters,
    attribution,
    replays,
    deviceTotalBytes: args.deviceTotal,
  });
  if (args.html) {
    // The same report, with the replays kept for the timeline picture.
    const html = renderReportHtml(report, buildReportPictures(model, attribution, replays), {
      generatedAt: new Date().toISOString(),
      version: peakscopeVersion(),
    });
    try {
      await writeFile(args.html, html, "utf8");
    } catch (e) {
      io.stderr(`peakscope report: could not write ${args.html}: ${(e as Error).message}\n`);
      return 1;
    }
    const size = Buffer.byteLength(html, "utf8");
    io.stderr(`peakscope report: wrote ${args.html} (${formatMiB(size)}, ${formatBytes(size)})\n`);
  }
  // `tool` first: which program (and version) wrote this JSON, for whoever reads it later.
  io.stdout(args.json ? `${JSON.stringify({ tool: toolInfo(), ...report })}\n` : renderReportText(report));
  const failed = [...report.checks, ...(report.compare?.otherChecks ?? [])].some((c) => c.status === "fail");
  return failed ? 2 : 0;
}

/** `--at EVENT`: totals by category (and fragmentation) at one event of a device's trace. */
function stateAtCommand(model: SnapshotModel, args: Args, io: ReportIo): number {
  const device = args.device ?? model.traces.findIndex((t) => t.length > 0);
  const trace = device >= 0 ? model.traces[device] : undefined;
  if (!trace || trace.length === 0) {
    io.stderr(
      `peakscope report: ${args.file} has no trace${args.device === null ? "" : ` on device ${device}`}: --at needs device_traces.\n`,
    );
    return 1;
  }
  const at = args.at as number;
  if (at >= trace.length) {
    io.stderr(
      `peakscope report: --at ${at} is past the end of device ${device}'s trace (events 0–${trace.length - 1}).\n`,
    );
    return 1;
  }
  const state = stateAtReport(model, replayInputs(attribute(model)), device, at);
  if (args.json) {
    io.stdout(`${JSON.stringify(state)}\n`);
    return 0;
  }
  const lines = [
    `peakscope report: ${args.file}, device ${device}, after event ${at} (${model.actionNames[trace.action[at]]})`,
    `  allocated ${formatMiB(state.allocatedBytes)}, active ${formatMiB(state.activeBytes)}, reserved ${formatMiB(state.reservedBytes)} (rounded block bytes)`,
    ...Object.entries(state.categories).map(
      ([name, n]) => `  ${name.padEnd(16)}${formatMiB(n).padStart(14)}  ${formatBytes(n)}`,
    ),
    `  free in cached segments ${formatMiB(state.fragmentation.freeInCachedSegmentsBytes)}, largest free block ${formatMiB(state.fragmentation.largestFreeBlockBytes)}`,
  ];
  io.stdout(`${lines.join("\n")}\n`);
  return 0;
}
