// The worker entry: two engines (side 0 = A, the base; side 1 = B, the other file of a comparison), each
// exposed as a PeakscopeApi behind its own comlink proxy, and the comparison between them. All reading,
// parsing, attribution and replay happen here; answers to the page are small, typed arrays are
// transferred. The page ends this worker whenever it opens a file on its own (a fresh worker serves it),
// so the memory of a replaced file is released with the worker; it asks `shutdown()` first, which ends
// this worker's reader worker while this one still runs.

import * as Comlink from "comlink";
import { prepareScanner } from "../src/core/model/wasm-scanner";
import type { PeakscopeApi, ProgressInfo, WorkerApi } from "./api";
import { isAttributionHelper, serveAttribution } from "./attribution-helper";
import { compareEngines } from "./compare";
import { Engine } from "./engine";
import { FirstPicture } from "./first-picture";
import { healthAnswer, healthTimeline } from "./health";
import { leaksAnswer } from "./leaks";
import { startReaderNow, stopReader } from "./parallel-reader";
import { rankTransferables, summarizeRankFile } from "./ranks";
import { reportHtml } from "./save-report";
import { summarizeSeriesFile } from "./series";
import { timelineLayersApi } from "./timeline-layers";
import { treeApi, treeDiffApi } from "./tree-api";
import { cancelWarmUp, warmUp } from "./warm-up";
import { whatIfCurve, whatIfOne, whatIfSpecs, whatIfSuggest } from "./whatif";

/** A timeline query of at least this many buckets draws a picture (the Summary's lookups ask for one). */
const PICTURE_BUCKETS = 16;

/** Runs an open with its progress posted to `port` (if given), and closes the port when it ends. */
async function withPort<R>(
  port: MessagePort | undefined,
  open: (onProgress: ((p: ProgressInfo) => void) | undefined) => Promise<R>,
): Promise<R> {
  try {
    return await open(port && ((p) => port.postMessage(p)));
  } finally {
    port?.close();
  }
}

