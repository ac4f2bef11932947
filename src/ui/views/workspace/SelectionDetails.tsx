// The sidebar's details of a selected block (Segments) or call-tree node (Call tree / Flame), issue 21:
// size, category with the rule that named it, the allocating stack with its own-code line first, the
// alloc / free events — with actions (show those moments, what-if on the node's memory, clear).

import { useEffect, useState } from "react";
import type { BlockAllocation } from "../../../../workers/api";
import { Bytes } from "../../components/Bytes";
import { InferredLine } from "../../components/Inferred";
import { CompactStack, firstSentence } from "../../components/StackList";
import { formatAddress, formatCount, formatDurationUs, formatPercent } from "../../format";
import { useSide } from "../../state/store";
import { stackEntries } from "../call-tree/model";
import { WhatIfActions } from "../call-tree/PinnedNode";
import { type Selected, useSelection } from "./selection";

/** The side's selected block or node, when it belongs to the file and device shown. */
export function useSelectedItem(): Selected | null {
  const S = useSide();
  const side = S((s) => s.side);
  const generation = S((s) => s.generation);
  const device = S((s) => s.device);
  const item = useSelection((x) => x.item[side]);
  return item && item.generation === generation && item.device === device ? item : null;
}

export function SelectionDetails({ item }: { item: Selected }) {
  return item.kind === "block" ? <BlockDetails item={item} /> : <FrameDetails item={item} />;
}

function Clear() {
  const S = useSide();
  const side = S((s) => s.side);
  return (
    <button type="button" onClick={() => useSelection.getState().select(side, null)}>
      Clear
    </button>
  );
}

function BlockDetails({ item }: { item: Extract<Selected, { kind: "block" }> }) {
  const S = useSide();
  const ask = S((s) => s.ask);
  const colors = S((s) => s.colors);
  const categories = S((s) => s.panel?.categories);
  const names = (categories ?? []).map((c) => c.name);
  const [facts, setFacts] = useState<BlockAllocation | null>(null);
  const d = item.detail;
  useEffect(() => {
    let stale = false;
    setFacts(null);
    ask((api) => api.blockAllocation(item.device, item.ref, item.event)).then(
      (f) => !stale && setFacts(f),
      () => {},
    );
    return () => {
      stale = true;
    };
  }, [ask, item]);
  const a = facts?.detail ?? null;
  const catIndex = names.indexOf(d.category);
  return (
    <div
      data-testid="selection-block"
      data-addr={d.address}
      data-size={d.sizeBytes}
      data-category={d.category}
      data-alloc-event={a?.allocEvent ?? ""}
      data-free-event={a?.freeEvent ?? ""}
    >
      <p>
        <strong>
          Block <code>{formatAddress(d.address)}</code>
        </strong>
        : <Bytes value={d.sizeBytes} testId="selection-block-size" /> {d.state.replace(/_/g, " ")}
        {Number.isFinite(d.requestedBytes) && d.requestedBytes !== d.sizeBytes && (
          <span className="muted">
            {" "}
            (requested <Bytes value={d.requestedBytes} />)
          </span>
        )}
        <span className="muted small">
          {" "}
          · stream {d.stream} · segment {formatAddress(d.segmentAddress)}
        </span>
      </p>
      <p>
        <span className="swatch" style={{ background: colors[catIndex] ?? "#888" }} />
        <strong>{d.category.replace(/_/g, " ")}</strong>
      </p>
      {d.inferred ? (
        <InferredLine rule={d.inferred.rule} description={d.inferred.description} short />
      ) : (
        d.rule && (
          <p className="muted small" data-testid="selection-block-rule">
            rule <strong>{d.rule}</strong> — {firstSentence(d.ruleDetail)}
          </p>
        )
      )}
      <p className="small" data-testid="selection-block-own">
        {facts?.ownLine ? (
          <>
            your code: <code className="own">{facts.ownLine}</code>
          </>
        ) : facts ? (
          <span className="muted">no frame of your own code in its stack</span>
        ) : null}
      </p>
      <p className="small" data-testid="selection-block-events">
        {a ? (
          <>
            {a.allocEvent >= 0
              ? `Allocated at event #${formatCount(a.allocEvent)}`
              : "Allocated before the trace"}
            {a.freeEvent >= 0 ? `, freed at #${formatCount(a.freeEvent)}` : ", alive at the snapshot"}
            {Number.isFinite(a.allocTimeUs) && Number.isFinite(a.freeTimeUs)
              ? ` (lived ${formatDurationUs(a.freeTimeUs - a.allocTimeUs)})`
              : ""}
            .
          </>
        ) : facts ? (
          <span className="muted">No trace event names this block (the trace does not reach it).</span>
        ) : (
          <span className="muted">…</span>
        )}
      </p>
      {d.workspace && (
        <p className="small notice">A torch_npu workspace block: its timing is not recorded.</p>
      )}
      <div className="toolbar small">
        {a && a.allocEvent >= 0 && (
          <button
            type="button"
            onClick={() => S.getState().pin(a.allocEvent)}
            data-testid="selection-show-alloc"
          >
            Show its allocation
          </button>
        )}
        {a && a.freeEvent >= 0 && (
          <button type="button" onClick={() => S.getState().pin(a.freeEvent)}>
            Show its free
          </button>
        )}
        {catIndex >= 0 && (
          <button type="button" onClick={() => S.getState().setHighlightCategory(d.category)}>
            Select its category
          </button>
        )}
        <Clear />
      </div>
      <CompactStack stack={d.stack} emptyReason={d.emptyStackReason} max={8} />
    </div>
  );
}

