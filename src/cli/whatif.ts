// `peakscope whatif FILE [--counters SIDECAR] [--device N] [--capacity SIZE] [--devices N] [--remove SPEC]...
//   [--scale SPEC=FACTOR]... [--free-early SPEC]... [--recompute MODULE]... [--suggest] [--json]`
// SPEC = category:NAME | site:FILE:LINE | frame:TEXT (also ids:…, window:A..B, time:A..B, phase:NAME, with & and |).
// Exit 0: answered; 1: unreadable input, bad usage, or a selection the file cannot answer.

import { SnapshotReadError } from "../core/formats/errors";
import type { CountersSidecar, SnapshotModel } from "../core/model/types";
import { CountersParseError } from "../core/report/counters";
import { formatMiB as formatBytes } from "../core/report/format";
import { parseCapacity, parseSize } from "../core/units";
import {
  type Capacity,
  deviceCapacity,
  evaluate,
  type OomNeed,
  oomNeeds,
  parseRecompute,
  parseScale,
  parseSelection,
  type Suggestion,
  suggest,
  type Transform,
  type WhatIfContext,
  WhatIfError,
  type WhatIfResult,
  WhatIfSpecError,
  whatIfContext,
} from "../core/whatif/index";
import type { CliIo, SnapshotDeps } from "./io";
import { readSnapshotFile } from "./read-file";
import { sidecarFor } from "./sidecar";

export type WhatIfIo = CliIo;

export type WhatIfDeps = SnapshotDeps;

const USAGE =
  "usage: peakscope whatif FILE [--counters SIDECAR] [--device N] [--capacity SIZE] [--device-total SIZE] [--devices N] [--remove SPEC]... " +
  "[--scale SPEC=FACTOR]... [--free-early SPEC]... [--recompute MODULE]... [--suggest] [--json]\n" +
  "  SPEC: category:NAME | site:FILE:LINE | frame:TEXT (also ids:1,2 window:FROM..TO time:FROM..TO phase:NAME; " +
  "join with & or |)\n" +
  "  --capacity: what memory_allocated() can reach (80GiB; GB is read as GiB, as GPU memory is quoted)\n" +
  "  --devices: GPUs available (default 1): suggestions that need more (ZeRO over N ranks) rank after the rest\n";

class UsageError extends Error {}

interface Args {
  file: string;
  counters: string | null;
  device: number | null;
  capacity: number | null;
  capacityNote: string | null;
  devices: number;
  deviceTotal: number | null;
  transforms: Transform[];
  suggest: boolean;
  json: boolean;
}

function parseArgs(args: string[]): Args {
  const out: Args = {
    file: "",
    counters: null,
    device: null,
    capacity: null,
    capacityNote: null,
    devices: 1,
    deviceTotal: null,
    transforms: [],
    suggest: false,
    json: false,
  };
  const files: string[] = [];
  const valued = new Set([
    "--counters",
    "--device",
    "--capacity",
    "--devices",
    "--device-total",
    "--remove",
    "--scale",
    "--free-early",
    "--recompute",
  ]);
  for (let i = 0; i < args.length; i++) {
    let a = args[i];
    let value: string | undefined;
    const eq = a.indexOf("=");
    if (a.startsWith("--") && eq > 0) {
      value = a.slice(eq + 1);
      a = a.slice(0, eq);
    }
    if (a === "--json" || a === "--suggest") {
      if (value !== undefined) throw new UsageError(`${a} takes no value`);
      if (a === "--json") out.json = true;
      else out.suggest = true;
    } else if (valued.has(a)) {
      if (value === undefined) {
        value = args[++i];
        if (value === undefined || value.startsWith("--")) throw new UsageError(`${a} needs a value`);
      }
      try {
        if (a === "--counters") out.counters = value;
        else if (a === "--device") {
          const n = Number(value);
          if (!Number.isInteger(n) || n < 0)
            throw new UsageError(`--device takes a whole number ≥ 0, not ${value}`);
          out.device = n;
        } else if (a === "--capacity") {
          const c = parseCapacity(value);
          if (c === null)
            throw new UsageError(`--capacity takes a size (80GiB, 80GB, 85899345920), not "${value}"`);
          out.capacity = c.bytes;
          out.capacityNote = c.note;
        } else if (a === "--devices") {
          const n = Number(value);
          if (!Number.isInteger(n) || n < 1)
            throw new UsageError(`--devices takes a whole number ≥ 1 (GPUs available), not ${value}`);
          out.devices = n;
        } else if (a === "--device-total") {
          out.deviceTotal = parseSize(value);
          if (out.deviceTotal === null)
            throw new UsageError(`--device-total takes a size (80GiB, 80GB, 85899345920), not "${value}"`);
        } else if (a === "--remove") out.transforms.push({ op: "remove", select: parseSelection(value) });
        else if (a === "--scale") out.transforms.push(parseScale(value));
        else if (a === "--free-early")
          out.transforms.push({ op: "free-early", select: parseSelection(value) });
        else out.transforms.push(parseRecompute(value));
      } catch (e) {
        if (e instanceof WhatIfSpecError)
          throw new UsageError(e.message.startsWith(a) ? e.message : `${a}: ${e.message}`);
        throw e;
      }
    } else if (a.startsWith("--")) throw new UsageError(`unknown option ${a}`);
    else files.push(a);
  }
  if (files.length !== 1)
    throw new UsageError(files.length === 0 ? "no snapshot file given" : "give one snapshot file");
  out.file = files[0];
  return out;
}

