// Replay of device_traces: property tests against a simulated caching allocator (its own bookkeeping
// is the truth), hand-built models for each rule, and the report functions.

import { describe, expect, it } from "vitest";
import { ModelBuilder } from "../src/core/model/builder";
import type { CountersSidecar, SnapshotModel } from "../src/core/model/types";
import {
  compositionAt,
  fittedBlockSize,
  fragmentationAt,
  liveAllocationsAt,
  NEVER,
  Origin,
  oomSummaries,
  prepareReplay,
  type Replay,
  ReplayCursor,
  replayReport,
  roundingSettings,
  roundRequest,
  SITE_BEFORE_TRACE,
  SizeSource,
  stateAt,
  stateAtReport,
} from "../src/core/replay";
import { intervalAt, intervalPages, type ReservedExtents } from "../src/core/replay/extents";
import { addressOf, requestedOf } from "../src/core/replay/types";
import { computeTimeline } from "../workers/timeline";
import {
  MiB,
  naiveLive,
  rng,
  type SimResult,
  simModel,
  simulate,
  truthLive,
  truthTotals,
} from "./replay-sim";

const C = 7;
const CATEGORY_NAMES = [
  "parameters",
  "gradients",
  "optimizer_state",
  "activations",
  "input",
  "other",
  "unknown",
];

function replaySim(
  sim: SimResult,
  dropFirst = 0,
  checkpointEvery?: number,
): { r: Replay; model: SnapshotModel } {
  const m = simModel(sim, dropFirst);
  const r = prepareReplay(m.model, 0, {
    traceCategory: m.traceCategory,
    traceSite: m.traceSite,
    blockCategory: m.blockCategory,
    blockSite: m.blockSite,
    categoryCount: C,
    checkpointEvery,
  });
  return { r, model: m.model };
}

function replayLiveByAddress(r: Replay, i: number) {
  const A = r.allocations;
  const out = new Map<number, { requested: number; pending: boolean; size: number; k: number }>();
  for (const k of liveAllocationsAt(r, i)) {
    const fr = A.freeRequestedEvent[k];
    out.set(addressOf(A, k), {
      requested: requestedOf(A, k),
      pending: !(fr === NEVER || fr > i),
      size: A.sizeBytes[k],
      k,
    });
  }
  return out;
}

/** Bound on how far below the truth the replay may be after event i: 1 MiB per live large block
 * whose size is only round_size (allocated before the trace, freed inside it, not fittable). */
function lowerBoundSlack(r: Replay, i: number): { allocated: number; active: number } {
  const out = { allocated: 0, active: 0 };
  for (const v of replayLiveByAddress(r, i).values()) {
    if (r.allocations.sizeSource[v.k] !== SizeSource.rounded || v.size <= MiB) continue;
    out.active += MiB;
    if (!v.pending) out.allocated += MiB;
  }
  return out;
}

const SIMS: { name: string; opts: Parameters<typeof simulate>[0] }[] = [
  { name: "plain", opts: { seed: 1, events: 3000 } },
  {
    name: "two streams, pending frees, markers",
    opts: { seed: 2, events: 3000, streams: 2, pendingRate: 0.2, markers: true },
  },
  { name: "expandable segments", opts: { seed: 3, events: 3000, expandable: true, markers: true } },
  { name: "large tensors", opts: { seed: 4, events: 2000, maxRequest: 300 * MiB } },
  { name: "warm-up before recording", opts: { seed: 5, events: 2500, warmup: 400, pendingRate: 0.1 } },
  { name: "no time_us", opts: { seed: 6, events: 1500, withTime: false } },
];

