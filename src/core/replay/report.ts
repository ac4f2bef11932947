// Pure functions the report (helper-2's `peakscope report`) calls: the replay section of the report,
// and the totals at one event (`peakscope report FILE --at EVENT --json`).

import type { CountersSidecar, SnapshotModel } from "../model/types";
import { annotationsByAllocation } from "../tree/group-by";
import { exactBytesShort } from "../units";
import { deviceTotalFor, outsideAllocatorBytes, outsideSentence } from "./outside";
import { compositionAt, type SiteShare } from "./peak";
import { prepareReplay } from "./prepare";
import { fragmentationAt, liveAllocationsAt, oomSummaries, stateAt } from "./state";
import {
  addressOf,
  blockOf,
  type CheckResult,
  type EventIndex,
  type InferredBefore,
  Origin,
  type PrepareOptions,
  type Replay,
  SITE_BEFORE_TRACE,
} from "./types";

/** Attribution as the replay needs it; helper-2's `Attribution` plus the name tables fits. */
export interface ReplayInputs {
  /** Per device: category per trace entry. */
  traceCategory?: (Uint8Array | undefined)[];
  /** Per device: call-site id per trace entry (-1 none). */
  traceSite?: (Int32Array | undefined)[];
  blockCategory?: Uint8Array;
  blockSite?: Int32Array;
  /** Per block: the rule that decided its category (to tell inferred categories). */
  blockRule?: Uint8Array;
  /** Per device: the frees of pre-trace allocations, each with what was inferred of the allocation. */
  traceBefore?: (ReadonlyMap<number, InferredBefore> | undefined)[];
  /** Per block: 1 for torch_npu workspace blocks. */
  blockWorkspace?: Uint8Array;
  /** Per rule id: 1 when the rule infers (no stack says it). */
  ruleInferred?: Uint8Array;
  /** Per device: the rule per trace entry, and per rule id 1 when it infers a trace entry's own category (a profiler trace's spans). */
  traceRule?: (Uint8Array | undefined)[];
  traceRuleInferred?: Uint8Array;
  /** Category names in id order (parameters, gradients, optimizer_state, activations, input, temporary, workspace, other, unknown). */
  categoryNames: string[];
  /** Call-site keys in id order. */
  siteKeys: string[];
  /** Per stack: its call-site id (attribution's stackSite), to name forward stacks' sites. */
  stackSite?: Int32Array;
}

export interface ReplayReportOptions {
  /** Replays already prepared with the same inputs, by device (skips preparing again). */
  replays?: Map<number, Replay>;
  /** How many call sites to list before "(other call sites)". Default 10. */
  topCallSites?: number;
  /** The device's total memory (`--device-total`); else the counters' device_total_bytes. */
  deviceTotalBytes?: number | null;
}

export interface AnnotatedAllocation {
  device: number;
  /** The allocation's alloc event (-1: before the trace). */
  allocEvent: number;
  address: number;
  sizeBytes: number;
  site: string;
  notes: string[];
}

export interface CallSiteBytes {
  site: string;
  category: string;
  bytes: number;
  /** The forward line (innermost own code of forward_frames) that made these backward allocations. */
  forwardSite?: string;
}

export interface PeakReport {
  /** Rounded block bytes, the measure of max_memory_allocated. */
  allocatedBytes: number;
  eventIndex: EventIndex | null;
  timeUs: number | null;
  source: "trace" | "counters";
  device: number;
  /** Allocated bytes per category at the peak; empty when the peak is known from counters only. */
  categories: Record<string, number>;
  /** Largest (call site, category) pairs; with the "(other call sites)" row they sum to allocatedBytes. */
  topCallSites: CallSiteBytes[];
  /** Bytes at the peak held by allocations made before the trace began. */
  beforeTraceBytes: number;
  /** Bytes at the peak per category whose category was inferred (no stack says it); same keys. */
  inferredBytes: Record<string, number>;
  /**
   * Whether this is the run's peak: from the counters, or from a trace that starts with nothing allocated
   * (recording began before any allocation, no ring buffer dropped entries). Otherwise the replayed peak is
   * only the highest in the recorded window: the run's peak may have come before it.
   */
  isRunPeak: boolean;
  /** The peak of the replayed window when the counters' peak is higher (source "counters"). */
  windowPeak: Omit<PeakReport, "windowPeak" | "note"> | null;
  /** max_memory_allocated from the counters sidecar, when given. */
  countersPeakBytes: number | null;
  note: string;
}

