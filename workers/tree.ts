// The call tree of the live allocated memory (issue 12) for the page: core `callTreeBuilder` (made once per
// file and reused for every moment: its per-stack paths and search results are cached), built at the
// snapshot or after one event, then pruned before it is posted (the page never gets a huge tree: the 2000
// largest nodes and any ≥ 0.1 % of the total, 4000 at most, each cut-off run summed into one "… N more"
// node; matching nodes are kept too). Also what the
// search highlights elsewhere: the matching bytes over time (per pixel bucket, for the timeline's layer),
// the matching bands of "each allocation" mode, the matching blocks of the segment map; the exports
// (folded stacks, JSON, CSV of the whole tree: strings, downloaded by the page); B − A of a comparison;
// and the trace's compile_context regions.

import { BlockState, EMPTY_STACK, idAt } from "../src/core/model/types";
import { liveAllocationsAt } from "../src/core/replay/state";
import { NEVER, type Replay, stackOf } from "../src/core/replay/types";
import { type CallTreeBuilder, callTreeBuilder, searchTest } from "../src/core/tree/builder";
import { diffTrees, toCsv, toFolded, toJson } from "../src/core/tree/export";
import { buildGroupedTree, parseGroupBy } from "../src/core/tree/group-by";
import type {
  CallTree,
  CallTreeDiffNode,
  CallTreeNode,
  CallTreeOptions,
  CallTreeRange,
  TreeFrameRef,
  TreeNodeKind,
  TreeOrientation,
} from "../src/core/tree/types";
import type { BandsAnswer, BandsQuery, TimelineQuery } from "./api";
import type { Engine } from "./engine";
import { axisX, forEachBucket } from "./timeline";

/** What a view of the tree asks for. */
export interface TreeQuery {
  device: number;
  /** The state after this event; null: the snapshot itself (also for a device without a trace). */
  event: number | null;
  orientation: TreeOrientation;
  by: "stack" | "module";
  /** "forward" or "metadata[:KEY]": the tree grouped by forward line or user_metadata (core group-by.ts). */
  groupBy?: string;
  ownCodeOnly: boolean;
  hideLibrary: boolean;
  /** Text or /regex/flags; "" for none. */
  search: string;
  /** Custom groups, in order (absent / empty: none); a group whose regex does not compile is left out. */
  groups?: { name: string; re: string }[];
  /** A measure over events from..to instead of the moment `event` (the device needs a trace). */
  range?: CallTreeRange | null;
  /** Pruning: the `maxNodes` largest nodes (default 2000) and those ≥ `minShare` of the total (0.001),
   * never more than 2 × maxNodes. */
  maxNodes?: number;
  minShare?: number;
}

/** A node as posted: a core CallTreeNode, or a "more" node standing for the children cut off. */
export interface TreeNodeOut {
  key: string;
  kind: TreeNodeKind | "more";
  name: string;
  detail: string | null;
  own: boolean;
  frame: TreeFrameRef | null;
  collapsedFrames: string[] | null;
  bytes: number;
  selfBytes: number;
  blocks: number;
  byCategory: number[];
  match: boolean;
  children: TreeNodeOut[];
  /** "more" nodes: how many nodes (whole subtrees) it stands for, and how many of them match. */
  hiddenNodes?: number;
  hiddenMatches?: number;
}

export interface TreeAnswer {
  device: number | null;
  /** The event the state is taken after; null for the snapshot. */
  event: number | null;
  at: "snapshot" | "event";
  orientation: TreeOrientation;
  by: "stack" | "module";
  ownCodeOnly: boolean;
  hideLibrary: boolean;
  totalBytes: number;
  totalBlocks: number;
  hiddenBytes: number;
  categoryNames: string[];
  root: TreeNodeOut;
  /** Matching nodes in the whole tree / among those sent. */
  matchCount: number;
  matchShown: number;
  matchBytes: number | null;
  /** The search could not be used (a bad /regex/): the message; the tree is built without it. */
  searchError: string | null;
  /** Groups left out: their regex does not compile (name: message). */
  groupErrors: { name: string; message: string }[];
  /** The range measured (clamped to the trace), or null for one moment. */
  range: CallTreeRange | null;
  /** The trace's annotation spans (record_function START/END) with both ends, as event ranges. */
  spans: { name: string; from: number; to: number }[];
  nodeCount: number;
  shownNodes: number;
  /** Nodes under this many bytes were summed into "… N more" nodes. */
  minBytes: number;
  buildMs: number;
  /** The grouping modes this file offers: forward stacks present; the user_metadata keys (JSON dicts) or []
   * for plain strings; null when no entry carries metadata. */
  groupModes?: GroupModes;
}

