// The worker entry: owns the open model and exposes MemscopeApi over comlink. All reading, parsing,
// attribution and replay happen here; answers to the page are small, typed arrays are transferred.

import * as Comlink from "comlink";
import type { MemscopeApi } from "./api";
import { Engine } from "./engine";

const engine = new Engine();

const api: MemscopeApi = {
  open: (file, name, onProgress) => engine.open(file, name, onProgress),
  cancel: () => engine.cancel(),
  close: () => engine.close(),
  panel: async (device) => engine.panel(device),
  setCounters: async (text, name) => engine.setCounters(text, name),
  timeline: async (q) => {
    const a = engine.timeline(q);
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
    ]);
  },
  allocation: async (device, alloc) => engine.allocation(device, alloc),
  siteAllocations: async (device, site) => {
    const a = engine.siteAllocations(device, site);
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
    ]);
  },
  block: async (q, ref) => engine.block(q, ref),
  fullStack: async (q) => engine.fullStack(q),
};

Comlink.expose(api);
