// Replay over every real snapshot with a trace (../shared/fixtures/real). Expected numbers come from an
// independent Python pass over the same pickles (below), and from a naive Map-based replay written in
// replay.test.ts — never from src/core/replay.

import { readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readSnapshotFile } from "../src/cli/read-file";
import { attribute } from "../src/core/attribution";
import {
  compositionAt,
  liveAllocationsAt,
  NEVER,
  oomSummaries,
  prepareReplay,
  replayReport,
  stateAt,
} from "../src/core/replay";
import { addressOf, requestedOf } from "../src/core/replay/types";
import { HAVE_REAL, python, REAL_DIR } from "./helpers/python";
import { naiveLive, rng } from "./replay-sim";

if (!HAVE_REAL) console.log(`replay-real: ${REAL_DIR} is absent; real-file replay tests skipped`);

// For each file and device with trace entries: what a replay must find, computed in plain Python.
const PY = `
import json, os, pickle, sys
d = sys.argv[1]
out = []
for fn in sorted(os.listdir(d)):
    if fn.endswith('.md'): continue
    snap = pickle.load(open(os.path.join(d, fn), 'rb'))
    if not isinstance(snap, dict): continue
    segs = snap.get('segments', [])
    for dev, tr in enumerate(snap.get('device_traces', [])):
        if not tr: continue
        active = {}
        alloc_size = 0
        for s in segs:
            if s['device'] != dev: continue
            alloc_size += s['allocated_size']
            a = s['address']
            for b in s['blocks']:
                ba = b.get('address', a)
                if b['state'] in ('active_allocated', 'active_pending_free'):
                    active[ba] = b
                a = ba + b['size']
        last = {}
        open_ = {}
        frees_before = 0
        for e in tr:
            act, ad = e['action'], e.get('addr')
            if act not in ('alloc', 'free_requested', 'free_completed'): continue
            last[ad] = act
            if act == 'alloc':
                open_[ad] = e['size']
            elif act == 'free_requested':
                if ad not in open_:
                    frees_before += 1
                    open_[ad] = e['size']
            else:
                if ad not in open_: frees_before += 1
                open_.pop(ad, None)
        rnd = lambda n: 512 if n < 512 else (n + 511) // 512 * 512
        only_replay = [a for a in open_ if a not in active]
        out.append({
            'file': fn, 'device': dev, 'entries': len(tr),
            'activeBlocks': len(active),
            'fromTrace': sum(1 for a in active if last.get(a) in ('alloc', 'free_requested')),
            'beforeTrace': sum(1 for a in active if a not in last),
            'freesBeforeTrace': frees_before,
            'aliveOnlyInReplay': len(only_replay),
            'aliveOnlyInReplayRounded': sum(rnd(open_[a]) for a in only_replay),
            'snapshotAllocated': alloc_size,
            'activeBlockAllocatedBytes': sum(b['size'] for b in active.values() if b['state'] == 'active_allocated'),
            'snapshotMarkers': [e['size'] for e in tr if e['action'] == 'snapshot'],
            'oom': [[e['size'], e.get('device_free')] for e in tr if e['action'] == 'oom'],
        })
print(json.dumps(out))
`;

interface PyDevice {
  file: string;
  device: number;
  entries: number;
  activeBlocks: number;
  fromTrace: number;
  beforeTrace: number;
  freesBeforeTrace: number;
  aliveOnlyInReplay: number;
  aliveOnlyInReplayRounded: number;
  snapshotAllocated: number;
  activeBlockAllocatedBytes: number;
  snapshotMarkers: number[];
  oom: [number, number | null][];
}

/** Real files whose trace cannot end in their snapshot, and why (numbers from the Python pass). */
const EXPECTED_FAILURES: Record<string, string> = {
  // torch nightly 2026 + torch.compile: 14 segment_alloc and 28 alloc but only 4 frees in the trace, while
  // every block in segments is inactive. The 24 tensors were freed after recording stopped
  // (_record_memory_history(None) before the dump): their frees are not in the trace.
  drisspg__transformer_nuggets__mini_snapshot: "24 alive after the trace but not in segments (402,720,768 B)",
  // (facebookresearch/mosaic's synthetic fixture: its segment allocated_size sums to 174,716,640 B while its
  // active blocks hold 8,704 B. The replay ends in exactly those blocks, so trace-replay passes; the segment
  // fields' disagreement is the active-total check's to report, not reported twice.)
};

const expectedFailure = (file: string) =>
  Object.entries(EXPECTED_FAILURES).find(([prefix]) => file.startsWith(prefix))?.[1] ?? null;

