// The call tree of the live allocated set at one moment. Two steps: aggregate the live blocks per distinct
// stack (bytes, blocks, bytes per category), then insert each distinct stack's cached display path into
// the tree. A CallTreeBuilder is made once per (model, attribution) and reused for every moment, so the
// per-stack paths, search results and group matches are computed once.

import type { Attribution } from "../attribution/index";
import { BlockState, EMPTY_STACK, type SnapshotModel } from "../model/types";
import { liveAllocationsAt } from "../replay/state";
import { blockOf, Origin, type Replay, SITE_BEFORE_TRACE, stackOf } from "../replay/types";
import { combine, hex2, SEED1, SEED2 } from "./hash";
import { type Item, PathTable, type View } from "./paths";
import type { CallTree, CallTreeNode, CallTreeOptions, CallTreeRange, TreeMoment } from "./types";

/** A range within the trace's events (0 … length − 1, from ≤ to). */
export function clampRange(r: Replay, g: CallTreeRange): CallTreeRange {
  const last = r.length - 1;
  const c = (x: number) => Math.max(0, Math.min(last, Math.floor(x)));
  let from = c(g.from);
  let to = c(g.to);
  if (from > to) [from, to] = [to, from];
  return { from, to, measure: g.measure };
}

/** Why an allocation has no stack: the no-stack node it goes under. */
const REASON_NO_STACK = 0;
const REASON_ENGINE = 1;
const REASON_BEFORE_RECORDING = 2;
const REASON_BEFORE_TRACE = 3;
const REASON_LABEL_BEFORE_TRACE = "allocated before the trace (its stack is not in the trace)";

interface Source {
  /** Non-empty stack id, or EMPTY_STACK for a no-stack group. */
  stack: number;
  reason: number;
  category: number;
  rule: number;
  bytes: number;
  blocks: number;
}

interface SearchState {
  test: (text: string) => boolean;
  /** Per frame / per stack: 0 not yet tested, 1 no, 2 yes. */
  frame: Uint8Array;
  stack: Uint8Array;
  item: Map<number, boolean>;
}

interface GroupState {
  sig: string;
  names: string[];
  tests: RegExp[];
  /** Per stack: -2 not yet tested, -1 none, else the group index. */
  stack: Int16Array;
}

/** Text search: `/regex/flags` or a case-insensitive substring. Throws SyntaxError on a bad regex. */
export function searchTest(query: string): (text: string) => boolean {
  const m = /^\/(.+)\/([a-z]*)$/s.exec(query);
  if (m) {
    const re = new RegExp(m[1], m[2].replace(/[gy]/g, ""));
    return (s) => re.test(s);
  }
  const lower = query.toLowerCase();
  return (s) => s.toLowerCase().includes(lower);
}

export class CallTreeBuilder {
  readonly paths: PathTable;
  private readonly C: number;
  private readonly stackBytes: Float64Array;
  private readonly stackBlocks: Int32Array;
  private readonly stackCat: Float64Array;
  private readonly touched: Int32Array;
  private nTouched = 0;
  private readonly noStack = new Map<number, Source>();
  private readonly searches = new Map<string, SearchState>();
  private readonly groupStates = new Map<string, GroupState>();
  private readonly reasonItems: number[];
  private readonly categoryItems = new Map<number, number>();

  constructor(
    readonly model: SnapshotModel,
    readonly attribution: Attribution,
  ) {
    this.paths = new PathTable(model, attribution);
    this.C = attribution.categoryNames.length;
    const n = model.stacks.length;
    this.stackBytes = new Float64Array(n);
    this.stackBlocks = new Int32Array(n);
    this.stackCat = new Float64Array(n * this.C);
    this.touched = new Int32Array(n);
    const label = (site: number, fallback: string) => attribution.sites[site]?.label ?? fallback;
    this.reasonItems = [
      this.paths.synthetic("no-stack", "no-stack", label(0, "no stack recorded")),
      this.paths.synthetic("no-stack", "engine", label(1, "autograd engine (no stack recorded)")),
      this.paths.synthetic("no-stack", "before-recording", label(2, "allocated before recording (inferred)")),
      this.paths.synthetic("no-stack", "before-trace", REASON_LABEL_BEFORE_TRACE),
    ];
  }