export interface ReplayReport {
  peak: PeakReport | null;
  /** peak.allocatedBytes − the snapshot's allocated bytes (Σ segment allocated_size) on the peak's device. */
  snapshotVsPeakGapBytes: number | null;
  timeline: {
    events: number;
    hasTime: boolean;
    markers: { snapshot: number; oom: number; annotations: number };
    devices: {
      device: number;
      events: number;
      hasTime: boolean;
      peakAllocatedBytes: number | null;
      peakEventIndex: EventIndex | null;
      snapshotAllocatedBytes: number;
    }[];
    /** Allocations carrying annotate notes (`_annotate_tensor`), with their notes; absent when none. */
    annotated?: AnnotatedAllocation[];
    /** "asked for X, Y free in cached segments, largest free block Z" per oom entry. */
    oom: {
      device: number;
      eventIndex: EventIndex;
      message: string;
      /** What the device reported free (cudaMemGetInfo), or null when the entry has none. */
      deviceFreeBytes: number | null;
      /** The request that failed (the entry's size: the rounded request). */
      requestBytes: number;
      /** Device total − device free − reserved at the OOM; null when the total is unknown. */
      outsideAllocatorBytes: number | null;
    }[];
    unknownActions: { device: number; action: string; count: number }[];
  };
  traceReplay: CheckResult;
}

export interface StateAtReport {
  device: number;
  eventIndex: EventIndex;
  timeUs: number | null;
  measure: "rounded";
  allocatedBytes: number;
  activeBytes: number;
  reservedBytes: number;
  /** Allocated bytes in requested (unrounded) sizes. */
  requestedBytes: number;
  categories: Record<string, number>;
  /** Bytes per category whose category was inferred (no stack says it). */
  inferredBytes: Record<string, number>;
  topCallSites: CallSiteBytes[];
  liveBlocks: number;
  pendingFreeBlocks: number;
  fragmentation: { freeInCachedSegmentsBytes: number; largestFreeBlockBytes: number };
}

/** Replays of every device whose trace has entries. */
export function prepareReplays(model: SnapshotModel, inputs: ReplayInputs): Map<number, Replay> {
  const out = new Map<number, Replay>();
  for (let d = 0; d < model.traces.length; d++) {
    if (model.traces[d].length === 0) continue;
    out.set(d, replayFor(model, inputs, d));
  }
  return out;
}

/** The replay options for one device from the attribution's inputs: the one place they are listed. */
export function replayOptionsFor(inputs: ReplayInputs, device: number): PrepareOptions {
  return {
    traceCategory: inputs.traceCategory?.[device],
    traceSite: inputs.traceSite?.[device],
    blockCategory: inputs.blockCategory,
    blockSite: inputs.blockSite,
    traceBefore: inputs.traceBefore?.[device],
    blockWorkspace: inputs.blockWorkspace,
    categoryCount: Math.max(1, inputs.categoryNames.length),
  };
}

function replayFor(model: SnapshotModel, inputs: ReplayInputs, device: number): Replay {
  return prepareReplay(model, device, replayOptionsFor(inputs, device));
}

const catName = (inputs: ReplayInputs, c: number) => inputs.categoryNames[c] ?? `category ${c}`;
const siteName = (inputs: ReplayInputs, s: number) =>
  s === -2
    ? "(other call sites)"
    : s === SITE_BEFORE_TRACE
      ? "(allocated before the trace: its stack is not in the trace)"
      : s < 0
        ? "(no call site)"
        : (inputs.siteKeys[s] ?? `site ${s}`);

function categoriesRecord(inputs: ReplayInputs, byCategory: Float64Array): Record<string, number> {
  const out: Record<string, number> = {};
  for (let c = 0; c < byCategory.length; c++) {
    const name = catName(inputs, c);
    out[name] = (out[name] ?? 0) + byCategory[c];
  }
  return out;
}

function sitesList(inputs: ReplayInputs, sites: SiteShare[]): CallSiteBytes[] {
  return sites.map((s) => {
    const row: CallSiteBytes = {
      site: siteName(inputs, s.site),
      category: s.site === -2 ? "(mixed)" : catName(inputs, s.category),
      bytes: s.bytes,
    };
    if (s.forward && inputs.stackSite) row.forwardSite = siteName(inputs, inputs.stackSite[s.forward]);
    return row;
  });
}