/** "the peak", "the snapshot", "event #12", "events 3..90" from a `body[data-moment]` value. */
function momentWordsOf(attr: string): string {
  if (attr === "peak" || attr === "snapshot") return `the ${attr}`;
  const [kind, v] = attr.split(":");
  return kind === "event" ? `event #${v}` : `events ${v}`;
}

function FrameDetails({ item }: { item: Extract<Selected, { kind: "frame" }> }) {
  const S = useSide();
  const colors = S((s) => s.colors);
  const categories = S((s) => s.panel?.categories);
  const names = (categories ?? []).map((c) => c.name);
  const { pinned, now, total } = item;
  const node = pinned.path[pinned.path.length - 1];
  const entries = stackEntries(pinned.path, pinned.orientation);
  // The innermost own-code line first: the last own entry outermost-first, the first innermost-first.
  const own = entries.filter((e) => e.own);
  const ownLine = pinned.orientation === "top-down" ? own[own.length - 1] : own[0];
  const cats = now
    ? now.byCategory
        .map((bytes, c) => ({ bytes, c }))
        .filter((x) => x.bytes > 0)
        .sort((x, y) => y.bytes - x.bytes)
    : [];
  return (
    <div data-testid="selection-frame" data-key={pinned.key} data-bytes={now?.bytes ?? ""}>
      <p>
        <strong className={node.own ? "ct-own" : undefined}>{node.name}</strong>
        {node.frame && (
          <span className="muted small">
            {" "}
            {node.frame.filename}:{node.frame.line}
          </span>
        )}
      </p>
      <p className="small">
        {now ? (
          <>
            <Bytes value={now.bytes} testId="selection-frame-bytes" /> live at {momentWordsOf(item.moment)} (
            {formatPercent(total > 0 ? now.bytes / total : 0)}; self <Bytes value={now.selfBytes} />,{" "}
            {formatCount(now.blocks)} blocks)
          </>
        ) : (
          <span className="muted">
            Holds no live memory at this moment (or the tree is laid out another way).
          </span>
        )}
      </p>
      {cats.length > 0 && (
        <ul className="side-cats small">
          {cats.slice(0, 4).map(({ bytes, c }) => (
            <li key={c}>
              <span>
                <span className="swatch" style={{ background: colors[c] ?? "#888" }} />
                {(names[c] ?? "?").replace(/_/g, " ")}
              </span>
              <span className="num">
                <Bytes value={bytes} />
              </span>
            </li>
          ))}
        </ul>
      )}
      {ownLine && (
        <p className="small" data-testid="selection-frame-own">
          your code: <code className="own">{ownLine.main}</code> <span className="muted">{ownLine.loc}</span>
        </p>
      )}
      <ol className="stack compact">
        {entries
          .filter((e) => !e.sub)
          .slice(0, 10)
          .map((e, i) => (
            // biome-ignore lint/suspicious/noArrayIndexKey: entries repeat; position is the identity
            <li key={i}>
              <span className={e.own ? "fn ct-own" : "fn"}>{e.main}</span>
              {e.loc && <span className="loc"> {e.loc}</span>}
            </li>
          ))}
      </ol>
      {node.frame && <WhatIfActions frame={node.frame} />}
      <div className="toolbar small">
        <Clear />
      </div>
    </div>
  );
}
