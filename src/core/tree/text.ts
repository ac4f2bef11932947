// The call tree for a terminal: an indented outline of the largest nodes, N levels deep.

import { formatMiB as formatBytes } from "../report/format";
import type { CallTree, CallTreeNode } from "./types";

export interface TreeTextOptions {
  /** Levels below the root (default 8). */
  depth?: number;
  /** Children shown per node, largest first (default 6); the rest are summed on one line. */
  top?: number;
  /** Nodes under this share of the root are summed into the "… more" line (default 0.005). */
  minShare?: number;
}

function pct(n: number, total: number): string {
  return total > 0 ? `${((n / total) * 100).toFixed(1)}%` : "—";
}

function nodeText(n: CallTreeNode): string {
  let s = n.own ? `${n.name} *` : n.name;
  if (n.detail) s += n.kind === "library" ? `  (${n.detail})` : `  [${n.detail}]`;
  if (n.match) s += "  ← match";
  return s;
}

/** Lines: `  12.00 MiB  45.2%  name`, children indented under their parent. */
export function renderTreeText(tree: CallTree, opts: TreeTextOptions = {}): string {
  const depth = opts.depth ?? 8;
  const top = opts.top ?? 6;
  const minShare = opts.minShare ?? 0.005;
  const total = tree.root.bytes;
  const lines: string[] = [];
  const row = (bytes: number, indent: string, text: string) =>
    lines.push(`${formatBytes(bytes).padStart(11)} ${pct(bytes, total).padStart(6)}  ${indent}${text}`);
  row(total, "", `${tree.root.name} (${tree.root.blocks} blocks)`);
  const walk = (n: CallTreeNode, level: number, indent: string) => {
    if (level > depth) return;
    const shown = n.children.filter((c, i) => i < top && (c.bytes >= total * minShare || i === 0));
    for (const c of shown) {
      row(c.bytes, indent, nodeText(c));
      if (level === depth && c.children.length > 0) row(c.bytes - c.selfBytes, `${indent}  `, "…");
      else walk(c, level + 1, `${indent}  `);
    }
    const rest = n.children.slice(shown.length);
    if (rest.length > 0) {
      const bytes = rest.reduce((s, c) => s + c.bytes, 0);
      row(bytes, indent, `… ${rest.length} more`);
    }
  };
  walk(tree.root, 1, "  ");
  return `${lines.join("\n")}\n`;
}
