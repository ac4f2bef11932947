// Replay benchmark: `npx tsx bench/replay.bench.ts [events]`. Prints figures; not a test.
// Builds a synthetic 1M-event trace (allocations of mixed sizes over a few thousand segments,
// address reuse, pending frees, segment churn, a truncated start), then times prepareReplay and
// state-at-event queries. Targets: preprocessing ≥ 5M events/s, state at any event ≤ 50 ms.

import { cpus, loadavg } from "node:os";
import v8 from "node:v8";
import vm from "node:vm";
import { ModelBuilder } from "../src/core/model/builder";
import { mulberry32 } from "../src/core/random";
import {
  compositionAt,
  fragmentationAt,
  liveAllocationsAt,
  prepareReplay,
  ReplayCursor,
  stateAt,
} from "../src/core/replay";

const N = Number(process.argv[2] ?? 1_000_000);
const MiB = 1 << 20;
const C = 7;

const rng = mulberry32;

function buildModel() {
  const rand = rng(7);
  const b = new ModelBuilder();
  // Slots: each a 32 MiB segment region holding one allocation at a time (address reuse); a live
  // set drifting between ~2k and ~12k allocations.
  const SLOTS = 16_000;
  const base = 0x7f0000000000;
  const slotAddr = (s: number) => base + s * 32 * MiB;
  const live: number[] = [];
  const liveReq = new Float64Array(SLOTS);
  const state = new Uint8Array(SLOTS); // 0 free, 1 allocated, 2 pending
  const freeSlots: number[] = [];
  for (let s = SLOTS - 1; s >= 0; s--) freeSlots.push(s);
  const pending: number[] = [];
  const stacks: number[] = [];
  for (let k = 0; k < 64; k++) {
    const f = b.internFrame(`/home/u/train.py`, 10 + k, `layer${k}`);
    stacks.push(b.internStack([f]));
  }
  // Allocations alive before the trace (their frees come early in the trace).
  for (let k = 0; k < 3000; k++) {
    const s = freeSlots.pop() as number;
    state[s] = 1;
    liveReq[s] = 4096 + Math.floor(rand() * 8 * MiB);
    live.push(s);
  }
  let t = 1_700_000_000_000_000;
  let n = 0;
  const entry = (action: string, s: number, size: number) => {
    b.addTraceEntry(0, {
      action,
      addr: slotAddr(s),
      sizeBytes: size,
      timeUs: (t += 3),
      stack: stacks[s & 63],
    });
    n++;
  };
  while (n < N) {
    const r = rand();
    const target = 7000 + 5000 * Math.sin(n / 50_000);
    if (pending.length > 0 && rand() < 0.3) {
      const s = pending.shift() as number;
      entry("free_completed", s, liveReq[s]);
      state[s] = 0;
      freeSlots.push(s);
    } else if ((r < 0.5 && live.length < target) || live.length < 10) {
      const s = freeSlots.splice(Math.floor(rand() * freeSlots.length), 1)[0];
      const req = rand() < 0.8 ? 1 + Math.floor(rand() * MiB) : MiB + Math.floor(rand() * 30 * MiB);
      liveReq[s] = req;
      state[s] = 1;
      live.push(s);
      entry("alloc", s, req);
    } else if (r < 0.995) {
      const j = Math.floor(rand() * live.length);
      const s = live[j];
      live[j] = live[live.length - 1];
      live.pop();
      entry("free_requested", s, liveReq[s]);
      if (rand() < 0.05) {
        state[s] = 2;
        pending.push(s);
      } else {
        entry("free_completed", s, liveReq[s]);
        state[s] = 0;
        freeSlots.push(s);
      }
    } else {
      b.addTraceEntry(0, {
        action: r < 0.998 ? "snapshot" : "oom",
        addr: 0,
        sizeBytes: 1000,
        timeUs: (t += 3),
      });
      n++;
    }
  }
  // Final segments: one per slot, the allocation (if any) at its start.
  const round = (x: number) => (x < 512 ? 512 : Math.ceil(x / 512) * 512);
  for (let s = 0; s < SLOTS; s++) {
    const size = state[s] ? round(liveReq[s]) : 0;
    b.addSegment({
      device: 0,
      address: slotAddr(s),
      totalSizeBytes: 32 * MiB,
      allocatedSizeBytes: state[s] === 1 ? size : 0,
      activeSizeBytes: size,
      segmentType: "large",
    });
    if (state[s]) {
      b.addBlock({
        address: slotAddr(s),
        sizeBytes: size,
        requestedSizeBytes: liveReq[s],
        state: state[s] === 1 ? "active_allocated" : "active_pending_free",
      });
    }
    b.addBlock({ address: slotAddr(s) + size, sizeBytes: 32 * MiB - size, state: "inactive" });
  }
  return b.finish({ fileName: "bench", byteLength: 0, format: "pickle", pickleProtocol: 4, notes: [] });
}

