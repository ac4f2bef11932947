// A small caching-allocator simulation for the replay tests: it produces a trace, the final
// `segments` state and the ground truth (every allocation's lifetime and true block size), all from
// its own bookkeeping — never from the replay under test.
//
// Modelled after c10/cuda/CUDACachingAllocator.cpp: round_size (512-byte multiples), small pool
// (≤ 1 MiB, 2 MiB segments) and large pool (20 MiB segments for 1–10 MiB, else rounded to 2 MiB),
// best fit by (size, address) per (pool, stream), split when > 1 MiB remains (large) or ≥ 512 (small
// and expandable), merge of free neighbours, pending frees (record_stream), empty_cache releasing
// whole free segments (their address ranges are reused later), expandable segments (segment_map /
// segment_unmap of 2 MiB / 20 MiB pages at the end of one growing segment per pool and stream).

import { ModelBuilder } from "../src/core/model/builder";
import type { SnapshotModel } from "../src/core/model/types";
import { mulberry32 } from "../src/core/random";

export const MiB = 1 << 20;
const SMALL = MiB;

/** Deterministic PRNG. */
export const rng = mulberry32;

export interface SimEntry {
  action: string;
  addr?: number;
  size: number;
  stream: number;
  timeUs?: number;
  deviceFree?: number;
  isWorkspace?: boolean;
  /** Allocation id this entry acts on (alloc / free_requested / free_completed), else -1. */
  alloc: number;
  category: number;
  site: number;
}

/** Ground truth of one allocation, in full-trace event indices. */
export interface SimAllocation {
  addr: number;
  requested: number;
  /** True block size (rounded, plus any unsplit remainder). */
  size: number;
  category: number;
  site: number;
  allocEvent: number; // -1: made before recording started
  freeRequestedEvent: number; // Infinity: never
  freeCompletedEvent: number; // Infinity: never
}

interface Block {
  addr: number;
  size: number;
  /** -1 free; else the allocation holding it (allocated, or pending free). */
  alloc: number;
  /** Free requested, not yet completed. */
  pending: boolean;
}

interface Segment {
  addr: number;
  size: number;
  small: boolean;
  stream: number;
  expandable: boolean;
  /** Address order. */
  blocks: Block[];
}

export interface SimOptions {
  seed: number;
  events: number;
  expandable?: boolean;
  /** Streams to spread allocations over (1 = one stream). */
  streams?: number;
  /** Probability a free is delayed (record_stream: pending free). */
  pendingRate?: number;
  /** Allocations made before the trace starts recording (their alloc entries are not in the trace). */
  warmup?: number;
  categoryCount?: number;
  withTime?: boolean;
  /** Prepend torch_npu workspace entries (state at dump time). */
  npuWorkspace?: boolean;
  /** Sprinkle snapshot / oom / unknown-action entries. */
  markers?: boolean;
  /** Largest request in bytes. */
  maxRequest?: number;
}

export interface SimResult {
  entries: SimEntry[];
  allocations: SimAllocation[];
  segments: Segment[];
  /** Reserved bytes after each entry (full trace), and before the first. */
  reservedAfter: number[];
  reservedBefore: number;
}

const roundSize = (n: number) => (n < 512 ? 512 : Math.ceil(n / 512) * 512);

