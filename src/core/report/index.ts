// buildReport: the one JSON object the CLI prints with --json and the worker hands to the UI — totals from
// the segment fields, categories, the five checks, the top call sites, and optionally a comparison.

import { type Attribution, attribute, UNKNOWN_REASONS, withUnknownReasons } from "../attribution";
import { type AttributionHelper, startOptions } from "../attribution/handoff";
import { CATEGORY_NAMES } from "../attribution/rules";
import { type CheckResult, type PeakInfo, runChecks } from "../checks";
import { type Comparison, compareSnapshots, type SiteDelta, type UnknownMatch } from "../compare";
import { comparePeaks, type PeakMoment, peakSide } from "../compare/peaks";
import { type HostJson, hostSummary } from "../host";
import { shapeNotes } from "../model/shape-notes";
import { BlockState, type CountersSidecar, type SnapshotModel } from "../model/types";
import { finishReplay, type StartedReplay, startReplay } from "../replay/prepare";
import {
  type PeakReport,
  prepareReplays,
  type ReplayInputs,
  type ReplayReport,
  replayOptionsFor,
  replayReport,
} from "../replay/report";
import type { Replay } from "../replay/types";
import { formatBytes } from "./format";
import { checksForSource, deviceOf, type SourceJson, sourceJson } from "./source";
import { type SummaryWords, summaryWords } from "./summary-words";
import { categoryRecord, computeTotals, type DeviceTotals } from "./totals";

export interface TotalsJson {
  reservedBytes: number;
  activeBytes: number;
  allocatedBytes: number;
  requestedBytes: number | null;
}

export interface DeviceJson extends TotalsJson {
  device: number;
  categories: Record<string, number>;
  /** allocatedBytes − Σ categories (0 when the active_allocated blocks add up to Σ allocated_size). */
  reconciliationBytes: number;
  /** active_pending_free blocks: active, not allocated, in no category. */
  pendingFreeBytes: number;
}

export interface CheckJson {
  id: string;
  status: CheckResult["status"];
  /** What a fail means: `info` (snapshot-vs-peak: the dump is not the peak) or `error` (a real failure). */
  severity: CheckResult["severity"];
  detail: string;
  title: string;
  actualBytes: number | null;
  expectedBytes: number | null;
  numbers: Record<string, number | null>;
  failingSegments?: CheckResult["failingSegments"];
}

export interface CallSiteJson {
  /** `path:line:function` as written in the file. */
  site: string;
  category: string;
  bytes: number;
  blocks: number;
  label: string;
  /** Category rule that fired, and how the site was chosen. */
  rule: string;
  via: string;
  /** The category was inferred from sizes and lifetimes (no stack says it); `rule` says how. */
  inferred?: boolean;
  /** For an own-code line: the library function it called (`path:line function`). */
  library?: string;
  /** …and the innermost meaningful library frame under it (e.g. vLLM's `_allocate_kv_cache`). */
  libraryInnermost?: string;
  /** Backward allocations: the forward line (innermost own code of forward_frames) that caused them. */
  forwardSite?: string;
}

/** other − this over a set of live blocks: the snapshots' (CompareJson itself) or the peaks' (atPeaks). */
export interface ComparisonJson {
  /** other − this, per category. */
  categories: Record<string, number>;
  /** Unknown blocks counted as the other file's parameters (compare MATCH_RULE), per side and size. */
  matched: UnknownMatch[];
  matchedBytes: { base: number; other: number };
  matchRule: string;
  callSites: { site: string; deltaBytes: number; label: string; category: string }[];
  verdict: string;
  totalDeltaBytes: number;
}

/** The two files compared at their peaks, and the moment of each (its peak's device, event and bytes). */
export interface PeaksCompareJson extends ComparisonJson {
  basePeak: PeakMoment;
  otherPeak: PeakMoment;
}

/** The snapshots compared (the live blocks of each, every device), and the same at the peaks. */
export interface CompareJson extends ComparisonJson {
  otherFile: string;
  otherTotals: TotalsJson;
  otherChecks: CheckJson[];
  /**
   * The same comparison at each file's peak (the allocations alive at its peak's event, on the device the
   * report's peak is about); null when either file has no trace to replay.
   */
  atPeaks: PeaksCompareJson | null;
}

