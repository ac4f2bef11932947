// The live-memory call tree (src/core/tree). Every expected total is computed here independently of the
// code under test: Python's unpickler summing active_allocated blocks for the snapshot, a plain Map-based
// replay over the trace entries written below for any event, and the generator's own truth files
// (test/gen/generate.py) for the peak and the end of generated traces.

import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readSnapshotFile } from "../src/cli/read-file";
import { runTree } from "../src/cli/tree";
import { attribute } from "../src/core/attribution";
import { ModelBuilder, stackFrames } from "../src/core/model/builder";
import type { SnapshotModel } from "../src/core/model/types";
import { prepareReplay, type Replay } from "../src/core/replay";
import {
  type CallTree,
  CallTreeBuilder,
  type CallTreeDiffNode,
  type CallTreeNode,
  diffTrees,
  type RangeMeasure,
  toCsv,
  toFolded,
  toJson,
} from "../src/core/tree";
import { HAVE_REAL, python, REAL_DIR, REPO } from "./helpers/python";
import { rng } from "./replay-sim";

const GEN = join(REPO, "test/gen/generate.py");
const dir = mkdtempSync(join(tmpdir(), "peakscope-tree-"));
const MiB = 1 << 20;
const INF = Number.POSITIVE_INFINITY;

if (!HAVE_REAL) console.log(`tree: ${REAL_DIR} is absent; the real-file call-tree tests are skipped`);

// ---------------------------------------------------------------------------------------------------
// Independent oracles

/** One allocation as a plain replay of the trace entries sees it. */
interface Rec {
  addr: number;
  requested: number;
  /** Rounded block bytes (see sizeBlocks); `exact` false where only a lower bound is known. */
  size: number;
  exact: boolean;
  /** The snapshot's block when alive at the end. */
  blockSize: number | null;
  allocEvent: number; // -1: before the trace
  freeRequested: number; // INF: never; -1: before the trace
  freeCompleted: number;
}

const round512 = (n: number) => (n < 512 ? 512 : Math.ceil(n / 512) * 512);

/** A straightforward Map replay of one device's trace (no code from src/core/replay). */
function naiveAllocations(model: SnapshotModel, device: number): Rec[] {
  const t = model.traces[device];
  const all: Rec[] = [];
  const open = new Map<number, Rec>();
  const touched = new Set<number>();
  const rec = (
    addr: number,
    requested: number,
    allocEvent: number,
    freeRequested: number,
    freeCompleted: number,
  ) => {
    const r: Rec = {
      addr,
      requested,
      size: 0,
      exact: false,
      blockSize: null,
      allocEvent,
      freeRequested,
      freeCompleted,
    };
    all.push(r);
    return r;
  };
  for (let i = 0; i < t.length; i++) {
    if (t.isWorkspace[i]) continue;
    const action = model.actionNames[t.action[i]];
    if (action !== "alloc" && action !== "free_requested" && action !== "free_completed") continue;
    const addr = t.addr[i];
    if (Number.isNaN(addr)) continue;
    touched.add(addr);
    let r = open.get(addr);
    if (action === "alloc") {
      if (r) {
        // An alloc over a live address closes the old allocation.
        if (r.freeRequested === INF) r.freeRequested = i;
        r.freeCompleted = i;
      }
      open.set(addr, rec(addr, t.sizeBytes[i], i, INF, INF));
    } else if (action === "free_requested") {
      if (!r) {
        r = rec(addr, t.sizeBytes[i], -1, INF, INF);
        open.set(addr, r);
      }
      if (r.freeRequested === INF) r.freeRequested = i;
    } else if (!r) rec(addr, t.sizeBytes[i], -1, -1, i);
    else {
      if (r.freeRequested === INF) r.freeRequested = i;
      r.freeCompleted = i;
      open.delete(addr);
    }
  }
  // The snapshot's active blocks of this device: the exact size of what is alive at the end, and the
  // allocations the trace never touched (made before it, alive throughout).
  const s = model.segments;
  for (let g = 0; g < s.length; g++) {
    if (s.device[g] !== device) continue;
    for (let b = s.firstBlock[g]; b < s.firstBlock[g] + s.blockCount[g]; b++) {
      const st = model.blocks.state[b];
      if (st !== 1 && st !== 2) continue;
      const addr = model.blocks.address[b];
      const size = model.blocks.sizeBytes[b];
      const r = open.get(addr);
      if (r) r.blockSize = size;
      else if (!touched.has(addr)) rec(addr, size, -1, st === 2 ? -1 : INF, INF).blockSize = size;
    }
  }
  sizeBlocks(model, device, all);
  return all;
}

/**
 * Block sizes from the caching allocator's rules (CUDACachingAllocator.cpp), not from the replay: a block
 * alive at the end has the snapshot's size; a request ≤ 1 MiB is a small-pool block of round_size (512-byte
 * multiples, always split); expandable segments split exactly. A large block is carved from the start of
 * the free run at its address, which reaches to the next active block or the segment's end, and the rest is
 * split off only when it exceeds 1 MiB: the block is the whole run, else round_size. For a large block
 * allocated before the trace the same holds at the trace's start (every free large-pool block exceeds
 * 1 MiB); when the run leaves more than 1 MiB beyond round_size its size is unknown (a lower bound).
 */