describe("replay of a simulated allocator (full trace)", () => {
  for (const { name, opts } of SIMS) {
    it(`${name}: every event's totals equal the simulation's`, () => {
      const sim = simulate(opts);
      const { r } = replaySim(sim);
      expect(r.check.status, r.check.detail).toBe("pass");
      expect(r.hasTime).toBe(opts.withTime !== false);
      for (let i = -1; i < r.length; i++) {
        const t = truthTotals(sim, i, C);
        const got =
          i < 0
            ? { ...r.initial }
            : {
                allocatedBytes: r.allocated[i],
                activeBytes: r.active[i],
                reservedBytes: r.reserved[i],
                requestedBytes: r.requested[i],
              };
        // Blocks made during warm-up and freed in the trace may be sized as lower bounds (< 1 MiB short).
        const slack = lowerBoundSlack(r, i);
        if (slack.allocated === 0 && slack.active === 0) {
          expect([i, got.allocatedBytes, got.activeBytes, got.reservedBytes, got.requestedBytes]).toEqual([
            i,
            t.allocated,
            t.active,
            t.reserved,
            t.requested,
          ]);
          if (i >= 0) for (let c = 0; c < C; c++) expect(r.allocatedByCategory[c][i]).toBe(t.byCategory[c]);
          // the checkpointed lookup the page uses gives the same numbers (before the first event too)
          expect([i, ...r.categoriesAt(i)]).toEqual([i, ...t.byCategory.slice(0, C)]);
        } else {
          expect([i, got.reservedBytes, got.requestedBytes]).toEqual([i, t.reserved, t.requested]);
          expect(t.allocated - got.allocatedBytes).toBeGreaterThanOrEqual(0);
          expect(t.allocated - got.allocatedBytes).toBeLessThanOrEqual(slack.allocated);
          expect(t.active - got.activeBytes).toBeGreaterThanOrEqual(0);
          expect(t.active - got.activeBytes).toBeLessThanOrEqual(slack.active);
        }
      }
    });
  }

  // The fitting rule's tallies (ReplayAnomalies), counted from the simulation's own blocks: every large
  // allocation of the trace alive at its end is a block of the snapshot, which the rule is scored against
  // (and agrees with); every other one the rule sizes, and it differs from round_size where the allocator
  // kept a remainder unsplit. Only files without allocations made before the trace (those are fitted at
  // the trace's start, by another rule) and without expandable segments (nothing to fit).
  for (const { name, opts } of SIMS.filter((s) => !s.opts.warmup && !s.opts.expandable)) {
    it(`${name}: the fitting rule's tallies are the simulation's`, () => {
      const sim = simulate(opts);
      const { r } = replaySim(sim);
      let agreed = 0;
      let fitted = 0;
      let large = 0;
      for (const a of sim.allocations) {
        if (a.allocEvent < 0) continue;
        const rounded = a.requested < 512 ? 512 : Math.ceil(a.requested / 512) * 512;
        if (rounded <= MiB) continue;
        large++;
        if (a.freeCompletedEvent === Number.POSITIVE_INFINITY) agreed++;
        else if (a.size !== rounded) fitted++;
      }
      expect(large).toBeGreaterThan(0);
      expect({
        agreed: r.anomalies.fitAgreedWithBlock,
        disagreed: r.anomalies.fitDisagreedWithBlock,
        fitted: r.anomalies.fittedBlocks,
        roundedOnly: r.anomalies.roundedOnlyBlocks,
      }).toEqual({ agreed, disagreed: 0, fitted, roundedOnly: 0 });
    });
  }

  it("categoriesAt answers in any order (backwards, jumps across checkpoints) as the simulation says", () => {
    const sim = simulate({ seed: 21, events: 6000, pendingRate: 0.1 });
    const { r } = replaySim(sim);
    // a fixed scramble of the events: backwards runs, long jumps, repeats, the initial state
    const order: number[] = [];
    for (let k = 0; k < 400; k++) order.push((k * 7919) % r.length, r.length - 1 - ((k * 131) % r.length));
    order.push(-1, 5, 5, 4, 1023, 1024, 1025, 1023, r.length - 1, 0);
    const exact = order.filter((i) => lowerBoundSlack(r, i).allocated === 0);
    expect(exact.length).toBeGreaterThan(order.length * 0.9);
    for (const i of exact)
      expect([i, ...r.categoriesAt(i)]).toEqual([i, ...truthTotals(sim, i, C).byCategory.slice(0, C)]);
  });

  it("the timeline's buckets: max allocated and its composition equal the simulation's", () => {
    const sim = simulate({ seed: 12, events: 5000, streams: 2, pendingRate: 0.1 });
    const { r } = replaySim(sim);
    for (const buckets of [7, 300, 5000]) {
      const t = computeTimeline(r, { device: 0, axis: "event", x0: 0, x1: r.length, buckets }, 1);
      for (let b = 0; b < buckets; b++) {
        if (!Number.isFinite(t.allocMax[b])) continue;
        // the bucket's events (and the state carried in), its max found here from the simulation
        const from = t.firstEvent[b] >= 0 ? t.firstEvent[b] : t.lastEvent[b];
        let at = from - (t.firstEvent[b] >= 0 ? 1 : 0);
        let best = at >= 0 ? truthTotals(sim, at, C).allocated : truthTotals(sim, -1, C).allocated;
        for (let i = Math.max(0, from); i <= t.lastEvent[b]; i++) {
          const a = truthTotals(sim, i, C).allocated;
          if (a > best) {
            best = a;
            at = i;
          }
        }
        expect([buckets, b, t.allocMax[b]]).toEqual([buckets, b, best]);
        const want = truthTotals(sim, at, C).byCategory.slice(0, C);
        expect([buckets, b, ...t.byCategory.subarray(b * C, (b + 1) * C)]).toEqual([buckets, b, ...want]);
      }
    }
  });

  it("the peak and its composition equal the simulation's", () => {
    const sim = simulate({ seed: 11, events: 4000, streams: 2, pendingRate: 0.1 });
    const { r } = replaySim(sim);
    let best = -1;
    let bestAt = -1;
    for (let i = 0; i < sim.entries.length; i++) {
      const t = truthTotals(sim, i, C).allocated;
      if (t > best) {
        best = t;
        bestAt = i;
      }
    }
    expect(r.peakAllocatedBytes).toBe(best);
    expect(r.peakEvent).toBe(bestAt);
    const comp = compositionAt(r, bestAt);
    expect(comp.allocatedBytes).toBe(best);
    expect([...comp.byCategory]).toEqual([...truthTotals(sim, bestAt, C).byCategory]);
    const bySite = new Map<string, number>();
    for (const { id, allocated } of truthLive(sim, bestAt)) {
      if (!allocated) continue;
      const a = sim.allocations[id];
      const key = `${a.site}/${a.category}`;
      bySite.set(key, (bySite.get(key) ?? 0) + a.size);
    }
    expect(new Map(comp.sites.map((s) => [`${s.site}/${s.category}`, s.bytes]))).toEqual(bySite);
    const top = compositionAt(r, bestAt, 5);
    expect(top.sites.length).toBe(6);
    expect(top.sites.reduce((s, x) => s + x.bytes, 0)).toBe(best);
  });

  it("state at random events equals the simulation's live set, with true block sizes", () => {
    const sim = simulate({ seed: 21, events: 5000, streams: 2, pendingRate: 0.15, maxRequest: 100 * MiB });
    const { r } = replaySim(sim, 0, 64);
    const rand = rng(99);
    for (let n = 0; n < 60; n++) {
      const i = Math.floor(rand() * r.length);
      const got = replayLiveByAddress(r, i);
      const want = new Map(
        truthLive(sim, i).map(({ id, allocated }) => {
          const a = sim.allocations[id];
          return [a.addr, { requested: a.requested, pending: !allocated, size: a.size }];
        }),
      );
      expect(
        new Map([...got].map(([a, v]) => [a, { requested: v.requested, pending: v.pending, size: v.size }])),
      ).toEqual(want);
      const st = stateAt(r, i);
      for (let j = 1; j < st.address.length; j++) expect(st.address[j]).toBeGreaterThan(st.address[j - 1]);
      for (let j = 0; j < st.address.length; j++) {
        expect(st.region[j]).toBeGreaterThanOrEqual(0);
        const g = st.region[j];
        expect(st.address[j]).toBeGreaterThanOrEqual(st.regions.start[g]);
        expect(st.address[j] + st.sizeBytes[j]).toBeLessThanOrEqual(st.regions.end[g]);
      }
    }
  });

  it("fragmentation: the largest free block is the simulation's largest free block", () => {
    const sim = simulate({ seed: 31, events: 3000, maxRequest: 80 * MiB });
    const { r } = replaySim(sim);
    // Re-derive free runs from the truth: segments at the end vs blocks alive at the end.
    const f = fragmentationAt(r, r.length - 1);
    let largest = 0;
    for (const seg of sim.segments)
      for (const b of seg.blocks) if (b.alloc < 0) largest = Math.max(largest, b.size);
    expect(f.largestFreeBlockBytes).toBe(largest);
    expect(f.freeInCachedSegmentsBytes).toBe(r.reserved[r.length - 1] - r.active[r.length - 1]);
  });

  it("checkpoint spacing does not change any answer; the cursor steps both ways", () => {
    const sim = simulate({ seed: 41, events: 2500, pendingRate: 0.2, markers: true });
    const a = replaySim(sim, 0, 1).r;
    const b = replaySim(sim, 0, 97).r;
    const c = replaySim(sim, 0, 100000).r;
    const sorted = (x: Int32Array) => [...x].sort((p, q) => p - q);
    for (let i = -1; i < a.length; i += 37) {
      expect(sorted(liveAllocationsAt(b, i))).toEqual(sorted(liveAllocationsAt(a, i)));
      expect(sorted(liveAllocationsAt(c, i))).toEqual(sorted(liveAllocationsAt(a, i)));
    }
    const cur = new ReplayCursor(b);
    while (cur.next()) {
      if (cur.index % 13 === 0) expect(sorted(cur.live())).toEqual(sorted(liveAllocationsAt(b, cur.index)));
    }
    expect(sorted(cur.live())).toEqual(sorted(liveAllocationsAt(b, b.length - 1)));
    while (cur.prev()) {
      if (cur.index % 17 === 0) expect(sorted(cur.live())).toEqual(sorted(liveAllocationsAt(b, cur.index)));
    }
    expect(cur.index).toBe(-1);
    expect(sorted(cur.live())).toEqual(sorted(liveAllocationsAt(b, -1)));
  });

  it("checkpoints stay within their budget when many allocations are live", () => {
    const sim = simulate({ seed: 51, events: 3000 });
    const { r } = replaySim(sim, 0, 1);
    const stored = r.checkpoints.reduce((s, cp) => s + cp.length, 0);
    expect(stored).toBeLessThanOrEqual(4 * r.length + (1 << 20));
    expect(r.checkpoints.length).toBe(Math.floor(r.length / r.checkpointEvery) + 1);
  });
});