export interface ReportJson {
  totals: TotalsJson;
  devices: DeviceJson[];
  categories: Record<string, number>;
  /** Bytes at the snapshot per category whose category was inferred because no stack says it. */
  inferredBytes: Record<string, number>;
  /** The unknown bytes at the snapshot by why nothing can be said; sums to categories.unknown. */
  unknownBytesByReason: Record<string, number>;
  /** torch_npu workspace blocks at the snapshot (categories.workspace; not in memory_allocated()). */
  workspaceBytes: number;
  checks: CheckJson[];
  topCallSites: CallSiteJson[];
  compare: CompareJson | null;
  file: string;
  /** What kind of file it was (snapshot, profiler-trace, memory-timeline, memoryviz-html) and what it lacks. */
  source: SourceJson;
  /** Σ categories + reconciliationBytes = totals.allocatedBytes, exactly. */
  reconciliationBytes: number;
  pendingFreeBytes: number;
  /** The peak and what it held, from the replayed trace (or max_memory_allocated: source "counters"). */
  peak: PeakReport | null;
  /** peak.allocatedBytes − the snapshot's allocated bytes on the peak's device. */
  snapshotVsPeakGapBytes: number | null;
  /**
   * The Summary pane's facts (summary-words.ts): the peak with its phase and "peak ≥ X (recorded window)"
   * text, the own-code lines at the peak, the OOM entries (request, largest free block) or that there are
   * none. Null when the replays were not available (a replay section passed without `replays`).
   */
  summary: SummaryWords | null;
  timeline: Omit<ReplayReport["timeline"], "devices"> & {
    devices: (ReplayReport["timeline"]["devices"][number] & { deviceType: string })[];
  };
  counters: { device: number | null; tag: string | null } | null;
  /** Why some blocks have no stack (most likely first), when some do. */
  noStackReasons: string[];
  notes: string[];
  /** Pinned host memory (its own lane, not in any device's totals); null when the file has none. */
  host: HostJson | null;
}

export interface ReportOptions {
  counters?: CountersSidecar | null;
  other?: SnapshotModel | null;
  otherCounters?: CountersSidecar | null;
  /** A peak from elsewhere (replay); the sidecar's max_memory_allocated wins when both exist. */
  peak?: PeakInfo | null;
  /** The same as `peak`, as two fields (bytes, and where the number came from). */
  peakAllocatedBytes?: number | null;
  peakSource?: string;
  /** The replay section, already computed (the worker passes its own); false leaves the trace out. */
  replay?: ReplayReport | false;
  /** The replays `replay` was computed from (for `summary`); made here when `replay` is not given. */
  replays?: Map<number, Replay>;
  /** The replays of `other`, by device (the comparison at the peaks); made here when not given. */
  otherReplays?: Map<number, Replay>;
  /** Reuse an attribution already computed for `model` / `other`. */
  attribution?: Attribution;
  otherAttribution?: Attribution;
  topSites?: number;
  /** The device's total memory (`--device-total`), for the memory outside the allocator at an OOM. */
  deviceTotalBytes?: number | null;
}

const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);

function totalsJson(t: DeviceTotals): TotalsJson {
  return {
    reservedBytes: t.reservedBytes,
    activeBytes: t.activeBytes,
    allocatedBytes: t.allocatedBytes,
    requestedBytes: t.requestedBytes,
  };
}

function checkJson(c: CheckResult): CheckJson {
  return {
    id: c.id,
    status: c.status,
    severity: c.severity,
    detail: c.detail,
    title: c.title,
    actualBytes: c.actualBytes,
    expectedBytes: c.expectedBytes,
    numbers: c.numbers,
    ...(c.failingSegments ? { failingSegments: c.failingSegments } : {}),
  };
}