function sideApi(engine: Engine): PeakscopeApi {
  const picture = new FirstPicture();
  /** A secondary answer: computed once the first picture has gone out (workers/first-picture.ts). */
  const later =
    <A extends unknown[], R>(f: (...args: A) => R | Promise<R>) =>
    async (...args: A): Promise<R> => {
      await picture.wait();
      return f(...args);
    };
  /** Opening a file: the gate closes while it opens, and opens again if it fails. */
  const opening = async <R extends { ok: boolean }>(open: () => Promise<R>): Promise<R> => {
    inUse = true;
    cancelWarmUp();
    picture.closeGate();
    try {
      const r = await open();
      if (!r.ok) picture.openGate();
      return r;
    } catch (e) {
      picture.openGate();
      throw e;
    }
  };
  const tree = treeApi(engine);
  const layers = timelineLayersApi(engine);
  return {
    open: (file, name, progress) => opening(() => withPort(progress, (p) => engine.open(file, name, p))),
    openUrl: (href, name, page, progress) =>
      opening(() => withPort(progress, (p) => engine.openUrl(href, name, page, p))),
    cancel: () => {
      picture.openGate();
      engine.cancel();
    },
    close: () => {
      picture.openGate();
      engine.close();
    },
    panel: async (device) => {
      let a: ReturnType<Engine["panel"]>;
      try {
        a = engine.panel(device);
      } catch (e) {
        picture.openGate(); // no panel, no picture: nothing for the rest to wait for
        throw e;
      }
      picture.panelSent((a.replay?.events ?? 0) > 0);
      return a;
    },
    setCounters: async (text, name) => engine.setCounters(text, name),
    timeline: async (q) => {
      const a = engine.timeline(q);
      // a picture (the strip or its overview), not a one-bucket lookup of the moment's facts; the gate
      // opens a moment later: opened now, the waiting answers would run in the microtasks before comlink
      // posts this one, and the strip's and the overview's requests come together (the second one would
      // wait behind them all)
      if (q.buckets >= PICTURE_BUCKETS) picture.openGateSoon();
      return Comlink.transfer(a, [
        a.allocMin.buffer,
        a.allocMax.buffer,
        a.reservedMax.buffer,
        a.byCategory.buffer,
        a.firstEvent.buffer,
        a.lastEvent.buffer,
      ]);
    },
    bands: async (q) => {
      const a = engine.bands(q);
      return Comlink.transfer(a, [
        a.alloc.buffer,
        a.category.buffer,
        a.sizeBytes.buffer,
        a.pointStart.buffer,
        a.px.buffer,
        a.py.buffer,
        a.inferred.buffer,
      ]);
    },
    allocation: async (device, alloc) => engine.allocation(device, alloc),
    siteAllocations: async (device, site, by) => {
      const a = engine.siteAllocations(device, site, by);
      return Comlink.transfer(a, [a.buffer]);
    },
    segmentMap: async (q) => {
      const a = engine.segmentMap(q);
      return Comlink.transfer(a, [
        a.segAddress.buffer,
        a.segSize.buffer,
        a.segFlags.buffer,
        a.segStream.buffer,
        a.segFirstBlock.buffer,
        a.segBlockCount.buffer,
        a.blockOffset.buffer,
        a.blockSize.buffer,
        a.blockRequested.buffer,
        a.blockState.buffer,
        a.blockCategory.buffer,
        a.blockRef.buffer,
        a.blockHighlight.buffer,
        a.blockFlags.buffer,
      ]);
    },
    block: async (q, ref) => engine.block(q, ref),
    fullStack: async (q) => engine.fullStack(q),
    health: later((device: number) => healthAnswer(engine, device)),
    leaks: later((device: number) => leaksAnswer(engine, device)),
    healthTimeline: async (q) => {
      const a = healthTimeline(engine, q);
      return Comlink.transfer(a, [a.cached.buffer, a.pending.buffer, a.inactiveSplit.buffer]);
    },
    whatIfSuggest: later((q: Parameters<typeof whatIfSuggest>[1]) => whatIfSuggest(engine, q)),
    whatIf: later((q: Parameters<typeof whatIfOne>[1]) => whatIfOne(engine, q)),
    whatIfCurve: async (q) => {
      const a = await whatIfCurve(engine, q);
      return Comlink.transfer(a, [a.allocMin.buffer, a.allocMax.buffer]);
    },
    whatIfSpecs: async (q) => whatIfSpecs(engine, q),
    reportHtml: async () => reportHtml(engine),
    ...tree,
    tree: later(tree.tree),
    ...layers,
    phaseRuns: later(layers.phaseRuns),
  };
}

const engines = [new Engine(), new Engine()] as const;
const sides = engines.map((e) => Comlink.proxy(sideApi(e)));

/** Set once a side has been asked to open a file: warm-up yields to it. */
let inUse = false;

const api: WorkerApi = {
  side: (index) => {
    const s = sides[index];
    if (!s) throw new Error(`There is no side ${index}.`);
    return s;
  },
  compare: async (base) => compareEngines(engines[base], engines[base === 0 ? 1 : 0]),
  warmUp: async (rounds) => {
    await warmUp(rounds, () => inUse);
  },
  rankSummary: async (file, name, counters) => {
    inUse = true;
    cancelWarmUp();
    const r = await summarizeRankFile(file, name, counters);
    return Comlink.transfer(r, rankTransferables(r));
  },
  seriesSummary: async (file, name, counters) => {
    inUse = true;
    cancelWarmUp();
    return summarizeSeriesFile(file, name, counters);
  },
  treeDiff: treeDiffApi(engines),
  shutdown: async () => {
    inUse = true;
    cancelWarmUp();
    for (const e of engines) e.cancel();
    stopReader();
    // the reader's thread ends on its own a moment after terminate(): give it that moment while this
    // worker is still running (see stopReader)
    await new Promise((resolve) => setTimeout(resolve, READER_END_MS));
  },
};

const READER_END_MS = 100;

if (isAttributionHelper()) serveAttribution();
else {
  Comlink.expose(api);
  startReaderNow();
  // the trace scanner's instance for the first file, made while this worker waits for one
  prepareScanner();
}