describe("replay of a ring-buffer-truncated trace", () => {
  for (const seed of [61, 62, 63, 64]) {
    it(`seed ${seed}: ends in the snapshot state; live sets and requested bytes match the truth`, () => {
      const sim = simulate({
        seed,
        events: 4000,
        streams: 1 + (seed % 2),
        pendingRate: 0.15,
        maxRequest: 60 * MiB,
      });
      const drop = 1000 + 300 * (seed - 61);
      const { r, model } = replaySim(sim, drop);
      expect(r.check.status, r.check.detail).toBe("pass");
      expect(r.end.replayAllocatedBytes).toBe(
        Array.from(model.segments.allocatedSizeBytes).reduce((s, x) => s + x, 0),
      );
      expect(r.anomalies.freesOfAllocationsBeforeTrace).toBeGreaterThan(0);
      const rand = rng(seed);
      for (let n = 0; n < 40; n++) {
        const i = n === 0 ? -1 : Math.floor(rand() * r.length);
        const t = truthTotals(sim, i + drop, C);
        const req = i < 0 ? r.initial.requestedBytes : r.requested[i];
        const alloc = i < 0 ? r.initial.allocatedBytes : r.allocated[i];
        expect(req).toBe(t.requested);
        expect(i < 0 ? r.initial.reservedBytes : r.reserved[i]).toBe(t.reserved);
        // Sizes of blocks allocated before the trace and freed inside it can be lower bounds.
        const got = replayLiveByAddress(r, i);
        expect(alloc).toBeLessThanOrEqual(t.allocated);
        expect(t.allocated - alloc).toBeLessThanOrEqual(lowerBoundSlack(r, i).allocated);
        const want = new Map(
          truthLive(sim, i + drop).map(({ id, allocated }) => {
            const a = sim.allocations[id];
            return [a.addr, { requested: a.requested, pending: !allocated }];
          }),
        );
        expect(
          new Map([...got].map(([a, v]) => [a, { requested: v.requested, pending: v.pending }])),
        ).toEqual(want);
        // and the independent naive replay agrees
        const naive = naiveLive(model, 0, i);
        expect(
          new Map([...got].map(([a, v]) => [a, { requested: v.requested, pending: v.pending }])),
        ).toEqual(naive);
      }
    });
  }

  it("a trace cut between free_requested and free_completed starts with a pending free", () => {
    const b = new ModelBuilder();
    b.addSegment({
      device: 0,
      address: 0x1000000,
      totalSizeBytes: 2 * MiB,
      allocatedSizeBytes: 0,
      activeSizeBytes: 0,
    });
    b.addBlock({ address: 0x1000000, sizeBytes: 2 * MiB, state: "inactive" });
    b.addTraceEntry(0, { action: "free_completed", addr: 0x1000000, sizeBytes: 1000 });
    const r = prepareReplay(b.finish(src), 0, { categoryCount: C });
    expect(r.check.status).toBe("pass");
    expect(r.initial.activeBytes).toBe(1024);
    expect(r.initial.allocatedBytes).toBe(0);
    expect(r.active[0]).toBe(0);
    expect(r.allocations.origin[0]).toBe(Origin.beforeTracePending);
  });
});