function sizeBlocks(model: SnapshotModel, device: number, recs: Rec[]): void {
  const t = model.traces[device];
  const s = model.segments;
  let expandable = false;
  // Segments with their lifetimes: [from, to) in events; -1 = before the trace, INF = still there.
  const segs: { start: number; end: number; from: number; to: number }[] = [];
  const openSeg = new Map<number, { start: number; end: number; from: number; to: number }>();
  for (let i = 0; i < t.length; i++) {
    const action = model.actionNames[t.action[i]];
    if (action === "segment_map" || action === "segment_unmap") expandable = true;
    if (t.isWorkspace[i]) continue;
    if (action === "segment_alloc") {
      const seg = { start: t.addr[i], end: t.addr[i] + t.sizeBytes[i], from: i, to: INF };
      segs.push(seg);
      openSeg.set(t.addr[i], seg);
    } else if (action === "segment_free") {
      const seg = openSeg.get(t.addr[i]);
      if (seg) {
        seg.to = i;
        openSeg.delete(t.addr[i]);
      } else segs.push({ start: t.addr[i], end: t.addr[i] + t.sizeBytes[i], from: -1, to: i });
    }
  }
  for (let g = 0; g < s.length; g++) {
    if (s.device[g] !== device) continue;
    if (s.isExpandable[g]) expandable = true;
    if (!openSeg.has(s.address[g])) {
      segs.push({ start: s.address[g], end: s.address[g] + s.totalSizeBytes[g], from: -1, to: INF });
    }
  }
  // Allocations by address, for "the next active block after this address".
  const byAddr = new Map<number, Rec[]>();
  for (const r of recs) {
    const list = byAddr.get(r.addr);
    if (list) list.push(r);
    else byAddr.set(r.addr, [r]);
  }
  const addrs = [...byAddr.keys()].sort((x, y) => x - y);
  const activeAfter = (r: Rec, e: number) => r.allocEvent <= e && r.freeCompleted > e;
  /** The free run at addr just before event `at` (−1: at the trace's start), or null. */
  const runAt = (addr: number, at: number, self: Rec): number | null => {
    const seg = segs.find((g) => g.start <= addr && addr < g.end && g.from < at && g.to >= at);
    if (!seg) return null;
    let lo = 0;
    let hi = addrs.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (addrs[mid] <= addr) lo = mid + 1;
      else hi = mid;
    }
    for (let j = lo; j < addrs.length && addrs[j] < seg.end; j++) {
      if ((byAddr.get(addrs[j]) as Rec[]).some((r) => r !== self && activeAfter(r, at - 1)))
        return addrs[j] - addr;
    }
    return seg.end - addr;
  };
  for (const r of recs) {
    const rounded = round512(r.requested);
    if (r.blockSize !== null) [r.size, r.exact] = [r.blockSize, true];
    else if (rounded <= MiB || expandable) [r.size, r.exact] = [rounded, true];
    else {
      const at = Math.max(r.allocEvent, 0);
      const run = runAt(r.addr, at, r);
      if (run === null || run < rounded) [r.size, r.exact] = [rounded, false];
      else if (run - rounded <= MiB) [r.size, r.exact] = [run, true];
      else [r.size, r.exact] = [rounded, r.allocEvent >= 0];
    }
  }
}

/** Allocated after event i: bytes, count, and how many are lower bounds (up to 1 MiB more unsplit). */
function naiveAllocatedAt(recs: Rec[], i: number) {
  let bytes = 0;
  let count = 0;
  let inexact = 0;
  for (const r of recs) {
    if (r.allocEvent > i || r.freeRequested <= i) continue;
    count++;
    bytes += r.size;
    if (!r.exact) inexact++;
  }
  return { bytes, count, inexact };
}

/** Python: Σ active_allocated block sizes per file (all devices and per device), and the bytes of blocks
 * whose frames mention "optimizer.py" (as `filename:line:name`, case-insensitive). */
const PY_SNAPSHOT = `
import json, os, pickle, sys
d = sys.argv[1]
out = {}
for fn in sorted(os.listdir(d)):
    if fn.endswith('.md'): continue
    p = os.path.join(d, fn)
    try:
        snap = pickle.load(open(p, 'rb'))
    except Exception:
        snap = json.load(open(p))
    segs = snap if isinstance(snap, list) else snap.get('segments', [])
    total = count = opt = 0
    by_dev = {}
    for s in segs:
        for b in s['blocks']:
            if b['state'] != 'active_allocated': continue
            total += b['size']; count += 1
            dev = str(s.get('device', 0))
            by_dev[dev] = by_dev.get(dev, 0) + b['size']
            frames = b.get('frames') or []
            if any('optimizer.py' in ('%s:%s:%s' % (f['filename'], f['line'], f['name'])).lower() for f in frames):
                opt += b['size']
    out[fn] = {'total': total, 'count': count, 'byDevice': by_dev, 'optimizerPy': opt}
print(json.dumps(out))
`;

// ---------------------------------------------------------------------------------------------------
// Structural checks

/** Every node = self + Σ children; categories sum to the node; children sorted; keys unique; the folded
 * output sums to the root. Returns the problems found (empty when none). */
function problems(tree: CallTree): string[] {
  const out: string[] = [];
  const keys = new Set<string>();
  const walk = (n: CallTreeNode, path: string) => {
    if (keys.has(n.key)) out.push(`${path}: duplicate key ${n.key}`);
    keys.add(n.key);
    let sum = 0;
    let blocks = 0;
    for (let i = 0; i < n.children.length; i++) {
      sum += n.children[i].bytes;
      blocks += n.children[i].blocks;
      if (i > 0 && n.children[i].bytes > n.children[i - 1].bytes) out.push(`${path}: children not sorted`);
    }
    if (n.bytes !== n.selfBytes + sum)
      out.push(`${path}: ${n.bytes} ≠ self ${n.selfBytes} + children ${sum}`);
    if (n.blocks < blocks) out.push(`${path}: ${n.blocks} blocks < children's ${blocks}`);
    const cats = n.byCategory.reduce((s, x) => s + x, 0);
    if (cats !== n.bytes) out.push(`${path}: categories ${cats} ≠ ${n.bytes}`);
    if (n !== tree.root && (n.bytes <= 0 || n.blocks <= 0)) out.push(`${path}: empty node`);
    for (const c of n.children) walk(c, `${path} › ${c.name}`);
  };
  walk(tree.root, "root");
  if (tree.root.bytes + tree.hiddenBytes !== tree.totalBytes) {
    out.push(`root ${tree.root.bytes} + hidden ${tree.hiddenBytes} ≠ total ${tree.totalBytes}`);
  }
  const folded = foldedSum(toFolded(tree));
  if (folded !== tree.root.bytes) out.push(`folded sums to ${folded}, root ${tree.root.bytes}`);
  if (tree.nodeCount !== keys.size) out.push(`nodeCount ${tree.nodeCount} ≠ ${keys.size} nodes`);
  return out;
}