/** Top call sites over active_allocated blocks, by (site, category). */
export function topCallSites(model: SnapshotModel, a: Attribution, limit = 20): CallSiteJson[] {
  interface Row extends CallSiteJson {
    /** Bytes per library pair under this site, to name the largest. */
    libs: Map<string, number>;
  }
  const rows = new Map<string, Row>();
  const libName = (site: number) => (site >= 0 ? libraryLabel(a.sites[site]) : "");
  for (let b = 0; b < model.blocks.length; b++) {
    if (model.blocks.state[b] !== BlockState.active_allocated) continue;
    const site = a.sites[a.blockSite[b]];
    const cat = a.blockCategory[b];
    const rule = a.blockRule[b];
    // Sites that differ only in stack depth fold into one row; an inferred row stays apart from a stack's.
    const inferred = a.rules[rule].inferred;
    const fs = model.blocks.forwardStack?.[b] ?? 0;
    const forwardSite = fs ? a.sites[a.stackSite[fs]].key : "";
    const k = `${site.key}\u0000${cat}\u0000${inferred ? 1 : 0}\u0000${forwardSite}`;
    let r = rows.get(k);
    if (!r) {
      r = {
        site: site.key,
        category: CATEGORY_NAMES[cat],
        bytes: 0,
        blocks: 0,
        label: site.label,
        rule: a.rules[rule].id,
        via: site.via,
        libs: new Map(),
      };
      if (inferred) r.inferred = true;
      if (forwardSite) r.forwardSite = forwardSite;
      rows.set(k, r);
    }
    const size = model.blocks.sizeBytes[b];
    r.bytes += size;
    r.blocks++;
    const s = model.blocks.stack[b];
    if (a.stackLibrary[s] >= 0 && site.via === "own-code") {
      const lk = `${a.stackLibrary[s]}\u0000${a.stackLibraryInnermost[s]}`;
      r.libs.set(lk, (r.libs.get(lk) ?? 0) + size);
    }
  }
  return [...rows.values()]
    .sort((x, y) => y.bytes - x.bytes || x.site.localeCompare(y.site))
    .slice(0, limit)
    .map(({ libs, ...r }) => {
      let best = "";
      let bestBytes = -1;
      for (const [k, v] of libs) if (v > bestBytes) [best, bestBytes] = [k, v];
      if (best) {
        const [lib, inner] = best.split("\u0000").map(Number);
        r.library = libName(lib);
        if (inner >= 0) r.libraryInnermost = libName(inner);
      }
      return r;
    });
}

/** A library frame as people read it: the package path from the package root, line and function. */
function libraryLabel(site: Attribution["sites"][number]): string {
  const file = site.portableKey.slice(0, site.portableKey.lastIndexOf(`:${site.line}:`));
  return `${file}:${site.line} ${site.name}`;
}

/** Bytes at the snapshot per category inferred (no stack says it), and the unknown bytes by reason. */
export function inferenceTotals(model: SnapshotModel, a: Attribution) {
  const inferredBytes: Record<string, number> = {};
  const unknownBytesByReason: Record<string, number> = Object.fromEntries(UNKNOWN_REASONS.map((r) => [r, 0]));
  let workspaceBytes = 0;
  const workspaceByDevice = new Map<number, number>();
  const unknown = CATEGORY_NAMES.indexOf("unknown");
  for (let b = 0; b < model.blocks.length; b++) {
    if (model.blocks.state[b] !== BlockState.active_allocated) continue;
    const size = model.blocks.sizeBytes[b];
    const cat = a.blockCategory[b];
    if (a.blockWorkspace[b]) {
      workspaceBytes += size;
      const dev = model.segments.device[model.blocks.segment[b]];
      workspaceByDevice.set(dev, (workspaceByDevice.get(dev) ?? 0) + size);
    }
    if (cat === unknown) unknownBytesByReason[a.unknownReasonOfBlock(b)] += size;
    else if (a.rules[a.blockRule[b]].inferred) {
      const name = CATEGORY_NAMES[cat];
      inferredBytes[name] = (inferredBytes[name] ?? 0) + size;
    }
  }
  return { inferredBytes, unknownBytesByReason, workspaceBytes, workspaceByDevice };
}

function notesFor(
  model: SnapshotModel,
  counters: CountersSidecar | null | undefined,
  overall: DeviceTotals,
): string[] {
  const notes = [...model.source.notes, ...shapeNotes(model)];
  const stats = counters?.memoryStats;
  if (stats) {
    const retries = stats.num_alloc_retries ?? 0;
    if (retries > 0) {
      notes.push(
        `num_alloc_retries = ${retries}: cudaMalloc failed and the allocator flushed its cache to retry — a performance problem worth fixing.`,
      );
    }
    const ooms = stats.num_ooms ?? 0;
    if (ooms > 0) notes.push(`num_ooms = ${ooms}: the process hit out-of-memory ${ooms} time(s).`);
  }
  const pending = sum(overall.pendingFreeCategoryBytes);
  if (pending > 0) {
    notes.push(
      `${formatBytes(pending)} in active_pending_free blocks: freed by the program but still held for another stream (record_stream); counted in active, not in allocated or in any category.`,
    );
  }
  if (overall.reconciliationBytes !== 0) {
    notes.push(
      `the active_allocated blocks add up to ${formatBytes(overall.blockAllocatedBytes)}, not Σ allocated_size ${formatBytes(overall.allocatedBytes)}: the difference (${formatBytes(overall.reconciliationBytes)}) is reported as reconciliation, in no category.`,
    );
  }
  return notes;
}