export interface GroupModes {
  forward: boolean;
  metadataKeys: string[] | null;
}

const groupModesCache = new WeakMap<object, GroupModes>();

/** Which grouped trees make sense for this file (once per model). */
function groupModesOf(engine: Engine): GroupModes {
  const model = engine.model;
  if (!model) return { forward: false, metadataKeys: null };
  const cached = groupModesCache.get(model);
  if (cached) return cached;
  let forward = !!model.blocks.forwardStack;
  const seen = new Set<number>();
  for (const t of model.traces) {
    if (t.forwardStack) forward = true;
    const um = t.userMetadata;
    if (!um.varies) {
      if (t.length > 0 && um.base >= 0) seen.add(um.base);
      continue;
    }
    for (let i = 0; i < t.length && seen.size < 64; i++) {
      const id = idAt(um, i);
      if (id >= 0) seen.add(id);
    }
  }
  const annotate = model.actionNames.indexOf("annotate");
  let metadataKeys: string[] | null = null;
  if (seen.size > 0) {
    const keys = new Set<string>();
    for (const s of seen) {
      try {
        const v: unknown = JSON.parse(model.strings[s]);
        if (v && typeof v === "object" && !Array.isArray(v)) for (const k of Object.keys(v)) keys.add(k);
      } catch {
        // a plain string: grouped as it is
      }
    }
    metadataKeys = [...keys].slice(0, 8);
  }
  // annotate notes alone are not metadata to group by
  if (annotate >= 0 && metadataKeys !== null && metadataKeys.length === 0) {
    let plain = false;
    for (const t of model.traces)
      for (let i = 0; i < t.length && !plain; i++)
        if (idAt(t.userMetadata, i) >= 0 && t.action[i] !== annotate) plain = true;
    if (!plain) metadataKeys = null;
  }
  const out = { forward, metadataKeys };
  groupModesCache.set(model, out);
  return out;
}

export type TreeExportFormat = "folded" | "json" | "csv";

/** Matching live bytes over the timeline, one bucket per pixel (max inside it); NaN outside the trace. */
export interface TreeSearchTimelineAnswer {
  buckets: number;
  match: Float64Array;
  /** Max over the whole trace and its first event. */
  maxBytes: number;
  maxEvent: number;
}

export interface TreeSearchTimelineQuery extends TimelineQuery {
  search: string;
  ownCodeOnly: boolean;
}

export interface TreeSearchRefsQuery {
  device: number;
  /** null: the snapshot's blocks (block indices); else allocation indices of the replay. */
  event: number | null;
  search: string;
  ownCodeOnly: boolean;
}

export interface CompileRegion {
  text: string;
  /** Index into `texts` (one colour each). */
  id: number;
  startEvent: number;
  endEvent: number;
  /** On the time axis (NaN without times). */
  t0: number;
  t1: number;
}

export interface CompileRegionsAnswer {
  device: number;
  texts: string[];
  regions: CompileRegion[];
  /** Regions left out (more than the limit). */
  omitted: number;
}

/** A node of B − A, pruned like the tree. */
export interface TreeDiffNodeOut {
  key: string;
  kind: TreeNodeKind | "more";
  name: string;
  detail: string | null;
  own: boolean;
  bytesA: number;
  bytesB: number;
  deltaBytes: number;
  blocksA: number;
  blocksB: number;
  children: TreeDiffNodeOut[];
  hiddenNodes?: number;
}

export interface TreeDiffQuery {
  /** Per side (A = the base): the state after this event, or null for its snapshot. */
  eventA: number | null;
  eventB: number | null;
  deviceA: number;
  deviceB: number;
  orientation: TreeOrientation;
  by: "stack" | "module";
  ownCodeOnly: boolean;
  hideLibrary: boolean;
  maxNodes?: number;
}

export interface TreeDiffAnswer {
  root: TreeDiffNodeOut;
  totalA: number;
  totalB: number;
  eventA: number | null;
  eventB: number | null;
  nodeCount: number;
  shownNodes: number;
}

