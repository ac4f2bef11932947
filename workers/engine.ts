// The worker's state: the open model and everything derived from it (attribution, per-device replay,
// band ranks). Pure TypeScript with no worker globals, so vitest or Node can drive it directly.

import { type AttributionHelper, startOptions, streamingTo } from "../src/core/attribution/handoff";
import {
  type Attribution,
  attribute,
  UNKNOWN_REASONS,
  withUnknownReasons,
} from "../src/core/attribution/index";
import type { PageLocation } from "../src/core/formats/download-errors";
import { SnapshotReadError } from "../src/core/formats/errors";
import { type ReadProgress, readSnapshot } from "../src/core/formats/read";
import { summarize as coreSummary, type SnapshotSummary } from "../src/core/model/summary";
import {
  BLOCK_STATE_NAMES,
  BlockState,
  type CountersSidecar,
  idAt,
  type SnapshotModel,
} from "../src/core/model/types";
import { MIN_WARM_BYTES } from "../src/core/model/warm-memory";
import { compositionAt } from "../src/core/replay/peak";
import { finishReplay, prepareReplay, type StartedReplay, startReplay } from "../src/core/replay/prepare";
import { inferredRules, type ReplayInputs, replayOptionsFor, startsEmpty } from "../src/core/replay/report";
import { liveAllocationsAt, stateAt } from "../src/core/replay/state";
import { addressOf, blockOf, NEVER, type Replay, requestedOf, stackOf } from "../src/core/replay/types";
import { parseCounters } from "../src/core/report/counters";
import type { ReportJson } from "../src/core/report/index";
import { formatBytes, formatCount } from "../src/core/units";
import type {
  AllocationDetail,
  BandsAnswer,
  BandsQuery,
  BlockDetail,
  DeviceInference,
  FrameText,
  FullStackQuery,
  InferredMark,
  InferredPart,
  Marker,
  OpenResult,
  PanelAnswer,
  ProgressInfo,
  ReplayFacts,
  RuleText,
  SegmentMapAnswer,
  SegmentMapQuery,
  SiteMatch,
  Summary,
  TimelineAnswer,
  TimelineQuery,
} from "./api";
import { startAttributionHelper } from "./attribution-helper";
import { computeBands, stackRanks } from "./bands";
import { warmMemory } from "./memory-warmer";
import { type ParallelSource, parallelBlobSource } from "./parallel-reader";
import { buildPanelReport, buildReplayReport, replayInputs } from "./report-adapter";
import { blockEmptyStackReason, emptyStackReason, fullStack, stackView } from "./stacks";
import { summarize } from "./summary";
import { computeTimeline, timelineYMax } from "./timeline";
import { DownloadFailed, type UrlProgress, type UrlSource, urlByteSource } from "./url-source";

interface DeviceState {
  replay: Replay;
  /** time_us ascending over the trace: the time axis is usable. */
  timeAxis: boolean;
  yMax: number;
  rank: Int32Array | null;
  /** Site ids by the site's key as written in this file, and by its portable (compare) key. */
  siteIds: Map<string, number[]>;
  portableIds: Map<string, number[]>;
  /** Per allocation: the inferred rule that named its category (core inferredRules), -1 when none. */
  inferredRule: Int16Array;
}

/**
 * The first slice of a picked file read (its first bytes tell the format; the first picture comes after
 * it) and the largest. The first is small so that parsing starts sooner (512 KiB, then 2 and 4 MiB: on a
 * 101 MB file 844 → 813 ms to ready against 4 MiB first, A/B, 10 runs each). The largest is 4 MiB: the
 * reader's buffers (those out at once, and the one being parsed) are fresh memory it faults in, 16 MiB
 * ones were 64 MB of faults for any file (1111 → 1011 ms; the same at 1.05 GB). Three are read ahead:
 * once the parser no longer waits for its columns' memory (a cross-origin isolated page), it waited for
 * the reader now and then; with three, 1.05 GB 3572 → 3438 ms (A/B, 11 runs each; 101 MB the same).
 */
const FILE_SLICES = { first: 512 << 10, max: 4 << 20, ahead: 3 };
/** A download's: slices are sent as the body fills them (see url-source.ts' WINDOW_BYTES). */
const DOWNLOAD_SLICES = { first: 4 << 20, max: 16 << 20, ahead: 2 };

/** SegmentMapAnswer.blockFlags bits. */
const FLAG_INFERRED = 1;
const FLAG_WORKSPACE = 2;

/** Files from this size on have their trace columns in shared memory where threads share it (read.ts). */
const ATTRIBUTION_HELPER_MIN_BYTES = 4 * MIN_WARM_BYTES;

export class Engine {
  model: SnapshotModel | null = null;
  summary: Summary | null = null;
  attribution: Attribution | null = null;
  /** The attribution as the replay reads it (core replayInputs), made once per file. */
  private inputs: ReplayInputs | null = null;
  private devices = new Map<number, DeviceState>();
  /** Replays started while a helper attributed (attribution-helper.ts), finished on first use. */
  private started = new Map<number, StartedReplay>();
  private abort: AbortController | null = null;
  private counters: CountersSidecar | null = null;
  private countersFile: string | null = null;
  private report: ReportJson | null = null;