export function simulate(o: SimOptions): SimResult {
  const rand = rng(o.seed);
  const C = o.categoryCount ?? 7;
  const streams = o.streams ?? 1;
  const pendingRate = o.pendingRate ?? 0.05;
  const maxRequest = o.maxRequest ?? 48 * MiB;
  const segments: Segment[] = [];
  const entries: SimEntry[] = [];
  const allocations: SimAllocation[] = [];
  const liveIds: number[] = [];
  const pending: { id: number; due: number }[] = [];
  const freeRanges: { addr: number; size: number }[] = [];
  let nextVa = 0x7f0000000000;
  let reserved = 0;
  const reservedAfter: number[] = [];
  let recording = false;
  let time = 1_700_000_000_000_000;
  const blockOf = new Map<number, { seg: Segment; block: Block }>();

  const emit = (e: Omit<SimEntry, "stream" | "category" | "site" | "alloc"> & Partial<SimEntry>) => {
    if (!recording) return;
    time += 1 + Math.floor(rand() * 5);
    entries.push({
      stream: 0,
      category: C - 1,
      site: -1,
      alloc: -1,
      ...e,
      timeUs: o.withTime === false ? undefined : time,
    });
    reservedAfter.push(reserved);
  };
  const eventNow = () => (recording ? entries.length : -1);

  const takeVa = (size: number): number => {
    // Reuse a released range when one fits (address reuse across segments), else fresh space.
    freeRanges.sort((a, b) => a.addr - b.addr);
    for (let i = 0; i < freeRanges.length; i++) {
      const r = freeRanges[i];
      if (r.size >= size) {
        const addr = r.addr;
        r.addr += size;
        r.size -= size;
        if (r.size === 0) freeRanges.splice(i, 1);
        return addr;
      }
    }
    const addr = nextVa;
    nextVa += size + 2 * MiB * Math.floor(rand() * 3);
    return addr;
  };

  const newSegment = (rounded: number, small: boolean, stream: number): Segment => {
    if (o.expandable) {
      let seg = segments.find((s) => s.expandable && s.small === small && s.stream === stream);
      const page = small ? 2 * MiB : 20 * MiB;
      if (!seg) {
        seg = { addr: nextVa, size: 0, small, stream, expandable: true, blocks: [] };
        nextVa += 64 * 1024 * MiB; // a large VA reservation per expandable segment
        segments.push(seg);
      }
      const last = seg.blocks[seg.blocks.length - 1];
      const trailingFree = last && last.alloc < 0 ? last.size : 0;
      const need = Math.ceil((rounded - trailingFree) / page) * page;
      const at = seg.addr + seg.size;
      seg.size += need;
      reserved += need;
      emit({ action: "segment_map", addr: at, size: need, stream });
      if (trailingFree > 0) last.size += need;
      else seg.blocks.push({ addr: at, size: need, alloc: -1, pending: false });
      return seg;
    }
    const size = small ? 2 * MiB : rounded < 10 * MiB ? 20 * MiB : Math.ceil(rounded / (2 * MiB)) * 2 * MiB;
    const addr = takeVa(size);
    const seg: Segment = {
      addr,
      size,
      small,
      stream,
      expandable: false,
      blocks: [{ addr, size, alloc: -1, pending: false }],
    };
    segments.push(seg);
    reserved += size;
    emit({ action: "segment_alloc", addr, size, stream });
    return seg;
  };

  const malloc = (requested: number, stream: number, category: number, site: number): number => {
    const rounded = roundSize(requested);
    const small = rounded <= SMALL;
    let best: { seg: Segment; i: number } | null = null;
    for (const seg of segments) {
      if (seg.small !== small || seg.stream !== stream) continue;
      seg.blocks.forEach((b, i) => {
        if (b.alloc >= 0 || b.size < rounded) return;
        if (!best) best = { seg, i };
        else {
          const cur = best.seg.blocks[best.i];
          if (b.size < cur.size || (b.size === cur.size && b.addr < cur.addr)) best = { seg, i };
        }
      });
    }
    if (!best) {
      const seg = newSegment(rounded, small, stream);
      const i = seg.blocks.findIndex((b) => b.alloc < 0 && b.size >= rounded);
      best = { seg, i };
    }
    const { seg, i } = best as { seg: Segment; i: number };
    const block = seg.blocks[i];
    const remaining = block.size - rounded;
    const split = small || seg.expandable ? remaining >= 512 : remaining > SMALL;
    if (split) {
      seg.blocks.splice(i + 1, 0, { addr: block.addr + rounded, size: remaining, alloc: -1, pending: false });
      block.size = rounded;
    }
    const id = allocations.length;
    block.alloc = id;
    allocations.push({
      addr: block.addr,
      requested,
      size: block.size,
      category,
      site,
      allocEvent: eventNow(),
      freeRequestedEvent: Number.POSITIVE_INFINITY,
      freeCompletedEvent: Number.POSITIVE_INFINITY,
    });
    blockOf.set(id, { seg, block });
    liveIds.push(id);
    emit({ action: "alloc", addr: block.addr, size: requested, stream, alloc: id, category, site });
    return id;
  };

  const complete = (id: number) => {
    const a = allocations[id];
    const { seg, block } = blockOf.get(id) as { seg: Segment; block: Block };
    a.freeCompletedEvent = eventNow();
    emit({
      action: "free_completed",
      addr: a.addr,
      size: a.requested,
      stream: seg.stream,
      alloc: id,
      category: a.category,
      site: a.site,
    });
    block.alloc = -1;
    block.pending = false;
    blockOf.delete(id);
    // merge with free neighbours
    let i = seg.blocks.indexOf(block);
    const next = seg.blocks[i + 1];
    if (next && next.alloc < 0) {
      block.size += next.size;
      seg.blocks.splice(i + 1, 1);
    }
    const prev = seg.blocks[i - 1];
    if (prev && prev.alloc < 0) {
      prev.size += block.size;
      seg.blocks.splice(i, 1);
      i--;
    }
  };

  const free = (id: number, delayed: boolean) => {
    const a = allocations[id];
    const { seg, block } = blockOf.get(id) as { seg: Segment; block: Block };
    a.freeRequestedEvent = eventNow();
    emit({
      action: "free_requested",
      addr: a.addr,
      size: a.requested,
      stream: seg.stream,
      alloc: id,
      category: a.category,
      site: a.site,
    });
    liveIds.splice(liveIds.indexOf(id), 1);
    block.pending = true;
    if (delayed) pending.push({ id, due: entries.length + 1 + Math.floor(rand() * 20) });
    else complete(id);
  };

  const emptyCache = () => {
    for (let s = segments.length - 1; s >= 0; s--) {
      const seg = segments[s];
      if (seg.expandable) {
        // unmap whole free pages at the end
        const page = seg.small ? 2 * MiB : 20 * MiB;
        const last = seg.blocks[seg.blocks.length - 1];
        if (!last || last.alloc >= 0) continue;
        const start = Math.ceil((last.addr - seg.addr) / page) * page + seg.addr;
        const cut = seg.addr + seg.size - start;
        if (cut <= 0) continue;
        seg.size -= cut;
        reserved -= cut;
        emit({ action: "segment_unmap", addr: start, size: cut, stream: seg.stream });
        last.size -= cut;
        if (last.size === 0) seg.blocks.pop();
        continue;
      }
      if (seg.blocks.length !== 1 || seg.blocks[0].alloc >= 0) continue;
      reserved -= seg.size;
      emit({ action: "segment_free", addr: seg.addr, size: seg.size, stream: seg.stream });
      freeRanges.push({ addr: seg.addr, size: seg.size });
      segments.splice(s, 1);
    }
  };

  const randomRequest = () => {
    const r = rand();
    if (r < 0.55) return 1 + Math.floor(rand() * 64 * 1024); // small tensors
    if (r < 0.8) return 64 * 1024 + Math.floor(rand() * SMALL); // up to 1 MiB
    if (r < 0.95) return SMALL + Math.floor(rand() * 12 * MiB);
    return Math.floor(rand() * maxRequest) + 1;
  };

  const step = () => {
    // complete due pending frees first
    for (let p = pending.length - 1; p >= 0; p--) {
      if (pending[p].due <= entries.length || !recording) {
        const { id } = pending[p];
        pending.splice(p, 1);
        complete(id);
      }
    }
    const r = rand();
    const target = 40 + 40 * Math.sin(entries.length / 300); // live count drifts up and down
    if (liveIds.length < 2 || (r < 0.55 && liveIds.length < target + 20)) {
      malloc(randomRequest(), Math.floor(rand() * streams), Math.floor(rand() * C), Math.floor(rand() * 25));
    } else if (r < 0.97) {
      const id = liveIds[Math.floor(rand() * liveIds.length)];
      free(id, rand() < pendingRate);
    } else if (r < 0.985) emptyCache();
    else if (o.markers) {
      const m = rand();
      if (m < 0.4) {
        let active = 0;
        for (const seg of segments) for (const b of seg.blocks) if (b.alloc >= 0) active += b.size;
        emit({ action: "snapshot", addr: 0, size: active });
      } else if (m < 0.7) emit({ action: "oom", size: 80 * 1024 * MiB, deviceFree: 123 * MiB });
      else emit({ action: "mystery_action", addr: 0, size: 7 });
    }
  };

  const warmup = o.warmup ?? 0;
  for (let i = 0; i < warmup; i++) step();
  recording = true;
  const reservedBefore = reserved;
  while (entries.length < o.events) step();

  if (o.npuWorkspace) {
    // torch_npu prepends the workspace allocator's current state: workspace_snapshot, segment_alloc,
    // alloc of one 2 MiB-rounded block per stream; its segment is in `segments`, block inactive.
    const addr = nextVa;
    nextVa += 8 * MiB;
    const size = 4 * MiB;
    segments.push({
      addr,
      size,
      small: false,
      stream: 0,
      expandable: false,
      blocks: [{ addr, size, alloc: -1, pending: false }],
    });
    const ws = ["workspace_snapshot", "segment_alloc", "alloc"].map(
      (action): SimEntry => ({
        action,
        addr,
        size,
        stream: 0,
        isWorkspace: true,
        alloc: -1,
        category: C - 1,
        site: -1,
      }),
    );
    entries.unshift(...ws);
    reservedAfter.unshift(reservedBefore + size, reservedBefore + size, reservedBefore + size);
    for (let i = 3; i < reservedAfter.length; i++) reservedAfter[i] += size;
    for (const a of allocations) {
      if (a.allocEvent >= 0) a.allocEvent += 3;
      a.freeRequestedEvent += 3;
      a.freeCompletedEvent += 3;
    }
    return { entries, allocations, segments, reservedAfter, reservedBefore: reservedBefore + size };
  }
  return { entries, allocations, segments, reservedAfter, reservedBefore };
}

