// The page's call tree (issue 12) in the worker (workers/tree.ts): the pruned tree keeps every byte (the
// "… N more" nodes sum what they stand for) and at most ~2000 nodes; the search's matching bytes over
// time equal the tree's matchBytes at every event; the exports are the whole tree's; and the filters'
// link parameters round-trip without disturbing old links.

import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { BlockState } from "../src/core/model/types";
import type { CallTreeNode } from "../src/core/tree/types";
import { parseLink, writeLink } from "../src/ui/state/link";
import { Engine } from "../workers/engine";
import {
  matchSeries,
  pruneTree,
  type TreeNodeOut,
  type TreeQuery,
  treeAnswer,
  treeExport,
  treeSearchRefs,
  treeSearchTimeline,
} from "../workers/tree";
import { python } from "./helpers/python";

const REAL = resolve(import.meta.dirname, "../../shared/fixtures/real");
const FILE = "Wedsonlin__assignment2-systems__medium_256_training_memory_snapshot.pickle";

/** external_annotations paired START/END by name on device 0 → the first and last event inside, from Python. */
const SPANS_PY = `
import json, pickle, sys
s = pickle.load(open(sys.argv[1], "rb"))
t = [e["time_us"] for e in s["device_traces"][0]]
open_, out = {}, []
for a in s.get("external_annotations") or []:
    if a["device"] != 0: continue
    if a["stage"] == "START": open_[a["name"]] = a["time_us"]
    elif a["name"] in open_:
        lo, hi = open_.pop(a["name"]), a["time_us"]
        inside = [i for i, x in enumerate(t) if lo <= x <= hi]
        out.append({"name": a["name"], "from": inside[0], "to": inside[-1]})
print(json.dumps(out))
`;

let engine: Engine;
const q = (p: Partial<TreeQuery> = {}): TreeQuery => ({
  device: 0,
  event: null,
  orientation: "top-down",
  by: "stack",
  ownCodeOnly: false,
  hideLibrary: false,
  search: "",
  ...p,
});

function sumCheck(n: TreeNodeOut): void {
  const children = n.children.reduce((s, c) => s + c.bytes, 0);
  expect(n.selfBytes + children).toBe(n.bytes);
  for (const c of n.children) sumCheck(c);
}

function count(n: { children: unknown[] }): number {
  return 1 + (n.children as { children: unknown[] }[]).reduce((s, c) => s + count(c), 0);
}

beforeAll(async () => {
  engine = new Engine();
  const r = await engine.open(new Blob([readFileSync(resolve(REAL, FILE))]), FILE);
  expect(r.ok).toBe(true);
});