  /** `sliceBytes`: the first and the largest slice read at a time, and how many ahead (the warm-up varies them). */
  open(
    file: Blob,
    name: string,
    onProgress?: (p: ProgressInfo) => void,
    sliceBytes: { first: number; max: number; ahead?: number } = FILE_SLICES,
  ): Promise<OpenResult> {
    return this.openFrom(name, onProgress, sliceBytes, async () => {
      const reader = parallelBlobSource(file, name);
      return { ...reader, sizeBytes: file.size };
    });
  }

  /**
   * Downloads `href` and reads it while it downloads (workers/url-source.ts); the progress says
   * "downloading" until the last byte is in. `page`: the page's origin and protocol, for the messages.
   */
  async openUrl(
    href: string,
    name: string,
    page: PageLocation,
    onProgress?: (p: ProgressInfo) => void,
    whole = false,
  ): Promise<OpenResult> {
    let download: UrlProgress = { receivedBytes: 0, totalBytes: 0, ended: false };
    let told = 0;
    let stream: Extract<UrlSource, { kind: "stream" }> | null = null;
    const result = await this.openFrom(
      name,
      (p) => {
        // while bytes still come, "downloading" (with how many are in); later phases as they are
        const reading = p.phase === "reading" || p.phase === "parsing";
        if (!reading || download.ended) onProgress?.(p);
        else onProgress?.({ ...p, phase: "downloading", bytesDone: download.receivedBytes });
      },
      DOWNLOAD_SLICES,
      async (signal) => {
        const u = await urlByteSource(
          href,
          name,
          page,
          signal,
          (p) => {
            download = p;
            const now = performance.now();
            if (p.ended || now - told < 50) return;
            told = now;
            onProgress?.({ phase: "downloading", bytesDone: p.receivedBytes, bytesTotal: p.totalBytes });
          },
          { slices: DOWNLOAD_SLICES, whole },
        );
        if (u.kind === "blob") {
          const reader = parallelBlobSource(u.blob, name);
          return { ...reader, sizeBytes: u.blob.size };
        }
        stream = u;
        return { source: u.source, parallel: () => true, close: u.stop, sizeBytes: u.source.sizeBytes };
      },
    );
    // A server whose Content-Length was not the body's length (a compressed transfer): read it whole.
    const s = stream as Extract<UrlSource, { kind: "stream" }> | null;
    if (!result.ok && !result.cancelled && !whole && s?.overran()) {
      return this.openUrl(href, name, page, onProgress, true);
    }
    return result;
  }

  /** Reads a snapshot from the source `start` gives, attributes it, and keeps it as the open model. */
  private async openFrom(
    name: string,
    onProgress: ((p: ProgressInfo) => void) | undefined,
    sliceBytes: { first: number; max: number; ahead?: number },
    start: (signal: AbortSignal) => Promise<ParallelSource & { sizeBytes: number }>,
  ): Promise<OpenResult> {
    this.abort?.abort();
    const abort = new AbortController();
    this.abort = abort;
    this.close();
    const t0 = performance.now();
    let lastReport = 0;
    let last: ReadProgress | null = null;
    let reader: ParallelSource | null = null;
    // another thread faults in the trace columns' memory while this one parses (memory-warmer.ts)
    const warm = warmMemory();
    let helper: AttributionHelper | null = null;
    try {
      const opened = await start(abort.signal);
      reader = opened;
      const size = opened.sizeBytes;
      // Where the trace columns will be in shared memory (read.ts: big files, threads sharing memory), a
      // thread to attribute them after the read. Started now: a nested worker starts only while this
      // one's thread is free, as it is between the read's slices, and not in the long passes after it.
      if (warm.prefaultShared !== undefined && size >= ATTRIBUTION_HELPER_MIN_BYTES)
        helper = startAttributionHelper();
      const model = await readSnapshot(opened.source, {
        signal: abort.signal,
        // Slices of `sliceBytes` (the first picture, onPreview, comes after the first), `ahead` of them
        // being read (by the reader worker) while one is parsed.
        chunkBytes: sliceBytes.first,
        maxChunkBytes: sliceBytes.max,
        readAhead: sliceBytes.ahead ?? 2,
        // (the helper pairs the trace as it is read: attribution/streamed-pairing.ts)
        warmMemory: helper ? streamingTo(warm, helper) : warm,
        onProgress: (p) => {
          last = p;
          const now = performance.now();
          // At most 4 progress messages a second, plus every phase change: each one is a message and a
          // redraw of the progress panel on the page, on the CPU the parsing shares (a message cost this
          // thread ≈ 1 ms during a 1.05 GB read: 36 ms for ten a second in its profile).
          if (now - lastReport < 250 && p.phase === "parsing" && p.bytesDone < p.bytesTotal) return;
          lastReport = now;
          onProgress?.({ phase: p.phase, bytesDone: p.bytesDone, bytesTotal: p.bytesTotal });
        },
        // A first picture within a second or so, redrawn as more of the file is read.
        previewEveryMs: 400,
        onPreview: (preview) => {
          if (preview.entries === 0 || !last) return;
          onProgress?.({
            phase: last.phase,
            bytesDone: last.bytesDone,
            bytesTotal: last.bytesTotal,
            preview,
          });
        },
      });
      if (abort.signal.aborted) return { ok: false, cancelled: true, message: "Loading was cancelled." };
      const readMs = performance.now() - t0;
      onProgress?.({ phase: "attributing", bytesDone: size, bytesTotal: size });
      const t1 = performance.now();
      const errors: string[] = [];
      let attributedBy: Summary["attributedBy"] = "here";
      let pairedWhileRead = false;
      let core: SnapshotSummary | undefined;
      this.model = model;
      try {
        const remote = helper?.attribute(model) ?? null;
        if (remote) {
          // the replays' sweeps here meanwhile (once the helper's pass 1 of a trace it paired as it was
          // read is in; failed, they pair it here), their categories once the attribution is in, and
          // the summary's counts (a pass over every entry) while the helper is still at work
          pairedWhileRead = (await helper?.paired()) ?? false;
          if (abort.signal.aborted) return { ok: false, cancelled: true, message: "Loading was cancelled." };
          this.startReplays(model);
          core = coreSummary(model);
          // (null: the helper could not, attributed here as without one)
          const data = await remote.catch(() => null);
          // (another file opened meanwhile has this engine now: touch nothing)
          if (abort.signal.aborted) return { ok: false, cancelled: true, message: "Loading was cancelled." };
          this.attribution = data ? withUnknownReasons(model, data) : attribute(model);
          if (data) attributedBy = "helper";
        } else this.attribution = attribute(model);
        this.inputs = replayInputs(this.attribution);
      } catch (e) {
        errors.push(`Attribution failed: ${e instanceof Error ? e.message : String(e)}`);
      }
      const analyseMs = performance.now() - t1;
      this.summary = summarize(
        model,
        readMs,
        analyseMs,
        errors,
        reader.parallel() ? "parallel" : "direct",
        attributedBy,
        core,
      );
      this.summary.pairedWhileRead = pairedWhileRead;
      this.replayAhead(model);
      return { ok: true, summary: this.summary };
    } catch (e) {
      this.close();
      if (abort.signal.aborted) return { ok: false, cancelled: true, message: "Loading was cancelled." };
      if (e instanceof DownloadFailed) return { ok: false, cancelled: false, message: e.message };
      if (e instanceof SnapshotReadError) {
        return { ok: false, cancelled: e.code === "cancelled", message: e.message };
      }
      const message = e instanceof Error ? e.message : String(e);
      return { ok: false, cancelled: false, message: `${name} could not be read: ${message}` };
    } finally {
      reader?.close();
      helper?.close();
      warm.release();
      if (this.abort === abort) this.abort = null;
    }
  }