function foldedSum(text: string): number {
  let sum = 0;
  for (const line of text.split("\n")) {
    if (!line) continue;
    const m = / (\d+)$/.exec(line);
    if (!m) throw new Error(`bad folded line: ${line}`);
    sum += Number(m[1]);
  }
  return sum;
}

/** Folded lines as path → bytes, optionally with each path reversed. */
function foldedMap(text: string, reverse = false): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (!line) continue;
    const cut = line.lastIndexOf(" ");
    let path = line.slice(0, cut);
    if (reverse) path = path.split(";").reverse().join(";");
    out.set(path, (out.get(path) ?? 0) + Number(line.slice(cut + 1)));
  }
  return out;
}

function replayOf(model: SnapshotModel, a: ReturnType<typeof attribute>, d: number): Replay {
  return prepareReplay(model, d, {
    traceCategory: a.traceCategory[d],
    traceSite: a.traceSite[d],
    blockCategory: a.blockCategory,
    blockSite: a.blockSite,
    traceBefore: a.traceBefore[d],
    blockWorkspace: a.blockWorkspace,
    categoryCount: a.categoryNames.length,
  });
}

const allocatedColumn = (r: Replay, i: number) => (i < 0 ? r.initial.allocatedBytes : r.allocated[i]);

/** The tree after event i equals the independent replay (exactly where every live block's size is known
 * or small; within the allocator's ≤ 1 MiB unsplit remainder per large block otherwise) and the replay's
 * own allocated column exactly. */
function checkEvent(model: SnapshotModel, b: CallTreeBuilder, r: Replay, recs: Rec[], i: number): string[] {
  const tree = b.build(r, i);
  const out = problems(tree).map((p) => `event ${i}: ${p}`);
  const naive = naiveAllocatedAt(recs, i);
  const where = `${model.source.fileName} device ${r.device} event ${i}`;
  if (tree.root.bytes !== allocatedColumn(r, i)) {
    out.push(`${where}: root ${tree.root.bytes} ≠ replay.allocated ${allocatedColumn(r, i)}`);
  }
  if (tree.root.blocks !== naive.count)
    out.push(`${where}: ${tree.root.blocks} blocks, naive ${naive.count}`);
  if (naive.inexact === 0) {
    if (tree.root.bytes !== naive.bytes) out.push(`${where}: root ${tree.root.bytes} ≠ naive ${naive.bytes}`);
  } else if (tree.root.bytes < naive.bytes || tree.root.bytes > naive.bytes + naive.inexact * MiB) {
    out.push(`${where}: root ${tree.root.bytes} outside naive [${naive.bytes}, +${naive.inexact} MiB]`);
  }
  // Categories agree with the replay's per-category columns.
  if (i >= 0) {
    for (let c = 0; c < r.categoryCount; c++) {
      if (tree.root.byCategory[c] !== r.allocatedByCategory[c][i]) {
        out.push(`${where}: category ${c} ${tree.root.byCategory[c]} ≠ ${r.allocatedByCategory[c][i]}`);
      }
    }
  }
  return out;
}

function find(n: CallTreeNode, pred: (n: CallTreeNode) => boolean): CallTreeNode[] {
  const out: CallTreeNode[] = [];
  const walk = (x: CallTreeNode) => {
    if (pred(x)) out.push(x);
    for (const c of x.children) walk(c);
  };
  walk(n);
  return out;
}

/** Bytes of the topmost matching nodes (no matching ancestor). */
function topmostMatchBytes(n: CallTreeNode): number {
  if (n.match) return n.bytes;
  return n.children.reduce((s, c) => s + topmostMatchBytes(c), 0);
}

// ---------------------------------------------------------------------------------------------------