describe.skipIf(!HAVE_REAL)("replay of the real snapshots", () => {
  const py: PyDevice[] = HAVE_REAL ? JSON.parse(python(["-c", PY, REAL_DIR])) : [];
  const files = HAVE_REAL ? readdirSync(REAL_DIR).filter((f) => !f.endsWith(".md")) : [];

  it("the Python pass found the 16 device traces of the 14 files with trace entries", () => {
    expect(py.length).toBe(16);
    expect(new Set(py.map((p) => p.file)).size).toBe(14);
    expect(files.length).toBe(18);
  });

  for (const p of py) {
    it(`${p.file} device ${p.device}: trace-replay ${expectedFailure(p.file) ? "fails as documented" : "passes"}; end state as Python counts it`, async () => {
      const model = await readSnapshotFile(join(REAL_DIR, p.file));
      const a = attribute(model);
      const r = prepareReplay(model, p.device, {
        traceCategory: a.traceCategory[p.device],
        traceSite: a.traceSite[p.device],
        blockCategory: a.blockCategory,
        blockSite: a.blockSite,
        categoryCount: a.categoryNames.length,
      });
      expect(r.length).toBe(p.entries);
      expect(r.end.snapshotLiveBlocks).toBe(p.activeBlocks);
      expect(r.end.matchedFromTrace).toBe(p.fromTrace);
      expect(r.end.beforeTrace).toBe(p.beforeTrace);
      expect(r.anomalies.freesOfAllocationsBeforeTrace).toBe(p.freesBeforeTrace);
      expect(r.end.aliveOnlyInReplay).toBe(p.aliveOnlyInReplay);
      expect(r.end.snapshotAllocatedBytes).toBe(p.snapshotAllocated);
      const why = expectedFailure(p.file);
      if (why) {
        expect(r.check.status).toBe("fail");
        expect(r.check.detail).toContain(why);
      } else {
        expect(r.check.status, r.check.detail).toBe("pass");
        expect(r.end.replayAllocatedBytes).toBe(p.activeBlockAllocatedBytes);
        if (!p.file.startsWith("facebookresearch__mosaic")) {
          expect(r.end.replayAllocatedBytes).toBe(p.snapshotAllocated);
        }
      }
      expect(r.end.aliveOnlyInReplayBytes).toBe(p.aliveOnlyInReplayRounded);
      // The fitting rule never contradicts a block whose size the snapshot gives.
      expect(r.anomalies.fitDisagreedWithBlock).toBe(0);
      // snapshot markers hold the allocator's active bytes at the time: the replay agrees exactly.
      expect(r.markers.snapshot.map((m) => m.recordedActiveBytes)).toEqual(p.snapshotMarkers);
      for (const m of r.markers.snapshot) expect(m.replayedActiveBytes).toBe(m.recordedActiveBytes);
      expect(r.markers.oom.map((o) => [o.requestedBytes, o.deviceFreeBytes])).toEqual(p.oom);

      // State at random events equals the naive replay, both ways the live set is found (a pass over the
      // allocations until the checkpoints are built, then the checkpoints); the peak's composition sums
      // exactly.
      for (const checkpoints of [false, true]) {
        if (checkpoints) expect(r.checkpoints.length).toBeGreaterThan(0);
        expect(r.checkpointsBuilt).toBe(checkpoints);
        const rand = rng(p.entries);
        for (let n = 0; n < 25; n++) {
          const i = n === 0 ? -1 : n === 1 ? r.length - 1 : Math.floor(rand() * r.length);
          const got = new Map<number, { requested: number; pending: boolean }>();
          const A = r.allocations;
          for (const k of liveAllocationsAt(r, i)) {
            const fr = A.freeRequestedEvent[k];
            got.set(addressOf(A, k), { requested: requestedOf(A, k), pending: !(fr === NEVER || fr > i) });
          }
          expect(got).toEqual(naiveLive(model, p.device, i));
          const st = stateAt(r, i);
          expect(st.allocation.length).toBe(got.size);
        }
      }
      // Every device here has trace entries (Python counted them): there is a peak event.
      expect(r.peakEvent).not.toBeNull();
      {
        const comp = compositionAt(r, r.peakEvent as number, 10);
        expect(comp.allocatedBytes).toBe(r.peakAllocatedBytes);
        expect(comp.byCategory.reduce((s, x) => s + x, 0)).toBe(r.peakAllocatedBytes);
        expect(comp.sites.reduce((s, x) => s + x.bytes, 0)).toBe(r.peakAllocatedBytes);
      }
      // The maxima the sweep keeps (the timeline's y scale) are the columns' maxima, found plainly here.
      let allocatedMax = Number.NEGATIVE_INFINITY;
      let reservedMax = Number.NEGATIVE_INFINITY;
      for (let i = 0; i < r.length; i++) {
        allocatedMax = Math.max(allocatedMax, r.allocated[i]);
        reservedMax = Math.max(reservedMax, r.reserved[i]);
      }
      expect(r.peakAllocatedBytes).toBe(allocatedMax);
      expect(r.maxReservedBytes).toBe(reservedMax);
    });
  }

  it("oom entries: asked for X, Y free in cached segments, largest free block Z", async () => {
    const nesta = await readSnapshotFile(
      join(REAL_DIR, "Nesta-gitU__discrete_diffusion__memory_snapshot.json"),
    );
    const [o] = oomSummaries(prepareReplay(nesta, 0, { categoryCount: 7 }));
    expect(o.requestedBytes).toBe(402653184);
    expect(o.deviceFreeBytes).toBe(264634368);
    expect(o.message).toMatch(
      /^asked for 384\.00 MiB, [\d.]+ MiB free in cached segments, largest free block [\d.]+ MiB/,
    );
    expect(o.largestFreeBlockBytes).toBeLessThan(o.requestedBytes);
    expect(o.largestFreeBlockBytes).toBeLessThanOrEqual(o.freeInCachedSegmentsBytes);
  });

  it("the report over a multi-device file: one check over three traces, the peak on the biggest device", async () => {
    const model = await readSnapshotFile(
      join(REAL_DIR, "Constructor-Sun__code_location__memory_snapshot.pickle"),
    );
    const a = attribute(model);
    const rep = replayReport(
      model,
      { ...a, categoryNames: [...a.categoryNames], siteKeys: a.sites.map((s) => s.key) },
      null,
    );
    expect(rep.traceReplay.status).toBe("pass");
    expect(rep.timeline.devices.map((d) => d.events)).toEqual([6445, 596, 882]);
    expect(rep.timeline.markers.oom).toBe(1);
    expect(rep.timeline.oom[0].device).toBe(1);
    expect(rep.peak?.device).toBe(1);
    expect(Object.values(rep.peak?.categories ?? {}).reduce((s, x) => s + x, 0)).toBe(
      rep.peak?.allocatedBytes,
    );
  });
});