const DEFAULT_MAX_NODES = 2000;
const DEFAULT_MIN_SHARE = 0.001;
/** Small matching nodes are kept beside the big ones, up to this many. */
const EXTRA_MATCHES = 400;

function builderOf(engine: Engine): CallTreeBuilder {
  const model = engine.model;
  const attr = engine.attribution;
  if (!model) throw new Error("No snapshot is open.");
  if (!attr) throw new Error("The call tree needs the attribution, which failed for this file.");
  return callTreeBuilder(model, attr);
}

/** The replay and moment of a query: the snapshot when the device has no trace or no event is asked. */
function momentOf(
  engine: Engine,
  device: number,
  event: number | null,
): { replay: Replay | null; at: number | "snapshot" } {
  const model = engine.model;
  if (event === null || !model || !(model.traces[device]?.length > 0))
    return { replay: null, at: "snapshot" };
  const replay = engine.device(device).replay;
  if (replay.length === 0) return { replay: null, at: "snapshot" };
  return { replay, at: Math.max(-1, Math.min(replay.length - 1, Math.floor(event))) };
}

function options(q: Omit<TreeQuery, "event">, search: boolean): CallTreeOptions {
  const o: CallTreeOptions = {
    orientation: q.orientation,
    by: q.by,
    ownCodeOnly: q.ownCodeOnly,
    hideLibrary: q.hideLibrary,
    device: q.device,
  };
  if (search && q.search) o.search = q.search;
  if (q.range) o.range = q.range;
  const groups = usableGroups(q.groups).groups;
  if (groups) o.groups = groups;
  return o;
}

function spansOf(engine: Engine, device: number): { name: string; from: number; to: number }[] {
  const { replay } = momentOf(engine, device, 0);
  if (!replay) return [];
  const out: { name: string; from: number; to: number }[] = [];
  for (const a of replay.markers.annotations) {
    // endEvent is the first event at or after END: null when END came after the trace's last event (the
    // scope was still running at the dump, e.g. a snapshot taken inside optimizer.step): it runs to the end.
    const end = a.endEvent ?? (a.endUs !== null && a.startEvent !== null ? replay.length : null);
    if (a.startEvent === null || end === null) continue;
    out.push({ name: a.name, from: a.startEvent, to: Math.max(a.startEvent, end - 1) });
    if (out.length >= 200) break;
  }
  return out;
}

/** The groups whose regex compiles (null: none), and why the others were left out. */
function usableGroups(groups: TreeQuery["groups"]): {
  groups: Record<string, string> | null;
  errors: { name: string; message: string }[];
} {
  const out: Record<string, string> = {};
  const errors: { name: string; message: string }[] = [];
  let n = 0;
  for (const g of groups ?? []) {
    if (g.name in out) continue;
    try {
      new RegExp(g.re);
    } catch (e) {
      errors.push({ name: g.name, message: e instanceof Error ? e.message : String(e) });
      continue;
    }
    out[g.name] = g.re;
    n++;
  }
  return { groups: n > 0 ? out : null, errors };
}

/** The whole tree of a query, with the search message when its /regex/ is bad. */
function fullTree(engine: Engine, q: TreeQuery): { tree: CallTree; searchError: string | null } {
  const b = builderOf(engine);
  const groupBy = q.groupBy ? parseGroupBy(q.groupBy) : null;
  if (groupBy && engine.model && engine.attribution) {
    const model = engine.model;
    const hasTrace = model.traces[q.device]?.length > 0;
    const replay = hasTrace ? engine.device(q.device).replay : null;
    const at = q.event === null || !replay ? "snapshot" : Math.max(-1, Math.min(replay.length - 1, q.event));
    return {
      tree: buildGroupedTree(model, engine.attribution, replay, at, groupBy, {
        device: q.device,
        search: q.search || undefined,
      }),
      searchError: null,
    };
  }
  // A range needs the device's trace; without one the moment (the snapshot) is shown.
  const ranged = q.range ? momentOf(engine, q.device, 0) : null;
  const { replay, at } = ranged?.replay ? ranged : momentOf(engine, q.device, q.event);
  if (q.range && !ranged?.replay) q = { ...q, range: null };
  if (q.search) {
    try {
      searchTest(q.search);
    } catch (e) {
      return {
        tree: b.build(replay, at, options(q, false)),
        searchError: e instanceof Error ? e.message : String(e),
      };
    }
  }
  return { tree: b.build(replay, at, options(q, true)), searchError: null };
}