  // ---- step 1: the live set, per distinct stack ----

  private reset(): void {
    const C = this.C;
    for (let j = 0; j < this.nTouched; j++) {
      const s = this.touched[j];
      this.stackBytes[s] = 0;
      this.stackBlocks[s] = 0;
      this.stackCat.fill(0, s * C, s * C + C);
    }
    this.nTouched = 0;
    this.noStack.clear();
  }

  private addStack(s: number, bytes: number, category: number): void {
    if (this.stackBlocks[s] === 0) this.touched[this.nTouched++] = s;
    this.stackBytes[s] += bytes;
    this.stackBlocks[s]++;
    this.stackCat[s * this.C + (category < this.C ? category : this.C - 1)] += bytes;
  }

  private addNoStack(reason: number, category: number, rule: number, bytes: number): void {
    const c = category < this.C ? category : this.C - 1;
    const inferred = rule >= 0 && this.attribution.rules[rule]?.inferred ? rule : -1;
    const key = reason * 1_000_000 + c * 1000 + (inferred + 1);
    let src = this.noStack.get(key);
    if (!src) {
      src = {
        stack: EMPTY_STACK,
        reason,
        category: c,
        rule: inferred,
        bytes: 0,
        blocks: 0,
      };
      this.noStack.set(key, src);
    }
    src.bytes += bytes;
    src.blocks++;
  }

  private reasonOfSite(site: number): number {
    if (site === SITE_BEFORE_TRACE) return REASON_BEFORE_TRACE;
    if (site === 1) return REASON_ENGINE;
    if (site === 0 || site < 0) return REASON_NO_STACK;
    // Site 2, or the site of the allocation an inferred one replaced: both "allocated before recording".
    return REASON_BEFORE_RECORDING;
  }

  private isEmpty(s: number): boolean {
    const o = this.model.stacks.offsets;
    return s === EMPTY_STACK || o[s + 1] <= o[s];
  }

  private aggregateSnapshot(device: number | null): { bytes: number; blocks: number } {
    const { blocks, segments } = this.model;
    const a = this.attribution;
    let total = 0;
    let count = 0;
    for (let b = 0; b < blocks.length; b++) {
      if (blocks.state[b] !== BlockState.active_allocated) continue;
      if (device !== null && segments.device[blocks.segment[b]] !== device) continue;
      const size = blocks.sizeBytes[b];
      const s = blocks.stack[b];
      total += size;
      count++;
      if (this.isEmpty(s))
        this.addNoStack(this.reasonOfSite(a.blockSite[b]), a.blockCategory[b], a.blockRule[b], size);
      else this.addStack(s, size, a.blockCategory[b]);
    }
    return { bytes: total, blocks: count };
  }

  private ruleOfAllocation(r: Replay, k: number): number {
    const A = r.allocations;
    const a = this.attribution;
    const b = blockOf(A, k);
    if (b >= 0) return a.blockRule[b];
    const d = r.device;
    if (A.origin[k] === Origin.trace) return a.traceRule[d]?.[A.allocEvent[k]] ?? -1;
    const e = A.origin[k] === Origin.beforeTraceFreed ? A.freeRequestedEvent[k] : A.freeCompletedEvent[k];
    return a.traceBefore[d]?.get(e)?.rule ?? -1;
  }

  private aggregateReplay(r: Replay, i: number): { bytes: number; blocks: number } {
    const live = liveAllocationsAt(r, i);
    const A = r.allocations;
    const fr = A.freeRequestedEvent;
    let total = 0;
    let count = 0;
    for (let j = 0; j < live.length; j++) {
      const k = live[j];
      if (fr[k] <= i) continue; // free requested: pending free, not allocated
      const size = A.sizeBytes[k];
      const s = stackOf(A, k);
      total += size;
      count++;
      if (this.isEmpty(s)) {
        this.addNoStack(this.reasonOfSite(A.site[k]), A.category[k], this.ruleOfAllocation(r, k), size);
      } else this.addStack(s, size, A.category[k]);
    }
    return { bytes: total, blocks: count };
  }

