// `peakscope tree FILE [--at snapshot|peak|EVENT] [--device N] [--by stack|module] [--bottom-up]
//  [--folded | --json | --csv] [--group NAME=REGEX]... [--search TEXT] [--own-code-only] [--hide-library]
//  [--depth N] [--top N] [--range A..B [--measure live-at-end|allocated-in|freed-in]]`
// The call tree of the live allocated memory at one moment, or of a measure over events A..B (both
// included): live-at-end (default; allocated in it, not freed by B), allocated-in, freed-in. Exit 0: printed; 1: bad usage or unreadable input.

import { attribute } from "../core/attribution/index";
import { SnapshotReadError } from "../core/formats/errors";
import type { SnapshotModel } from "../core/model/types";
import { prepareReplay } from "../core/replay/prepare";
import type { Replay } from "../core/replay/types";
import { formatMiB as formatBytes } from "../core/report/format";
import { buildCallTree } from "../core/tree/builder";
import { toCsv, toFolded, toJson } from "../core/tree/export";
import { buildGroupedTree, type GroupBy, parseGroupBy } from "../core/tree/group-by";
import { renderTreeText } from "../core/tree/text";
import type { CallTreeOptions, RangeMeasure, TreeMoment } from "../core/tree/types";
import { exactBytesShort } from "../core/units";
import type { CliIo, SnapshotDeps } from "./io";
import { readSnapshotFile } from "./read-file";

export type TreeIo = CliIo;

export type TreeDeps = SnapshotDeps;

const USAGE =
  "usage: peakscope tree FILE [--at snapshot|peak|EVENT] [--device N] [--by stack|module|forward|metadata[:KEY]]\n" +
  "                          [--bottom-up]\n" +
  "                          [--folded | --json | --csv] [--group NAME=REGEX]... [--search TEXT]\n" +
  "                          [--own-code-only] [--hide-library] [--depth N] [--top N]\n" +
  "                          [--range A..B [--measure live-at-end|allocated-in|freed-in]]\n";

interface Args {
  file: string;
  at: TreeMoment;
  device: number | null;
  by: "stack" | "module";
  /** --by forward | metadata[:KEY]: the tree grouped by forward line or by user_metadata. */
  groupBy: GroupBy | null;
  bottomUp: boolean;
  output: "text" | "json" | "folded" | "csv";
  groups: Record<string, string>;
  search: string | null;
  ownCodeOnly: boolean;
  hideLibrary: boolean;
  depth: number;
  top: number;
  /** --range A..B: events, both included. */
  range: { from: number; to: number } | null;
  measure: RangeMeasure | null;
  atGiven: boolean;
}

const MEASURES: readonly RangeMeasure[] = ["live-at-end", "allocated-in", "freed-in"];

class UsageError extends Error {}

const FLAGS = new Set(["--bottom-up", "--folded", "--json", "--csv", "--own-code-only", "--hide-library"]);
const VALUED = new Set([
  "--at",
  "--device",
  "--by",
  "--group",
  "--search",
  "--depth",
  "--top",
  "--range",
  "--measure",
]);

function wholeNumber(flag: string, value: string, min: number): number {
  const n = Number(value);
  if (value.trim() === "" || !Number.isInteger(n) || n < min) {
    throw new UsageError(`${flag} takes a whole number ≥ ${min}, not ${value}`);
  }
  return n;
}

