// Allocator health (src/core/health) against an independent naive replay written here: block lists per
// segment, split and merged as the caching allocator does, straight from the trace entries — on the
// generator's random-trace files and its multi-device / private-pools / oom variants. The verdicts'
// figures against the counters sidecar the generator wrote (read here as plain JSON).
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { attribute } from "../src/core/attribution/index";
import {
  fragmentationDetail,
  healthCurves,
  healthForModel,
  memoryStatsVerdicts,
  STAT_KEYS,
} from "../src/core/health/index";
import type { SnapshotModel } from "../src/core/model/types";
import { mulberry32 } from "../src/core/random";
import { prepareReplays } from "../src/core/replay/report";
import { parseCounters } from "../src/core/report/counters";
import { replayInputs } from "../src/core/report/index";
import { readPath } from "./helpers/model";
import { python } from "./helpers/python";

const MiB = 1 << 20;
const dir = mkdtempSync(join(tmpdir(), "peakscope-health-"));

interface NBlock {
  addr: number;
  size: number;
  /** 0 free, 1 allocated, 2 pending free */
  state: 0 | 1 | 2;
}
interface NSeg {
  addr: number;
  size: number;
  blocks: NBlock[];
}
interface NPending {
  addr: number;
  size: number;
  fr: number;
  fc: number | null;
}
interface Naive {
  cached: number[];
  pending: number[];
  inactiveSplit: number[];
  largestFree: number[];
  /** Per event: each segment's [address, size, freeBytes, held] (only at the sampled events). */
  segments: Map<number, [number, number, number, boolean][]>;
  pendingFrees: NPending[];
  oom: { event: number; size: number }[];
}

const round = (n: number) => Math.max(512, Math.ceil(n / 512) * 512);

/** The caching allocator's bookkeeping, replayed naively over one device's trace (recorded from the start). */
function naiveReplay(m: SnapshotModel, device: number, sample: Set<number>): Naive {
  const t = m.traces[device];
  const segs: NSeg[] = [];
  const out: Naive = {
    cached: [],
    pending: [],
    inactiveSplit: [],
    largestFree: [],
    segments: new Map(),
    pendingFrees: [],
    oom: [],
  };
  const open = new Map<number, NPending>();
  const segOf = (addr: number) => {
    const s = segs.find((x) => x.addr <= addr && addr < x.addr + x.size);
    if (!s) throw new Error(`no segment holds ${addr}`);
    return s;
  };
  for (let i = 0; i < t.length; i++) {
    const action = m.actionNames[t.action[i]];
    const addr = t.addr[i];
    const size = t.sizeBytes[i];
    if (action === "segment_alloc") segs.push({ addr, size, blocks: [{ addr, size, state: 0 }] });
    else if (action === "segment_free") {
      const k = segs.findIndex((s) => s.addr === addr);
      if (k < 0 || segs[k].blocks.some((b) => b.state !== 0)) throw new Error(`bad segment_free at ${i}`);
      segs.splice(k, 1);
    } else if (action === "alloc") {
      const s = segOf(addr);
      const j = s.blocks.findIndex((b) => b.addr === addr && b.state === 0);
      if (j < 0) throw new Error(`alloc at ${i}: no free block starts at ${addr}`);
      const b = s.blocks[j];
      const r = round(size);
      const rest = b.size - r;
      const small = r <= MiB;
      if (small ? rest >= 512 : rest > MiB) {
        s.blocks.splice(j + 1, 0, { addr: addr + r, size: rest, state: 0 });
        b.size = r;
      }
      b.state = 1;
      open.set(addr, { addr, size: b.size, fr: -1, fc: null });
    } else if (action === "free_requested") {
      const b = segOf(addr).blocks.find((x) => x.addr === addr && x.state === 1);
      if (!b) throw new Error(`free_requested at ${i}: nothing allocated at ${addr}`);
      b.state = 2;
      const p = open.get(addr);
      if (p) p.fr = i;
    } else if (action === "free_completed") {
      const s = segOf(addr);
      const j = s.blocks.findIndex((x) => x.addr === addr && x.state !== 0);
      if (j < 0) throw new Error(`free_completed at ${i}: nothing active at ${addr}`);
      s.blocks[j].state = 0;
      // merge with free neighbours
      if (j + 1 < s.blocks.length && s.blocks[j + 1].state === 0) {
        s.blocks[j].size += s.blocks[j + 1].size;
        s.blocks.splice(j + 1, 1);
      }
      if (j > 0 && s.blocks[j - 1].state === 0) {
        s.blocks[j - 1].size += s.blocks[j].size;
        s.blocks.splice(j, 1);
      }
      const p = open.get(addr);
      open.delete(addr);
      if (p && p.fr >= 0 && i - p.fr >= 2) out.pendingFrees.push({ ...p, fc: i });
    } else if (action === "oom") out.oom.push({ event: i, size });
    let allocated = 0;
    let active = 0;
    let reserved = 0;
    let split = 0;
    let largest = 0;
    const rows: [number, number, number, boolean][] = [];
    for (const s of segs) {
      reserved += s.size;
      let free = 0;
      let held = false;
      for (const b of s.blocks) {
        if (b.state === 1) allocated += b.size;
        if (b.state !== 0) {
          active += b.size;
          held = true;
        } else {
          free += b.size;
          largest = Math.max(largest, b.size);
        }
      }
      if (held) split += free;
      rows.push([s.addr, s.size, free, held]);
    }
    out.cached.push(reserved - allocated);
    out.pending.push(active - allocated);
    out.inactiveSplit.push(split);
    out.largestFree.push(largest);
    if (sample.has(i))
      out.segments.set(
        i,
        rows.sort((a, b) => a[0] - b[0]),
      );
  }
  for (const p of open.values()) if (p.fr >= 0) out.pendingFrees.push(p);
  return out;
}