  /**
   * The replays the page asks for next (its panel), made right after this answer is posted instead of
   * when the page's request comes: the page draws the summary meanwhile (8–12 ms at 101 MB).
   */
  private replayAhead(model: SnapshotModel): void {
    setTimeout(() => {
      if (this.model !== model) return;
      try {
        this.replays();
      } catch {
        // (the panel's request replays it again, and reports the error)
      }
    }, 0);
  }

  cancel(): void {
    this.abort?.abort();
  }

  close(): void {
    this.model = null;
    this.summary = null;
    this.attribution = null;
    this.inputs = null;
    this.devices.clear();
    this.started.clear();
    this.report = null;
    this.counters = null;
    this.countersFile = null;
  }

  /** The counters sidecar in use (for the comparison, which honours each side's own). */
  get countersSidecar(): CountersSidecar | null {
    return this.counters;
  }

  setCounters(text: string | null, name: string): void {
    if (text === null) {
      this.counters = null;
      this.countersFile = null;
    } else {
      this.counters = parseCounters(text, name);
      this.countersFile = name;
    }
    this.report = null;
  }

  private requireModel(): SnapshotModel {
    if (!this.model) throw new Error("No snapshot is open.");
    return this.model;
  }

  categoryNames(): readonly string[] {
    return this.attribution?.categoryNames ?? ["unknown"];
  }

  /**
   * Starts the replay of every device with trace entries (startReplay: all but its categories). One that
   * fails is left to prepareReplay on first use, which fails the same way where its errors are reported.
   */
  private startReplays(model: SnapshotModel): void {
    const opts = startOptions(model);
    for (let d = 0; d < model.traces.length; d++) {
      if (model.traces[d].length === 0) continue;
      try {
        this.started.set(d, startReplay(model, d, opts));
      } catch {
        // (see above)
      }
    }
  }

  /** The device's replay, prepared on first use. */
  device(device: number): DeviceState {
    let d = this.devices.get(device);
    if (d) return d;
    const model = this.requireModel();
    const attr = this.attribution;
    // The same options as the core's replay (report.ts replayOptionsFor).
    const started = this.started.get(device);
    this.started.delete(device);
    const replay =
      started && this.inputs
        ? finishReplay(started, replayOptionsFor(this.inputs, device))
        : prepareReplay(
            model,
            device,
            this.inputs
              ? replayOptionsFor(this.inputs, device)
              : { categoryCount: this.categoryNames().length },
          );
    const inferredRule = this.inputs
      ? inferredRules(replay, this.inputs)
      : new Int16Array(replay.allocations.length).fill(-1);
    let monotone = replay.hasTime;
    for (let i = 1; monotone && i < replay.length; i++) if (replay.x[i] < replay.x[i - 1]) monotone = false;
    const siteIds = new Map<string, number[]>();
    const portableIds = new Map<string, number[]>();
    const add = (m: Map<string, number[]>, k: string, i: number) => {
      const list = m.get(k);
      if (list) list.push(i);
      else m.set(k, [i]);
    };
    attr?.sites.forEach((s, i) => {
      add(siteIds, s.key, i);
      add(portableIds, s.portableKey, i);
    });
    d = {
      replay,
      timeAxis: monotone,
      yMax: timelineYMax(replay),
      rank: null,
      siteIds,
      portableIds,
      inferredRule,
    };
    this.devices.set(device, d);
    return d;
  }