const src = { fileName: "t", byteLength: 0, format: "pickle" as const, pickleProtocol: 4, notes: [] };

describe("replay rules on hand-built traces", () => {
  it("address reuse: each (address, ordinal) is its own allocation", () => {
    const b = new ModelBuilder();
    b.addSegment({
      device: 0,
      address: 0,
      totalSizeBytes: 2 * MiB,
      allocatedSizeBytes: 1024,
      activeSizeBytes: 1024,
    });
    b.addBlock({ address: 0, sizeBytes: 1024, requestedSizeBytes: 1000, state: "active_allocated" });
    b.addBlock({ address: 1024, sizeBytes: 2 * MiB - 1024, state: "inactive" });
    for (let k = 0; k < 3; k++) {
      b.addTraceEntry(0, { action: "alloc", addr: 0, sizeBytes: 100 + k, timeUs: 10 * k });
      b.addTraceEntry(0, { action: "free_requested", addr: 0, sizeBytes: 100 + k, timeUs: 10 * k + 1 });
      b.addTraceEntry(0, { action: "free_completed", addr: 0, sizeBytes: 100 + k, timeUs: 10 * k + 2 });
    }
    b.addTraceEntry(0, { action: "alloc", addr: 0, sizeBytes: 1000, timeUs: 100 });
    const r = prepareReplay(b.finish(src), 0, { categoryCount: C });
    expect(r.check.status, r.check.detail).toBe("pass");
    expect(r.allocations.length).toBe(4);
    expect([...r.allocated]).toEqual([512, 0, 0, 512, 0, 0, 512, 0, 0, 1024]);
    expect(r.allocations.sizeSource[3]).toBe(SizeSource.block);
    expect(r.end.matchedFromTrace).toBe(1);
  });

  it("allocated drops at free_requested, active at free_completed; pending at the end matches the snapshot", () => {
    const b = new ModelBuilder();
    b.addSegment({
      device: 0,
      address: 0,
      totalSizeBytes: 2 * MiB,
      allocatedSizeBytes: 0,
      activeSizeBytes: 512,
    });
    b.addBlock({ address: 0, sizeBytes: 512, requestedSizeBytes: 8, state: "active_pending_free" });
    b.addBlock({ address: 512, sizeBytes: 2 * MiB - 512, state: "inactive" });
    b.addTraceEntry(0, { action: "segment_alloc", addr: 0, sizeBytes: 2 * MiB });
    b.addTraceEntry(0, { action: "alloc", addr: 0, sizeBytes: 8 });
    b.addTraceEntry(0, { action: "free_requested", addr: 0, sizeBytes: 8 });
    const r = prepareReplay(b.finish(src), 0, { categoryCount: C });
    expect(r.check.status, r.check.detail).toBe("pass");
    expect([...r.allocated]).toEqual([0, 512, 0]);
    expect([...r.active]).toEqual([0, 512, 512]);
    expect([...r.reserved]).toEqual([2 * MiB, 2 * MiB, 2 * MiB]);
    expect(r.initial.reservedBytes).toBe(0);
    expect([...r.requested]).toEqual([0, 8, 0]);
  });

  it("free_completed without free_requested frees both measures", () => {
    const b = new ModelBuilder();
    b.addSegment({
      device: 0,
      address: 0,
      totalSizeBytes: 2 * MiB,
      allocatedSizeBytes: 0,
      activeSizeBytes: 0,
    });
    b.addBlock({ address: 0, sizeBytes: 2 * MiB, state: "inactive" });
    b.addTraceEntry(0, { action: "alloc", addr: 0, sizeBytes: 600 });
    b.addTraceEntry(0, { action: "free_completed", addr: 0, sizeBytes: 600 });
    const r = prepareReplay(b.finish(src), 0, { categoryCount: C });
    expect([...r.allocated]).toEqual([1024, 0]);
    expect([...r.active]).toEqual([1024, 0]);
    expect(r.anomalies.completedWithoutRequest).toBe(1);
    expect(r.check.status).toBe("pass");
  });

  it("a mismatched end state fails with the count and bytes of the blocks", () => {
    const b = new ModelBuilder();
    b.addSegment({
      device: 0,
      address: 0,
      totalSizeBytes: 20 * MiB,
      allocatedSizeBytes: 4096,
      activeSizeBytes: 4096,
    });
    b.addBlock({ address: 0, sizeBytes: 4096, requestedSizeBytes: 4096, state: "active_allocated" });
    b.addBlock({ address: 4096, sizeBytes: 20 * MiB - 4096, state: "inactive" });
    b.addTraceEntry(0, { action: "alloc", addr: 0, sizeBytes: 4096 });
    b.addTraceEntry(0, { action: "free_requested", addr: 0, sizeBytes: 4096 });
    b.addTraceEntry(0, { action: "free_completed", addr: 0, sizeBytes: 4096 });
    b.addTraceEntry(0, { action: "alloc", addr: 8192, sizeBytes: 3 * MiB });
    const r = prepareReplay(b.finish(src), 0, { categoryCount: C });
    expect(r.check.status).toBe("fail");
    expect(r.end.aliveOnlyInSnapshot).toBe(1);
    expect(r.end.aliveOnlyInSnapshotBytes).toBe(4096);
    expect(r.end.aliveOnlyInReplay).toBe(1);
    expect(r.check.detail).toContain("2 mismatched blocks");
    expect(r.check.detail).toContain("1 alive after the trace but not in segments");
    expect(r.check.detail).toContain("1 active in segments but freed by the trace (4,096 B)");
  });

  it("torch_npu workspace entries are state, not events, wherever they sit; unknown actions are listed", () => {
    const b = new ModelBuilder();
    b.addSegment({
      device: 0,
      address: 0x100000,
      totalSizeBytes: 2 * MiB,
      allocatedSizeBytes: 0,
      activeSizeBytes: 0,
    });
    b.addBlock({ address: 0x100000, sizeBytes: 2 * MiB, requestedSizeBytes: 1000, state: "inactive" });
    b.addSegment({
      device: 0,
      address: 0x800000,
      totalSizeBytes: 2 * MiB,
      allocatedSizeBytes: 1024,
      activeSizeBytes: 1024,
    });
    b.addBlock({ address: 0x800000, sizeBytes: 1024, requestedSizeBytes: 900, state: "active_allocated" });
    b.addBlock({ address: 0x800400, sizeBytes: 2 * MiB - 1024, state: "inactive" });
    const ws = (action: string) =>
      b.addTraceEntry(0, { action, addr: 0x100000, sizeBytes: 2 * MiB, isWorkspace: true });
    b.addTraceEntry(0, { action: "segment_alloc", addr: 0x800000, sizeBytes: 2 * MiB });
    ws("workspace_snapshot");
    ws("segment_alloc");
    ws("alloc");
    b.addTraceEntry(0, { action: "alloc", addr: 0x800000, sizeBytes: 900 });
    b.addTraceEntry(0, { action: "frobnicate", addr: 0, sizeBytes: 1 });
    b.addTraceEntry(0, { action: "frobnicate", addr: 0, sizeBytes: 1 });
    const r = prepareReplay(b.finish(src), 0, { categoryCount: C });
    expect(r.check.status, r.check.detail).toBe("pass");
    expect(r.markers.workspace.map((w) => w.action)).toEqual([
      "workspace_snapshot",
      "segment_alloc",
      "alloc",
    ]);
    expect(r.initial.reservedBytes).toBe(2 * MiB);
    expect([...r.reserved]).toEqual([4, 4, 4, 4, 4, 4, 4].map((x) => x * MiB));
    expect([...r.allocated]).toEqual([0, 0, 0, 0, 1024, 1024, 1024]);
    expect(r.markers.unknownActions).toEqual([{ action: "frobnicate", count: 2, firstEvent: 5 }]);
    expect(r.hasTime).toBe(false);
    expect([...r.x]).toEqual([0, 1, 2, 3, 4, 5, 6]);
    // torch_npu rounds request + 32: 900 → 1024 (CUDA: 1024 too); 1000 → 1536 on npu
    expect(roundRequest(1000, r.rounding)).toBe(1536);
  });

  it("oom: asked for X, Y free in cached segments, largest free block Z", () => {
    const b = new ModelBuilder();
    b.addSegment({
      device: 0,
      address: 0,
      totalSizeBytes: 20 * MiB,
      allocatedSizeBytes: 12 * MiB,
      activeSizeBytes: 12 * MiB,
    });
    b.addBlock({ address: 0, sizeBytes: 6 * MiB, requestedSizeBytes: 6 * MiB, state: "active_allocated" });
    b.addBlock({ address: 6 * MiB, sizeBytes: 3 * MiB, state: "inactive" });
    b.addBlock({
      address: 9 * MiB,
      sizeBytes: 6 * MiB,
      requestedSizeBytes: 6 * MiB,
      state: "active_allocated",
    });
    b.addBlock({ address: 15 * MiB, sizeBytes: 5 * MiB, state: "inactive" });
    b.addTraceEntry(0, { action: "oom", sizeBytes: 8 * MiB, deviceFreeBytes: 100 * MiB, timeUs: 5 });
    const r = prepareReplay(b.finish(src), 0, { categoryCount: C });
    const [o] = oomSummaries(r);
    expect(o.requestedBytes).toBe(8 * MiB);
    expect(o.freeInCachedSegmentsBytes).toBe(8 * MiB);
    expect(o.largestFreeBlockBytes).toBe(5 * MiB);
    expect(o.message).toBe(
      "asked for 8.00 MiB, 8.00 MiB free in cached segments, largest free block 5.00 MiB; the device reported 100.00 MiB free (reserved 20.00 MiB, allocated 12.00 MiB)",
    );
  });

  it("markers: snapshot entries, annotation spans, compile-context and user-metadata regions", () => {
    const b = new ModelBuilder();
    b.addSegment({
      device: 0,
      address: 0,
      totalSizeBytes: 2 * MiB,
      allocatedSizeBytes: 512,
      activeSizeBytes: 512,
    });
    b.addBlock({ address: 0, sizeBytes: 512, requestedSizeBytes: 4, state: "active_allocated" });
    b.addBlock({ address: 512, sizeBytes: 2 * MiB - 512, state: "inactive" });
    b.addTraceEntry(0, {
      action: "alloc",
      addr: 0,
      sizeBytes: 4,
      timeUs: 100,
      compileContext: "N/A",
      userMetadata: "",
    });
    b.addTraceEntry(0, {
      action: "snapshot",
      addr: 0,
      sizeBytes: 512,
      timeUs: 110,
      compileContext: "FX trace",
    });
    b.addTraceEntry(0, {
      action: "annotate",
      timeUs: 115,
      compileContext: "FX trace",
      userMetadata: "step 3",
    });
    b.addTraceEntry(0, { action: "oom", sizeBytes: 1, timeUs: 120, userMetadata: "step 3" });
    b.annotations = [
      { name: "fwd", stage: "START", device: 0, timeUs: 105 },
      { name: "fwd", stage: "END", device: 0, timeUs: 118 },
      { name: "bwd", stage: "END", device: 0, timeUs: 119 },
      { name: "other device", stage: "START", device: 1, timeUs: 105 },
    ];
    const r = prepareReplay(b.finish(src), 0, { categoryCount: C });
    expect(r.markers.snapshot).toEqual([
      { eventIndex: 1, timeUs: 110, recordedActiveBytes: 512, replayedActiveBytes: 512 },
    ]);
    expect(r.markers.annotations).toEqual([
      { name: "fwd", startUs: 105, endUs: 118, startEvent: 1, endEvent: 3 },
      { name: "bwd", startUs: null, endUs: 119, startEvent: null, endEvent: 3 },
    ]);
    expect(r.markers.compileContexts).toEqual([{ text: "FX trace", startEvent: 1, endEvent: 2 }]);
    expect(r.markers.userMetadata).toEqual([{ text: "step 3", startEvent: 2, endEvent: 3 }]);
    expect(r.markers.annotate).toEqual([{ eventIndex: 2, text: "step 3" }]);
    expect(r.markers.oom.length).toBe(1);
  });

  it("markers of a trace with one user metadata throughout: one region, the rarer actions found, time kept only if every entry has one", () => {
    // (the common file: the replay reads these off the trace's counts instead of a pass of its own)
    const build = (untimed: boolean) => {
      const b = new ModelBuilder();
      b.addSegment({
        device: 0,
        address: 0,
        totalSizeBytes: 2 * MiB,
        allocatedSizeBytes: 0,
        activeSizeBytes: 0,
      });
      b.addBlock({ address: 0, sizeBytes: 2 * MiB, state: "inactive" });
      const e = (action: string, timeUs: number, extra: object = {}) =>
        b.addTraceEntry(0, { action, addr: 0, sizeBytes: 512, timeUs, userMetadata: "step 7", ...extra });
      e("alloc", 100);
      e("free_requested", 101);
      e("free_completed", 102);
      e("snapshot", 103);
      e("alloc", untimed ? Number.NaN : 104);
      e("oom", 105, { sizeBytes: 1 });
      e("free_completed", 106);
      return prepareReplay(b.finish(src), 0, { categoryCount: C });
    };
    const r = build(false);
    expect(r.markers.userMetadata).toEqual([{ text: "step 7", startEvent: 0, endEvent: 6 }]);
    expect(r.markers.compileContexts).toEqual([]);
    expect(r.markers.snapshot.map((m) => m.eventIndex)).toEqual([3]);
    expect(r.markers.oom.length).toBe(1);
    expect(r.markers.workspace).toEqual([]);
    expect(r.hasTime).toBe(true);
    expect(Array.from(r.x)).toEqual([100, 101, 102, 103, 104, 105, 106]);
    const u = build(true);
    expect(u.hasTime).toBe(false);
    expect(Array.from(u.x)).toEqual([0, 1, 2, 3, 4, 5, 6]);
  });

  it("allocations made before the trace: category from the free entry only when frees carry the alloc stack", () => {
    const build = (freeCarriesAllocStack: boolean) => {
      const b = new ModelBuilder();
      const allocStack = b.internStack([b.internFrame("train.py", 10, "forward")]);
      const freeStack = b.internStack([b.internFrame("train.py", 20, "step")]);
      b.addSegment({
        device: 0,
        address: 0,
        totalSizeBytes: 2 * MiB,
        allocatedSizeBytes: 0,
        activeSizeBytes: 0,
      });
      b.addBlock({ address: 0, sizeBytes: 2 * MiB, state: "inactive" });
      b.addTraceEntry(0, { action: "free_requested", addr: 0, sizeBytes: 512, stack: allocStack });
      b.addTraceEntry(0, { action: "free_completed", addr: 0, sizeBytes: 512, stack: allocStack });
      b.addTraceEntry(0, { action: "alloc", addr: 512, sizeBytes: 512, stack: allocStack });
      const fs = freeCarriesAllocStack ? allocStack : freeStack;
      b.addTraceEntry(0, { action: "free_requested", addr: 512, sizeBytes: 512, stack: fs });
      b.addTraceEntry(0, { action: "free_completed", addr: 512, sizeBytes: 512, stack: fs });
      const traceCategory = Uint8Array.from([3, 3, 3, 2, 2]);
      const traceSite = Int32Array.from([5, 5, 5, 9, 9]);
      return prepareReplay(b.finish(src), 0, { traceCategory, traceSite, categoryCount: C });
    };
    const own = build(false);
    expect(own.freesCarryAllocationStack).toBe(false);
    expect([own.allocations.category[0], own.allocations.site[0]]).toEqual([C - 1, SITE_BEFORE_TRACE]);
    expect(own.initial.byCategory[C - 1]).toBe(512);
    const carried = build(true);
    expect(carried.freesCarryAllocationStack).toBe(true);
    expect([carried.allocations.category[0], carried.allocations.site[0]]).toEqual([3, 5]);
  });

  it("an alloc over a live address closes the old allocation there", () => {
    const b = new ModelBuilder();
    b.addSegment({
      device: 0,
      address: 0,
      totalSizeBytes: 2 * MiB,
      allocatedSizeBytes: 1024,
      activeSizeBytes: 1024,
    });
    b.addBlock({ address: 0, sizeBytes: 1024, requestedSizeBytes: 1024, state: "active_allocated" });
    b.addBlock({ address: 1024, sizeBytes: 2 * MiB - 1024, state: "inactive" });
    b.addTraceEntry(0, { action: "alloc", addr: 0, sizeBytes: 512 });
    b.addTraceEntry(0, { action: "alloc", addr: 0, sizeBytes: 1024 });
    const r = prepareReplay(b.finish(src), 0, { categoryCount: C });
    expect(r.anomalies.allocOverLive).toBe(1);
    expect([...r.allocated]).toEqual([512, 1024]);
    expect(r.check.status, r.check.detail).toBe("pass");
    const cur = new ReplayCursor(r);
    cur.next();
    expect([...cur.live()]).toEqual([0]);
    cur.next();
    expect([...cur.live()]).toEqual([1]);
    cur.prev();
    expect([...cur.live()]).toEqual([0]);
    expect(r.allocatedByCategory[C - 1][1]).toBe(1024);
  });

  it("an empty trace is skipped, and the state before it is the snapshot", () => {
    const b = new ModelBuilder();
    b.addSegment({
      device: 0,
      address: 0,
      totalSizeBytes: 2 * MiB,
      allocatedSizeBytes: 512,
      activeSizeBytes: 512,
    });
    b.addBlock({ address: 0, sizeBytes: 512, requestedSizeBytes: 4, state: "active_allocated" });
    b.ensureDevices(1);
    const r = prepareReplay(b.finish(src), 0, { categoryCount: C });
    expect(r.check.status).toBe("skipped");
    expect(r.peakEvent).toBeNull();
    expect(r.initial.allocatedBytes).toBe(512);
    expect(liveAllocationsAt(r, -1).length).toBe(1);
    expect(() => liveAllocationsAt(r, 0)).toThrow(RangeError);
  });
});