interface Stats {
  size: number;
  matches: number;
}

function statsOf<N extends { children: N[] }>(n: N, isMatch: (n: N) => boolean, out: Map<N, Stats>): Stats {
  let size = 1;
  let matches = isMatch(n) ? 1 : 0;
  for (const c of n.children) {
    const s = statsOf(c, isMatch, out);
    size += s.size;
    matches += s.matches;
  }
  const st = { size, matches };
  out.set(n, st);
  return st;
}

/**
 * The byte threshold of a pruned tree: a node is kept when it is among the `maxNodes` largest or holds at
 * least `share` bytes, never more than 2 × maxNodes nodes in all (children are never larger than their
 * parent, so the kept nodes always reach the root).
 */
function threshold(values: number[], maxNodes: number, share: number): number {
  const sorted = values.filter((v) => v >= 1).sort((a, b) => b - a);
  if (sorted.length <= maxNodes) return 1;
  // Strictly above the first value left out (bytes are whole), so ties at the cut stay within the budget.
  const top = sorted[maxNodes] + 0.5;
  let t = Math.min(top, Math.max(1, share));
  const cap = 2 * maxNodes;
  if (sorted.length > cap && sorted[cap] >= t) t = sorted[cap] + 0.5;
  return t;
}

/** Prunes a core tree: nodes ≥ minBytes (and the matching ones, with their ancestors), "… N more" for the rest. */
export function pruneTree(
  root: CallTreeNode,
  total: number,
  maxNodes = DEFAULT_MAX_NODES,
  minShare = DEFAULT_MIN_SHARE,
): { root: TreeNodeOut; shown: number; matchShown: number; minBytes: number } {
  const stats = new Map<CallTreeNode, Stats>();
  statsOf(root, (n) => n.match, stats);
  const values: number[] = [];
  const collect = (n: CallTreeNode) => {
    for (const c of n.children) {
      values.push(c.bytes);
      collect(c);
    }
  };
  collect(root);
  const minBytes = threshold(values, maxNodes, total * minShare);
  let budget = 2 * maxNodes + 1;
  let extra = EXTRA_MATCHES;
  let shown = 1;
  let matchShown = root.match ? 1 : 0;
  const C = root.byCategory.length;
  const out = (n: CallTreeNode): TreeNodeOut => {
    const children: TreeNodeOut[] = [];
    let cut: CallTreeNode[] | null = null;
    for (const c of n.children) {
      const st = stats.get(c) as Stats;
      const big = c.bytes >= minBytes && budget > 0;
      const forMatch = !big && st.matches > 0 && extra > 0;
      if (big || forMatch) {
        if (big) budget--;
        else extra--;
        shown++;
        if (c.match) matchShown++;
        children.push(out(c));
      } else (cut ??= []).push(c);
    }
    if (cut) {
      const more: TreeNodeOut = {
        key: `${n.key}~more`,
        kind: "more",
        name: `… ${cut.length} more`,
        detail: null,
        own: false,
        frame: null,
        collapsedFrames: null,
        bytes: 0,
        selfBytes: 0,
        blocks: 0,
        byCategory: new Array<number>(C).fill(0),
        match: false,
        children: [],
        hiddenNodes: 0,
        hiddenMatches: 0,
      };
      for (const c of cut) {
        const st = stats.get(c) as Stats;
        more.bytes += c.bytes;
        more.selfBytes += c.bytes;
        more.blocks += c.blocks;
        for (let k = 0; k < C; k++) more.byCategory[k] += c.byCategory[k] ?? 0;
        more.hiddenNodes = (more.hiddenNodes ?? 0) + st.size;
        more.hiddenMatches = (more.hiddenMatches ?? 0) + st.matches;
      }
      more.name = `… ${cut.length} more${more.hiddenNodes !== cut.length ? ` (${more.hiddenNodes} nodes)` : ""}`;
      shown++;
      children.push(more);
    }
    return {
      key: n.key,
      kind: n.kind,
      name: n.name,
      detail: n.detail,
      own: n.own,
      frame: n.frame,
      collapsedFrames: n.collapsedFrames,
      bytes: n.bytes,
      selfBytes: n.selfBytes,
      blocks: n.blocks,
      byCategory: n.byCategory,
      match: n.match,
      children,
    };
  };
  return { root: out(root), shown, matchShown, minBytes };
}

