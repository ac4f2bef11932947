// `npx tsx bench/tree.bench.ts` (call-tree part of `npm run bench`): the live-memory call tree at 50 random
// events of the generated ~200 MB training-like snapshot (about 1 M trace events), built with one
// CallTreeBuilder reused for every event, as the viewer does. The first build (per-stack paths, the
// replay's checkpoints) is shown apart. Prints median and max per variant. Figures only.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import { readSnapshotFile } from "../src/cli/read-file";
import { attribute } from "../src/core/attribution";
import { mulberry32 } from "../src/core/random";
import { prepareReplay } from "../src/core/replay";
import { CallTreeBuilder, type CallTreeOptions } from "../src/core/tree";

const mb = Number(process.env.BENCH_TREE_MB ?? "200");
const dir = join(import.meta.dirname, "../.tmp/bench");
mkdirSync(dir, { recursive: true });
const file = join(dir, `big-${mb}mb.pickle`);
if (!existsSync(file))
  execFileSync("python3", ["test/gen/generate.py", "big", "--target-mb", String(mb), file], {
    stdio: ["ignore", "ignore", "inherit"],
  });

const model = await readSnapshotFile(file);
const a = attribute(model);
const d = model.traces.findIndex((t) => t.length > 0);
const replay = prepareReplay(model, d, {
  traceCategory: a.traceCategory[d],
  traceSite: a.traceSite[d],
  blockCategory: a.blockCategory,
  blockSite: a.blockSite,
  traceBefore: a.traceBefore[d],
  blockWorkspace: a.blockWorkspace,
  categoryCount: a.categoryNames.length,
});
const builder = new CallTreeBuilder(model, a);

const MIB = 1 << 20;
const time = (f: () => void) => {
  const t0 = performance.now();
  f();
  return performance.now() - t0;
};
const rand = mulberry32(12);
const events = Array.from({ length: 50 }, () => Math.floor(rand() * replay.length));
let nodes = 0;
let live = 0;
const first = time(() => {
  const t = builder.build(replay, events[0]);
  nodes = t.nodeCount;
});

console.log(
  `call tree, ${mb} MB generated file: ${replay.length.toLocaleString("en")} events, ` +
    `${model.stacks.length.toLocaleString("en")} distinct stacks, ${model.frames.length.toLocaleString("en")} frames; ` +
    `load average ${loadavg()[0].toFixed(1)}`,
);
console.log(
  `  first build (per-stack paths + the replay's checkpoints): ${first.toFixed(1)} ms, ${nodes} nodes`,
);
const variants: [string, CallTreeOptions][] = [
  ["top-down by stack", {}],
  ["bottom-up by stack", { orientation: "bottom-up" }],
  ["by module", { by: "module" }],
  ['search "adam"', { search: "adam" }],
];
for (const [name, opts] of variants) {
  const ms = events.map((e) =>
    time(() => {
      const t = builder.build(replay, e, opts);
      live = Math.max(live, t.root.blocks);
    }),
  );
  ms.sort((x, y) => x - y);
  console.log(
    `  ${name.padEnd(20)} 50 random events: median ${ms[ms.length >> 1].toFixed(2)} ms, max ${ms[ms.length - 1].toFixed(2)} ms`,
  );
}
console.log(`  (up to ${live.toLocaleString("en")} live allocated blocks at those events)`);

// Stress: the generated file has few distinct stacks. A synthetic snapshot with 20,000 distinct deep stacks
// (each a prefix of an earlier one plus a few new frames, as call trees branch) and 200,000 live blocks
// shows the other end: the cost grows with the nodes that hold memory, not with the trace.
{
  const { ModelBuilder } = await import("../src/core/model/builder");
  const STACKS = Number(process.env.BENCH_TREE_STACKS ?? "20000");
  const BLOCKS = 200_000;
  const r = mulberry32(5);
  const b = new ModelBuilder();
  const own = Array.from({ length: 400 }, (_, i) =>
    b.internFrame(`/home/u/proj/m${i % 40}.py`, 10 + i, `f${i}`),
  );
  const lib = Array.from({ length: 400 }, (_, i) =>
    b.internFrame(
      `/usr/lib/python3.11/site-packages/torch/nn/x${i % 30}.py`,
      100 + i,
      i % 7 === 0 ? "forward" : `g${i}`,
    ),
  );
  const native = Array.from({ length: 200 }, (_, i) =>
    b.internFrame("??", 0, `torch::autograd::op${i}(int)`),
  );
  const glue = b.internFrame("??", 0, "_PyEval_EvalFrameDefault");
  const pick = () => {
    const x = r();
    return x < 0.4 ? own[Math.floor(r() * own.length)] : x < 0.9 ? lib[Math.floor(r() * lib.length)] : glue;
  };
  const outer: number[][] = [];
  const stacks: number[] = [];
  let frameCount = 0;
  for (let s = 0; s < STACKS; s++) {
    const base = outer.length > 0 ? outer[Math.floor(r() * outer.length)] : [];
    const frames = base.slice(0, Math.floor(r() * (base.length + 1)));
    const tail = 1 + Math.floor(r() * 8);
    for (let k = 0; k < tail; k++) frames.push(pick());
    outer.push(frames);
    frameCount += frames.length + 2;
    stacks.push(b.internStack([native[Math.floor(r() * native.length)], glue, ...[...frames].reverse()]));
  }
  const segSize = 1 << 30;
  for (let g = 0; g < BLOCKS / 1000; g++) {
    b.addSegment({
      device: 0,
      address: g * segSize,
      totalSizeBytes: segSize,
      allocatedSizeBytes: 0,
      activeSizeBytes: 0,
    });
    for (let k = 0; k < 1000; k++) {
      b.addBlock({
        address: g * segSize + k * MIB,
        sizeBytes: 512 * (1 + Math.floor(r() * 64)),
        state: "active_allocated",
        stack: stacks[Math.floor(r() * STACKS)],
      });
    }
  }
  const m = b.finish({ fileName: "stress", byteLength: 0, format: "pickle", pickleProtocol: 4, notes: [] });
  const sb = new CallTreeBuilder(m, attribute(m));
  let n = 0;
  const cold = time(() => {
    n = sb.build(null, "snapshot").nodeCount;
  });
  const runs = (opts: CallTreeOptions) =>
    Array.from({ length: 15 }, () => time(() => sb.build(null, "snapshot", opts))).sort((x, y) => x - y);
  const down = runs({});
  const upward = runs({ orientation: "bottom-up" });
  console.log(
    `stress (synthetic snapshot): ${STACKS.toLocaleString("en")} distinct stacks (mean ${(frameCount / STACKS).toFixed(0)} frames), ` +
      `${BLOCKS.toLocaleString("en")} live blocks, ${n.toLocaleString("en")} nodes`,
  );
  console.log(`  first build ${cold.toFixed(0)} ms`);
  console.log(`  top-down  15 builds: median ${down[7].toFixed(1)} ms, max ${down[14].toFixed(1)} ms`);
  console.log(`  bottom-up 15 builds: median ${upward[7].toFixed(1)} ms, max ${upward[14].toFixed(1)} ms`);
}