/** The simulation as a model; `dropFirst` entries are cut off the trace (ring buffer). */
export function simModel(
  sim: SimResult,
  dropFirst = 0,
): {
  model: SnapshotModel;
  traceCategory: Uint8Array;
  traceSite: Int32Array;
  blockCategory: Uint8Array;
  blockSite: Int32Array;
} {
  const b = new ModelBuilder();
  const blockCat: number[] = [];
  const blockSite: number[] = [];
  const segs = [...sim.segments].sort((p, q) => p.addr - q.addr);
  for (const seg of segs) {
    let allocated = 0;
    let active = 0;
    let requested = 0;
    for (const blk of seg.blocks) {
      if (blk.alloc < 0) continue;
      if (!blk.pending) allocated += blk.size;
      active += blk.size;
      requested += sim.allocations[blk.alloc].requested;
    }
    if (seg.blocks.length === 0) continue;
    b.addSegment({
      device: 0,
      address: seg.addr,
      totalSizeBytes: seg.size,
      allocatedSizeBytes: allocated,
      activeSizeBytes: active,
      requestedSizeBytes: requested,
      streamRaw: seg.stream,
      segmentType: seg.small ? "small" : "large",
      isExpandable: seg.expandable,
    });
    for (const blk of seg.blocks) {
      const a = blk.alloc >= 0 ? sim.allocations[blk.alloc] : null;
      b.addBlock({
        address: blk.addr,
        sizeBytes: blk.size,
        requestedSizeBytes: a ? a.requested : 0,
        state: !a ? "inactive" : blk.pending ? "active_pending_free" : "active_allocated",
      });
      blockCat.push(a ? a.category : 6);
      blockSite.push(a ? a.site : -1);
    }
  }
  // Stacks: one per call site; free entries carry the allocation's stack (context="alloc").
  const siteStacks = new Map<number, number>();
  const stackOf = (site: number) => {
    let st = siteStacks.get(site);
    if (st === undefined) {
      st = b.internStack([b.internFrame("/home/u/proj/train.py", 100 + site, `site${site}`)]);
      siteStacks.set(site, st);
    }
    return st;
  };
  const kept = sim.entries.slice(dropFirst);
  const traceCategory = new Uint8Array(kept.length);
  const traceSite = new Int32Array(kept.length);
  b.ensureDevices(1);
  kept.forEach((e, i) => {
    b.addTraceEntry(0, {
      action: e.action,
      addr: e.action === "oom" ? undefined : e.addr,
      sizeBytes: e.size,
      streamRaw: e.stream,
      timeUs: e.timeUs,
      deviceFreeBytes: e.deviceFree,
      isWorkspace: e.isWorkspace,
      stack: e.alloc >= 0 ? stackOf(e.site) : undefined,
    });
    traceCategory[i] = e.category;
    traceSite[i] = e.site;
  });
  const model = b.finish({ fileName: "sim", byteLength: 0, format: "pickle", pickleProtocol: 4, notes: [] });
  return {
    model,
    traceCategory,
    traceSite,
    blockCategory: Uint8Array.from(blockCat),
    blockSite: Int32Array.from(blockSite),
  };
}