export function treeAnswer(engine: Engine, q: TreeQuery): TreeAnswer {
  const t0 = performance.now();
  const { tree, searchError } = fullTree(engine, q);
  const pruned = pruneTree(tree.root, tree.totalBytes, q.maxNodes, q.minShare);
  return {
    device: tree.device,
    event: tree.event,
    at: tree.at === "snapshot" ? "snapshot" : "event",
    orientation: tree.orientation,
    by: tree.by,
    ownCodeOnly: q.ownCodeOnly,
    hideLibrary: q.hideLibrary,
    totalBytes: tree.totalBytes,
    totalBlocks: tree.totalBlocks,
    hiddenBytes: tree.hiddenBytes,
    categoryNames: [...tree.categoryNames],
    root: pruned.root,
    matchCount: tree.matchKeys.length,
    matchShown: pruned.matchShown,
    matchBytes: tree.matchBytes,
    searchError,
    groupErrors: usableGroups(q.groups).errors,
    range: tree.range ?? null,
    spans: spansOf(engine, q.device),
    nodeCount: tree.nodeCount,
    shownNodes: pruned.shown,
    minBytes: pruned.minBytes,
    buildMs: performance.now() - t0,
    groupModes: groupModesOf(engine),
  };
}

/** The whole tree (not the pruned one) as folded stacks, JSON or CSV. */
export function treeExport(engine: Engine, q: TreeQuery, format: TreeExportFormat): string {
  const { tree } = fullTree(engine, q);
  if (format === "folded") return toFolded(tree);
  if (format === "csv") return toCsv(tree);
  return `${JSON.stringify({ ...toJson(tree), matchBytes: tree.matchBytes, search: q.search || null })}\n`;
}

// ---- the search elsewhere: per stack, per allocation, over time ----

interface SearchCache {
  key: string;
  /** Per stack: 1 when it has a matching frame (and own code, with ownCodeOnly). */
  stacks: Uint8Array;
}

const stackCaches = new WeakMap<CallTreeBuilder, SearchCache[]>();

function matchingStacks(engine: Engine, search: string, ownCodeOnly: boolean): Uint8Array {
  const b = builderOf(engine);
  const key = `${ownCodeOnly ? 1 : 0}|${search}`;
  let list = stackCaches.get(b);
  if (!list) {
    list = [];
    stackCaches.set(b, list);
  }
  const hit = list.find((c) => c.key === key);
  if (hit) return hit.stacks;
  const test = searchTest(search); // throws SyntaxError on a bad /regex/
  const model = b.model;
  const { offsets, frameIds } = model.stacks;
  const frameHit = new Uint8Array(model.frames.length); // 0 untested, 1 no, 2 yes
  const out = new Uint8Array(model.stacks.length);
  for (let s = 0; s < out.length; s++) {
    if (s === EMPTY_STACK || offsets[s + 1] <= offsets[s]) continue;
    if (ownCodeOnly && !b.paths.hasOwn(s)) continue;
    for (let i = offsets[s]; i < offsets[s + 1]; i++) {
      const f = frameIds[i];
      if (frameHit[f] === 0) frameHit[f] = test(b.paths.frameText(f)) ? 2 : 1;
      if (frameHit[f] === 2) {
        out[s] = 1;
        break;
      }
    }
  }
  list.push({ key, stacks: out });
  if (list.length > 8) list.shift();
  return out;
}

interface SeriesCache {
  key: string;
  initial: number;
  column: Float64Array;
}

const seriesCaches = new WeakMap<Replay, SeriesCache[]>();

/** Matching allocated bytes after each event (the tree's matchBytes at every event). */
export function matchSeries(engine: Engine, r: Replay, search: string, ownCodeOnly: boolean): SeriesCache {
  const key = `${ownCodeOnly ? 1 : 0}|${search}`;
  let list = seriesCaches.get(r);
  if (!list) {
    list = [];
    seriesCaches.set(r, list);
  }
  const hit = list.find((c) => c.key === key);
  if (hit) return hit;
  const stacks = matchingStacks(engine, search, ownCodeOnly);
  const n = r.length;
  const A = r.allocations;
  const delta = new Float64Array(n + 1);
  let initial = 0;
  const live0 = new Set(liveAllocationsAt(r, -1));
  for (let k = 0; k < A.length; k++) {
    if (!stacks[stackOf(A, k)]) continue;
    const fr = A.freeRequestedEvent[k];
    const fc = A.freeCompletedEvent[k];
    // Allocated (not pending free) from its alloc event up to its free request (or its close).
    const end = Math.min(fr === NEVER || fr < 0 ? NEVER : fr, fc === NEVER || fc < 0 ? NEVER : fc);
    const a = A.allocEvent[k];
    const start = a >= 0 ? a : live0.has(k) ? -1 : null;
    if (start === null || end <= start) continue;
    const size = A.sizeBytes[k];
    if (start < 0) initial += size;
    else delta[start] += size;
    if (end < n) delta[end] -= size;
  }
  const column = new Float64Array(n);
  let v = initial;
  for (let i = 0; i < n; i++) {
    v += delta[i];
    column[i] = v;
  }
  const c = { key, initial, column };
  list.push(c);
  if (list.length > 4) list.shift();
  return c;
}

