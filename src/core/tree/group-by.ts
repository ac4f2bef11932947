// The call tree grouped by what newer PyTorch stamps on allocations rather than by their stack:
// `forward` — backward allocations under the forward line that caused them (forward_frames, anomaly
// mode), the rest under "(no forward stack)"; `metadata[:KEY]` — live memory by its alloc entry's
// user_metadata string, or by one key of it when it is a JSON dict (entries without it under "(none)").
// Two levels: the group, then the allocations' call sites. Sums are exact: the root is the live
// allocated total, every group the sum of its sites.

import type { Attribution } from "../attribution";
import { BlockState, idAt, NO_STRING, type SnapshotModel } from "../model/types";
import { isAllocatedAt, liveAllocationsAt } from "../replay/state";
import { addressOf, blockOf, type Replay } from "../replay/types";
import type { CallTree, CallTreeNode, TreeMoment } from "./types";

export type GroupBy = { kind: "forward" } | { kind: "metadata"; key: string | null };

export const NONE_GROUP = "(none)";
export const NO_FORWARD_GROUP = "(no forward stack)";

/** "forward", "metadata", "metadata:KEY" → a GroupBy; null for anything else. */
export function parseGroupBy(text: string): GroupBy | null {
  if (text === "forward") return { kind: "forward" };
  if (text === "metadata") return { kind: "metadata", key: null };
  if (text.startsWith("metadata:") && text.length > "metadata:".length)
    return { kind: "metadata", key: text.slice("metadata:".length) };
  return null;
}

/** One key of a metadata string: the whole string, or `key` of it when it is a JSON object. */
export function metadataValue(text: string | null, key: string | null): string {
  if (text === null || text === "") return NONE_GROUP;
  if (key === null) return text;
  try {
    const v: unknown = JSON.parse(text);
    if (v === null || typeof v !== "object" || Array.isArray(v) || !(key in v)) return NONE_GROUP;
    const x = (v as Record<string, unknown>)[key];
    return typeof x === "string" ? x : JSON.stringify(x);
  } catch {
    return NONE_GROUP;
  }
}

/** The annotate notes of every allocation of a replay: notes accumulate until the address is allocated again. */
export function annotationsByAllocation(model: SnapshotModel, r: Replay): Map<number, string[]> {
  const out = new Map<number, string[]>();
  const t = r.trace;
  if (!t) return out;
  const annotate = model.actionNames.indexOf("annotate");
  if (annotate < 0) return out;
  // Most traces hold no note: list the annotate entries that carry one (indexOf, from one to the next)
  // before indexing every allocation by address.
  const noted: number[] = [];
  for (let i = t.action.indexOf(annotate); i >= 0; i = t.action.indexOf(annotate, i + 1))
    if (idAt(t.userMetadata, i) !== NO_STRING) noted.push(i);
  if (noted.length === 0) return out;
  const A = r.allocations;
  const byAddr = new Map<number, number[]>();
  for (let k = 0; k < A.length; k++) {
    const list = byAddr.get(addressOf(A, k));
    if (list) list.push(k);
    else byAddr.set(addressOf(A, k), [k]);
  }
  for (const i of noted) {
    const ids = byAddr.get(t.addr[i]);
    if (!ids) continue;
    // the allocation open at this address at the note: the latest allocated at or before it
    let best = -1;
    for (const k of ids)
      if (A.allocEvent[k] <= i && (best < 0 || A.allocEvent[k] > A.allocEvent[best])) best = k;
    if (best < 0) continue;
    const notes = out.get(best);
    const text = model.strings[idAt(t.userMetadata, i)];
    if (notes) notes.push(text);
    else out.set(best, [text]);
  }
  return out;
}

interface Item {
  bytes: number;
  category: number;
  site: number;
  group: string;
  groupDetail: string | null;
  groupOwn: boolean;
}

/**
 * The grouped tree at the snapshot (the device's blocks; `replay` names their alloc entries when the
 * device has a trace), the peak or an event (the replay's live allocations).
 */