  /** The replay of every device with trace entries, by device (prepared on first use). */
  replays(): Map<number, Replay> {
    const model = this.requireModel();
    const replays = new Map<number, Replay>();
    for (let t = 0; t < model.traces.length; t++) {
      if (model.traces[t].length > 0) replays.set(t, this.device(t).replay);
    }
    return replays;
  }

  panel(device: number): PanelAnswer {
    const model = this.requireModel();
    const names = this.categoryNames();
    const errors: string[] = [];
    let d: DeviceState | null = null;
    try {
      d = this.device(device);
    } catch (e) {
      errors.push(`The trace of device ${device} could not be replayed: ${message(e)}`);
    }
    let replayReport = null;
    let replays = new Map<number, Replay>();
    try {
      replays = this.replays();
      replayReport = buildReplayReport(model, this.attribution, this.counters, replays);
    } catch (e) {
      errors.push(`The peak could not be computed: ${message(e)}`);
    }
    try {
      // The same object as `peakscope report --json`, its replay section from the replays prepared here.
      this.report ??= buildPanelReport(
        model,
        this.attribution,
        this.counters,
        replayReport ?? undefined,
        replayReport ? replays : undefined,
      );
    } catch (e) {
      errors.push(`The report could not be built: ${message(e)}`);
    }
    let inference: DeviceInference | null = null;
    try {
      inference = this.inference(model, device, d);
    } catch (e) {
      errors.push(`What was inferred could not be summed: ${message(e)}`);
    }
    return {
      device,
      categories: names.map((name, id) => ({ id, name })),
      rules: this.ruleTexts(),
      inference,
      report: this.report,
      replayReport,
      replay: d ? this.replayFacts(model, d) : null,
      countersFile: this.countersFile,
      errors,
    };
  }

  private ruleTexts(): RuleText[] {
    return (this.attribution?.rules ?? []).map((r) => ({
      id: r.id,
      description: r.description,
      inferred: r.inferred,
    }));
  }

  /** What was inferred on one device, the unknown bytes by reason, the workspace (all small). */
  private inference(model: SnapshotModel, device: number, d: DeviceState | null): DeviceInference | null {
    const attr = this.attribution;
    if (!attr) return null;
    const names = attr.categoryNames;
    const unknown = names.indexOf("unknown");
    const blk = model.blocks;
    const seg = model.segments;
    const snapshot = new Parts();
    const unknownBytesByReason: Record<string, number> = Object.fromEntries(
      UNKNOWN_REASONS.map((r) => [r, 0]),
    );
    let workspaceBytes = 0;
    let workspaceBlocks = 0;
    for (let b = 0; b < blk.length; b++) {
      if (blk.state[b] !== BlockState.active_allocated || seg.device[blk.segment[b]] !== device) continue;
      const size = blk.sizeBytes[b];
      if (attr.blockWorkspace[b]) {
        workspaceBytes += size;
        workspaceBlocks++;
      }
      const cat = attr.blockCategory[b];
      const rule = attr.blockRule[b];
      if (cat === unknown) {
        const reason = attr.unknownReasonOfBlock(b);
        unknownBytesByReason[reason] = (unknownBytesByReason[reason] ?? 0) + size;
      } else if (attr.rules[rule]?.inferred) snapshot.add(names[cat], attr.rules[rule].id, size);
    }
    const peak = new Parts();
    const trace = new Parts();
    if (d && d.replay.length > 0) {
      const r = d.replay;
      const A = r.allocations;
      for (let k = 0; k < A.length; k++) {
        const rule = d.inferredRule[k];
        if (rule >= 0) trace.add(names[A.category[k]] ?? "unknown", attr.rules[rule].id, A.sizeBytes[k]);
      }
      if (r.peakEvent !== null) {
        // Live and not pending free at the peak (what allocated counts; core inferredAt does the same).
        const live = liveAllocationsAt(r, r.peakEvent);
        for (let j = 0; j < live.length; j++) {
          const k = live[j];
          const rule = d.inferredRule[k];
          if (rule < 0 || A.freeRequestedEvent[k] <= r.peakEvent) continue;
          peak.add(names[A.category[k]] ?? "unknown", attr.rules[rule].id, A.sizeBytes[k]);
        }
      }
    }
    const inferredBytes: Record<string, number> = {};
    let inferredTotal = 0;
    for (const p of snapshot.list()) {
      inferredBytes[p.category] = (inferredBytes[p.category] ?? 0) + p.bytes;
      inferredTotal += p.bytes;
    }
    return {
      snapshot: snapshot.list(),
      inferredBytes,
      unknownBytesByReason,
      beforeRecordingBytes: inferredTotal + (unknownBytesByReason["before-recording"] ?? 0),
      workspaceBytes,
      workspaceBlocks,
      peak: peak.list(),
      trace: trace.list(),
    };
  }