  /** The allocations a range measure counts (see CallTreeOptions.range). */
  private aggregateRange(r: Replay, g: CallTreeRange): { bytes: number; blocks: number } {
    const A = r.allocations;
    const ae = A.allocEvent;
    const fr = A.freeRequestedEvent;
    const { from, to, measure } = g;
    let total = 0;
    let count = 0;
    for (let k = 0; k < A.length; k++) {
      const a = ae[k];
      const f = fr[k];
      const inRange =
        measure === "freed-in"
          ? a <= to && f >= from && f <= to
          : a >= from && a <= to && (measure === "allocated-in" || f > to);
      if (!inRange) continue;
      const size = A.sizeBytes[k];
      const s = stackOf(A, k);
      total += size;
      count++;
      if (this.isEmpty(s)) {
        this.addNoStack(this.reasonOfSite(A.site[k]), A.category[k], this.ruleOfAllocation(r, k), size);
      } else this.addStack(s, size, A.category[k]);
    }
    return { bytes: total, blocks: count };
  }

  // ---- search and groups ----

  private search(query: string): SearchState {
    let st = this.searches.get(query);
    if (!st) {
      st = {
        test: searchTest(query),
        frame: new Uint8Array(this.model.frames.length),
        stack: new Uint8Array(this.model.stacks.length),
        item: new Map(),
      };
      if (this.searches.size > 32) this.searches.clear();
      this.searches.set(query, st);
    }
    return st;
  }

  private frameMatches(st: SearchState, f: number): boolean {
    let m = st.frame[f];
    if (m === 0) {
      m = st.test(this.paths.frameText(f)) ? 2 : 1;
      st.frame[f] = m;
    }
    return m === 2;
  }

  private stackMatches(st: SearchState, s: number): boolean {
    let m = st.stack[s];
    if (m === 0) {
      m = 1;
      const { offsets, frameIds } = this.model.stacks;
      for (let i = offsets[s]; i < offsets[s + 1]; i++) {
        if (this.frameMatches(st, frameIds[i])) {
          m = 2;
          break;
        }
      }
      st.stack[s] = m;
    }
    return m === 2;
  }

  private itemMatches(st: SearchState, item: Item): boolean {
    let m = st.item.get(item.id);
    if (m === undefined) {
      if (item.frames) {
        m = false;
        for (let i = 0; i < item.frames.length && !m; i++) m = this.frameMatches(st, item.frames[i]);
      } else m = st.test(item.name);
      st.item.set(item.id, m);
    }
    return m;
  }

  private groups(groups: Record<string, string | RegExp>): GroupState {
    const entries = Object.entries(groups).map(([name, re]) => {
      const rx =
        typeof re === "string" ? new RegExp(re) : new RegExp(re.source, re.flags.replace(/[gy]/g, ""));
      return { name, rx };
    });
    const sig = JSON.stringify(entries.map((e) => [e.name, e.rx.source, e.rx.flags]));
    let st = this.groupStates.get(sig);
    if (!st) {
      st = {
        sig,
        names: entries.map((e) => e.name),
        tests: entries.map((e) => e.rx),
        stack: new Int16Array(this.model.stacks.length).fill(-2),
      };
      if (this.groupStates.size > 16) this.groupStates.clear();
      this.groupStates.set(sig, st);
    }
    return st;
  }

  private groupOf(st: GroupState, s: number): number {
    let g = st.stack[s];
    if (g === -2) {
      g = -1;
      if (!this.isEmpty(s)) {
        const { offsets, frameIds } = this.model.stacks;
        outer: for (let t = 0; t < st.tests.length; t++) {
          for (let i = offsets[s]; i < offsets[s + 1]; i++) {
            if (st.tests[t].test(this.paths.frameText(frameIds[i]))) {
              g = t;
              break outer;
            }
          }
        }
      }
      st.stack[s] = g;
    }
    return g;
  }