const files: Record<string, string> = {};

beforeAll(() => {
  files["random-1"] = join(dir, "random-1.pickle");
  files["random-2"] = join(dir, "random-2.pickle");
  python(["test/gen/generate.py", "random-trace", "--seed", "1", "--events", "3000", files["random-1"]]);
  python(["test/gen/generate.py", "random-trace", "--seed", "2", "--events", "12000", files["random-2"]]);
  python(["test/gen/generate.py", "variants", join(dir, "variants")]);
  for (const v of ["multi-device", "private-pools", "oom"]) files[v] = join(dir, "variants", `${v}.pickle`);
  files.known = join(dir, "known.pickle");
  files.streams2 = join(dir, "known-s2.pickle");
  python(["test/gen/generate.py", "known", files.known]);
  python(["test/gen/generate.py", "known", "--streams", "2", "--moment", "step3", files.streams2]);
});

const NAIVE_FILES = ["random-1", "random-2", "multi-device", "private-pools", "oom", "streams2"];

describe("health curves == a naive replay of the trace", () => {
  for (const name of NAIVE_FILES) {
    it(`${name}: cached, pending and inactive-split at every event; fragmentation at random events`, async () => {
      const model = await readPath(files[name]);
      const health = healthForModel(model, null, { minGapUs: Number.POSITIVE_INFINITY, top: 1e9 });
      expect(health.size).toBe(model.traces.filter((t) => t.length > 0).length);
      expect(health.size).toBe(name === "multi-device" ? 2 : 1);
      for (const [device, h] of health) {
        const n = model.traces[device].length;
        const rnd = mulberry32(device * 1000 + n);
        const sample = new Set<number>([n - 1]);
        while (sample.size < Math.min(25, n)) sample.add(Math.floor(rnd() * n));
        const naive = naiveReplay(model, device, sample);
        // the summary (made without the curves' columns): each curve's first maximum and last value
        const firstMax = (xs: number[]) => {
          let b = 0;
          for (let i = 1; i < xs.length; i++) if (xs[i] > xs[b]) b = i;
          return { value: xs[b], eventIndex: b };
        };
        expect(h.summary.max, `${name} device ${device} maxima`).toEqual({
          cached: firstMax(naive.cached),
          pending: firstMax(naive.pending),
          inactiveSplit: firstMax(naive.inactiveSplit),
        });
        expect(h.summary.end).toEqual({
          cached: naive.cached[n - 1],
          pending: naive.pending[n - 1],
          inactiveSplit: naive.inactiveSplit[n - 1],
        });
        const c = h.curves;
        expect(c.length).toBe(n);
        expect(Array.from(c.cached), `${name} device ${device} cached`).toEqual(naive.cached);
        expect(Array.from(c.pending), `${name} device ${device} pending`).toEqual(naive.pending);
        expect(Array.from(c.inactiveSplit), `${name} device ${device} inactive split`).toEqual(
          naive.inactiveSplit,
        );
        expect(c.initial).toEqual({ cached: 0, pending: 0, inactiveSplit: 0, heldRegions: 0 });
        // something to see: the files do fragment and do have deferred frees
        expect(Math.max(...naive.inactiveSplit)).toBeGreaterThan(0);
        // fragmentation detail at the sampled events
        const r = prepareReplays(model, replayInputs(attribute(model))).get(device);
        if (!r) throw new Error("no replay");
        for (const i of sample) {
          const f = fragmentationDetail(r, i, { topSegments: 1e9 });
          const rows = naive.segments.get(i) ?? [];
          expect(f.largestFreeBlockBytes, `${name}@${i} largest free`).toBe(naive.largestFree[i]);
          expect(f.inactiveSplitBytes, `${name}@${i}`).toBe(naive.inactiveSplit[i]);
          expect(f.regions).toBe(rows.length);
          expect(f.heldRegions).toBe(rows.filter((x) => x[3]).length);
          const got = f.segments.map((s) => [s.address, s.sizeBytes, s.freeBytes]);
          const want = rows
            .filter((x) => x[2] > 0)
            .map((x) => [x[0], x[1], x[2]])
            .sort((a, b) => b[2] - a[2] || a[0] - b[0]);
          expect(got, `${name}@${i} free by segment`).toEqual(want);
          for (const p of f.pinned) {
            expect(p.liveBlocks).toBeGreaterThan(0);
            expect(p.blocks.length).toBeGreaterThan(0);
            for (const b of p.blocks)
              expect(b.address >= p.address && b.address < p.address + p.sizeBytes).toBe(true);
          }
        }
      }
    });
  }

  it("expandable segments: inactive split and held regions equal a naive replay of mapped pages", async () => {
    // Independent of the replay: the mapped ranges (segment_map adds, segment_unmap cuts) merged into
    // contiguous runs, and the active blocks (alloc → free_completed, exactly round_size: expandable
    // segments split exactly), recomputed from scratch after every event. A run holding an active block is
    // held; its free bytes are split. The file is recorded from its start (the generator's).
    const model = await readPath(join(dir, "variants", "expandable.pickle"));
    const r = prepareReplays(model, replayInputs(attribute(model))).get(0);
    if (!r) throw new Error("no replay");
    const c = healthCurves(r);
    expect(r.extents.expandable.some((x) => x === 1)).toBe(true);
    const t = model.traces[0];
    let mapped: [number, number][] = [];
    const active = new Map<number, number>();
    const wantSplit: number[] = [];
    const wantHeld: number[] = [];
    for (let i = 0; i < t.length; i++) {
      const action = model.actionNames[t.action[i]];
      const [a, n] = [t.addr[i], t.sizeBytes[i]];
      if (action === "segment_map") mapped.push([a, a + n]);
      else if (action === "segment_unmap")
        mapped = mapped.flatMap(([s, e]): [number, number][] =>
          e <= a || s >= a + n
            ? [[s, e]]
            : (
                [
                  [s, a],
                  [a + n, e],
                ] as [number, number][]
              ).filter(([x, y]) => y > x),
        );
      else if (action === "alloc") active.set(a, round(n));
      else if (action === "free_completed") active.delete(a);
      const runs: [number, number][] = [];
      for (const [s, e] of [...mapped].sort((x, y) => x[0] - y[0])) {
        const last = runs.at(-1);
        if (last && last[1] === s) last[1] = e;
        else runs.push([s, e]);
      }
      let split = 0;
      let held = 0;
      for (const [s, e] of runs) {
        let used = 0;
        for (const [addr, size] of active) if (addr >= s && addr < e) used += size;
        if (used > 0) {
          held++;
          split += e - s - used;
        }
      }
      wantSplit.push(split);
      wantHeld.push(held);
    }
    expect(Math.max(...wantSplit)).toBeGreaterThan(0);
    expect(Array.from(c.inactiveSplit)).toEqual(wantSplit);
    expect(Array.from(c.heldRegions)).toEqual(wantHeld);
    // and the per-event detail (fragmentationDetail) agrees at random events
    const rnd = mulberry32(7);
    for (let k = 0; k < 60; k++) {
      const i = Math.floor(rnd() * r.length);
      const f = fragmentationDetail(r, i);
      expect(f.inactiveSplitBytes, `event ${i}`).toBe(wantSplit[i]);
      expect(f.heldRegions, `event ${i}`).toBe(wantHeld[i]);
    }
  });

  it("pending frees: exactly the naive replay's deferred frees (≥ 2 events), largest gap first", async () => {
    for (const name of NAIVE_FILES) {
      const model = await readPath(files[name]);
      for (const [device, h] of healthForModel(model, null, {
        minGapUs: Number.POSITIVE_INFINITY,
        top: 1e9,
      })) {
        const naive = naiveReplay(model, device, new Set());
        const p = h.summary.pendingFrees;
        const key = (x: { addr: number; fr: number; fc: number | null; size: number }) =>
          `${x.addr}/${x.fr}/${x.fc}/${x.size}`;
        const got = p.items.map((x) =>
          key({
            addr: x.address,
            fr: x.freeRequestedEvent ?? -1,
            fc: x.freeCompletedEvent,
            size: x.sizeBytes,
          }),
        );
        expect(got.sort(), `${name} device ${device}`).toEqual(naive.pendingFrees.map(key).sort());
        expect(p.count).toBe(naive.pendingFrees.length);
        for (let k = 1; k < p.items.length; k++)
          expect(p.items[k - 1].gapEvents).toBeGreaterThanOrEqual(p.items[k].gapEvents);
        expect(p.maxPendingBytes).toBe(Math.max(0, ...naive.pending));
        if (name === "streams2") {
          // the known run's side-stream x: freed at the start of each step, completed 3 mallocs later
          expect(p.count).toBeGreaterThanOrEqual(2);
          expect(p.items.every((x) => x.sizeBytes === 2 * MiB && x.site?.includes("train.py:45"))).toBe(true);
          expect(p.items[0].meaning).toMatch(/record_stream/);
          expect(p.items[0].streamRaw).toBe(94367872345600);
        }
      }
    }
  });

  it("fragmentation at the OOM: the request against the naive replay's largest free block", async () => {
    const model = await readPath(files.oom);
    const h = healthForModel(model, null).get(0);
    const naive = naiveReplay(model, 0, new Set());
    expect(naive.oom.length).toBe(1);
    const o = h?.summary.fragmentation.ooms ?? [];
    expect(o.length).toBe(1);
    expect(o[0].eventIndex).toBe(naive.oom[0].event);
    expect(o[0].requestBytes).toBe(naive.oom[0].size);
    expect(o[0].largestFreeBlockBytes).toBe(naive.largestFree[naive.oom[0].event]);
    expect(o[0].fitsLargestFreeBlock).toBe(round(naive.oom[0].size) <= naive.largestFree[naive.oom[0].event]);
    expect(o[0].deviceFreeBytes).toEqual(expect.any(Number));
    expect(o[0].message).toMatch(/asked for/);
    const peak = h?.summary.fragmentation.peak;
    expect(peak?.kind).toBe("peak");
  });
});