  /** The inferred rule of a rule index, as a mark; null when the rule reads a stack. */
  private inferredMark(rule: number): InferredMark | null {
    const r = rule >= 0 ? this.attribution?.rules[rule] : undefined;
    return r?.inferred ? { rule: r.id, description: r.description } : null;
  }

  private replayFacts(model: SnapshotModel, d: DeviceState): ReplayFacts | null {
    const r = d.replay;
    if (r.length === 0) return null;
    const n = r.length;
    const peak = r.peakEvent ?? n - 1;
    const peakComp = compositionAt(r, peak);
    const endComp = compositionAt(r, n - 1);
    const x = (i: number) => (d.timeAxis ? r.x[i] : i);
    const markers: Marker[] = [];
    markers.push({ kind: "peak", event: peak, timeUs: x(peak), label: "peak" });
    for (const m of r.markers.oom)
      markers.push({ kind: "oom", event: m.eventIndex, timeUs: x(m.eventIndex), label: "OOM" });
    for (const m of r.markers.snapshot) {
      markers.push({ kind: "snapshot", event: m.eventIndex, timeUs: x(m.eventIndex), label: "_snapshot()" });
    }
    for (const a of r.markers.annotations) {
      if (a.startEvent !== null) {
        markers.push({
          kind: "annotation",
          event: a.startEvent,
          timeUs: a.startUs ?? x(a.startEvent),
          label: a.name,
        });
      }
    }
    for (const a of r.markers.annotate) {
      markers.push({
        kind: "annotation",
        event: a.eventIndex,
        timeUs: x(a.eventIndex),
        label: a.text ?? "annotate",
      });
    }
    // (the replay's maximum over its events, not a pass over its reserved column: that is made on first read)
    const maxReserved = Math.max(r.initial.reservedBytes, r.maxReservedBytes);
    const settings = model.allocatorSettings ?? {};
    const overflowed = settings.trace_alloc_overflowed === true;
    const lostStart = r.anomalies.freesOfAllocationsBeforeTrace;
    const maxEntries = settings.trace_alloc_max_entries;
    let truncationNote: string | null = null;
    if (overflowed) {
      truncationNote = `The trace ring buffer overflowed${typeof maxEntries === "number" ? ` (it keeps the newest ${formatCount(maxEntries)} entries)` : ""}: the start of the run is missing, and what was alive before it is reconstructed from the snapshot.`;
    } else if (lostStart > 0) {
      truncationNote = `The trace starts mid-run: ${formatCount(lostStart)} frees are of allocations made before it (the ring buffer kept only the newest entries, or recording began late). Blocks alive before the trace are reconstructed from the snapshot.`;
    }
    return {
      events: n,
      hasTime: d.timeAxis,
      t0: x(0),
      t1: x(n - 1),
      peakEvent: peak,
      peakTimeUs: x(peak),
      peakBytes: r.peakAllocatedBytes,
      peakByCategory: Array.from(peakComp.byCategory),
      endByCategory: Array.from(endComp.byCategory),
      endBytes: r.allocated[n - 1],
      initialBytes: r.initial.allocatedBytes,
      isRunPeak: startsEmpty(r),
      maxReservedBytes: maxReserved,
      truncated: truncationNote !== null,
      truncationNote,
      measure: "rounded",
      markers,
    };
  }

  timeline(q: TimelineQuery): TimelineAnswer {
    const d = this.device(q.device);
    const axis = q.axis === "time" && d.timeAxis ? "time" : "event";
    return computeTimeline(d.replay, { ...q, axis }, d.yMax);
  }

  bands(q: BandsQuery): BandsAnswer {
    const d = this.device(q.device);
    d.rank ??= stackRanks(d.replay);
    const axis = q.axis === "time" && d.timeAxis ? "time" : "event";
    return computeBands(d.replay, d.rank, { ...q, axis }, d.inferredRule);
  }

  private ruleOf(ruleIndex: number): { rule: string | null; ruleDetail: string | null } {
    const r = this.attribution?.rules[ruleIndex];
    return r ? { rule: r.name, ruleDetail: r.description } : { rule: null, ruleDetail: null };
  }

  private siteLabel(site: number): string | null {
    if (site < 0) return null;
    return this.attribution?.sites[site]?.label ?? null;
  }

  private siteFrame(site: number): FrameText | null {
    const s = site >= 0 ? this.attribution?.sites[site] : undefined;
    return s && s.frameIndex >= 0 ? { filename: s.filename, line: s.line, name: s.name } : null;
  }