/** `args` are the words after `peakscope tree`. */
function parseArgs(args: string[]): Args {
  const out: Args = {
    file: "",
    at: "snapshot",
    device: null,
    by: "stack",
    groupBy: null,
    bottomUp: false,
    output: "text",
    groups: {},
    search: null,
    ownCodeOnly: false,
    hideLibrary: false,
    depth: 8,
    top: 6,
    range: null,
    measure: null,
    atGiven: false,
  };
  const files: string[] = [];
  const outputs: string[] = [];
  for (let i = 0; i < args.length; i++) {
    let a = args[i];
    let value: string | undefined;
    const eq = a.indexOf("=");
    if (a.startsWith("--") && eq > 0) {
      value = a.slice(eq + 1);
      a = a.slice(0, eq);
    }
    if (FLAGS.has(a)) {
      if (value !== undefined) throw new UsageError(`${a} takes no value`);
      if (a === "--bottom-up") out.bottomUp = true;
      else if (a === "--own-code-only") out.ownCodeOnly = true;
      else if (a === "--hide-library") out.hideLibrary = true;
      else outputs.push(a);
    } else if (VALUED.has(a)) {
      if (value === undefined) {
        value = args[++i];
        if (value === undefined || value.startsWith("--")) throw new UsageError(`${a} needs a value`);
      }
      if (a === "--range") {
        const m = /^(\d+)\.\.(\d+)$/.exec(value.trim());
        if (!m) throw new UsageError(`--range takes A..B (event numbers), not ${value}`);
        const from = Number(m[1]);
        const to = Number(m[2]);
        if (from > to) throw new UsageError(`--range ${value}: A is after B`);
        out.range = { from, to };
      } else if (a === "--measure") {
        if (!(MEASURES as readonly string[]).includes(value))
          throw new UsageError(`--measure takes ${MEASURES.join(", ")}, not ${value}`);
        out.measure = value as RangeMeasure;
      } else if (a === "--at") {
        out.atGiven = true;
        out.at = value === "snapshot" || value === "peak" ? value : wholeNumber("--at", value, -1);
      } else if (a === "--device") out.device = wholeNumber(a, value, 0);
      else if (a === "--depth") out.depth = wholeNumber(a, value, 1);
      else if (a === "--top") out.top = wholeNumber(a, value, 1);
      else if (a === "--by") {
        const g = parseGroupBy(value);
        if (g) out.groupBy = g;
        else if (value !== "stack" && value !== "module")
          throw new UsageError(`--by takes stack, module, forward or metadata[:KEY], not ${value}`);
        else out.by = value;
      } else if (a === "--search") {
        if (value === "") throw new UsageError("--search needs a text or /regex/");
        out.search = value;
      } else {
        const e = value.indexOf("=");
        if (e <= 0 || e === value.length - 1) throw new UsageError(`--group takes NAME=REGEX, not ${value}`);
        const name = value.slice(0, e);
        if (name in out.groups) throw new UsageError(`--group ${name} given twice`);
        out.groups[name] = value.slice(e + 1);
      }
    } else if (a.startsWith("--")) throw new UsageError(`unknown option ${a}`);
    else files.push(a);
  }
  if (files.length !== 1)
    throw new UsageError(files.length === 0 ? "no snapshot file given" : "give one snapshot file");
  if (outputs.length > 1) throw new UsageError(`${outputs.join(" and ")} do not go together`);
  if (outputs.length === 1) out.output = outputs[0].slice(2) as Args["output"];
  for (const [name, re] of Object.entries(out.groups)) {
    try {
      new RegExp(re);
    } catch (e) {
      throw new UsageError(`--group ${name}: ${(e as Error).message}`);
    }
  }
  if (out.measure && !out.range) throw new UsageError("--measure needs --range A..B");
  if (out.range && out.atGiven) throw new UsageError("--at and --range do not go together");
  if (out.groupBy && (out.range || out.bottomUp || Object.keys(out.groups).length > 0))
    throw new UsageError("--by forward / metadata does not go with --range, --bottom-up or --group");
  out.file = files[0];
  return out;
}

function momentText(args: Args, event: number | null): string {
  if (args.range) {
    const m = args.measure ?? "live-at-end";
    const what =
      m === "live-at-end"
        ? "allocated in it and still live at its end"
        : m === "allocated-in"
          ? "allocated in it, freed or not"
          : "freed in it";
    return `events ${args.range.from}..${args.range.to} (${m}: ${what})`;
  }
  if (args.at === "snapshot") return "at the snapshot";
  if (args.at === "peak")
    return event === null ? "at the peak (no events on this device)" : `at the peak (after event ${event})`;
  return event === -1 ? "before the first event" : `after event ${event}`;
}