describe("rounding", () => {
  it("round_size: 512-byte multiples, 512 minimum, power-of-two divisions when configured", () => {
    expect(roundRequest(0)).toBe(512);
    expect(roundRequest(1)).toBe(512);
    expect(roundRequest(512)).toBe(512);
    expect(roundRequest(513)).toBe(1024);
    expect(roundRequest(3 * MiB + 1)).toBe(3 * MiB + 512);
    const s = roundingSettings({ roundup_power2_divisions: { "1": 0, "2": 4, "4": 0 } });
    // [2 MiB, 4 MiB) in 4 divisions of 512 KiB: 2 MiB + 1 → 2.5 MiB
    expect(roundRequest(2 * MiB + 1, s)).toBe(2.5 * MiB);
    expect(roundRequest(1.5 * MiB + 1, s)).toBe(1.5 * MiB + 512);
    // recent torch lists all sixteen intervals, 0 where none is configured: plain 512-byte rounding
    const zeros = Object.fromEntries(Array.from({ length: 16 }, (_, i) => [String(2 ** i), 0]));
    const z = roundingSettings({ roundup_power2_divisions: zeros });
    for (const r of [1, 513, 2 * MiB + 1, 3 * 1024 * MiB + 7])
      expect(roundRequest(r, z)).toBe(Math.ceil(r / 512) * 512);
  });
  it("fitted block: unsplit remainder up to 1 MiB in the large pool", () => {
    expect(fittedBlockSize(4 * MiB, 4.5 * MiB)).toBe(4.5 * MiB);
    expect(fittedBlockSize(4 * MiB, 6 * MiB)).toBe(4 * MiB);
    expect(fittedBlockSize(4 * MiB, 3 * MiB)).toBeNaN();
    expect(fittedBlockSize(MiB, 1.5 * MiB)).toBe(MiB);
    expect(fittedBlockSize(4 * MiB, 4.5 * MiB, { ...roundingSettings(null), expandableSegments: true })).toBe(
      4 * MiB,
    );
    const split = roundingSettings({ max_split_size: 200 * MiB });
    expect(fittedBlockSize(300 * MiB, 310 * MiB, split)).toBe(310 * MiB);
  });
});