/** Truth after full-trace event i: allocations active, with their allocated/pending status. */
export function truthLive(sim: SimResult, i: number): { id: number; allocated: boolean }[] {
  const out: { id: number; allocated: boolean }[] = [];
  sim.allocations.forEach((a, id) => {
    if (a.allocEvent <= i && a.freeCompletedEvent > i) out.push({ id, allocated: a.freeRequestedEvent > i });
  });
  return out;
}

/** Truth totals after full-trace event i (-1: before the first). */
export function truthTotals(sim: SimResult, i: number, C: number) {
  let allocated = 0;
  let active = 0;
  let requested = 0;
  const byCategory = new Float64Array(C);
  for (const { id, allocated: isAlloc } of truthLive(sim, i)) {
    const a = sim.allocations[id];
    active += a.size;
    if (isAlloc) {
      allocated += a.size;
      requested += a.requested;
      byCategory[a.category] += a.size;
    }
  }
  const reserved = i < 0 ? sim.reservedBefore : sim.reservedAfter[i];
  return { allocated, active, requested, reserved, byCategory };
}

/** A straightforward replay with Maps, written independently of src/core/replay: the live set after
 * event `upTo` as address → {requested, pending}. */
export function naiveLive(model: SnapshotModel, device: number, upTo: number) {
  const t = model.traces[device];
  const name = (i: number) => model.actionNames[t.action[i]];
  const live = new Map<number, { requested: number; pending: boolean }>();
  const firstAction = new Map<number, string>();
  for (let i = 0; i < t.length; i++) {
    const a = name(i);
    if (t.isWorkspace[i] || !["alloc", "free_requested", "free_completed"].includes(a)) continue;
    if (!firstAction.has(t.addr[i])) firstAction.set(t.addr[i], a);
  }
  // Before the trace: allocations whose first trace event is a free, and active blocks never touched.
  for (let i = 0; i < t.length; i++) {
    const a = name(i);
    if (t.isWorkspace[i]) continue;
    if (firstAction.get(t.addr[i]) === a && a !== "alloc" && !live.has(t.addr[i])) {
      live.set(t.addr[i], { requested: t.sizeBytes[i], pending: a === "free_completed" });
    }
  }
  const s = model.segments;
  for (let g = 0; g < s.length; g++) {
    if (s.device[g] !== device) continue;
    for (let b = s.firstBlock[g]; b < s.firstBlock[g] + s.blockCount[g]; b++) {
      const st = model.blocks.state[b];
      if (st !== 1 && st !== 2) continue;
      const addr = model.blocks.address[b];
      if (!firstAction.has(addr)) {
        const req = model.blocks.requestedSizeBytes[b];
        live.set(addr, { requested: Number.isNaN(req) ? model.blocks.sizeBytes[b] : req, pending: st === 2 });
      }
    }
  }
  for (let i = 0; i <= upTo; i++) {
    if (t.isWorkspace[i]) continue;
    const a = name(i);
    const addr = t.addr[i];
    if (a === "alloc") live.set(addr, { requested: t.sizeBytes[i], pending: false });
    else if (a === "free_requested") {
      const e = live.get(addr);
      if (e) e.pending = true;
    } else if (a === "free_completed") live.delete(addr);
  }
  return live;
}