describe("frames as people read them (a hand-built model)", () => {
  const b = new ModelBuilder();
  const F = (file: string, line: number, name: string) => b.internFrame(file, line, name);
  const glue = F("??", 0, "_PyEval_EvalFrameDefault");
  const recurse = F("/home/u/proj/model.py", 20, "recurse");
  // Innermost first.
  const deep = b.internStack([
    F("??", 0, "torch::unwind::unwind()"),
    F(
      "CUDACachingAllocator.cpp",
      0,
      "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(int)",
    ),
    F("??", 0, "at::native::empty_cuda(c10::ArrayRef<long>)"),
    F("python_torch_functions_0.cpp", 0, "torch::autograd::THPVariable_zeros(_object*, _object*, _object*)"),
    F("/usr/lib/python3.11/site-packages/torch/functional.py", 10, "zeros_wrap"),
    glue,
    recurse,
    glue,
    recurse,
    glue,
    recurse,
    glue,
    recurse,
    glue,
    F("/home/u/proj/model.py", 30, "forward"),
    glue,
    F("/usr/lib/python3.11/site-packages/torch/nn/modules/module.py", 1773, "_call_impl"),
    glue,
    F("/home/u/proj/train.py", 5, "main"),
    glue,
    F("??", 0, "Py_RunMain"),
    F("??", 0, "_start"),
  ]);
  const onlyMachinery = b.internStack([F("??", 0, "torch::unwind::unwind()"), F("??", 0, "_start")]);
  b.addSegment({
    device: 0,
    address: 0x10000,
    totalSizeBytes: 2 * MiB,
    allocatedSizeBytes: 7680,
    activeSizeBytes: 8192,
  });
  b.addBlock({ address: 0x10000, sizeBytes: 1024, state: "active_allocated", stack: deep });
  b.addBlock({ address: 0x10400, sizeBytes: 2048, state: "active_allocated", stack: deep });
  b.addBlock({ address: 0x10c00, sizeBytes: 512, state: "active_allocated", stack: onlyMachinery });
  b.addBlock({ address: 0x10e00, sizeBytes: 4096, state: "active_allocated" });
  b.addBlock({ address: 0x11e00, sizeBytes: 512, state: "active_pending_free", stack: deep });
  b.addBlock({ address: 0x12000, sizeBytes: 2 * MiB - 0x2000, state: "inactive" });
  const model = b.finish({
    fileName: "hand.pickle",
    byteLength: 0,
    format: "pickle",
    pickleProtocol: 4,
    notes: [],
  });
  const a = attribute(model);
  const builder = new CallTreeBuilder(model, a);
  const names = (n: CallTreeNode): string[] =>
    n.children[0] ? [n.children[0].name, ...names(n.children[0])] : [];
  const pathTo = (root: CallTreeNode, first: string) => {
    const top = root.children.find((c) => c.name === first);
    return top ? [top.name, ...names(top)] : [];
  };

  it("drops machinery and plumbing, collapses library runs, folds recursion, keeps own code", () => {
    const t = builder.build(null, "snapshot");
    expect(problems(t)).toEqual([]);
    expect(t.totalBytes).toBe(1024 + 2048 + 512 + 4096);
    expect(t.root.blocks).toBe(4);
    expect(pathTo(t.root, "train.py:5 main")).toEqual([
      "train.py:5 main",
      "torch · 1 frame",
      "model.py:30 forward",
      "model.py:20 recurse <repeats 4 times>",
      "torch · 2 frames",
    ]);
    const main = t.root.children.find((c) => c.name === "train.py:5 main") as CallTreeNode;
    expect(main.own).toBe(true);
    expect(main.bytes).toBe(3072);
    expect(main.blocks).toBe(2);
    const hop = main.children[0];
    expect(hop.kind).toBe("library");
    expect(hop.own).toBe(false);
    expect(hop.detail).toBe("module.py:1773 _call_impl");
    // CPython's _PyEval_ frames are noise (isNoiseFrame): hidden, not counted
    expect(hop.collapsedFrames).toEqual(["module.py:1773 _call_impl"]);
    const rep = find(t.root, (n) => n.kind === "repeat")[0];
    expect(rep.own).toBe(true);
    expect(rep.frame).toEqual({ filename: "/home/u/proj/model.py", line: 20, name: "recurse" });
    const leaf = rep.children[0];
    expect(leaf.selfBytes).toBe(3072);
    expect(leaf.detail).toBe("functional.py:10 zeros_wrap");
    expect(leaf.collapsedFrames).toEqual([
      "functional.py:10 zeros_wrap",
      "torch::autograd::THPVariable_zeros",
    ]);
    // No-stack memory under one node per reason, then per category; the machinery-only stack at its site.
    const none = t.root.children.find((c) => c.kind === "no-stack") as CallTreeNode;
    expect(none.name).toBe("no stack recorded");
    expect(none.bytes).toBe(4096);
    expect(none.children.map((c) => [c.kind, c.name, c.bytes])).toEqual([["category", "unknown", 4096]]);
    const site = t.root.children.find((c) => c.kind === "site") as CallTreeNode;
    expect(site.bytes).toBe(512);
  });

  it("bottom-up starts at the allocation site; module roll-up keeps forward frames; filters", () => {
    const up = builder.build(null, "snapshot", { orientation: "bottom-up" });
    expect(problems(up)).toEqual([]);
    expect(pathTo(up.root, "torch · 2 frames")).toEqual([
      "torch · 2 frames",
      "model.py:20 recurse <repeats 4 times>",
      "model.py:30 forward",
      "torch · 1 frame",
      "train.py:5 main",
    ]);

    const mod = builder.build(null, "snapshot", { by: "module" });
    expect(problems(mod)).toEqual([]);
    expect(mod.root.children.find((c) => c.name === "model.py:30 forward")?.bytes).toBe(3072);
    const outside = mod.root.children.find((c) => c.kind === "outside") as CallTreeNode;
    expect(outside.bytes).toBe(512);

    const hide = builder.build(null, "snapshot", { hideLibrary: true });
    expect(problems(hide)).toEqual([]);
    expect(pathTo(hide.root, "train.py:5 main")).toEqual([
      "train.py:5 main",
      "model.py:30 forward",
      "model.py:20 recurse <repeats 4 times>",
    ]);
    expect(hide.root.bytes).toBe(7680);

    const own = builder.build(null, "snapshot", { ownCodeOnly: true });
    expect(problems(own)).toEqual([]);
    expect(own.root.bytes).toBe(3072);
    expect(own.hiddenBytes).toBe(4608);
    expect(own.totalBytes).toBe(7680);
  });

  it("search matches every frame of a stack (dropped ones too); groups partition the root", () => {
    const s = builder.build(null, "snapshot", { search: "ZEROS_wrap" });
    expect(s.matchBytes).toBe(3072);
    expect(s.matchKeys.length).toBe(1);
    expect(topmostMatchBytes(s.root)).toBe(3072);
    const dropped = builder.build(null, "snapshot", { search: "/^\\?\\?:0:torch::unwind/" });
    expect(dropped.matchBytes).toBe(3072 + 512);
    const g = builder.build(null, "snapshot", { groups: { rec: "recurse", start: "_start" } });
    expect(problems(g)).toEqual([]);
    expect(g.root.children.map((c) => [c.name, c.bytes])).toEqual([
      ["(no group)", 4096],
      ["rec", 3072],
      ["start", 512],
    ]);
  });

  it("keys are stable across builds and builders; diff is B − A per key", () => {
    const t1 = builder.build(null, "snapshot");
    const t2 = new CallTreeBuilder(model, attribute(model)).build(null, "snapshot");
    const keys = (t: CallTree) => find(t.root, () => true).map((n) => `${n.key} ${n.name} ${n.bytes}`);
    expect(keys(t2)).toEqual(keys(t1));
    const own = builder.build(null, "snapshot", { ownCodeOnly: true });
    const d = diffTrees(t1, own);
    expect(d.deltaBytes).toBe(-4608);
    const none = d.children.find((c) => c.kind === "no-stack") as CallTreeDiffNode;
    expect([none.bytesA, none.bytesB, none.deltaBytes]).toEqual([4096, 0, -4096]);
    expect(diffTrees(t1, t1).deltaBytes).toBe(0);
  });

  it("exports: JSON with exactly device/event/totalBytes/root, folded, CSV", () => {
    const t = builder.build(null, "snapshot");
    const j = toJson(t);
    expect(Object.keys(j)).toEqual(["device", "event", "totalBytes", "root"]);
    expect(j).toMatchObject({ device: null, event: null, totalBytes: 7680 });
    for (const k of ["name", "bytes", "selfBytes", "blocks", "children"]) expect(j.root).toHaveProperty(k);
    expect(JSON.parse(JSON.stringify(j)).root.bytes).toBe(7680);
    expect(foldedSum(toFolded(t))).toBe(7680);
    for (const line of toFolded(t).trim().split("\n")) expect(line).toMatch(/^[^;]+(;[^;]+)* \d+$/);
    const csv = toCsv(t).trim().split("\n");
    expect(csv[0]).toBe(`depth,key,kind,name,detail,own,bytes,selfBytes,blocks,${a.categoryNames.join(",")}`);
    expect(csv.length).toBe(t.nodeCount + 1);
    const depth1 = csv.slice(1).filter((r) => r.startsWith("1,"));
    expect(depth1.length).toBe(t.root.children.length);
  });

  it("is pure: no DOM, no fs, no Node built-ins in src/core/tree", () => {
    const src = join(REPO, "src/core/tree");
    for (const f of readdirSync(src).filter((x) => x.endsWith(".ts"))) {
      const text = readFileSync(join(src, f), "utf8");
      expect(text, f).not.toMatch(/from "node:|require\(|\bdocument\.|\bwindow\.|from "\.\.\/\.\.\/cli/);
    }
  });
});