export async function runTree(
  argv: string[],
  io: TreeIo,
  deps: TreeDeps = { readSnapshot: readSnapshotFile },
): Promise<number> {
  let args: Args;
  try {
    args = parseArgs(argv);
  } catch (e) {
    io.stderr(`peakscope tree: ${(e as Error).message}\n${USAGE}`);
    return 1;
  }
  let model: SnapshotModel;
  try {
    model = await deps.readSnapshot(args.file);
  } catch (e) {
    if (e instanceof SnapshotReadError) {
      io.stderr(`peakscope: ${e.message}\n`);
      return 1;
    }
    io.stderr(`peakscope: could not read the input: ${(e as Error).message ?? String(e)}\n`);
    return 1;
  }

  const attribution = attribute(model);
  let replay: Replay | null = null;
  let device: number | null = args.device;
  // A device listed in device_traces that holds nothing (no segments, an empty list): an empty tree.
  const emptyListedDevice =
    device !== null &&
    device < model.traces.length &&
    model.traces[device].length === 0 &&
    !hasSegmentsOn(model, device);
  if ((args.at === "snapshot" && !args.range) || emptyListedDevice) {
    if (device !== null && !emptyListedDevice) {
      const found = hasSegmentsOn(model, device);
      if (!found) {
        io.stderr(`peakscope tree: ${args.file} has no segments on device ${device}.\n`);
        return 1;
      }
    }
  } else {
    const d = device ?? model.traces.findIndex((t) => t.length > 0);
    const trace = d >= 0 ? model.traces[d] : undefined;
    if (!trace || trace.length === 0) {
      io.stderr(
        `peakscope tree: ${args.file} has no trace${device === null ? "" : ` on device ${device}`}: ${args.range ? "--range" : `--at ${args.at}`} needs device_traces.\n`,
      );
      return 1;
    }
    if (args.range && args.range.to >= trace.length) {
      io.stderr(
        `peakscope tree: --range ${args.range.from}..${args.range.to} is past the end of device ${d}'s trace (events 0–${trace.length - 1}).\n`,
      );
      return 1;
    }
    if (typeof args.at === "number" && args.at >= trace.length) {
      io.stderr(
        `peakscope tree: --at ${args.at} is past the end of device ${d}'s trace (events 0–${trace.length - 1}, or -1 for its start).\n`,
      );
      return 1;
    }
    device = d;
    replay = prepareReplay(model, d, {
      traceCategory: attribution.traceCategory[d],
      traceSite: attribution.traceSite[d],
      blockCategory: attribution.blockCategory,
      blockSite: attribution.blockSite,
      traceBefore: attribution.traceBefore[d],
      blockWorkspace: attribution.blockWorkspace,
      categoryCount: Math.max(1, attribution.categoryNames.length),
    });
    if (args.at === "peak" && replay.peakEvent === null) {
      io.stderr(`peakscope tree: device ${d}'s trace has no allocation events: no peak.\n`);
      return 1;
    }
  }

  if (args.groupBy && !emptyListedDevice && replay === null) {
    // at the snapshot the groups come from the blocks' alloc entries: replay the device's trace
    const d = device ?? model.traces.findIndex((t) => t.length > 0);
    if (d >= 0 && model.traces[d]?.length > 0) {
      replay = prepareReplay(model, d, {
        traceCategory: attribution.traceCategory[d],
        traceSite: attribution.traceSite[d],
        blockCategory: attribution.blockCategory,
        blockSite: attribution.blockSite,
        traceBefore: attribution.traceBefore[d],
        blockWorkspace: attribution.blockWorkspace,
        categoryCount: Math.max(1, attribution.categoryNames.length),
      });
      device ??= d;
    }
  }
  const opts: CallTreeOptions = {
    orientation: args.bottomUp ? "bottom-up" : "top-down",
    by: args.by,
    ownCodeOnly: args.ownCodeOnly,
    hideLibrary: args.hideLibrary,
    device,
  };
  if (args.search) opts.search = args.search;
  if (Object.keys(args.groups).length > 0) opts.groups = args.groups;
  if (args.range) opts.range = { ...args.range, measure: args.measure ?? "live-at-end" };
  let tree: ReturnType<typeof buildCallTree>;
  try {
    tree = args.groupBy
      ? buildGroupedTree(model, attribution, replay, emptyListedDevice ? "snapshot" : args.at, args.groupBy, {
          device,
          search: args.search ?? undefined,
        })
      : buildCallTree(model, attribution, replay, emptyListedDevice ? "snapshot" : args.at, opts);
  } catch (e) {
    if (e instanceof SyntaxError || e instanceof RangeError) {
      io.stderr(`peakscope tree: ${e.message}\n`);
      return 1;
    }
    throw e;
  }

  if (args.output === "json") {
    io.stdout(`${JSON.stringify(tree.range ? { ...toJson(tree), range: tree.range } : toJson(tree))}\n`);
    return 0;
  }
  if (args.output === "folded") {
    io.stdout(toFolded(tree));
    return 0;
  }
  if (args.output === "csv") {
    io.stdout(toCsv(tree));
    return 0;
  }
  const where = tree.device === null ? "all devices" : `device ${tree.device}`;
  const header = [
    `peakscope tree: ${args.file}, ${where}, ${momentText(args, tree.event)}; ${args.bottomUp ? "bottom-up" : "top-down"} by ${tree.groupBy ?? args.by}`,
    `  ${formatBytes(tree.totalBytes)} allocated (${exactBytesShort(tree.totalBytes)}, rounded block bytes) in ${tree.totalBlocks} blocks; * = your code`,
  ];
  if (emptyListedDevice)
    header.push(`  device ${device} is listed in device_traces but holds no segments and no trace entries`);
  if (tree.hiddenBytes > 0) {
    header.push(`  left out (no frame of your code): ${formatBytes(tree.hiddenBytes)}`);
  }
  if (tree.matchBytes !== null) {
    const share = tree.totalBytes > 0 ? ((tree.matchBytes / tree.totalBytes) * 100).toFixed(1) : "0.0";
    header.push(
      `  search ${JSON.stringify(args.search)}: ${formatBytes(tree.matchBytes)} (${share}%) live under matching frames, ${tree.matchKeys.length} matching nodes`,
    );
  }
  io.stdout(`${header.join("\n")}\n${renderTreeText(tree, { depth: args.depth, top: args.top })}`);
  return 0;
}

function hasSegmentsOn(model: SnapshotModel, device: number): boolean {
  for (let s = 0; s < model.segments.length; s++) if (model.segments.device[s] === device) return true;
  return false;
}
