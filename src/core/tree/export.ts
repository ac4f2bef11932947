// Exports of a call tree: folded stacks (flamegraph.pl / speedscope / inferno), JSON, CSV. Pure strings.

import type { CallTree, CallTreeDiffNode, CallTreeNode } from "./types";

/** A node's name as one folded-stack frame: its detail appended, no `;` or line breaks. */
export function foldedFrameName(n: CallTreeNode): string {
  const text = n.detail && n.kind === "library" ? `${n.name} (${n.detail})` : n.name;
  return text.replace(/;/g, ",").replace(/[\r\n]+/g, " ");
}

/**
 * Folded stacks: one `frame;frame;frame BYTES` line per distinct path with self bytes, in the tree's order
 * (root's children first: the outermost frame in a top-down tree), summing to root.bytes. Lines whose
 * display path coincides are merged.
 */
export function toFolded(tree: CallTree): string {
  const lines = new Map<string, number>();
  const walk = (n: CallTreeNode, prefix: string) => {
    for (const c of n.children) {
      const path = prefix ? `${prefix};${foldedFrameName(c)}` : foldedFrameName(c);
      if (c.selfBytes > 0) lines.set(path, (lines.get(path) ?? 0) + c.selfBytes);
      walk(c, path);
    }
  };
  walk(tree.root, "");
  if (tree.root.selfBytes > 0) lines.set("(root)", (lines.get("(root)") ?? 0) + tree.root.selfBytes);
  let out = "";
  for (const [path, bytes] of lines) out += `${path} ${bytes}\n`;
  return out;
}

export interface TreeJsonNode {
  name: string;
  bytes: number;
  selfBytes: number;
  blocks: number;
  key: string;
  kind: string;
  detail?: string;
  own?: true;
  match?: true;
  frame?: { filename: string; line: number; name: string };
  collapsedFrames?: string[];
  /** Non-zero categories only. */
  categories: Record<string, number>;
  children: TreeJsonNode[];
}

export interface TreeJson {
  device: number | null;
  event: number | null;
  totalBytes: number;
  root: TreeJsonNode;
}

function categories(n: CallTreeNode, names: readonly string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (let c = 0; c < n.byCategory.length; c++) {
    if (n.byCategory[c] !== 0) out[names[c] ?? `category ${c}`] = n.byCategory[c];
  }
  return out;
}

function jsonNode(n: CallTreeNode, names: readonly string[], maxDepth: number, depth: number): TreeJsonNode {
  const out: TreeJsonNode = {
    name: n.name,
    bytes: n.bytes,
    selfBytes: n.selfBytes,
    blocks: n.blocks,
    key: n.key,
    kind: n.kind,
    categories: categories(n, names),
    children: [],
  };
  if (n.detail) out.detail = n.detail;
  if (n.own) out.own = true;
  if (n.match) out.match = true;
  if (n.frame) out.frame = { ...n.frame };
  if (n.collapsedFrames) out.collapsedFrames = n.collapsedFrames;
  if (depth < maxDepth) out.children = n.children.map((c) => jsonNode(c, names, maxDepth, depth + 1));
  else if (n.children.length > 0) out.selfBytes = n.bytes; // cut here: the rest counts as this node's own
  return out;
}

/** `{device, event, totalBytes, root}`; nodes carry name, bytes, selfBytes, blocks, children (+ key, kind,
 * categories and, where they apply, detail, own, match, frame, collapsedFrames). */
export function toJson(tree: CallTree, opts: { maxDepth?: number } = {}): TreeJson {
  return {
    device: tree.device,
    event: tree.event,
    totalBytes: tree.totalBytes,
    root: jsonNode(tree.root, tree.categoryNames, opts.maxDepth ?? Number.POSITIVE_INFINITY, 0),
  };
}

function csvField(s: string): string {
  return /[",\r\n]/.test(s) ? `"${s.replace(/"/g, '""')}"` : s;
}

/** One row per node, depth-first (root = depth 0): depth, key, kind, name, detail, own, bytes, selfBytes,
 * blocks, then one column per category. */
export function toCsv(tree: CallTree): string {
  const names = tree.categoryNames;
  const rows: string[] = [
    ["depth", "key", "kind", "name", "detail", "own", "bytes", "selfBytes", "blocks", ...names]
      .map(csvField)
      .join(","),
  ];
  const walk = (n: CallTreeNode, depth: number) => {
    const cats = Array.from(n.byCategory, (v) => String(v));
    rows.push(
      [
        String(depth),
        n.key,
        n.kind,
        csvField(n.name),
        csvField(n.detail ?? ""),
        n.own ? "1" : "0",
        String(n.bytes),
        String(n.selfBytes),
        String(n.blocks),
        ...cats,
      ].join(","),
    );
    for (const c of n.children) walk(c, depth + 1);
  };
  walk(tree.root, 0);
  return `${rows.join("\n")}\n`;
}

/** Compare: B − A per node key, over the union of both trees' nodes; children by |delta|, largest first. */
export function diffTrees(a: CallTree, b: CallTree): CallTreeDiffNode {
  const merge = (x: CallTreeNode | null, y: CallTreeNode | null): CallTreeDiffNode => {
    const n = (y ?? x) as CallTreeNode;
    const byKey = new Map<string, [CallTreeNode | null, CallTreeNode | null]>();
    for (const c of x?.children ?? []) byKey.set(c.key, [c, null]);
    for (const c of y?.children ?? []) {
      const e = byKey.get(c.key);
      if (e) e[1] = c;
      else byKey.set(c.key, [null, c]);
    }
    const children = [...byKey.values()].map(([p, q]) => merge(p, q));
    children.sort(
      (p, q) =>
        Math.abs(q.deltaBytes) - Math.abs(p.deltaBytes) || q.bytesB - p.bytesB || (p.key < q.key ? -1 : 1),
    );
    const bytesA = x?.bytes ?? 0;
    const bytesB = y?.bytes ?? 0;
    return {
      key: n.key,
      kind: n.kind,
      name: n.name,
      detail: n.detail,
      own: n.own,
      bytesA,
      bytesB,
      deltaBytes: bytesB - bytesA,
      selfBytesA: x?.selfBytes ?? 0,
      selfBytesB: y?.selfBytes ?? 0,
      blocksA: x?.blocks ?? 0,
      blocksB: y?.blocks ?? 0,
      children,
    };
  };
  return merge(a.root, b.root);
}