export function treeSearchTimeline(engine: Engine, q: TreeSearchTimelineQuery): TreeSearchTimelineAnswer {
  const B = Math.max(1, Math.min(20000, Math.floor(q.buckets)));
  const out: TreeSearchTimelineAnswer = {
    buckets: B,
    match: new Float64Array(B).fill(Number.NaN),
    maxBytes: 0,
    maxEvent: -1,
  };
  if (!q.search) return out;
  const d = engine.device(q.device);
  const r = d.replay;
  const n = r.length;
  if (n === 0 || !(q.x1 > q.x0)) return out;
  const { column, initial } = matchSeries(engine, r, q.search, q.ownCodeOnly);
  for (let i = 0; i < n; i++) {
    if (column[i] > out.maxBytes) {
      out.maxBytes = column[i];
      out.maxEvent = i;
    }
  }
  const axis = q.axis === "time" && d.timeAxis ? "time" : "event";
  const x = axisX(r, axis);
  forEachBucket(n, x, q.x0, q.x1, B, (b, prev, start, end) => {
    let m = prev >= 0 ? column[prev] : initial;
    for (let k = start; k < end; k++) if (column[k] > m) m = column[k];
    out.match[b] = m;
  });
  return out;
}

/** The bands of "each allocation" mode whose allocation matches, positioned as the timeline draws them. */
export function treeSearchBands(
  engine: Engine,
  q: BandsQuery & { search: string; ownCodeOnly: boolean },
): BandsAnswer {
  const all = engine.bands(q);
  const d = engine.device(q.device);
  const A = d.replay.allocations;
  const stacks = q.search ? matchingStacks(engine, q.search, q.ownCodeOnly) : null;
  const keep: number[] = [];
  if (stacks) for (let i = 0; i < all.count; i++) if (stacks[stackOf(A, all.alloc[i])]) keep.push(i);
  let points = 0;
  for (const i of keep) points += all.pointStart[i + 1] - all.pointStart[i];
  const out: BandsAnswer = {
    count: keep.length,
    alloc: new Int32Array(keep.length),
    category: new Int32Array(keep.length),
    sizeBytes: new Float64Array(keep.length),
    pointStart: new Int32Array(keep.length + 1),
    px: new Float64Array(points),
    py: new Float64Array(points),
    inferred: new Uint8Array(keep.length),
    lumped: 0,
    lumpedBytesMax: 0,
    truncated: all.truncated,
  };
  let p = 0;
  keep.forEach((i, j) => {
    out.alloc[j] = all.alloc[i];
    out.category[j] = all.category[i];
    out.sizeBytes[j] = all.sizeBytes[i];
    out.inferred[j] = all.inferred[i];
    out.pointStart[j] = p;
    for (let k = all.pointStart[i]; k < all.pointStart[i + 1]; k++, p++) {
      out.px[p] = all.px[k];
      out.py[p] = all.py[k];
    }
  });
  out.pointStart[keep.length] = p;
  return out;
}

/** The segment map's refs that match: block indices at the snapshot, allocation indices at an event. */
export function treeSearchRefs(engine: Engine, q: TreeSearchRefsQuery): Int32Array {
  const model = engine.model;
  if (!model || !q.search) return new Int32Array(0);
  const stacks = matchingStacks(engine, q.search, q.ownCodeOnly);
  const out: number[] = [];
  const { replay } = momentOf(engine, q.device, q.event);
  if (!replay) {
    const blk = model.blocks;
    for (let b = 0; b < blk.length; b++) {
      if (blk.state[b] !== BlockState.inactive && stacks[blk.stack[b]]) out.push(b);
    }
  } else {
    const A = replay.allocations;
    for (let k = 0; k < A.length; k++) if (stacks[stackOf(A, k)]) out.push(k);
  }
  return Int32Array.from(out);
}