  allocation(device: number, k: number): AllocationDetail | null {
    const model = this.requireModel();
    const d = this.device(device);
    const A = d.replay.allocations;
    if (k < 0 || k >= A.length) return null;
    const attr = this.attribution;
    const allocEvent = A.allocEvent[k];
    let rule = this.ruleOf(-1);
    const inferred = d.inferredRule[k];
    if (attr) {
      if (inferred >= 0) rule = this.ruleOf(inferred);
      else if (allocEvent >= 0) rule = this.ruleOf(attr.traceRule[device]?.[allocEvent] ?? -1);
      else if (A.blockPlus1[k] > 0) rule = this.ruleOf(attr.blockRule[blockOf(A, k)]);
      else rule = this.ruleOf(attr.stackRule[stackOf(A, k)]);
    }
    const trace = model.traces[device];
    const free = A.freeCompletedEvent[k];
    const x = (i: number) => (i >= 0 && i < d.replay.length ? d.replay.x[i] : Number.NaN);
    const stack = stackOf(A, k);
    return {
      alloc: k,
      device,
      addr: addressOf(A, k),
      sizeBytes: A.sizeBytes[k],
      category: this.categoryNames()[A.category[k]] ?? "unknown",
      site: this.siteLabel(A.site[k]),
      ...rule,
      allocEvent,
      freeEvent: free === NEVER ? -1 : free,
      allocTimeUs: d.timeAxis ? x(allocEvent) : Number.NaN,
      freeTimeUs: d.timeAxis && free !== NEVER ? x(free) : Number.NaN,
      stream: A.stream[k],
      compileContext:
        trace && allocEvent >= 0 ? (model.strings[idAt(trace.compileContext, allocEvent)] ?? null) : null,
      userMetadata:
        trace && allocEvent >= 0 ? (model.strings[idAt(trace.userMetadata, allocEvent)] ?? null) : null,
      stack: stackView(model, stack, this.siteFrame(A.site[k])),
      emptyStackReason:
        stack === 0
          ? inferred >= 0
            ? blockEmptyStackReason(model, "before-recording")
            : allocEvent < 0
              ? emptyStackReason(model, "reconstructed")
              : emptyStackReason(model, "trace")
          : null,
      inferred: this.inferredMark(inferred),
    };
  }

  siteAllocations(device: number, siteKey: string, by: SiteMatch = "key"): Int32Array {
    const d = this.device(device);
    const sites = sitesOf(d, siteKey, by);
    if (sites.size === 0) return new Int32Array(0);
    const A = d.replay.allocations;
    const out: number[] = [];
    for (let k = 0; k < A.length; k++) if (sites.has(A.site[k])) out.push(k);
    return Int32Array.from(out);
  }

  segmentMap(q: SegmentMapQuery): SegmentMapAnswer {
    const model = this.requireModel();
    const d = this.device(q.device);
    const sites = sitesOf(d, q.highlightSite ?? null, q.highlightBy ?? "key");
    const answer =
      q.event === null || d.replay.length === 0
        ? this.snapshotMap(model, q.device, sites)
        : this.replayMap(
            model,
            d,
            q.device,
            Math.max(-1, Math.min(d.replay.length - 1, Math.floor(q.event))),
            sites,
          );
    answer.stats = mapStats(answer);
    return answer;
  }

  private snapshotMap(model: SnapshotModel, device: number, sites: Set<number>): SegmentMapAnswer {
    const seg = model.segments;
    const blk = model.blocks;
    const ids: number[] = [];
    for (let s = 0; s < seg.length; s++) if (seg.device[s] === device) ids.push(s);
    ids.sort((a, b) => seg.address[a] - seg.address[b]);
    let nb = 0;
    for (const s of ids) nb += seg.blockCount[s];
    const S = ids.length;
    const a = emptyMap(S, nb);
    a.event = null;
    a.fromSnapshot = true;
    const blockCategory = this.attribution?.blockCategory;
    const blockRule = this.attribution?.blockRule;
    const blockWorkspace = this.attribution?.blockWorkspace;
    const rules = this.attribution?.rules;
    let j = 0;
    ids.forEach((s, i) => {
      a.segAddress[i] = seg.address[s];
      a.segSize[i] = seg.totalSizeBytes[s];
      a.segFlags[i] =
        (seg.poolId0[s] !== 0 || seg.poolId1[s] !== 0 ? 1 : 0) |
        (seg.isExpandable[s] ? 2 : 0) |
        (seg.segmentType[s] === 0 ? 4 : 0);
      a.segStream[i] = seg.stream[s];
      a.segFirstBlock[i] = j;
      a.segBlockCount[i] = seg.blockCount[s];
      const first = seg.firstBlock[s];
      for (let b = first; b < first + seg.blockCount[s]; b++, j++) {
        a.blockOffset[j] = blk.address[b] - seg.address[s];
        a.blockSize[j] = blk.sizeBytes[b];
        a.blockRequested[j] = blk.requestedSizeBytes[b];
        a.blockState[j] = blk.state[b];
        a.blockCategory[j] = blockCategory ? blockCategory[b] : 0;
        a.blockRef[j] = b;
        a.blockHighlight[j] =
          sites.size > 0 && this.attribution && sites.has(this.attribution.blockSite[b]) ? 1 : 0;
        a.blockFlags[j] =
          (blk.state[b] !== BlockState.inactive && blockRule && rules?.[blockRule[b]]?.inferred
            ? FLAG_INFERRED
            : 0) | (blockWorkspace?.[b] ? FLAG_WORKSPACE : 0);
      }
    });
    return a;
  }

