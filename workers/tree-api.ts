// The call tree's part of the worker's API (workers/tree.ts), with its typed arrays transferred: spread
// into each side's PeakscopeApi by peakscope.worker.ts, plus the root's B − A.

import * as Comlink from "comlink";
import type { PeakscopeApi, WorkerApi } from "./api";
import type { Engine } from "./engine";
import {
  compileRegions,
  treeAnswer,
  treeDiff,
  treeExport,
  treeSearchBands,
  treeSearchRefs,
  treeSearchTimeline,
} from "./tree";

type TreeApi = Pick<
  PeakscopeApi,
  "tree" | "treeExport" | "treeSearchTimeline" | "treeSearchBands" | "treeSearchRefs" | "compileRegions"
>;

export function treeApi(engine: Engine): TreeApi {
  return {
    tree: async (q) => treeAnswer(engine, q),
    treeExport: async (q, format) => treeExport(engine, q, format),
    treeSearchTimeline: async (q) => {
      const a = treeSearchTimeline(engine, q);
      return Comlink.transfer(a, [a.match.buffer]);
    },
    treeSearchBands: async (q) => {
      const a = treeSearchBands(engine, q);
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
    treeSearchRefs: async (q) => {
      const a = treeSearchRefs(engine, q);
      return Comlink.transfer(a, [a.buffer]);
    },
    compileRegions: async (device) => compileRegions(engine, device),
  };
}

export function treeDiffApi(engines: readonly [Engine, Engine]): WorkerApi["treeDiff"] {
  return async (base, q) => treeDiff(engines[base], engines[base === 0 ? 1 : 0], q);
}
