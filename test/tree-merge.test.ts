// Call tree (issue 21 item 8): library runs that lead to the same own-code frame are one node, so one own
// line is never split across "torch · 17 frames" and "torch · 10 frames" branches; totals stay exact.
// Expected values: plain sums over the model's blocks / the replay's allocation table written here.

import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readSnapshotFile } from "../src/cli/read-file";
import { attribute } from "../src/core/attribution";
import { ModelBuilder } from "../src/core/model/builder";
import { prepareReplays } from "../src/core/replay/report";
import { NEVER, stackOf } from "../src/core/replay/types";
import { replayInputs } from "../src/core/report";
import { CallTreeBuilder, type CallTreeNode } from "../src/core/tree";
import { HAVE_REAL, REAL_DIR } from "./helpers/python";

const all = (n: CallTreeNode, out: CallTreeNode[] = []): CallTreeNode[] => {
  out.push(n);
  for (const c of n.children) all(c, out);
  return out;
};

/** Every node: bytes = self + Σ children. */
const sumErrors = (root: CallTreeNode) =>
  all(root)
    .filter((n) => n.bytes !== n.selfBytes + n.children.reduce((s, c) => s + c.bytes, 0))
    .map((n) => n.name);

/** Own-code names reached through two different library siblings of one parent (the split). */
const splits = (root: CallTreeNode) => {
  const out: string[] = [];
  for (const n of all(root)) {
    const via = new Map<string, string>();
    for (const lib of n.children.filter((c) => c.kind === "library")) {
      for (const g of lib.children.filter((c) => c.own)) {
        const prev = via.get(g.name);
        if (prev !== undefined && prev !== lib.key) out.push(`${n.name} › ${g.name}`);
        via.set(g.name, lib.key);
      }
    }
  }
  return out;
};

describe("library runs leading to one own-code frame merge (hand-built)", () => {
  const b = new ModelBuilder();
  const F = (file: string, line: number, name: string) => b.internFrame(file, line, name);
  const torch = (n: number) =>
    Array.from({ length: n }, (_, i) =>
      F("/usr/lib/python3.11/site-packages/torch/nn/modules/module.py", 1700 + i, "_call_impl"),
    );
  const alloc = F("/usr/lib/python3.11/site-packages/torch/functional.py", 10, "zeros_wrap");
  const fwd = F("/home/u/proj/model.py", 30, "forward");
  const main = F("/home/u/proj/train.py", 5, "main");
  // innermost first: the same own line model.py:30 reached through 2 and through 3 torch frames
  const s1 = b.internStack([alloc, fwd, ...torch(2), main]);
  const s2 = b.internStack([alloc, fwd, ...torch(3), main]);
  b.addSegment({
    device: 0,
    address: 0x10000,
    totalSizeBytes: 2 << 20,
    allocatedSizeBytes: 3072,
    activeSizeBytes: 3072,
  });
  b.addBlock({ address: 0x10000, sizeBytes: 1024, state: "active_allocated", stack: s1 });
  b.addBlock({ address: 0x10400, sizeBytes: 2048, state: "active_allocated", stack: s2 });
  b.addBlock({ address: 0x10c00, sizeBytes: (2 << 20) - 3072, state: "inactive" });
  const model = b.finish({
    fileName: "hand.pickle",
    byteLength: 0,
    format: "pickle",
    pickleProtocol: 4,
    notes: [],
  });

  it("one node `torch · 2–3 frames` under train.py:5 main, holding both blocks", () => {
    const t = new CallTreeBuilder(model, attribute(model)).build(null, "snapshot");
    expect(sumErrors(t.root)).toEqual([]);
    expect(t.root.bytes).toBe(1024 + 2048);
    const m = t.root.children.find((c) => c.name === "train.py:5 main") as CallTreeNode;
    expect(m.children.map((c) => [c.kind, c.name, c.bytes])).toEqual([
      ["library", "torch · 2–3 frames", 3072],
    ]);
    expect(m.children[0].children.map((c) => [c.name, c.bytes])).toEqual([["model.py:30 forward", 3072]]);
    // the longest run's frames to expand
    expect(m.children[0].collapsedFrames).toHaveLength(3);
    expect(splits(t.root)).toEqual([]);
  });
});

const WEDSONLIN = "Wedsonlin__assignment2-systems__medium_256_training_memory_snapshot.pickle";

describe.skipIf(!HAVE_REAL)("a real file where the split occurred (Wedsonlin training, at the peak)", () => {
  it("model.py:253 forward is one branch per caller; the root and every node stay exact", async () => {
    const model = await readSnapshotFile(join(REAL_DIR, WEDSONLIN));
    const a = attribute(model);
    const r = [...prepareReplays(model, replayInputs(a)).values()][0];
    const p = r.peakEvent as number;
    const t = new CallTreeBuilder(model, a).build(r, "peak");
    // Before the merge: "model.py:253 forward" sat under both "torch · 17 frames" and "torch · 10 frames".
    expect(splits(t.root)).toEqual([]);
    expect(sumErrors(t.root)).toEqual([]);
    // Root: Σ sizes of the allocations live after the peak event (plain, from the allocation table).
    const A = r.allocations;
    let live = 0;
    const liveIds: number[] = [];
    for (let k = 0; k < A.length; k++) {
      const f = A.freeRequestedEvent[k];
      if (A.allocEvent[k] <= p && (f === NEVER || f > p)) {
        live += A.sizeBytes[k];
        liveIds.push(k);
      }
    }
    expect(t.root.bytes).toBe(live);
    expect(live).toBe(r.peakAllocatedBytes);
    // The own line's bytes: Σ over live allocations whose stack holds model.py:253 forward (plain).
    const { offsets, frameIds } = model.stacks;
    const holds = (s: number) => {
      for (let j = offsets[s]; j < offsets[s + 1]; j++) {
        const f = frameIds[j];
        const file = model.strings[model.frames.filename[f]] ?? "";
        if (
          file.endsWith("/model.py") &&
          model.frames.line[f] === 253 &&
          model.strings[model.frames.name[f]] === "forward"
        )
          return true;
      }
      return false;
    };
    let expected = 0;
    for (const k of liveIds) if (stackOf(A, k) >= 0 && holds(stackOf(A, k))) expected += A.sizeBytes[k];
    expect(expected).toBeGreaterThan(0);
    // the topmost "model.py:253 forward" nodes hold exactly that
    const top: CallTreeNode[] = [];
    const walk = (n: CallTreeNode) => {
      if (n.name === "model.py:253 forward") top.push(n);
      else n.children.forEach(walk);
    };
    walk(t.root);
    expect(top.reduce((s, n) => s + n.bytes, 0)).toBe(expected);
    // …and each is reached through one library node whose name gives the range of runs merged into it
    const parents = all(t.root).filter((n) => n.children.some((c) => c.name === "model.py:253 forward"));
    const merged = parents.filter((n) => /· \d+–\d+ frames$/.test(n.name));
    expect(merged.length).toBeGreaterThan(0);
  });
});