describe("report functions", () => {
  const sim = simulate({ seed: 71, events: 2000, markers: true });
  const m = simModel(sim);
  const inputs = {
    traceCategory: [m.traceCategory],
    traceSite: [m.traceSite],
    blockCategory: m.blockCategory,
    blockSite: m.blockSite,
    categoryNames: CATEGORY_NAMES,
    siteKeys: Array.from({ length: 25 }, (_, i) => `train.py:${i}:f`),
  };
  let truthPeak = 0;
  for (let i = 0; i < sim.entries.length; i++)
    truthPeak = Math.max(truthPeak, truthTotals(sim, i, C).allocated);
  const snapAllocated = Array.from(m.model.segments.allocatedSizeBytes).reduce((s, x) => s + x, 0);
  const counters = (max: number | null): CountersSidecar => ({
    memoryAllocatedBytes: snapAllocated,
    memoryReservedBytes: null,
    maxMemoryAllocatedBytes: max,
    maxMemoryReservedBytes: null,
    device: 0,
    tag: null,
    memoryStats: null,
  });

  it("peak from the trace, its composition summing exactly, the gap to the snapshot", () => {
    const rep = replayReport(m.model, inputs, null);
    expect(rep.peak?.source).toBe("trace");
    expect(rep.peak?.allocatedBytes).toBe(truthPeak);
    expect(Object.values(rep.peak?.categories ?? {}).reduce((s, x) => s + x, 0)).toBe(truthPeak);
    expect(rep.peak?.topCallSites.reduce((s, x) => s + x.bytes, 0)).toBe(truthPeak);
    expect(rep.peak?.topCallSites.length).toBeLessThanOrEqual(11);
    expect(rep.snapshotVsPeakGapBytes).toBe(truthPeak - snapAllocated);
    expect(rep.traceReplay.status).toBe("pass");
    expect(rep.timeline.events).toBe(sim.entries.length);
    expect(rep.timeline.hasTime).toBe(true);
    expect(rep.timeline.markers.snapshot).toBe(sim.entries.filter((e) => e.action === "snapshot").length);
    expect(rep.timeline.markers.oom).toBe(sim.entries.filter((e) => e.action === "oom").length);
    expect(rep.timeline.unknownActions[0]?.action).toBe("mystery_action");
    expect(JSON.parse(JSON.stringify(rep))).toEqual(rep);
  });

  it("counters: equal peak stays 'trace'; a higher max_memory_allocated means the peak fell outside the trace", () => {
    expect(replayReport(m.model, inputs, counters(truthPeak)).peak?.note).toContain(
      "equals max_memory_allocated",
    );
    const out = replayReport(m.model, inputs, counters(truthPeak + 10 * MiB));
    expect(out.peak?.source).toBe("counters");
    expect(out.peak?.allocatedBytes).toBe(truthPeak + 10 * MiB);
    expect(out.peak?.note).toContain("the true peak fell outside the recorded trace");
    expect(out.peak?.windowPeak?.allocatedBytes).toBe(truthPeak);
    expect(out.snapshotVsPeakGapBytes).toBe(truthPeak + 10 * MiB - snapAllocated);
  });

  it("counters of a device without a trace: the peak is the counters', on that device", () => {
    const rep = replayReport(m.model, inputs, { ...counters(truthPeak + MiB), device: 1 });
    expect(rep.peak?.source).toBe("counters");
    expect(rep.peak?.device).toBe(1);
    expect(rep.peak?.windowPeak).toBeNull();
    expect(rep.snapshotVsPeakGapBytes).toBe(truthPeak + MiB);
  });

  it("no trace: the check is skipped and the peak comes from the counters only", () => {
    const b = new ModelBuilder();
    b.addSegment({
      device: 0,
      address: 0,
      totalSizeBytes: 2 * MiB,
      allocatedSizeBytes: 512,
      activeSizeBytes: 512,
    });
    b.addBlock({ address: 0, sizeBytes: 512, state: "active_allocated" });
    const model = b.finish(src);
    const none = replayReport(model, { categoryNames: CATEGORY_NAMES, siteKeys: [] }, null);
    expect(none.peak).toBeNull();
    expect(none.traceReplay.status).toBe("skipped");
    const withCounters = replayReport(model, { categoryNames: CATEGORY_NAMES, siteKeys: [] }, counters(4096));
    expect(withCounters.peak?.source).toBe("counters");
    expect(withCounters.snapshotVsPeakGapBytes).toBe(4096 - 512);
  });

  it("state at an event: totals by category equal the simulation's", () => {
    const last = sim.entries.length - 1;
    for (const i of [-1, 0, 500, last]) {
      const s = stateAtReport(m.model, inputs, 0, i);
      const t = truthTotals(sim, i, C);
      expect(s.allocatedBytes).toBe(t.allocated);
      expect(s.activeBytes).toBe(t.active);
      expect(s.reservedBytes).toBe(t.reserved);
      CATEGORY_NAMES.forEach((name, c) => {
        expect(s.categories[name]).toBe(t.byCategory[c]);
      });
      expect(s.liveBlocks).toBe(truthLive(sim, i).length);
    }
    expect(() => stateAtReport(m.model, inputs, 0, last + 1)).toThrow(/outside the trace/);
    expect(() => stateAtReport(m.model, inputs, 3, 0)).toThrow(/no trace entries/);
  });
});