describe("generated traces (generate.py)", () => {
  it("known run: snapshot, peak and every event equal the truth / the plain replay", async () => {
    const out = join(dir, "known.pickle");
    python([GEN, "known", out]);
    const truth = JSON.parse(readFileSync(`${out}.truth.json`, "utf8"));
    const model = await readSnapshotFile(out);
    const a = attribute(model);
    const r = replayOf(model, a, 0);
    const b = new CallTreeBuilder(model, a);
    const snap = b.build(null, "snapshot");
    expect(problems(snap)).toEqual([]);
    expect(snap.root.bytes).toBe(truth.snapshot.allocatedBytes);
    const peak = b.build(r, "peak");
    expect(problems(peak)).toEqual([]);
    expect(peak.event).toBe(truth.peak.eventIndex);
    expect(peak.root.bytes).toBe(truth.peak.allocatedBytes);
    const recs = naiveAllocations(model, 0);
    const errs: string[] = [];
    for (let i = -1; i < r.length; i++) errs.push(...checkEvent(model, b, r, recs, i));
    expect(errs).toEqual([]);
    // The last event is the snapshot's state.
    expect(b.build(r, r.length - 1).root.bytes).toBe(truth.snapshot.allocatedBytes);

    // Bottom-up holds the same paths reversed (no-stack paths keep their order), in every view.
    for (const by of ["stack", "module"] as const) {
      const down = b.build(r, "peak", { by });
      const up = b.build(r, "peak", { by, orientation: "bottom-up" });
      expect(problems(up)).toEqual([]);
      expect(up.root.bytes).toBe(truth.peak.allocatedBytes);
      expect(foldedMap(toFolded(up), true)).toEqual(foldedMap(toFolded(down)));
    }
    // Compare: peak − snapshot per key.
    const d = diffTrees(snap, peak);
    expect(d.deltaBytes).toBe(truth.peak.allocatedBytes - truth.snapshot.allocatedBytes);
    const checkDiff = (n: CallTreeDiffNode) => {
      expect(n.deltaBytes).toBe(n.bytesB - n.bytesA);
      const sum = n.children.reduce((s, c) => s + c.deltaBytes, 0);
      expect(n.deltaBytes).toBe(n.selfBytesB - n.selfBytesA + sum);
      n.children.forEach(checkDiff);
    };
    checkDiff(d);
  });

  it("known run: range measures (live-at-end, allocated-in, freed-in) equal a plain count of the trace", async () => {
    const out = join(dir, "known-range.pickle");
    python([GEN, "known", out]);
    const model = await readSnapshotFile(out);
    const a = attribute(model);
    const r = replayOf(model, a, 0);
    const b = new CallTreeBuilder(model, a);
    const recs = naiveAllocations(model, 0);
    // The plain rule per measure, over the allocations the trace entries describe.
    const counts: Record<RangeMeasure, (x: Rec, from: number, to: number) => boolean> = {
      "live-at-end": (x, from, to) => x.allocEvent >= from && x.allocEvent <= to && x.freeRequested > to,
      "allocated-in": (x, from, to) => x.allocEvent >= from && x.allocEvent <= to,
      "freed-in": (x, from, to) => x.allocEvent <= to && x.freeRequested >= from && x.freeRequested <= to,
    };
    const n = r.length;
    const ranges: [number, number][] = [
      [0, n - 1],
      [0, 0],
      [Math.floor(n / 4), Math.floor(n / 2)],
      [Math.floor(n / 3), Math.floor((2 * n) / 3)],
      [Math.floor(n / 2), n - 1],
      [n - 1, n - 1],
    ];
    const errs: string[] = [];
    let nonEmpty = 0;
    for (const [from, to] of ranges) {
      const byMeasure: Record<string, number> = {};
      for (const measure of Object.keys(counts) as RangeMeasure[]) {
        let bytes = 0;
        let blocks = 0;
        let inexact = 0;
        for (const x of recs) {
          if (!counts[measure](x, from, to)) continue;
          bytes += x.size;
          blocks++;
          if (!x.exact) inexact++;
        }
        const tree = b.build(r, "snapshot", { range: { from, to, measure } });
        const where = `${measure} ${from}..${to}`;
        errs.push(...problems(tree).map((p) => `${where}: ${p}`));
        if (tree.range?.from !== from || tree.range?.to !== to || tree.event !== to)
          errs.push(`${where}: range ${JSON.stringify(tree.range)}, event ${tree.event}`);
        if (tree.totalBlocks !== blocks) errs.push(`${where}: ${tree.totalBlocks} blocks, plain ${blocks}`);
        const over = tree.totalBytes - bytes;
        if (inexact === 0 ? over !== 0 : over < 0 || over > inexact * MiB)
          errs.push(`${where}: ${tree.totalBytes} bytes, plain ${bytes} (${inexact} lower bounds)`);
        byMeasure[measure] = tree.totalBytes;
        if (tree.totalBytes > 0) nonEmpty++;
        // The tree's own code paths: the same measure with a group and bottom-up keeps every byte.
        const g = b.build(r, "snapshot", {
          range: { from, to, measure },
          orientation: "bottom-up",
          groups: { adam: "adam\\.py" },
        });
        if (g.root.bytes !== tree.root.bytes)
          errs.push(`${where}: grouped ${g.root.bytes} ≠ ${tree.root.bytes}`);
      }
      if (byMeasure["live-at-end"] > byMeasure["allocated-in"])
        errs.push(`${from}..${to}: live-at-end > allocated-in`);
    }
    expect(errs).toEqual([]);
    expect(nonEmpty).toBeGreaterThan(6);
    // The whole trace live at its end, plus what was there before the trace and is still live, is the end.
    const whole = b.build(r, "snapshot", { range: { from: 0, to: n - 1, measure: "live-at-end" } });
    const before = recs
      .filter((x) => x.allocEvent < 0 && x.freeRequested > n - 1)
      .reduce((s2, x) => s2 + x.size, 0);
    expect(whole.totalBytes + before).toBe(allocatedColumn(r, n - 1));
    // Out-of-order or out-of-trace ends are clamped.
    expect(b.build(r, "snapshot", { range: { from: n + 5, to: -3, measure: "allocated-in" } }).range).toEqual(
      {
        from: 0,
        to: n - 1,
        measure: "allocated-in",
      },
    );
    expect(() => b.build(null, "snapshot", { range: { from: 0, to: 1, measure: "freed-in" } })).toThrow(
      RangeError,
    );
  });

  it("known run: module roll-up puts the forward's activations under forward frames", async () => {
    const out = join(dir, "known-module.pickle");
    python([GEN, "known", out]);
    const model = await readSnapshotFile(out);
    const a = attribute(model);
    const r = replayOf(model, a, 0);
    const t = model.traces[0];
    const frameNames = (s: number) => stackFrames(model, s).map((f) => f.name);
    // The moment just before step 1's backward: the first allocation under autograd's _make_grads.
    let backward = -1;
    for (let i = 0; i < t.length && backward < 0; i++)
      if (frameNames(t.stack[i]).includes("_make_grads")) backward = i;
    expect(backward).toBeGreaterThan(0);
    const e = backward - 1;
    // Independently: live allocations whose alloc entry's stack has a frame named forward.
    const recs = naiveAllocations(model, 0);
    let forwardBytes = 0;
    for (const rec of recs) {
      if (rec.allocEvent < 0 || rec.allocEvent > e || rec.freeRequested <= e) continue;
      if (frameNames(t.stack[rec.allocEvent]).includes("forward")) forwardBytes += rec.size;
    }
    // h1 and h2, the Linear outputs (512 × 2048 bf16 = 2 MiB each) saved for the backward; h3 died at once.
    expect(forwardBytes).toBe(2 * 2 * MiB);
    const tree = callTree(model, a, r, e, "module");
    expect(problems(tree)).toEqual([]);
    const fwd = tree.root.children.filter((c) => c.kind === "frame");
    expect(fwd.length).toBeGreaterThan(0);
    expect(fwd.reduce((s, c) => s + c.bytes, 0)).toBe(forwardBytes);
    for (const n of fwd) {
      for (const x of find(n, () => true)) expect(x.name).toMatch(/ forward$/);
      const act = a.categoryNames.indexOf("activations");
      expect(n.byCategory[act]).toBe(n.bytes);
    }
    // The nesting: Sequential's forward › Linear's forward (both torch.nn, not own code).
    expect(fwd[0].children[0]?.name).toMatch(/^linear\.py:\d+ forward$/);
    expect(fwd[0].name).toMatch(/^container\.py:\d+ forward$/);
    const outside = tree.root.children.find((c) => c.kind === "outside") as CallTreeNode;
    expect(outside.bytes).toBe(tree.root.bytes - forwardBytes);
  });

  for (const seed of [1, 2, 3]) {
    it(`random-trace seed ${seed}: peak and end equal the truth, random events the plain replay`, async () => {
      const out = join(dir, `random-${seed}.pickle`);
      python([GEN, "random-trace", "--seed", String(seed), "--events", "3000", out]);
      const truth = JSON.parse(readFileSync(`${out}.truth.json`, "utf8"));
      const model = await readSnapshotFile(out);
      const a = attribute(model);
      const r = replayOf(model, a, 0);
      const b = new CallTreeBuilder(model, a);
      const peak = b.build(r, "peak");
      expect(problems(peak)).toEqual([]);
      expect(peak.event).toBe(truth.peak.eventIndex);
      expect(peak.root.bytes).toBe(truth.peak.allocatedBytes);
      expect(b.build(r, r.length - 1).root.bytes).toBe(truth.finalAllocatedBytes);
      expect(b.build(null, "snapshot").root.bytes).toBe(truth.finalAllocatedBytes);
      const recs = naiveAllocations(model, 0);
      const rand = rng(seed * 7919);
      const errs: string[] = [];
      for (let n = 0; n < 40; n++) errs.push(...checkEvent(model, b, r, recs, Math.floor(rand() * r.length)));
      errs.push(...checkEvent(model, b, r, recs, -1));
      expect(errs).toEqual([]);
    });
  }
});