describe("memory_stats verdicts", () => {
  for (const name of ["known", "streams2"]) {
    it(`${name}: every verdict's value is the sidecar's number; the curves end at the sidecar's state`, async () => {
      const text = readFileSync(`${files[name]}.counters.json`, "utf8");
      const raw = JSON.parse(text) as { memory_stats: Record<string, number> };
      const model = await readPath(files[name]);
      const h = healthForModel(model, parseCounters(text)).get(0);
      if (!h) throw new Error("no device 0");
      const v = h.summary.verdicts;
      expect(v.map((x) => x.key)).toEqual([...STAT_KEYS]);
      for (const x of v) {
        expect(x.value, x.key).toBe(raw.memory_stats[x.key]);
        expect(x.meaning.length).toBeGreaterThan(10);
        expect(x.verdict.length).toBeGreaterThan(5);
        for (const [k, n] of Object.entries(x.numbers))
          expect(n, `${x.key} uses ${k}`).toBe(raw.memory_stats[k]);
      }
      const s = raw.memory_stats;
      const end = h.summary.end;
      expect(end?.inactiveSplit).toBe(s["inactive_split_bytes.all.current"]);
      expect(end?.pending).toBe(s["active_bytes.all.current"] - s["allocated_bytes.all.current"]);
      expect(end?.cached).toBe(s["reserved_bytes.all.current"] - s["allocated_bytes.all.current"]);
      expect(s["inactive_split_bytes.all.current"]).toBeGreaterThan(0);
      const split = v.find((x) => x.key === "inactive_split_bytes.all.current");
      expect(split?.level).not.toBe("ok");
      expect(v.find((x) => x.key === "num_alloc_retries")?.level).toBe("ok");
    });
  }

  it("retries, OOMs and stream syncs get their verdicts; no sidecar gives none", () => {
    const c = parseCounters(
      JSON.stringify({
        memory_allocated: 100,
        memory_reserved: 400,
        max_memory_allocated: 300,
        max_memory_reserved: 500,
        memory_stats: { num_alloc_retries: 3, num_ooms: 1, num_sync_all_streams: 2, num_device_free: 4 },
      }),
    );
    const v = new Map(memoryStatsVerdicts(c).map((x) => [x.key, x]));
    expect(v.get("num_alloc_retries")?.verdict).toMatch(/flushed its cache 3 time\(s\).*see fragmentation/);
    expect(v.get("num_alloc_retries")?.level).toBe("warn");
    expect(v.get("num_ooms")?.level).toBe("bad");
    expect(v.get("num_sync_all_streams")?.level).toBe("warn");
    // the four byte counters come from the top-level keys when memory_stats lacks them
    expect(v.get("allocated_bytes.all.current")?.value).toBe(100);
    expect(v.get("reserved_bytes.all.peak")?.value).toBe(500);
    expect(v.get("inactive_split_bytes.all.current")?.value).toBeNull();
    expect(memoryStatsVerdicts(null)).toEqual([]);
  });
});