export interface WhatIfJson {
  file: string;
  device: number;
  events: number;
  peakBytes: number;
  peakEvent: number;
  peakTimeUs: number | null;
  baselinePeakBytes: number;
  baselinePeakEvent: number;
  savedBytes: number;
  categoriesAtPeak: Record<string, number>;
  assumption: string;
  transforms: WhatIfResult["transforms"];
  capacity: Capacity | null;
  /** GPUs available (--devices, default 1): the suggestions that need no more come first. */
  devicesAvailable: number;
  /** The new peak (and, with an OOM, the failed request on top of the new curve there) fits the capacity. */
  fits: boolean | null;
  oom: OomNeed[];
  note: string | null;
  suggestions: {
    action: string;
    peakBytes: number;
    savedBytes: number;
    assumption: string;
    id: string;
    kind: Suggestion["kind"];
    peakEvent: number;
    caveat: string;
    fits: boolean | null;
    /** Devices the change needs (ZeRO over N ranks: N; figures per rank); ≤ devicesAvailable ranks first. */
    devices: number;
    specs: string[];
    categoriesAtPeak: Record<string, number>;
  }[];
}

/** The what-if and (optionally) the suggestions as one JSON object. */
export function whatIfJson(
  ctx: WhatIfContext,
  transforms: Transform[],
  opts: {
    file: string;
    counters: CountersSidecar | null;
    capacityBytes?: number | null;
    /** How --capacity was read (parseCapacity's note). */
    capacityNote?: string | null;
    /** GPUs available (default 1). */
    devices?: number;
    deviceTotalBytes?: number | null;
    suggest: boolean;
  },
): WhatIfJson {
  const r = ctx.replay;
  const oom = oomNeeds(r);
  const firstOom = oom.find((o) => Number.isFinite(o.deviceFreeBytes)) ?? null;
  const capacity = deviceCapacity(
    r,
    opts.counters,
    opts.capacityBytes,
    opts.capacityNote,
    opts.deviceTotalBytes,
  );
  const devicesAvailable = opts.devices ?? 1;
  const res = evaluate(ctx, transforms, { curve: firstOom !== null });
  let fits: boolean | null = null;
  if (capacity) {
    let need = res.peakBytes;
    if (firstOom && res.curve) need = Math.max(need, res.curve[firstOom.eventIndex] + firstOom.requestBytes);
    fits = need <= capacity.bytes;
  }
  const cPeak = opts.counters?.maxMemoryAllocatedBytes ?? null;
  const countersHere = opts.counters?.device === null || opts.counters?.device === r.device;
  const note =
    cPeak !== null && countersHere && cPeak > res.baselinePeakBytes
      ? `max_memory_allocated (${formatBytes(cPeak)}) is above the recorded trace's peak ` +
        `(${formatBytes(res.baselinePeakBytes)}): the run peaked outside the trace, and these figures are for the recorded window only`
      : null;
  const suggestions = opts.suggest ? suggest(ctx, { capacity, devices: devicesAvailable }) : [];
  return {
    file: opts.file,
    device: res.device,
    events: res.events,
    peakBytes: res.peakBytes,
    peakEvent: res.peakEvent,
    peakTimeUs: res.peakTimeUs,
    baselinePeakBytes: res.baselinePeakBytes,
    baselinePeakEvent: res.baselinePeakEvent,
    savedBytes: res.savedBytes,
    categoriesAtPeak: res.categoriesAtPeak,
    assumption: res.assumption,
    transforms: res.transforms,
    capacity,
    devicesAvailable,
    fits,
    oom,
    note,
    suggestions: suggestions.map((s) => ({
      action: s.action,
      peakBytes: s.peakBytes,
      savedBytes: s.savedBytes,
      assumption: s.assumption,
      id: s.id,
      kind: s.kind,
      peakEvent: s.peakEvent,
      caveat: s.caveat,
      fits: s.fits,
      devices: s.devices,
      specs: s.specs,
      categoriesAtPeak: s.categoriesAtPeak,
    })),
  };
}

const at = (event: number, timeUs: number | null) =>
  `event ${event}${timeUs === null ? "" : ` (time_us ${timeUs})`}`;

const fitsText = (fits: boolean | null) => (fits === null ? "" : fits ? "fits" : "does not fit");