// A full GC before each timed run, so one run does not pay for collecting the previous run's arrays.
v8.setFlagsFromString("--expose-gc");
const gc = vm.runInNewContext("gc") as () => void;

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
};

console.log(
  `machine: ${cpus().length} CPUs (${cpus()[0]?.model ?? "?"}), load average ${loadavg()
    .map((x) => x.toFixed(1))
    .join(" ")} — figures scale with contention`,
);
const t0 = performance.now();
const model = buildModel();
const events = model.traces[0].length;
console.log(
  `synthetic trace: ${events.toLocaleString()} events, ${model.segments.length} segments, built in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
);
const traceCategory = new Uint8Array(events);
const traceSite = new Int32Array(events);
for (let i = 0; i < events; i++) {
  traceCategory[i] = i % C;
  traceSite[i] = i % 997;
}
const opts = { traceCategory, traceSite, categoryCount: C };

const prepTimes: number[] = [];
const prepCpu: number[] = [];
const cold = performance.now();
let r = prepareReplay(model, 0, opts);
const coldMs = performance.now() - cold;
for (let k = 0; k < 15; k++) {
  gc();
  const a = performance.now();
  const c0 = process.cpuUsage();
  r = prepareReplay(model, 0, opts);
  const c = process.cpuUsage(c0);
  prepTimes.push(performance.now() - a);
  prepCpu.push((c.user + c.system) / 1000);
}
const prepMedian = median(prepTimes);
console.log(
  `prepareReplay: median ${prepMedian.toFixed(0)} ms over 15 runs (min ${Math.min(...prepTimes).toFixed(0)}, max ${Math.max(...prepTimes).toFixed(0)}) ` +
    `= ${(((events / prepMedian) * 1000) / 1e6).toFixed(2)} M events/s (target ≥ 5)`,
);
console.log(
  `  process CPU time per run (all threads, GC helpers too): median ${median(prepCpu).toFixed(0)} ms, min ${Math.min(...prepCpu).toFixed(0)} ms` +
    ` = ${(((events / median(prepCpu)) * 1000) / 1e6).toFixed(2)} M events per CPU-second`,
);
console.log(`  first (cold, unoptimised code) call: ${coldMs.toFixed(0)} ms`);
const cpTimes: number[] = [];
for (let k = 0; k < 5; k++) {
  const fresh = prepareReplay(model, 0, opts);
  gc();
  const a = performance.now();
  void fresh.checkpoints;
  cpTimes.push(performance.now() - a);
}
console.log(
  `  + checkpoints of the live set (built on the first state query): median ${median(cpTimes).toFixed(0)} ms; ` +
    `prepare + checkpoints = ${(((events / (prepMedian + median(cpTimes))) * 1000) / 1e6).toFixed(2)} M events/s`,
);
const catTimes: number[] = [];
for (let k = 0; k < 5; k++) {
  const fresh = prepareReplay(model, 0, opts);
  gc();
  const a = performance.now();
  void fresh.allocatedByCategory;
  catTimes.push(performance.now() - a);
}
console.log(
  `  + allocatedByCategory columns (${C} categories, built on first access): median ${median(catTimes).toFixed(0)} ms`,
);
console.log(
  `  check ${r.check.status}; allocations ${r.allocations.length.toLocaleString()}; checkpoints ${r.checkpoints.length} every ${r.checkpointEvery} events; ` +
    `peak ${(r.peakAllocatedBytes / MiB).toFixed(0)} MiB at event ${r.peakEvent}`,
);

const rand = rng(3);
const picks = Array.from({ length: 200 }, () => Math.floor(rand() * events));
const measure = (name: string, f: (i: number) => unknown) => {
  const times: number[] = [];
  for (const i of picks) {
    const a = performance.now();
    f(i);
    times.push(performance.now() - a);
  }
  console.log(
    `${name}: median ${median(times).toFixed(2)} ms, max ${Math.max(...times).toFixed(2)} ms over ${picks.length} random events (target ≤ 50)`,
  );
};
let liveSum = 0;
measure("liveAllocationsAt", (i) => (liveSum += liveAllocationsAt(r, i).length));
measure("stateAt (live blocks sorted, placed in segments)", (i) => stateAt(r, i));
measure("compositionAt (by category and call site)", (i) => compositionAt(r, i, 10));
measure("fragmentationAt (largest free block)", (i) => fragmentationAt(r, i));
console.log(
  `  mean live allocations at those events: ${Math.round(liveSum / picks.length).toLocaleString()}`,
);

const cur = new ReplayCursor(r);
const a = performance.now();

while (cur.next()) {
  // step to the end
}
const fwd = performance.now() - a;
const b2 = performance.now();
while (cur.prev()) {
  // and back
}
const back = performance.now() - b2;
console.log(
  `ReplayCursor: ${events.toLocaleString()} steps forward in ${fwd.toFixed(0)} ms, back in ${back.toFixed(0)} ms ` +
    `(${((fwd * 1e6) / events).toFixed(0)} ns/step)`,
);