function snapshotAllocated(model: SnapshotModel, device: number): number {
  let sum = 0;
  const s = model.segments;
  for (let i = 0; i < s.length; i++) if (s.device[i] === device) sum += s.allocatedSizeBytes[i];
  return sum;
}

/**
 * The replay the file's peak is about: the counters' device (null when that device has no trace), else the
 * device with the highest replayed peak; null when nothing was replayed.
 */
export function peakReplayOf(replays: Map<number, Replay>, counters: CountersSidecar | null): Replay | null {
  const countersDevice = counters?.device ?? null;
  if (countersDevice !== null) return replays.get(countersDevice) ?? null;
  let chosen: Replay | null = null;
  for (const r of [...replays.values()].sort((a, b) => a.device - b.device)) {
    if (r.peakEvent === null) continue;
    if (!chosen || r.peakAllocatedBytes > chosen.peakAllocatedBytes) chosen = r;
  }
  return chosen;
}

/** max_memory_allocated from the counters sidecar (or its memory_stats), null when not given. */
export function countersPeak(counters: CountersSidecar | null): number | null {
  if (!counters) return null;
  if (counters.maxMemoryAllocatedBytes !== null && Number.isFinite(counters.maxMemoryAllocatedBytes)) {
    return counters.maxMemoryAllocatedBytes;
  }
  const v = counters.memoryStats?.["allocated_bytes.all.peak"];
  return typeof v === "number" && Number.isFinite(v) ? v : null;
}

const fmt = exactBytesShort;

/** The trace starts with nothing allocated and frees nothing it did not allocate: it holds the run's peak. */
export function startsEmpty(r: Replay): boolean {
  return r.initial.allocatedBytes === 0 && r.anomalies.freesOfAllocationsBeforeTrace === 0;
}

/** What ruleOf reads for one replay, looked up once. */
interface RuleLookups {
  traceRule: ArrayLike<number> | undefined;
  traceRuleInferred: ArrayLike<number> | undefined;
  ruleInferred: ArrayLike<number> | undefined;
  blockRule: ArrayLike<number> | undefined;
  before: ReadonlyMap<number, InferredBefore> | undefined;
}

function ruleLookups(r: Replay, inputs: ReplayInputs): RuleLookups {
  return {
    traceRule: inputs.traceRule?.[r.device],
    traceRuleInferred: inputs.traceRuleInferred,
    ruleInferred: inputs.ruleInferred,
    blockRule: inputs.blockRule,
    before: inputs.traceBefore?.[r.device],
  };
}

/**
 * The inferred rule (rule id) that named allocation k, or -1 when its category comes from a stack (or is
 * unknown): allocations made before the trace that took a category from sizes and lifetimes — a pre-trace
 * block's inferred rule, or the inferred category of the free that ended it.
 */
function ruleOf(A: Replay["allocations"], k: number, L: RuleLookups): number {
  if (A.origin[k] === Origin.trace) {
    const rule = L.traceRule?.[A.allocEvent[k]] ?? -1;
    return rule >= 0 && L.traceRuleInferred?.[rule] === 1 ? rule : -1;
  }
  if (!L.ruleInferred) return -1;
  const b = blockOf(A, k);
  if (b >= 0) {
    const rule = L.blockRule ? L.blockRule[b] : -1;
    return rule >= 0 && L.ruleInferred[rule] === 1 ? rule : -1;
  }
  if (!L.before) return -1;
  const e = A.origin[k] === Origin.beforeTraceFreed ? A.freeRequestedEvent[k] : A.freeCompletedEvent[k];
  return L.before.get(e)?.rule ?? -1;
}

/** The inferred rule of every allocation of r (ruleOf; the lookups made once: millions of allocations). */
export function inferredRules(r: Replay, inputs: ReplayInputs): Int16Array {
  const A = r.allocations;
  const L = ruleLookups(r, inputs);
  const out = new Int16Array(A.length);
  for (let k = 0; k < out.length; k++) out[k] = ruleOf(A, k, L);
  return out;
}

/** Allocated bytes per category after event i whose category was inferred (see ruleOf). */
export function inferredAt(r: Replay, i: EventIndex, inputs: ReplayInputs): Record<string, number> {
  const out: Record<string, number> = {};
  const A = r.allocations;
  const L = ruleLookups(r, inputs);
  const live = liveAllocationsAt(r, i);
  for (let j = 0; j < live.length; j++) {
    const k = live[j];
    if (A.freeRequestedEvent[k] <= i || ruleOf(A, k, L) < 0) continue;
    const name = catName(inputs, A.category[k]);
    out[name] = (out[name] ?? 0) + A.sizeBytes[k];
  }
  return out;
}