  private replayMap(
    model: SnapshotModel,
    d: DeviceState,
    device: number,
    ev: number,
    sites: Set<number>,
  ): SegmentMapAnswer {
    const st = stateAt(d.replay, ev);
    const R = st.regions;
    // Count blocks per region, plus the free gaps between them.
    const perRegion: number[][] = Array.from({ length: R.length }, () => []);
    for (let j = 0; j < st.allocation.length; j++) if (st.region[j] >= 0) perRegion[st.region[j]].push(j);
    let nb = 0;
    for (let g = 0; g < R.length; g++) nb += perRegion[g].length * 2 + 1;
    const a = emptyMap(R.length, nb);
    a.event = ev;
    a.fromSnapshot = false;
    // Segment flags from the final segments covering the region (pools and streams do not move).
    const seg = model.segments;
    const segIds: number[] = [];
    for (let s = 0; s < seg.length; s++) if (seg.device[s] === device) segIds.push(s);
    segIds.sort((p, q) => seg.address[p] - seg.address[q]);
    const findSeg = (addr: number) => {
      let lo = 0;
      let hi = segIds.length - 1;
      let found = -1;
      while (lo <= hi) {
        const mid = (lo + hi) >>> 1;
        if (seg.address[segIds[mid]] <= addr) {
          found = segIds[mid];
          lo = mid + 1;
        } else hi = mid - 1;
      }
      return found >= 0 && addr < seg.address[found] + seg.totalSizeBytes[found] ? found : -1;
    };
    let j = 0;
    let orphans = 0;
    for (let g = 0; g < R.length; g++) {
      const start = R.start[g];
      const size = R.end[g] - start;
      a.segAddress[g] = start;
      a.segSize[g] = size;
      const s = findSeg(start);
      a.segFlags[g] =
        (s >= 0 && (seg.poolId0[s] !== 0 || seg.poolId1[s] !== 0) ? 1 : 0) |
        (R.expandable[g] ? 2 : 0) |
        (s >= 0 && seg.segmentType[s] === 0 ? 4 : size <= 2 << 20 && s < 0 ? 4 : 0);
      a.segStream[g] = s >= 0 ? seg.stream[s] : -1;
      a.segFirstBlock[g] = j;
      let pos = 0;
      for (const b of perRegion[g]) {
        const off = st.address[b] - start;
        if (off > pos) j = pushBlock(a, j, pos, off - pos, Number.NaN, 0, -1, -1);
        a.blockHighlight[j] = sites.has(st.site[b]) ? 1 : 0;
        a.blockFlags[j] = d.inferredRule[st.allocation[b]] >= 0 ? FLAG_INFERRED : 0;
        j = pushBlock(
          a,
          j,
          off,
          st.sizeBytes[b],
          st.requestedBytes[b],
          st.pendingFree[b] ? 2 : 1,
          st.category[b],
          st.allocation[b],
        );
        pos = Math.max(pos, off + st.sizeBytes[b]);
      }
      if (pos < size) j = pushBlock(a, j, pos, size - pos, Number.NaN, 0, -1, -1);
      a.segBlockCount[g] = j - a.segFirstBlock[g];
    }
    for (let b = 0; b < st.region.length; b++) if (st.region[b] < 0) orphans++;
    a.blocks = j;
    const notes: string[] = [];
    if (orphans > 0) {
      notes.push(
        `${orphans} live blocks fall outside every reserved segment at this moment (the trace lost their segment's allocation).`,
      );
    }
    const ws = d.replay.end.workspaceBytes;
    if (ws > 0) {
      notes.push(
        `torch_npu workspace (${formatBytes(ws)} at the snapshot) is not drawn at replayed moments: it is not in memory_allocated(), and its timing is not recorded.`,
      );
    }
    a.note = notes.length > 0 ? notes.join(" ") : null;
    return trimMap(a);
  }

  block(q: SegmentMapQuery, ref: number): BlockDetail | null {
    const model = this.requireModel();
    if (ref < 0) return null;
    const names = this.categoryNames();
    const attr = this.attribution;
    if (q.event === null) {
      const blk = model.blocks;
      if (ref >= blk.length) return null;
      const s = blk.segment[ref];
      const stack = blk.stack[ref];
      return {
        address: blk.address[ref],
        sizeBytes: blk.sizeBytes[ref],
        requestedBytes: blk.requestedSizeBytes[ref],
        state: BLOCK_STATE_NAMES[blk.state[ref]] ?? "unknown",
        category: attr ? (names[attr.blockCategory[ref]] ?? "unknown") : "unknown",
        site: attr ? this.siteLabel(attr.blockSite[ref]) : null,
        ...this.ruleOf(attr ? attr.blockRule[ref] : -1),
        segmentAddress: model.segments.address[s],
        segmentSize: model.segments.totalSizeBytes[s],
        stream: model.segments.stream[s],
        stack: stackView(model, stack, attr ? this.siteFrame(attr.blockSite[ref]) : null),
        emptyStackReason:
          stack === 0 && blk.state[ref] !== 0
            ? attr
              ? blockEmptyStackReason(model, attr.unknownReasonOfBlock(ref))
              : emptyStackReason(model, "block")
            : null,
        inferred:
          attr && blk.state[ref] !== BlockState.inactive ? this.inferredMark(attr.blockRule[ref]) : null,
        workspace: attr ? attr.blockWorkspace[ref] === 1 : false,
      };
    }
    const det = this.allocation(q.device, ref);
    if (!det) return null;
    const d = this.device(q.device);
    const A = d.replay.allocations;
    const ev = q.event;
    const pending = A.freeRequestedEvent[ref] !== NEVER && A.freeRequestedEvent[ref] <= ev;
    return {
      address: det.addr,
      sizeBytes: det.sizeBytes,
      requestedBytes: requestedOf(A, ref),
      state: pending ? "active_pending_free" : "active_allocated",
      category: det.category,
      site: det.site,
      rule: det.rule,
      ruleDetail: det.ruleDetail,
      segmentAddress: Number.NaN,
      segmentSize: Number.NaN,
      stream: det.stream,
      stack: det.stack,
      emptyStackReason: det.emptyStackReason,
      inferred: det.inferred,
      workspace: false,
    };
  }