export function buildGroupedTree(
  model: SnapshotModel,
  a: Attribution,
  replay: Replay | null,
  at: TreeMoment,
  groupBy: GroupBy,
  opts: { device?: number | null; search?: string } = {},
): CallTree {
  const items: Item[] = [];
  const t = replay?.trace ?? null;
  const groupOfEntry = (e: number): Pick<Item, "group" | "groupDetail" | "groupOwn"> => {
    if (groupBy.kind === "metadata") {
      const s = t && e >= 0 ? idAt(t.userMetadata, e) : NO_STRING;
      return {
        group: metadataValue(s === NO_STRING ? null : model.strings[s], groupBy.key),
        groupDetail: null,
        groupOwn: false,
      };
    }
    return forwardGroup(t && e >= 0 && t.forwardStack ? t.forwardStack[e] : 0);
  };
  const forwardGroup = (fs: number): Pick<Item, "group" | "groupDetail" | "groupOwn"> => {
    if (!fs) return { group: NO_FORWARD_GROUP, groupDetail: null, groupOwn: false };
    const site = a.sites[a.stackSite[fs]];
    const lib = a.stackLibrary[fs];
    return {
      group: site.label,
      groupDetail: lib >= 0 ? a.sites[lib].label : null,
      groupOwn: site.via === "own-code",
    };
  };
  let event: number | null = null;
  let kind: CallTree["at"] = "snapshot";
  let device: number | null = opts.device ?? null;
  if (at === "snapshot") {
    // blocks → their allocation in the replay (alive at the end), for the alloc entry's stamps
    const allocOfBlock = new Map<number, number>();
    if (replay) {
      const A = replay.allocations;
      for (let k = 0; k < A.length; k++) {
        const b = blockOf(A, k);
        if (b >= 0) allocOfBlock.set(b, k);
      }
    }
    const B = model.blocks;
    for (let b = 0; b < B.length; b++) {
      if (B.state[b] !== BlockState.active_allocated) continue;
      if (device !== null && model.segments.device[B.segment[b]] !== device) continue;
      const k = allocOfBlock.get(b);
      const e = k !== undefined && replay ? replay.allocations.allocEvent[k] : -1;
      const g =
        groupBy.kind === "forward" && B.forwardStack && B.forwardStack[b]
          ? forwardGroup(B.forwardStack[b])
          : groupOfEntry(e);
      items.push({ bytes: B.sizeBytes[b], category: a.blockCategory[b], site: a.blockSite[b], ...g });
    }
  } else {
    if (!replay) throw new RangeError("the grouped tree at the peak or an event needs a replay");
    kind = at === "peak" ? "peak" : "event";
    event = at === "peak" ? replay.peakEvent : at;
    if (event === null) throw new RangeError(`device ${replay.device} has no events: no peak`);
    device = replay.device;
    const A = replay.allocations;
    const ids = liveAllocationsAt(replay, event);
    for (let j = 0; j < ids.length; j++) {
      const k = ids[j];
      if (!isAllocatedAt(replay, k, event)) continue;
      items.push({
        bytes: A.sizeBytes[k],
        category: A.category[k],
        site: A.site[k],
        ...groupOfEntry(A.allocEvent[k]),
      });
    }
  }
  return toTree(a, items, { at: kind, event, device, groupBy, search: opts.search });
}

function toTree(
  a: Attribution,
  items: Item[],
  o: { at: CallTree["at"]; event: number | null; device: number | null; groupBy: GroupBy; search?: string },
): CallTree {
  const C = a.categoryNames.length;
  const node = (key: string, kind: CallTreeNode["kind"], name: string, detail: string | null, own: boolean) =>
    ({
      key,
      kind,
      name,
      detail,
      own,
      frame: null,
      collapsedFrames: null,
      bytes: 0,
      selfBytes: 0,
      blocks: 0,
      byCategory: new Array(C).fill(0),
      match: false,
      children: [],
    }) as CallTreeNode;
  const rootName =
    o.groupBy.kind === "forward"
      ? "all live allocated memory, by forward line"
      : `all live allocated memory, by metadata${o.groupBy.key ? `:${o.groupBy.key}` : ""}`;
  const root = node("root", "root", rootName, null, false);
  const groups = new Map<string, CallTreeNode>();
  const sites = new Map<string, CallTreeNode>();
  const matcher = o.search ? searchTest(o.search) : null;
  const matchKeys = new Set<string>();
  let matchBytes = matcher ? 0 : null;
  for (const it of items) {
    let g = groups.get(it.group);
    if (!g) {
      g = node(`g:${it.group}`, "group", it.group, it.groupDetail, it.groupOwn);
      groups.set(it.group, g);
      root.children.push(g);
    }
    const siteKey = `${g.key}\u0000${it.site}`;
    let s = sites.get(siteKey);
    if (!s) {
      const site = it.site >= 0 ? a.sites[it.site] : null;
      s = node(
        `${g.key}/s:${site?.key ?? "none"}`,
        "site",
        site?.label ?? "no call site",
        null,
        site?.via === "own-code",
      );
      sites.set(siteKey, s);
      g.children.push(s);
    }
    for (const n of [root, g, s]) {
      n.bytes += it.bytes;
      n.blocks++;
      n.byCategory[it.category] += it.bytes;
    }
    s.selfBytes += it.bytes;
    if (matcher && matchBytes !== null) {
      const hitG = matcher(g.name) || (g.detail !== null && matcher(g.detail));
      const hitS = matcher(s.name);
      if (hitG) {
        g.match = true;
        matchKeys.add(g.key);
      }
      if (hitS) {
        s.match = true;
        matchKeys.add(s.key);
      }
      if (hitG || hitS) matchBytes += it.bytes;
    }
  }
  const sortDeep = (n: CallTreeNode) => {
    n.children.sort((x, y) => y.bytes - x.bytes || x.name.localeCompare(y.name));
    for (const c of n.children) sortDeep(c);
  };
  sortDeep(root);
  return {
    device: o.device,
    event: o.event,
    at: o.at,
    orientation: "top-down",
    by: "stack",
    groupBy: o.groupBy.kind === "forward" ? "forward" : `metadata${o.groupBy.key ? `:${o.groupBy.key}` : ""}`,
    totalBytes: root.bytes,
    totalBlocks: root.blocks,
    hiddenBytes: 0,
    categoryNames: a.categoryNames,
    root,
    matchKeys: [...matchKeys],
    matchBytes,
    nodeCount: 1 + groups.size + sites.size,
  };
}

function searchTest(text: string): (s: string) => boolean {
  const m = /^\/(.*)\/([a-z]*)$/.exec(text);
  if (m) {
    const rx = new RegExp(m[1], m[2]);
    return (s) => rx.test(s);
  }
  const lower = text.toLowerCase();
  return (s) => s.toLowerCase().includes(lower);
}