function callTree(
  model: SnapshotModel,
  a: ReturnType<typeof attribute>,
  r: Replay,
  at: number,
  by: "stack" | "module",
) {
  return new CallTreeBuilder(model, a).build(r, at, { by });
}

describe.skipIf(!HAVE_REAL)("the real snapshots", () => {
  const py: Record<
    string,
    { total: number; count: number; byDevice: Record<string, number>; optimizerPy: number }
  > = HAVE_REAL ? JSON.parse(python(["-c", PY_SNAPSHOT, REAL_DIR])) : {};
  const files = HAVE_REAL ? readdirSync(REAL_DIR).filter((f) => !f.endsWith(".md")) : [];

  it("Python read all 18 files", () => {
    expect(Object.keys(py).sort()).toEqual([...files].sort());
    expect(files.length).toBe(18);
  });

  for (const file of files) {
    it(`${file}: snapshot = Σ active_allocated (Python); every traced device at its start, peak, end and random events`, async () => {
      const model = await readSnapshotFile(join(REAL_DIR, file));
      const a = attribute(model);
      const b = new CallTreeBuilder(model, a);
      const errs: string[] = [];
      const snap = b.build(null, "snapshot");
      errs.push(...problems(snap));
      expect(snap.root.bytes).toBe(py[file].total);
      expect(snap.root.blocks).toBe(py[file].count);
      for (const [dev, bytes] of Object.entries(py[file].byDevice)) {
        expect(b.build(null, "snapshot", { device: Number(dev) }).root.bytes).toBe(bytes);
      }
      for (const opts of [
        { orientation: "bottom-up" as const },
        { by: "module" as const },
        { hideLibrary: true },
        { by: "module" as const, orientation: "bottom-up" as const },
      ]) {
        const t = b.build(null, "snapshot", opts);
        errs.push(...problems(t).map((p) => `${JSON.stringify(opts)}: ${p}`));
        if (t.root.bytes !== py[file].total) errs.push(`${JSON.stringify(opts)}: root ${t.root.bytes}`);
      }
      const own = b.build(null, "snapshot", { ownCodeOnly: true });
      errs.push(...problems(own));

      let traced = 0;
      for (let d = 0; d < model.traces.length; d++) {
        if (model.traces[d].length === 0) continue;
        traced++;
        const r = replayOf(model, a, d);
        const recs = naiveAllocations(model, d);
        const rand = rng(model.traces[d].length + d);
        const events = [-1, r.length - 1, ...Array.from({ length: 8 }, () => Math.floor(rand() * r.length))];
        if (r.peakEvent !== null) events.push(r.peakEvent);
        for (const i of events) errs.push(...checkEvent(model, b, r, recs, i));
        if (r.peakEvent !== null) {
          const peak = b.build(r, "peak");
          if (peak.root.bytes !== r.peakAllocatedBytes)
            errs.push(`peak ${peak.root.bytes} ≠ ${r.peakAllocatedBytes}`);
          const up = b.build(r, "peak", { orientation: "bottom-up" });
          errs.push(...problems(up));
          const down = foldedMap(toFolded(peak));
          const rev = foldedMap(toFolded(up), true);
          // No-stack paths (reason › category) keep their order in both orientations.
          const reasons = new Set(find(peak.root, (n) => n.kind === "no-stack").map((n) => n.name));
          for (const [path, bytes] of foldedMap(toFolded(up))) {
            const head = path.split(";")[0];
            if (reasons.has(head)) {
              rev.delete(path.split(";").reverse().join(";"));
              rev.set(path, bytes);
            }
          }
          expect(rev).toEqual(down);
          for (const opts of [{ by: "module" as const }, { groups: { torch: "site-packages/torch/" } }]) {
            const t = b.build(r, "peak", opts);
            errs.push(...problems(t).map((p) => `${JSON.stringify(opts)}: ${p}`));
            if (t.root.bytes !== r.peakAllocatedBytes)
              errs.push(`${JSON.stringify(opts)}: root ${t.root.bytes}`);
          }
        }
      }
      expect(errs).toEqual([]);
      if (traced === 0) console.log(`tree: ${file} has no trace entries; checked at the snapshot only`);
    });
  }

  it('search "optimizer.py" on Wedsonlin training: matchBytes = Python\'s sum over blocks whose stacks hold it', async () => {
    const file = "Wedsonlin__assignment2-systems__medium_256_training_memory_snapshot.pickle";
    const expected = py[file].optimizerPy;
    expect(expected).toBeGreaterThan(1024 * MiB); // the Adam state: 2 × 1.58 GiB
    const model = await readSnapshotFile(join(REAL_DIR, file));
    const a = attribute(model);
    const b = new CallTreeBuilder(model, a);
    for (const search of ["optimizer.py", "OPTIMIZER.PY", "/optimizer\\.py:/"]) {
      const t = b.build(null, "snapshot", { search });
      expect(t.matchBytes, search).toBe(expected);
      expect(t.matchKeys.length).toBeGreaterThan(0);
      // In the stack view every Python frame is shown: the topmost matching nodes hold exactly the match.
      expect(topmostMatchBytes(t.root)).toBe(expected);
      for (const n of find(t.root, (x) => x.match)) expect(n.bytes).toBeLessThanOrEqual(expected);
      expect(new Set(t.matchKeys)).toEqual(new Set(find(t.root, (x) => x.match).map((x) => x.key)));
    }
    const g = b.build(null, "snapshot", { groups: { optimizer: "optimizer\\.py", model: "model\\.py" } });
    expect(problems(g)).toEqual([]);
    expect(g.root.children.find((c) => c.name === "optimizer")?.bytes).toBe(expected);
    expect(g.root.bytes).toBe(py[file].total);
  });
});