  private categoryItem(src: Source): number {
    const key = src.reason * 1_000_000 + src.category * 1000 + (src.rule + 1);
    let id = this.categoryItems.get(key);
    if (id === undefined) {
      const a = this.attribution;
      const name = a.categoryNames[src.category] ?? `category ${src.category}`;
      const rule = src.rule >= 0 ? a.rules[src.rule] : undefined;
      id = this.paths.synthetic(
        "category",
        `${src.reason}:${name}:${rule?.id ?? ""}`,
        name,
        rule ? `inferred: ${rule.id}` : null,
      );
      this.categoryItems.set(key, id);
    }
    return id;
  }

  // ---- step 2: the tree ----

  /** The call tree after event `at` of `replay` (or at its peak), or of the snapshot's blocks. */
  build(replay: Replay | null, at: TreeMoment, opts: CallTreeOptions = {}): CallTree {
    const orientation = opts.orientation ?? "top-down";
    const by = opts.by ?? "stack";
    const view: View = by === "module" ? "module" : opts.hideLibrary || opts.ownCodeOnly ? "hide" : "stack";
    let event: number | null = null;
    let device: number | null;
    let kind: CallTree["at"];
    let range: CallTreeRange | undefined;
    this.reset();
    let totals: { bytes: number; blocks: number };
    if (opts.range) {
      if (!replay) throw new RangeError("the call tree of a range needs a replay");
      kind = "event";
      device = replay.device;
      range = clampRange(replay, opts.range);
      event = range.to;
      totals = this.aggregateRange(replay, range);
    } else if (at === "snapshot") {
      kind = "snapshot";
      device = opts.device ?? null;
      totals = this.aggregateSnapshot(device);
    } else {
      if (!replay)
        throw new RangeError(`the call tree at ${at === "peak" ? "the peak" : `event ${at}`} needs a replay`);
      kind = at === "peak" ? "peak" : "event";
      if (at === "peak") {
        if (replay.peakEvent === null) throw new RangeError(`device ${replay.device} has no events: no peak`);
        event = replay.peakEvent;
      } else event = at;
      device = replay.device;
      totals = this.aggregateReplay(replay, event);
    }

    const search = opts.search ? this.search(opts.search) : null;
    const groupSt = opts.groups && Object.keys(opts.groups).length > 0 ? this.groups(opts.groups) : null;
    const noGroupItem = groupSt ? this.paths.synthetic("group", "\u0000none", "(no group)") : -1;
    const groupItems = groupSt ? groupSt.names.map((n) => this.paths.synthetic("group", n, n)) : [];

    const sources: Source[] = [];
    for (let j = 0; j < this.nTouched; j++) {
      const s = this.touched[j];
      sources.push({
        stack: s,
        reason: -1,
        category: -1,
        rule: -1,
        bytes: this.stackBytes[s],
        blocks: this.stackBlocks[s],
      });
    }
    for (const src of this.noStack.values()) sources.push(src);

    // The tree lives in a persistent trie per layout (view, orientation, groups): every distinct stack's
    // leaf node is found once, so a build adds each live stack's bytes at its leaf, marks the path up to
    // the first node already marked, then sums the marked subtrees while making one object per node.
    const C = this.C;
    const L = this.layout(view, orientation, groupSt);
    const stamp = ++L.stampNow;
    /** Marks x and its unmarked ancestors, outermost first (each is reset, then linked into its parent's
     * child list). */
    const up: number[] = [];
    const touch = (x: number) => {
      for (; x >= 0 && L.stamp[x] !== stamp; x = L.parent[x]) up.push(x);
      while (up.length > 0) {
        const y = up.pop() as number;
        L.stamp[y] = stamp;
        L.self[y] = 0;
        L.selfBlocks[y] = 0;
        L.cat.fill(0, y * C, y * C + C);
        L.first[y] = -1;
        const p = L.parent[y];
        if (p >= 0) {
          L.next[y] = L.first[p];
          L.first[p] = y;
        }
      }
    };
    touch(0);
    let hidden = 0;
    let matchBytes = search ? 0 : null;
    const sc = this.stackCat;
    for (const src of sources) {
      const s = src.stack;
      const empty = s === EMPTY_STACK;
      if (opts.ownCodeOnly && (empty || !this.paths.hasOwn(s))) {
        hidden += src.bytes;
        continue;
      }
      if (search && matchBytes !== null && !empty && this.stackMatches(search, s)) matchBytes += src.bytes;
      let leaf: number;
      if (empty) {
        leaf = groupSt ? this.trieChild(L, 0, noGroupItem) : 0;
        leaf = this.trieChild(L, leaf, this.reasonItems[src.reason]);
        leaf = this.trieChild(L, leaf, this.categoryItem(src));
      } else {
        leaf = L.leaf[s];
        if (leaf < 0) {
          let cur = 0;
          if (groupSt) {
            const g = this.groupOf(groupSt, s);
            cur = this.trieChild(L, cur, g < 0 ? noGroupItem : groupItems[g]);
          }
          const p = this.paths.path(s, view);
          if (orientation === "bottom-up")
            for (let i = p.length - 1; i >= 0; i--) cur = this.trieChild(L, cur, p[i]);
          else for (let i = 0; i < p.length; i++) cur = this.trieChild(L, cur, p[i]);
          leaf = cur;
          L.leaf[s] = leaf;
        }
      }
      touch(leaf);
      L.self[leaf] += src.bytes;
      L.selfBlocks[leaf] += src.blocks;
      const base = leaf * C;
      if (empty) L.cat[base + src.category] += src.bytes;
      else {
        const o = s * C;
        for (let c = 0; c < C; c++) L.cat[base + c] += sc[o + c];
      }
    }

    let n = 0;
    const matchKeys: string[] = [];
    const items = this.paths.items;
    const finish = (x: number): CallTreeNode => {
      n++;
      const cats = new Array<number>(C);
      const base = x * C;
      for (let k = 0; k < C; k++) cats[k] = L.cat[base + k];
      const item = x === 0 ? null : items[L.item[x]];
      let key = L.key[x];
      if (key === undefined) {
        const p = L.parent[x];
        if (item && p >= 0) {
          L.h1[x] = combine(L.h1[p], item.h1, SEED1);
          L.h2[x] = combine(L.h2[p], item.h2, SEED2);
          key = hex2(L.h1[x] >>> 0, L.h2[x] >>> 0);
        } else key = "root";
        L.key[x] = key;
      }
      const match = search !== null && item !== null && this.itemMatches(search, item);
      if (match) matchKeys.push(key);
      const children: CallTreeNode[] = [];
      let bytes = L.self[x];
      let blocks = L.selfBlocks[x];
      for (let c = L.first[x]; c >= 0; c = L.next[c]) {
        const child = finish(c);
        children.push(child);
        bytes += child.bytes;
        blocks += child.blocks;
        const cc = child.byCategory;
        for (let k = 0; k < C; k++) cats[k] += cc[k];
      }
      if (children.length > 1) children.sort(byBytes);
      return {
        key,
        kind: item ? item.kind : "root",
        name: item ? item.name : "all live allocated memory",
        detail: item ? item.detail : null,
        own: item ? item.own : false,
        frame: item ? item.frame : null,
        collapsedFrames: item ? item.collapsedFrames : null,
        bytes,
        selfBytes: L.self[x],
        blocks,
        byCategory: cats,
        match,
        children,
      };
    };
    const tree: CallTree = {
      device,
      event,
      at: kind,
      orientation,
      by,
      totalBytes: totals.bytes,
      totalBlocks: totals.blocks,
      hiddenBytes: hidden,
      categoryNames: this.attribution.categoryNames,
      root: finish(0),
      matchKeys,
      matchBytes,
      nodeCount: 0,
    };
    if (range) tree.range = range;
    tree.nodeCount = n;
    this.reset();
    return tree;
  }