describe("call tree worker", () => {
  it("the pruned tree keeps every byte; small nodes go into '… N more'", () => {
    const a = treeAnswer(engine, q({ event: 2780 }));
    expect(a.root.bytes).toBe(a.totalBytes);
    sumCheck(a.root);
    const tight = treeAnswer(engine, q({ event: 2780, maxNodes: 10 }));
    sumCheck(tight.root);
    expect(tight.root.bytes).toBe(a.totalBytes);
    expect(count(tight.root)).toBeLessThanOrEqual(40);
    expect(tight.shownNodes).toBe(count(tight.root));
    expect(JSON.stringify(tight.root)).toContain('"kind":"more"');
  });

  it("pruneTree keeps the 2000 largest nodes and those ≥ 0.1 %, 4000 at most (+ '… more')", () => {
    const leaf = (i: number): CallTreeNode => ({
      key: `k${i}`,
      kind: "frame",
      name: `f${i}`,
      detail: null,
      own: true,
      frame: null,
      collapsedFrames: null,
      bytes: 1000 + i,
      selfBytes: 1000 + i,
      blocks: 1,
      byCategory: [1000 + i],
      match: i % 997 === 0,
      children: [],
    });
    const children = Array.from({ length: 5000 }, (_, i) => leaf(i)).sort((x, y) => y.bytes - x.bytes);
    const bytes = children.reduce((s, c) => s + c.bytes, 0);
    const root: CallTreeNode = {
      ...leaf(-1),
      key: "root",
      kind: "root",
      bytes,
      selfBytes: 0,
      byCategory: [bytes],
      match: false,
      children,
    };
    // Each leaf is ~0.02 % of the total: the 2000 largest are kept.
    const p = pruneTree(root, bytes);
    expect(p.root.children.length).toBeLessThanOrEqual(2000 + 1 + 6);
    expect(p.root.children.length).toBeGreaterThanOrEqual(2000);
    // Everything is ≥ the share: never more than 2 × 2000.
    const all = pruneTree(root, bytes, 2000, 0);
    expect(all.root.children.length).toBeLessThanOrEqual(4000 + 1 + 6);
    expect(p.root.children.reduce((s, c) => s + c.bytes, 0)).toBe(bytes);
    // The matching leaves are kept even when small.
    expect(p.root.children.filter((c) => c.match).length).toBe(6);
  });

  it("search: matching bytes over time equal the tree's matchBytes at every event", () => {
    const r = engine.device(0).replay;
    const col = matchSeries(engine, r, "optimizer.py", false).column;
    for (const ev of [-1, 0, 100, 2780, 9000, 15432, r.length - 1]) {
      const a = treeAnswer(engine, q({ event: ev, search: "optimizer.py" }));
      expect(a.matchBytes, `event ${ev}`).toBe(
        ev < 0 ? matchSeries(engine, r, "optimizer.py", false).initial : col[ev],
      );
    }
    const tl = treeSearchTimeline(engine, {
      device: 0,
      axis: "event",
      x0: 0,
      x1: r.length,
      buckets: 100,
      search: "optimizer.py",
      ownCodeOnly: false,
    });
    let max = 0;
    for (let i = 0; i < r.length; i++) max = Math.max(max, col[i]);
    expect(Math.max(...tl.match)).toBe(max);
    expect(tl.maxBytes).toBe(max);
    // The map's refs at the snapshot: blocks whose bytes are the tree's matchBytes.
    const refs = treeSearchRefs(engine, {
      device: 0,
      event: null,
      search: "optimizer.py",
      ownCodeOnly: false,
    });
    const m = engine.model;
    let sum = 0;
    for (const b of refs)
      if (m?.blocks.state[b] === BlockState.active_allocated) sum += m.blocks.sizeBytes[b];
    const snap = treeAnswer(engine, q({ search: "optimizer.py" }));
    expect(snap.matchBytes).toBeGreaterThan(0);
    expect(refs.length).toBeGreaterThan(0);
    expect(sum).toBe(snap.matchBytes);
  });

  it("a bad /regex/ is reported and the tree is built without it", () => {
    const a = treeAnswer(engine, q({ search: "/optimizer(/" }));
    expect(a.searchError).toMatch(/regular expression|Unterminated|Invalid/i);
    expect(a.matchBytes).toBeNull();
    expect(a.root.bytes).toBe(a.totalBytes);
  });

  it("custom groups: the root's children are the groups; a bad regex is reported and left out", () => {
    const a = treeAnswer(
      engine,
      q({
        groups: [
          { name: "Optimizer", re: "optimizer\\.py" },
          { name: "Broken", re: "attn(" },
        ],
      }),
    );
    expect(a.groupErrors.map((e) => e.name)).toEqual(["Broken"]);
    expect(a.root.bytes).toBe(a.totalBytes);
    const names = a.root.children.map((c) => c.name);
    expect(names).toContain("Optimizer");
    expect(names).not.toContain("Broken");
    const search = treeAnswer(engine, q({ search: "/optimizer\\.py/" }));
    expect(a.root.children.find((c) => c.name === "Optimizer")?.bytes).toBe(search.matchBytes);
    expect(treeAnswer(engine, q({ groups: [] })).root.bytes).toBe(a.totalBytes);
  });

  it("a range measure replaces the moment; the CLI's core agrees; annotation spans are offered", () => {
    const r = engine.device(0).replay;
    const a = treeAnswer(engine, q({ event: 100, range: { from: 0, to: 2780, measure: "allocated-in" } }));
    expect(a.range).toEqual({ from: 0, to: 2780, measure: "allocated-in" });
    expect(a.event).toBe(2780);
    let sum = 0;
    const A = r.allocations;
    for (let k = 0; k < A.length; k++)
      if (A.allocEvent[k] >= 0 && A.allocEvent[k] <= 2780) sum += A.sizeBytes[k];
    expect(a.totalBytes).toBe(sum);
    expect(a.root.bytes).toBe(sum);
    // The file's one record_function scope (Optimizer.step), as the events whose time_us lies within its
    // START..END, from Python.
    expect(a.spans).toEqual(JSON.parse(python(["-c", SPANS_PY, resolve(REAL, FILE)])));
    // Without a range: the moment as before.
    expect(treeAnswer(engine, q({ event: 2780 })).range).toBeNull();
  });

  it("exports are of the whole tree: folded lines sum to the total", () => {
    const folded = treeExport(engine, q({ event: 2780 }), "folded");
    const sum = folded
      .trim()
      .split("\n")
      .reduce((s, l) => s + Number(l.slice(l.lastIndexOf(" ") + 1)), 0);
    expect(sum).toBe(engine.device(0).replay.allocated[2780]);
    const json = JSON.parse(treeExport(engine, q({ search: "optimizer.py" }), "json"));
    expect(json.matchBytes).toBeGreaterThan(0);
    expect(treeExport(engine, q(), "csv").split("\n")[0]).toMatch(/^depth,key,kind,name/);
  });
});