describe("peakscope tree (CLI)", () => {
  const capture = () => {
    const io = {
      out: "",
      err: "",
      stdout: (s: string) => void (io.out += s),
      stderr: (s: string) => void (io.err += s),
    };
    return io;
  };
  const out = join(dir, "cli-known.pickle");
  let truth: { peak: { allocatedBytes: number; eventIndex: number }; snapshot: { allocatedBytes: number } };
  const ready = () => {
    if (!truth) {
      python([GEN, "known", out]);
      truth = JSON.parse(readFileSync(`${out}.truth.json`, "utf8"));
    }
    return truth;
  };

  it("prints an indented tree, JSON, folded and CSV", async () => {
    const tr = ready();
    let io = capture();
    expect(await runTree([out], io)).toBe(0);
    expect(io.out).toContain("at the snapshot");
    expect(io.out).toMatch(/train\.py:80 <module> \*/);
    io = capture();
    expect(await runTree([out, "--at", "peak"], io)).toBe(0);
    expect(io.out).toContain(`at the peak (after event ${tr.peak.eventIndex})`);
    io = capture();
    expect(await runTree([out, "--json"], io)).toBe(0);
    const j = JSON.parse(io.out);
    expect(Object.keys(j)).toEqual(["device", "event", "totalBytes", "root"]);
    expect(j.totalBytes).toBe(tr.snapshot.allocatedBytes);
    expect(j.root.bytes).toBe(tr.snapshot.allocatedBytes);
    io = capture();
    expect(await runTree([out, "--at=peak", "--folded", "--bottom-up", "--by", "module"], io)).toBe(0);
    expect(foldedSum(io.out)).toBe(tr.peak.allocatedBytes);
    io = capture();
    expect(
      await runTree([out, "--at", String(tr.peak.eventIndex), "--json", "--group", "adam=adam\\.py"], io),
    ).toBe(0);
    const g = JSON.parse(io.out);
    expect(g.event).toBe(tr.peak.eventIndex);
    expect(g.device).toBe(0);
    expect(g.root.children.map((c: { name: string }) => c.name)).toContain("adam");
    io = capture();
    expect(await runTree([out, "--at", "-1", "--csv"], io)).toBe(0);
    expect(io.out.split("\n")[0]).toMatch(/^depth,key,kind,name/);
    io = capture();
    expect(await runTree([out, "--range", `0..${tr.peak.eventIndex}`, "--json"], io)).toBe(0);
    const rg = JSON.parse(io.out);
    expect(rg.range).toEqual({ from: 0, to: tr.peak.eventIndex, measure: "live-at-end" });
    expect(rg.root.bytes).toBe(rg.totalBytes);
    for (const m of ["allocated-in", "freed-in"]) {
      io = capture();
      expect(
        await runTree([out, "--range", `0..${tr.peak.eventIndex}`, "--measure", m, "--folded"], io),
      ).toBe(0);
      expect(foldedSum(io.out)).toBeGreaterThan(0);
    }
    io = capture();
    expect(await runTree([out, "--range=1..2", "--measure=freed-in"], io)).toBe(0);
    expect(io.out).toContain("events 1..2 (freed-in");
    io = capture();
    expect(await runTree([out, "--search", "adam.py", "--at", "peak"], io)).toBe(0);
    expect(io.out).toMatch(/search "adam\.py": 72\.00 MiB/); // exp_avg + exp_avg_sq + the foreach temporaries
  });

  it("exit 1 on bad usage or unreadable input", async () => {
    ready();
    const bad: string[][] = [
      [],
      [out, out],
      [out, "--at", "later"],
      [out, "--at", "99999"],
      [out, "--by", "layer"],
      [out, "--json", "--folded"],
      [out, "--group", "noequals"],
      [out, "--group", "x=("],
      [out, "--search", "/(/"],
      [out, "--device", "7"],
      [out, "--bogus"],
      [out, "--range", "5"],
      [out, "--range", "9..2"],
      [out, "--range", "0..99999"],
      [out, "--measure", "freed-in"],
      [out, "--range", "0..2", "--measure", "sometime"],
      [out, "--range", "0..2", "--at", "peak"],
      [join(dir, "missing.pickle")],
    ];
    for (const args of bad) {
      const io = capture();
      expect(await runTree(args, io), args.join(" ")).toBe(1);
      expect(io.err.length, args.join(" ")).toBeGreaterThan(0);
    }
  });
});