/**
 * The attribution and every device's replay. Where `helper` takes the model (attribution/handoff.ts), it
 * attributes on its thread while the replays' sweeps are made on this one; else both are made here.
 */
export async function attributedReplays(
  model: SnapshotModel,
  helper: AttributionHelper | null,
): Promise<{ attribution: Attribution; replays: Map<number, Replay>; attributedBy: "helper" | "here" }> {
  const remote = helper?.attribute(model) ?? null;
  if (!remote) {
    const attribution = attribute(model);
    return { attribution, replays: prepareReplays(model, replayInputs(attribution)), attributedBy: "here" };
  }
  // (a trace the helper paired as it was read: its pass 1 first; failed, the replay pairs it here)
  await helper?.paired();
  const opts = startOptions(model);
  const started = new Map<number, StartedReplay>();
  for (let d = 0; d < model.traces.length; d++)
    if (model.traces[d].length > 0) started.set(d, startReplay(model, d, opts));
  // (null: the helper could not; attributed here as without one)
  const data = await remote.catch(() => null);
  const attribution = data ? withUnknownReasons(model, data) : attribute(model);
  const inputs = replayInputs(attribution);
  const replays = new Map<number, Replay>();
  for (const [d, s] of started) replays.set(d, finishReplay(s, replayOptionsFor(inputs, d)));
  return { attribution, replays, attributedBy: data ? "helper" : "here" };
}

/** What the replay needs from the attribution. */
export function replayInputs(a: Attribution): ReplayInputs {
  return {
    traceCategory: a.traceCategory,
    traceSite: a.traceSite,
    blockCategory: a.blockCategory,
    blockSite: a.blockSite,
    blockRule: a.blockRule,
    traceBefore: a.traceBefore,
    blockWorkspace: a.blockWorkspace,
    ruleInferred: Uint8Array.from(a.rules, (r) => (r.inferred ? 1 : 0)),
    traceRule: a.traceRule,
    traceRuleInferred: Uint8Array.from(a.rules, (r) => (r.id === "profiler-span" ? 1 : 0)),
    categoryNames: [...a.categoryNames],
    siteKeys: a.sites.map((s) => s.key),
    stackSite: a.stackSite,
  };
}

function traceReplayCheck(c: ReplayReport["traceReplay"]): CheckResult {
  return {
    id: "trace-replay",
    severity: "error",
    title: "Replaying the trace ends in the snapshot's state",
    status: c.status,
    detail: c.detail,
    actualBytes: null,
    expectedBytes: null,
    numbers: {},
  };
}

function emptyTimeline(): ReplayReport["timeline"] {
  return {
    events: 0,
    hasTime: false,
    markers: { snapshot: 0, oom: 0, annotations: 0 },
    devices: [],
    oom: [],
    unknownActions: [],
  };
}

/** timeline.devices[] with each device as the file names it (deviceType; CPU's id −1). */
function timelineWithDevices(model: SnapshotModel, t: ReplayReport["timeline"]): ReportJson["timeline"] {
  return { ...t, devices: t.devices.map((d) => ({ ...d, ...deviceOf(model, d.device) })) };
}

function comparisonJson(c: Comparison): ComparisonJson {
  return {
    categories: c.categories,
    matched: c.matched,
    matchedBytes: c.matchedBytes,
    matchRule: c.matchRule,
    callSites: c.callSites.map((s: SiteDelta) => ({
      site: s.site,
      deltaBytes: s.deltaBytes,
      label: s.label,
      category: s.category,
    })),
    verdict: c.verdict,
    totalDeltaBytes: c.totalDeltaBytes,
  };
}