  // ---- the persistent tries ----

  private readonly layouts = new Map<string, Layout>();

  private layout(view: View, orientation: string, groups: GroupState | null): Layout {
    const sig = `${view}|${orientation}|${groups?.sig ?? ""}`;
    let L = this.layouts.get(sig);
    if (!L) {
      if (this.layouts.size >= 8) this.layouts.clear();
      L = {
        n: 0,
        cap: 0,
        item: new Int32Array(0),
        parent: new Int32Array(0),
        first: new Int32Array(0),
        next: new Int32Array(0),
        stamp: new Int32Array(0),
        stampNow: 0,
        h1: new Int32Array(0),
        h2: new Int32Array(0),
        key: [],
        self: new Float64Array(0),
        selfBlocks: new Float64Array(0),
        cat: new Float64Array(0),
        index: new Map(),
        leaf: new Int32Array(this.model.stacks.length).fill(-1),
      };
      this.newTrieNode(L, -1, -1); // the root, node 0
      this.layouts.set(sig, L);
    }
    return L;
  }

  private newTrieNode(L: Layout, parent: number, item: number): number {
    if (L.n === L.cap) {
      const cap = Math.max(1024, L.cap * 2);
      const g32 = (a: Int32Array) => {
        const b = new Int32Array(cap);
        b.set(a);
        return b;
      };
      const g64 = (a: Float64Array, k = 1) => {
        const b = new Float64Array(cap * k);
        b.set(a);
        return b;
      };
      L.item = g32(L.item);
      L.parent = g32(L.parent);
      L.first = g32(L.first);
      L.next = g32(L.next);
      L.stamp = g32(L.stamp);
      L.h1 = g32(L.h1);
      L.h2 = g32(L.h2);
      L.self = g64(L.self);
      L.selfBlocks = g64(L.selfBlocks);
      L.cat = g64(L.cat, this.C);
      L.cap = cap;
    }
    const x = L.n++;
    L.item[x] = item;
    L.parent[x] = parent;
    L.stamp[x] = 0;
    if (parent < 0) {
      L.h1[x] = 0x726f6f74;
      L.h2[x] = 0x746f6f72;
    }
    return x;
  }