/** Combines per-device trace-replay results into one check. */
export function combineTraceReplayChecks(replays: Iterable<Replay>): CheckResult {
  const results = [...replays].map((r) => r.check).filter((c) => c.status !== "skipped");
  if (results.length === 0) {
    return { id: "trace-replay", status: "skipped", detail: "no device_traces entries to replay" };
  }
  const failed = results.filter((c) => c.status === "fail");
  return {
    id: "trace-replay",
    status: failed.length > 0 ? "fail" : "pass",
    detail: (failed.length > 0 ? failed : results).map((c) => c.detail).join(" | "),
  };
}

export function replayReport(
  model: SnapshotModel,
  inputs: ReplayInputs,
  counters: CountersSidecar | null,
  opts: ReplayReportOptions = {},
): ReplayReport {
  const replays = opts.replays ?? prepareReplays(model, inputs);
  const top = opts.topCallSites ?? 10;
  const list = [...replays.values()].sort((a, b) => a.device - b.device);

  const chosen = peakReplayOf(replays, counters);
  const countersDevice = counters?.device ?? null;
  const cPeak = countersPeak(counters);
  let windowPeak: PeakReport["windowPeak"] = null;
  if (chosen && chosen.peakEvent !== null) {
    const comp = compositionAt(chosen, chosen.peakEvent, top);
    windowPeak = {
      allocatedBytes: chosen.peakAllocatedBytes,
      eventIndex: chosen.peakEvent,
      timeUs: chosen.hasTime ? chosen.x[chosen.peakEvent] : null,
      source: "trace",
      device: chosen.device,
      categories: categoriesRecord(inputs, comp.byCategory),
      topCallSites: sitesList(inputs, comp.sites),
      beforeTraceBytes: comp.beforeTraceBytes,
      inferredBytes: inferredAt(chosen, chosen.peakEvent, inputs),
      isRunPeak: startsEmpty(chosen),
      countersPeakBytes: cPeak,
    };
  }
  let peak: PeakReport | null = null;
  const device = chosen?.device ?? countersDevice ?? list[0]?.device ?? 0;
  if (windowPeak && (cPeak === null || cPeak <= windowPeak.allocatedBytes)) {
    let note = `highest allocated (rounded block bytes) over the ${chosen?.replayedEvents} replayed events of device ${device}`;
    if (cPeak === null && !windowPeak.isRunPeak) {
      note += `; the trace begins with ${fmt(chosen?.initial.allocatedBytes ?? 0)} already allocated (recording started late, or the ring buffer dropped older entries), so the run's peak may have come before it: it is not in this file (a counters sidecar with max_memory_allocated says it; recording from the start with a larger max_entries shows it)`;
    }
    // The counters' peak is the run's: when the window reaches it, the window's peak is the run's peak.
    if (cPeak !== null) windowPeak = { ...windowPeak, isRunPeak: true };
    if (cPeak !== null && cPeak === windowPeak.allocatedBytes) note += "; equals max_memory_allocated";
    else if (cPeak !== null) {
      note += `; exceeds max_memory_allocated (${fmt(cPeak)}) by ${fmt(windowPeak.allocatedBytes - cPeak)}: the counters were reset or taken earlier, or block sizes estimated for allocations freed inside the trace are too high`;
    }
    peak = { ...windowPeak, windowPeak: null, note };
  } else if (cPeak !== null) {
    const note = windowPeak
      ? `the true peak fell outside the recorded trace: max_memory_allocated ${fmt(cPeak)} > ${fmt(windowPeak.allocatedBytes)}, the highest allocated in the replayed window (event ${windowPeak.eventIndex}); its composition is unknown`
      : "no trace to replay: the peak is max_memory_allocated from the counters sidecar; its composition is unknown";
    peak = {
      allocatedBytes: cPeak,
      eventIndex: null,
      timeUs: null,
      source: "counters",
      device,
      categories: {},
      topCallSites: [],
      beforeTraceBytes: 0,
      inferredBytes: {},
      isRunPeak: true,
      windowPeak,
      countersPeakBytes: cPeak,
      note,
    };
  }

  let snapshot = 0;
  let oom = 0;
  let annotations = 0;
  let events = 0;
  let hasTime = list.length > 0;
  const oomList: ReplayReport["timeline"]["oom"] = [];
  const unknownActions: ReplayReport["timeline"]["unknownActions"] = [];
  const annotated: AnnotatedAllocation[] = [];
  for (const r of list) {
    events += r.length;
    hasTime &&= r.hasTime;
    snapshot += r.markers.snapshot.length;
    oom += r.markers.oom.length;
    annotations += r.markers.annotations.length;
    const total = deviceTotalFor(r.device, counters, opts.deviceTotalBytes);
    for (const o of oomSummaries(r))
      oomList.push({
        device: r.device,
        eventIndex: o.eventIndex,
        message: o.message + outsideSentence(total, o.deviceFreeBytes, o.reservedBytes),
        deviceFreeBytes: o.deviceFreeBytes,
        requestBytes: o.requestedBytes,
        outsideAllocatorBytes: outsideAllocatorBytes(total, o.deviceFreeBytes, o.reservedBytes),
      });
    for (const [k, notes] of annotationsByAllocation(model, r)) {
      if (annotated.length >= 500) break;
      const A = r.allocations;
      annotated.push({
        device: r.device,
        allocEvent: A.allocEvent[k],
        address: addressOf(A, k),
        sizeBytes: A.sizeBytes[k],
        site: siteName(inputs, A.site[k]),
        notes,
      });
    }
    for (const u of r.markers.unknownActions)
      unknownActions.push({ device: r.device, action: u.action, count: u.count });
  }
  return {
    peak,
    snapshotVsPeakGapBytes: peak
      ? peak.allocatedBytes -
        (snapshotAllocated(model, peak.device) - (replays.get(peak.device)?.end.workspaceBytes ?? 0))
      : null,
    timeline: {
      events,
      hasTime,
      markers: { snapshot, oom, annotations },
      devices: list.map((r) => ({
        device: r.device,
        events: r.length,
        hasTime: r.hasTime,
        peakAllocatedBytes: r.peakEvent === null ? null : r.peakAllocatedBytes,
        peakEventIndex: r.peakEvent,
        snapshotAllocatedBytes: r.end.snapshotAllocatedBytes,
      })),
      oom: oomList,
      ...(annotated.length > 0 ? { annotated } : {}),
      unknownActions,
    },
    traceReplay: combineTraceReplayChecks(list),
  };
}