/** The JSON as text for people. */
export function renderWhatIfText(j: WhatIfJson): string {
  const lines: string[] = [];
  lines.push(`peakscope whatif: ${j.file}, device ${j.device} (${j.events} events)`);
  lines.push(`  baseline peak  ${formatBytes(j.baselinePeakBytes)} at event ${j.baselinePeakEvent}`);
  if (j.transforms.length > 0) {
    for (const t of j.transforms) {
      const calls = t.calls !== undefined ? `, ${t.checkpointedCalls} of ${t.calls} calls checkpointed` : "";
      lines.push(
        `  change         ${t.spec}  (${t.allocations} allocation${t.allocations === 1 ? "" : "s"}, ${formatBytes(t.bytes)}${calls})`,
      );
    }
    const saved =
      j.savedBytes >= 0 ? `saves ${formatBytes(j.savedBytes)}` : `${formatBytes(-j.savedBytes)} higher`;
    lines.push(`  new peak       ${formatBytes(j.peakBytes)} at ${at(j.peakEvent, j.peakTimeUs)}: ${saved}`);
    lines.push("  at the new peak:");
    for (const [name, bytes] of Object.entries(j.categoriesAtPeak)) {
      if (bytes !== 0) lines.push(`    ${name.padEnd(16)}${formatBytes(bytes).padStart(14)}`);
    }
    lines.push(`  assumption: ${j.assumption}`);
  } else if (j.suggestions.length === 0) {
    lines.push("  (no change asked: give --remove, --scale, --free-early, --recompute or --suggest)");
  }
  if (j.note) lines.push(`  note: ${j.note}`);
  if (j.capacity) {
    const verdict = j.transforms.length > 0 && j.fits !== null ? `; the new peak ${fitsText(j.fits)}` : "";
    lines.push(`  device capacity ${formatBytes(j.capacity.bytes)} (${j.capacity.detail})${verdict}`);
  }
  for (const o of j.oom) {
    if (!Number.isFinite(o.deviceFreeBytes)) continue;
    lines.push(
      `  OOM at event ${o.eventIndex}: asked for ${formatBytes(o.requestBytes)} with ${formatBytes(o.allocatedBytes)} ` +
        `allocated and ${formatBytes(o.deviceFreeBytes)} free: you needed ${formatBytes(o.neededBytes)} more`,
    );
  }
  if (j.suggestions.length > 0) {
    const gpus = (n: number) => `${n} GPU${n === 1 ? "" : "s"}`;
    lines.push(
      "",
      `suggestions for ${gpus(j.devicesAvailable)} (--devices): what works on them first; ` +
        (j.capacity
          ? "what fits, cheapest change first; then by saving at the peak:"
          : "by saving at the peak:"),
    );
    let more = false;
    j.suggestions.forEach((s, i) => {
      const fit = s.fits === null ? "" : `  ${fitsText(s.fits)}`;
      if (!more && s.devices > j.devicesAvailable) {
        more = true;
        lines.push(`  needing more than ${gpus(j.devicesAvailable)}:`);
      }
      const needs = s.devices > 1 ? ` (needs ${gpus(s.devices)}; figures per GPU)` : "";
      lines.push(
        `  ${String(i + 1).padStart(2)}. ${s.action}${needs}`,
        `      peak ${formatBytes(s.peakBytes)} (saves ${formatBytes(s.savedBytes)})${fit}`,
        `      assumption: ${s.assumption}`,
        `      caveat: ${s.caveat}`,
        `      try: peakscope whatif ${j.file} ${s.specs.map(quote).join(" ")}`,
      );
    });
  }
  return `${lines.join("\n")}\n`;
}

function quote(spec: string): string {
  const sp = spec.indexOf(" ");
  const opt = spec.slice(0, sp);
  const val = spec.slice(sp + 1);
  return /^[\w./:=,@+-]+$/.test(val) ? spec : `${opt} '${val.replaceAll("'", "'\\''")}'`;
}

/** `args` are the words after `peakscope whatif`. */
export async function runWhatIf(
  argv: string[],
  io: WhatIfIo,
  deps: WhatIfDeps = { readSnapshot: readSnapshotFile },
): Promise<number> {
  let args: Args;
  try {
    args = parseArgs(argv);
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    io.stderr(`peakscope whatif: ${e.message}\n${USAGE}`);
    return 1;
  }
  let model: SnapshotModel;
  let counters: CountersSidecar | null;
  try {
    model = await deps.readSnapshot(args.file);
    counters = await sidecarFor(args.file, args.counters);
  } catch (e) {
    if (e instanceof SnapshotReadError || e instanceof CountersParseError) {
      io.stderr(`peakscope: ${e.message}\n`);
      return 1;
    }
    io.stderr(`peakscope: could not read the input: ${(e as Error).message ?? String(e)}\n`);
    return 1;
  }
  let j: WhatIfJson;
  try {
    const ctx = whatIfContext(model, { device: args.device, counters });
    j = whatIfJson(ctx, args.transforms, {
      file: args.file,
      counters,
      capacityBytes: args.capacity,
      capacityNote: args.capacityNote,
      devices: args.devices,
      deviceTotalBytes: args.deviceTotal,
      suggest: args.suggest,
    });
  } catch (e) {
    if (e instanceof WhatIfError) {
      io.stderr(`peakscope whatif: ${args.file}: ${e.message}\n`);
      return 1;
    }
    throw e;
  }
  io.stdout(args.json ? `${JSON.stringify(j)}\n` : renderWhatIfText(j));
  return 0;
}