// ---- compile_context regions ----

const MAX_REGIONS = 20000;

export function compileRegions(engine: Engine, device: number): CompileRegionsAnswer {
  const model = engine.model;
  const empty = { device, texts: [], regions: [], omitted: 0 };
  if (!model || !(model.traces[device]?.length > 0)) return empty;
  const d = engine.device(device);
  const r = d.replay;
  const list = r.markers.compileContexts;
  const ids = new Map<string, number>();
  const regions: CompileRegion[] = [];
  for (const g of list) {
    if (regions.length >= MAX_REGIONS) break;
    let id = ids.get(g.text);
    if (id === undefined) {
      id = ids.size;
      ids.set(g.text, id);
    }
    const t = (i: number) => (d.timeAxis && i >= 0 && i < r.length ? r.x[i] : Number.NaN);
    regions.push({
      text: g.text,
      id,
      startEvent: g.startEvent,
      endEvent: g.endEvent,
      t0: t(g.startEvent),
      t1: t(Math.min(r.length - 1, g.endEvent + 1)),
    });
  }
  return { device, texts: [...ids.keys()], regions, omitted: list.length - regions.length };
}

// ---- compare: B − A ----

export function treeDiff(a: Engine, b: Engine, q: TreeDiffQuery): TreeDiffAnswer {
  const base = {
    orientation: q.orientation,
    by: q.by,
    ownCodeOnly: q.ownCodeOnly,
    hideLibrary: q.hideLibrary,
    search: "",
  };
  const ta = fullTree(a, { ...base, device: q.deviceA, event: q.eventA }).tree;
  const tb = fullTree(b, { ...base, device: q.deviceB, event: q.eventB }).tree;
  const diff = diffTrees(ta, tb);
  const maxNodes = q.maxNodes ?? DEFAULT_MAX_NODES;
  const scale = Math.max(ta.totalBytes, tb.totalBytes);
  const sizes = new Map<CallTreeDiffNode, Stats>();
  statsOf(diff, () => false, sizes);
  const values: number[] = [];
  const collect = (n: CallTreeDiffNode) => {
    for (const c of n.children) {
      values.push(Math.abs(c.deltaBytes));
      collect(c);
    }
  };
  collect(diff);
  const minBytes = threshold(values, maxNodes, scale * DEFAULT_MIN_SHARE);
  let shown = 1;
  let budget = 2 * maxNodes + 1;
  const out = (n: CallTreeDiffNode): TreeDiffNodeOut => {
    const children: TreeDiffNodeOut[] = [];
    let cut: CallTreeDiffNode[] | null = null;
    for (const c of n.children) {
      if (Math.abs(c.deltaBytes) >= minBytes && budget > 0) {
        budget--;
        shown++;
        children.push(out(c));
      } else (cut ??= []).push(c);
    }
    if (cut) {
      const more: TreeDiffNodeOut = {
        key: `${n.key}~more`,
        kind: "more",
        name: `… ${cut.length} more`,
        detail: null,
        own: false,
        bytesA: 0,
        bytesB: 0,
        deltaBytes: 0,
        blocksA: 0,
        blocksB: 0,
        children: [],
        hiddenNodes: 0,
      };
      for (const c of cut) {
        more.bytesA += c.bytesA;
        more.bytesB += c.bytesB;
        more.deltaBytes += c.deltaBytes;
        more.blocksA += c.blocksA;
        more.blocksB += c.blocksB;
        more.hiddenNodes = (more.hiddenNodes ?? 0) + (sizes.get(c)?.size ?? 1);
      }
      shown++;
      children.push(more);
    }
    return {
      key: n.key,
      kind: n.kind,
      name: n.name,
      detail: n.detail,
      own: n.own,
      bytesA: n.bytesA,
      bytesB: n.bytesB,
      deltaBytes: n.deltaBytes,
      blocksA: n.blocksA,
      blocksB: n.blocksB,
      children,
    };
  };
  return {
    root: out(diff),
    totalA: ta.totalBytes,
    totalB: tb.totalBytes,
    eventA: ta.event,
    eventB: tb.event,
    nodeCount: sizes.get(diff)?.size ?? 1,
    shownNodes: shown,
  };
}
