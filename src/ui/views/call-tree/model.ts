// Pure helpers over a posted (pruned) tree: an index by key, paths, the moment's words, the node's stack
// as text (the pinned panel and its Copy), colours. No React, no DOM.

import type { TreeAnswer, TreeNodeOut } from "../../../../workers/api";

export interface NodeIndex {
  byKey: Map<string, { node: TreeNodeOut; parent: string | null; depth: number }>;
  /** Keys of nodes with a matching node below them (expanded while a search is on). */
  matchAbove: Set<string>;
  maxDepth: number;
}

export function indexTree(root: TreeNodeOut): NodeIndex {
  const byKey: NodeIndex["byKey"] = new Map();
  const matchAbove = new Set<string>();
  let maxDepth = 0;
  const walk = (n: TreeNodeOut, parent: string | null, depth: number): boolean => {
    byKey.set(n.key, { node: n, parent, depth });
    if (depth > maxDepth) maxDepth = depth;
    let below = false;
    for (const c of n.children) if (walk(c, n.key, depth + 1)) below = true;
    if (below) matchAbove.add(n.key);
    return below || n.match || (n.hiddenMatches ?? 0) > 0;
  };
  walk(root, null, 0);
  return { byKey, matchAbove, maxDepth };
}

/** The nodes from the root (excluded) down to `key` (included); null when the key is not in the tree. */
export function pathTo(index: NodeIndex, key: string): TreeNodeOut[] | null {
  const out: TreeNodeOut[] = [];
  let k: string | null = key;
  while (k !== null) {
    const e = index.byKey.get(k);
    if (!e) return null;
    if (e.parent !== null) out.push(e.node);
    k = e.parent;
  }
  return out.reverse();
}

/** Whether a node or one of its ancestors matched (its memory is in matching stacks). */
export function inMatch(path: TreeNodeOut[]): boolean {
  return path.some((n) => n.match);
}

interface Moment {
  at: string;
  event: number | null;
  range?: { from: number; to: number; measure: string } | null;
}

export function momentWords(a: Moment, peakEvent: number | null): string {
  if (a.range)
    return `${a.range.measure}, events #${a.range.from.toLocaleString("en-US")}–#${a.range.to.toLocaleString("en-US")}`;
  if (a.at === "snapshot" || a.event === null) return "at the snapshot";
  if (a.event === -1) return "before the first trace event";
  return `after event #${a.event.toLocaleString("en-US")}${a.event === peakEvent ? " (the peak)" : ""}`;
}

export function momentTag(a: Moment): string {
  if (a.range) return `${a.range.measure}-${a.range.from}-${a.range.to}`;
  return a.at === "snapshot" || a.event === null ? "snapshot" : `event${a.event}`;
}

/** The largest category of a node (its colour). */
export function mainCategory(n: { byCategory: number[] }): number {
  let best = -1;
  let max = -1;
  n.byCategory.forEach((v, c) => {
    if (v > max) {
      max = v;
      best = c;
    }
  });
  return best;
}

export interface StackEntry {
  /** The node's label (`train.py:57 forward`, `torch · 14 frames`). */
  main: string;
  /** Where: the full file name and line of a frame, the innermost frame of a library run, a rule. */
  loc: string | null;
  own: boolean;
  /** A frame inside a library run (indented under it). */
  sub: boolean;
}

/** A pinned node's path as entries, library runs expanded into their frames. */
export function stackEntries(path: TreeNodeOut[], orientation: TreeAnswer["orientation"]): StackEntry[] {
  const out: StackEntry[] = [];
  for (const n of path) {
    if (n.kind === "library" && n.collapsedFrames) {
      out.push({ main: n.name, loc: n.detail ? `→ ${n.detail}` : null, own: false, sub: false });
      const frames = orientation === "top-down" ? n.collapsedFrames : [...n.collapsedFrames].reverse();
      for (const f of frames) out.push({ main: f, loc: null, own: false, sub: true });
    } else if (n.frame) {
      out.push({ main: n.name, loc: `${n.frame.filename}:${n.frame.line}`, own: n.own, sub: false });
    } else out.push({ main: n.name, loc: n.detail, own: false, sub: false });
  }
  return out;
}

export function stackHeading(orientation: TreeAnswer["orientation"]): string {
  return orientation === "top-down"
    ? "outermost first: the program's entry at the top, the allocating frame at the bottom"
    : "innermost first: the allocation site at the top, its callers below";
}

/** The entries as text for Copy: one line each, library frames indented, own code marked. */
export function stackText(path: TreeNodeOut[], orientation: TreeAnswer["orientation"]): string {
  const lines = [`# ${stackHeading(orientation)}`];
  for (const e of stackEntries(path, orientation)) {
    if (e.sub) lines.push(`    ${e.main}`);
    else lines.push(`${e.main}${e.loc ? `    ${e.loc}` : ""}${e.own ? "    [your code]" : ""}`);
  }
  return `${lines.join("\n")}\n`;
}

/** Black or white text, whichever reads on `hex`. */
export function textOn(hex: string): string {
  const m = /^#?([0-9a-f]{6})$/i.exec(hex);
  if (!m) return "#000";
  const v = Number.parseInt(m[1], 16);
  const r = (v >> 16) & 255;
  const g = (v >> 8) & 255;
  const b = v & 255;
  return 0.299 * r + 0.587 * g + 0.114 * b > 150 ? "#111" : "#fff";
}

/** `hex` mixed with white (library frames drawn paler). */
export function paler(hex: string, amount = 0.5): string {
  const m = /^#?([0-9a-f]{6})$/i.exec(hex);
  if (!m) return hex;
  const v = Number.parseInt(m[1], 16);
  const mix = (c: number) => Math.round(c + (255 - c) * amount);
  const r = mix((v >> 16) & 255);
  const g = mix((v >> 8) & 255);
  const b = mix(v & 255);
  return `#${((1 << 24) | (r << 16) | (g << 8) | b).toString(16).slice(1)}`;
}