  fullStack(q: FullStackQuery): FrameText[] {
    const model = this.requireModel();
    if (q.kind === "block" && q.event === null) {
      return q.ref >= 0 && q.ref < model.blocks.length ? fullStack(model, model.blocks.stack[q.ref]) : [];
    }
    const A = this.device(q.device).replay.allocations;
    return q.ref >= 0 && q.ref < A.length ? fullStack(model, stackOf(A, q.ref)) : [];
  }
}

/** Bytes and counts by (category, rule), in first-seen order. */
class Parts {
  private rows = new Map<string, InferredPart>();
  add(category: string, rule: string, bytes: number): void {
    const key = `${category}\u0000${rule}`;
    const row = this.rows.get(key);
    if (row) {
      row.bytes += bytes;
      row.count++;
    } else this.rows.set(key, { category, rule, bytes, count: 1 });
  }
  list(): InferredPart[] {
    return [...this.rows.values()];
  }
}

/** Site ids named by a call-site key (as written in the file, or portable). */
function sitesOf(d: DeviceState, key: string | null, by: SiteMatch): Set<number> {
  if (!key) return new Set();
  return new Set((by === "portable" ? d.portableIds : d.siteIds).get(key) ?? []);
}

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

function emptyMap(S: number, B: number): SegmentMapAnswer {
  return {
    event: null,
    segments: S,
    segAddress: new Float64Array(S),
    segSize: new Float64Array(S),
    segFlags: new Uint8Array(S),
    segStream: new Int32Array(S),
    segFirstBlock: new Int32Array(S),
    segBlockCount: new Int32Array(S),
    blocks: B,
    blockOffset: new Float64Array(B),
    blockSize: new Float64Array(B),
    blockRequested: new Float64Array(B),
    blockState: new Uint8Array(B),
    blockCategory: new Int32Array(B),
    blockRef: new Int32Array(B),
    blockHighlight: new Uint8Array(B),
    blockFlags: new Uint8Array(B),
    fromSnapshot: true,
    note: null,
    stats: {
      reservedBytes: 0,
      allocatedBytes: 0,
      pendingFreeBytes: 0,
      freeBytes: 0,
      largestFreeBytes: 0,
      roundingWasteBytes: 0,
      privatePoolSegments: 0,
      expandableSegments: 0,
      inferredBytes: 0,
      workspaceBytes: 0,
    },
  };
}

function mapStats(a: SegmentMapAnswer): SegmentMapAnswer["stats"] {
  const s = { ...a.stats };
  for (let i = 0; i < a.segments; i++) {
    s.reservedBytes += a.segSize[i];
    if (a.segFlags[i] & 1) s.privatePoolSegments++;
    if (a.segFlags[i] & 2) s.expandableSegments++;
  }
  for (let j = 0; j < a.blocks; j++) {
    const size = a.blockSize[j];
    const st = a.blockState[j];
    if (st === 1) {
      s.allocatedBytes += size;
      if (a.blockFlags[j] & FLAG_INFERRED) s.inferredBytes += size;
      if (a.blockFlags[j] & FLAG_WORKSPACE) s.workspaceBytes += size;
      const r = a.blockRequested[j];
      if (Number.isFinite(r) && r < size) s.roundingWasteBytes += size - r;
    } else if (st === 2) s.pendingFreeBytes += size;
    else if (st === 0) {
      s.freeBytes += size;
      if (size > s.largestFreeBytes) s.largestFreeBytes = size;
    }
  }
  return s;
}

function pushBlock(
  a: SegmentMapAnswer,
  j: number,
  offset: number,
  size: number,
  requested: number,
  state: number,
  category: number,
  ref: number,
): number {
  a.blockOffset[j] = offset;
  a.blockSize[j] = size;
  a.blockRequested[j] = requested;
  a.blockState[j] = state;
  a.blockCategory[j] = category;
  a.blockRef[j] = ref;
  return j + 1;
}

function trimMap(a: SegmentMapAnswer): SegmentMapAnswer {
  const B = a.blocks;
  return {
    ...a,
    blockOffset: a.blockOffset.slice(0, B),
    blockSize: a.blockSize.slice(0, B),
    blockRequested: a.blockRequested.slice(0, B),
    blockState: a.blockState.slice(0, B),
    blockCategory: a.blockCategory.slice(0, B),
    blockRef: a.blockRef.slice(0, B),
    blockHighlight: a.blockHighlight.slice(0, B),
    blockFlags: a.blockFlags.slice(0, B),
  };
}