  private trieChild(L: Layout, parent: number, item: number): number {
    const key = parent * 67108864 + item;
    let c = L.index.get(key);
    if (c === undefined) {
      c = this.newTrieNode(L, parent, item);
      L.index.set(key, c);
    }
    return c;
  }
}

/** A persistent trie of display paths for one layout; per-build sums are valid where stamp = stampNow. */
interface Layout {
  n: number;
  cap: number;
  item: Int32Array;
  parent: Int32Array;
  first: Int32Array;
  next: Int32Array;
  stamp: Int32Array;
  stampNow: number;
  /** Path hashes and key strings, computed on a node's first appearance in a tree. */
  h1: Int32Array;
  h2: Int32Array;
  key: string[];
  /** Per build: bytes / blocks / bytes per category ending at the node. */
  self: Float64Array;
  selfBlocks: Float64Array;
  cat: Float64Array;
  /** (parent × 2^26 + item) → child. */
  index: Map<number, number>;
  /** Per stack: its leaf node; −1 not yet placed. */
  leaf: Int32Array;
}

function byBytes(a: CallTreeNode, b: CallTreeNode): number {
  return b.bytes - a.bytes || (a.name < b.name ? -1 : a.name > b.name ? 1 : a.key < b.key ? -1 : 1);
}

const builders = new WeakMap<Attribution, CallTreeBuilder>();

/** The builder of (model, attribution), made once and reused (its per-stack caches survive the calls). */
export function callTreeBuilder(model: SnapshotModel, attribution: Attribution): CallTreeBuilder {
  let b = builders.get(attribution);
  if (!b || b.model !== model) {
    b = new CallTreeBuilder(model, attribution);
    builders.set(attribution, b);
  }
  return b;
}

/**
 * The call tree of the live allocated memory at `at`: "snapshot" (the snapshot's active_allocated
 * blocks; no replay needed), "peak" (replay.peakEvent) or an event index (the state after it; −1 before
 * the first). Reuses one CallTreeBuilder per (model, attribution).
 */
export function buildCallTree(
  model: SnapshotModel,
  attribution: Attribution,
  replay: Replay | null,
  at: TreeMoment,
  opts: CallTreeOptions = {},
): CallTree {
  return callTreeBuilder(model, attribution).build(replay, at, opts);
}