/** Builds the report object (pure: no I/O). */
export function buildReport(model: SnapshotModel, opts: ReportOptions = {}): ReportJson {
  const a = opts.attribution ?? attribute(model);
  const counters = opts.counters ?? null;
  if (!opts.peak && opts.peakAllocatedBytes !== undefined && opts.peakAllocatedBytes !== null) {
    opts = {
      ...opts,
      peak: { bytes: opts.peakAllocatedBytes, source: opts.peakSource ?? "replayed device_traces" },
    };
  }
  const totals = computeTotals(model, a);
  let replays = opts.replays ?? null;
  if (opts.replay === undefined && !replays) replays = prepareReplays(model, replayInputs(a));
  const replay =
    opts.replay === false
      ? null
      : (opts.replay ??
        replayReport(model, replayInputs(a), counters, {
          ...(replays ? { replays } : {}),
          deviceTotalBytes: opts.deviceTotalBytes,
        }));
  const summary = replay && replays ? summaryWords(model, a, replays, replay.peak) : null;
  // snapshot-vs-peak: the sidecar's max_memory_allocated when there is one (runChecks prefers it),
  // else the peak of the replayed trace.
  const replayPeak: PeakInfo | null =
    replay?.peak && replay.peak.source === "trace"
      ? {
          bytes: replay.peak.allocatedBytes,
          source: `the replayed trace's peak (event ${replay.peak.eventIndex})`,
          device: replay.peak.device,
          isRunPeak: replay.peak.isRunPeak,
        }
      : null;
  const inference = inferenceTotals(model, a);
  const checks = runChecks(model, {
    counters,
    peak: opts.peak ?? replayPeak,
    workspaceBytes: inference.workspaceByDevice,
  });
  if (replay) checks.push(traceReplayCheck(replay.traceReplay));
  const o = totals.overall;

  let compare: CompareJson | null = null;
  if (opts.other) {
    const oa = opts.otherAttribution ?? attribute(opts.other);
    const c = compareSnapshots({ model, attribution: a }, { model: opts.other, attribution: oa });
    const ot = computeTotals(opts.other, oa);
    const baseReplays = replays ?? prepareReplays(model, replayInputs(a));
    const otherReplays = opts.otherReplays ?? prepareReplays(opts.other, replayInputs(oa));
    const pa = peakSide(baseReplays, a, counters);
    const pb = peakSide(otherReplays, oa, opts.otherCounters ?? null);
    const p = pa && pb ? comparePeaks(pa, pb) : null;
    compare = {
      ...comparisonJson(c),
      otherFile: opts.other.source.fileName,
      otherTotals: totalsJson(ot.overall),
      otherChecks: runChecks(opts.other, { counters: opts.otherCounters ?? null }).map(checkJson),
      atPeaks: p ? { ...comparisonJson(p), basePeak: p.basePeak, otherPeak: p.otherPeak } : null,
    };
  }

  const noStackBytes = o.categoryBytes[CATEGORY_NAMES.indexOf("unknown")];
  return {
    totals: totalsJson(o),
    devices: totals.devices.map((d) => ({
      device: d.device,
      ...totalsJson(d),
      categories: categoryRecord(d.categoryBytes),
      reconciliationBytes: d.reconciliationBytes,
      pendingFreeBytes: sum(d.pendingFreeCategoryBytes),
    })),
    categories: categoryRecord(o.categoryBytes),
    inferredBytes: inference.inferredBytes,
    unknownBytesByReason: inference.unknownBytesByReason,
    workspaceBytes: inference.workspaceBytes,
    checks: checksForSource(model, checks.map(checkJson)),
    topCallSites: topCallSites(model, a, opts.topSites ?? 20),
    compare,
    file: model.source.fileName,
    source: sourceJson(model),
    reconciliationBytes: o.reconciliationBytes,
    pendingFreeBytes: sum(o.pendingFreeCategoryBytes),
    peak: replay?.peak ?? null,
    snapshotVsPeakGapBytes: replay?.snapshotVsPeakGapBytes ?? null,
    summary,
    timeline: timelineWithDevices(model, replay?.timeline ?? emptyTimeline()),
    counters: counters ? { device: counters.device, tag: counters.tag } : null,
    noStackReasons: noStackBytes > 0 ? a.noStackReasons : [],
    notes: notesFor(model, counters, o),
    host: hostSummary(model, a),
  };
}

export { type CheckResult, type PeakInfo, runChecks } from "../checks";
export { parseCounters } from "./counters";