/** Totals by category (and the largest call sites) after one event of one device. */
export function stateAtReport(
  model: SnapshotModel,
  inputs: ReplayInputs,
  device: number,
  eventIndex: EventIndex,
  opts: ReplayReportOptions = {},
): StateAtReport {
  const trace = model.traces[device];
  if (!trace || trace.length === 0) {
    throw new RangeError(
      `device ${device} has no trace entries (devices with traces: ${tracedDevices(model)})`,
    );
  }
  const r = opts.replays?.get(device) ?? replayFor(model, inputs, device);
  const state = stateAt(r, eventIndex);
  const comp = compositionAt(r, eventIndex, opts.topCallSites ?? 10);
  const frag = fragmentationAt(r, eventIndex, state);
  let pending = 0;
  for (let j = 0; j < state.pendingFree.length; j++) pending += state.pendingFree[j];
  const totals =
    eventIndex < 0
      ? r.initial
      : {
          allocatedBytes: r.allocated[eventIndex],
          activeBytes: r.active[eventIndex],
          reservedBytes: r.reserved[eventIndex],
          requestedBytes: r.requested[eventIndex],
        };
  return {
    device,
    eventIndex,
    timeUs: r.hasTime && eventIndex >= 0 ? r.x[eventIndex] : null,
    measure: "rounded",
    allocatedBytes: totals.allocatedBytes,
    activeBytes: totals.activeBytes,
    reservedBytes: totals.reservedBytes,
    requestedBytes: totals.requestedBytes,
    categories: categoriesRecord(inputs, comp.byCategory),
    inferredBytes: inferredAt(r, eventIndex, inputs),
    topCallSites: sitesList(inputs, comp.sites),
    liveBlocks: state.allocation.length,
    pendingFreeBlocks: pending,
    fragmentation: {
      freeInCachedSegmentsBytes: frag.freeInCachedSegmentsBytes,
      largestFreeBlockBytes: frag.largestFreeBlockBytes,
    },
  };
}

function tracedDevices(model: SnapshotModel): string {
  const d = model.traces.map((t, i) => (t.length > 0 ? i : -1)).filter((i) => i >= 0);
  return d.length > 0 ? d.join(", ") : "none";
}