describe("call tree link parameters", () => {
  it("round-trip; defaults are not written; old links are unchanged", () => {
    const old = "#v=1&src=demo.pickle&device=0&pin=12";
    expect(parseLink(old).state.tree).toBeUndefined();
    expect(parseLink(old).notices).toEqual([]);
    const state = parseLink(old).state;
    expect(writeLink(state)).toBe(old.slice(1));
    state.tree = { q: "/optimizer\\.py:7[67]/", dir: "bottom-up", by: "module", own: true, hide: true };
    const hash = writeLink(state);
    const back = parseLink(`#${hash}`);
    expect(back.notices).toEqual([]);
    expect(back.state.tree).toEqual(state.tree);
    const bad = parseLink("#v=1&tdir=sideways&town=yes");
    expect(bad.notices).toHaveLength(2);
    // Groups: in order, with `:`, `;`, `%` and `&` inside names and regexes kept.
    state.tree = {
      groups: [
        { name: "Attention", re: ".*attn.*" },
        { name: "a:b;c", re: "x;y:z%20&w=1|optimizer\\.py" },
      ],
    };
    const g = writeLink(state);
    expect(g).toContain("tg=Attention:.*attn.*%3B");
    expect(parseLink(`#${g}`).notices).toEqual([]);
    expect(parseLink(`#${g}`).state.tree).toEqual(state.tree);
    expect(parseLink("#v=1&tg=noColon").notices).toHaveLength(1);
    expect(parseLink("#v=1&tg=A:x;A:y").notices).toHaveLength(1);
    state.tree = { range: { measure: "freed-in", from: 10, to: 200 } };
    const rg = writeLink(state);
    expect(rg).toContain("trange=freed-in:10..200");
    expect(parseLink(`#${rg}`).state.tree).toEqual(state.tree);
    expect(parseLink("#v=1&trange=freed-in:9..2").notices).toHaveLength(1);
    expect(parseLink("#v=1&trange=sometime:1..2").notices).toHaveLength(1);
  });
});
