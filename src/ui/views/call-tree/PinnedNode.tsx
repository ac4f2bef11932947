// A pinned node of the call tree: its whole path (library runs expanded into their frames, full file
// names), its bytes at the current moment, in a scrollable list with Copy. It stays until unpinned, also
// when the cursor moves to a moment where the node holds nothing, or the tree is turned another way.

import { useState } from "react";
import type { TreeAnswer, TreeNodeOut } from "../../../../workers/api";
import { Bytes } from "../../components/Bytes";
import { formatCount, formatPercent } from "../../format";
import { openWhatIf } from "../whatif/store";
import { copyText } from "./download";
import { stackEntries, stackHeading, stackText } from "./model";

export interface Pinned {
  key: string;
  /** The path when it was pinned (root excluded, the node last). */
  path: TreeNodeOut[];
  orientation: TreeAnswer["orientation"];
  /** The tree's layout when it was pinned (orientation, by, filters): keys are paths in one layout. */
  layout: string;
}

export function layoutOf(
  a: { orientation: string; by: string },
  f: { ownCodeOnly: boolean; hideLibrary: boolean },
) {
  return `${a.orientation}|${a.by}|${f.ownCodeOnly ? 1 : 0}|${f.hideLibrary ? 1 : 0}`;
}

export function PinnedNode({
  pinned,
  now,
  sameLayout,
  total,
  onClose,
}: {
  pinned: Pinned;
  /** The node in the tree shown now; null: it holds nothing at this moment (or is under "… more"). */
  now: TreeNodeOut | null;
  /** The tree shown now is laid out as when the node was pinned. */
  sameLayout: boolean;
  total: number;
  onClose: () => void;
}) {
  const [copied, setCopied] = useState<string | null>(null);
  const node = pinned.path[pinned.path.length - 1];
  const entries = stackEntries(pinned.path, pinned.orientation);
  return (
    <div className="detail ct-pinned" data-testid="tree-pinned" data-key={pinned.key}>
      <div className="toolbar">
        <strong>
          Pinned: <span className={node.own ? "ct-own" : undefined}>{node.name}</span>
        </strong>
        <span className="small" data-testid="tree-pinned-bytes" data-bytes={now?.bytes ?? 0}>
          {now ? (
            <>
              <Bytes value={now.bytes} /> live at this moment (
              {formatPercent(total > 0 ? now.bytes / total : 0)}; self <Bytes value={now.selfBytes} />,{" "}
              {formatCount(now.blocks)} blocks)
            </>
          ) : sameLayout ? (
            "holds no live memory at this moment (or is among the small nodes summed into “… N more”)"
          ) : (
            "pinned in another layout of the tree (orientation, by or filters changed): its bytes are not shown here"
          )}
        </span>
        <span className="spacer" />
        <button
          type="button"
          data-testid="tree-pinned-copy"
          onClick={() =>
            void copyText(stackText(pinned.path, pinned.orientation)).then((ok) =>
              setCopied(ok ? "Copied" : "Copy failed: select the text"),
            )
          }
        >
          Copy stack
        </button>
        {copied && (
          <span className="small muted" role="status">
            {copied}
          </span>
        )}
        <button type="button" onClick={onClose}>
          Unpin
        </button>
      </div>
      {node.frame && <WhatIfActions frame={node.frame} />}
      <div className="muted small">
        {stackHeading(pinned.orientation)}; the frames of a library run indented below it.
      </div>
      <ol className="stack ct-pinned-stack" data-testid="tree-pinned-stack">
        {entries.map((e, i) => (
          // biome-ignore lint/suspicious/noArrayIndexKey: entries repeat; position is the identity
          <li key={i} className={e.sub ? "ct-sub" : undefined}>
            <span className={e.own ? "fn ct-own" : e.sub ? undefined : "fn"}>{e.main}</span>
            {e.loc && <span className="loc"> {e.loc}</span>}
            {e.own && <span className="site-tag"> your code</span>}
          </li>
        ))}
      </ol>
    </div>
  );
}

const WHAT_IF_ACTIONS = [
  ["remove", "gone"],
  ["halve", "halved"],
  ["free-early", "freed early"],
  ["recompute", "recomputed"],
] as const;

/** "What if this were gone / halved / freed early / recomputed": the allocations under this frame. */
export function WhatIfActions({ frame }: { frame: NonNullable<TreeNodeOut["frame"]> }) {
  const text = `${frame.filename}:${frame.line}:${frame.name}`;
  return (
    <div className="toolbar small" data-testid="tree-pinned-whatif">
      <span className="muted">What if the memory under this frame were</span>
      {WHAT_IF_ACTIONS.map(([action, label]) => (
        <button
          key={action}
          type="button"
          onClick={() =>
            void openWhatIf({
              target: { kind: "selection", selection: `frame:${text}`, module: text },
              action,
            })
          }
        >
          {label}
        </button>
      ))}
    </div>
  );
}