describe("interval lookup by page", () => {
  // The plain search written here: the largest j with bounds[j] ≤ addr < bounds[last], else -1.
  const search = (bounds: number[], addr: number) => {
    if (!(addr >= bounds[0] && addr < bounds[bounds.length - 1])) return -1;
    let j = 0;
    while (bounds[j + 1] <= addr) j++;
    return j;
  };
  const at = (bounds: number[], addr: number) =>
    intervalAt(
      {
        bounds: Float64Array.from(bounds),
        pages: intervalPages(Float64Array.from(bounds)),
      } as ReservedExtents,
      addr,
    );
  it("answers as a search of the bounds, with a table for 2 MiB-aligned bounds and without one otherwise", () => {
    const base = 0x7f0000000000;
    const aligned = [0, 2, 6, 8, 20, 22, 40].map((p) => base + p * 2 * MiB);
    expect(intervalPages(Float64Array.from(aligned))?.interval.length).toBe(40);
    const odd = [base, base + 2 * MiB + 512, base + 8 * MiB];
    expect(intervalPages(Float64Array.from(odd))).toBeNull();
    const far = [base, base + 4 * 2 ** 40];
    expect(intervalPages(Float64Array.from(far))).toBeNull();
    for (const bounds of [aligned, odd, far]) {
      const span = bounds[bounds.length - 1] - bounds[0];
      const probes = [bounds[0] - 1, Number.NaN, ...bounds, ...bounds.map((b) => b - 512)];
      for (let i = 0; i < 200; i++)
        probes.push(bounds[0] + Math.floor(((((i * 7919) % 1000) / 1000) * span) / 512) * 512);
      for (const a of probes) expect(at(bounds, a)).toBe(search(bounds, a));
    }
  });
});
