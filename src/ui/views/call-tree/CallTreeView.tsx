// "Call tree": which code holds the live allocated memory at the timeline's pinned moment (or the snapshot,
// or the peak). The worker builds the tree (workers/tree.ts, core src/core/tree) and posts it pruned; this
// view shows it as an outline (bytes total and self, blocks, a bar per category) and as an icicle, with
// the search ("Search frames", text or /regex/) highlighting the nodes here, the allocations on the
// timeline and the blocks in the segment map. Clicking a node pins its full stack below. Exports: folded
// stacks, JSON, CSV (the whole tree, from the worker), PNG and SVG (the icicle), all made in the page.
// Custom groups (name + regex, the root's children) and a range measure (two events or an annotation's
// START..END instead of the moment) travel in the share link (`tg`, `trange`).

import { memo, useCallback, useEffect, useLayoutEffect, useMemo, useRef, useState } from "react";
import type { TreeAnswer, TreeExportFormat, TreeNodeOut, TreeQuery } from "../../../../workers/api";
import { Bytes } from "../../components/Bytes";
import { themeColors } from "../../components/Canvas";
import { formatBytes, formatCount, formatPercent } from "../../format";
import { momentAttr, momentOf } from "../../state/moment";
import { useSide } from "../../state/store";
import { useSelection } from "../workspace/selection";
import "./call-tree.css";
import type { TreeRangeLink } from "../../state/treeLink";
import { fileStem, saveBlob, saveText } from "./download";
import { GroupModeButtons } from "./GroupModes";
import { drawIcicle, ICICLE_ROW, Icicle, icicleLayout, icicleSvg } from "./Icicle";
import { indexTree, momentTag, momentWords, type NodeIndex, pathTo } from "./model";
import { layoutOf, type Pinned, PinnedNode } from "./PinnedNode";
import { useCallTree } from "./store";
import { useLatest } from "./useLatest";

/** Rows drawn at most (the rest: collapse something, or use the icicle). */
const MAX_ROWS = 300;
/** Children drawn per node before a "show more" row (then this many more per click). */
const CHILD_PAGE = 25;
/** Expanded by default: nodes holding at least this share of the total, down to this depth. */
const OPEN_SHARE = 0.1;
const OPEN_DEPTH = 10;

interface Row {
  /** The row's key: the node's, or `<parent>~page` for a "show more" row. */
  key: string;
  node: TreeNodeOut;
  depth: number;
  expanded: boolean;
  hasChildren: boolean;
  parent: string | null;
  /** A "show more children" row of `node` (its parent): how many are not drawn, and their bytes. */
  page?: { rest: number; restBytes: number };
}

/** `show`: the workspace's "Call tree" tab shows the outline, its "Flame" tab the icicle; "both" elsewhere. */
export function CallTreeView({ show = "both" }: { show?: "both" | "outline" | "flame" } = {}) {
  const S = useSide();
  const ask = S((s) => s.ask);
  const device = S((s) => s.device);
  const panel = S((s) => s.panel);
  const pinnedEvent = S((s) => s.pinnedEvent);
  const colors = S((s) => s.colors);
  const fileName = S((s) => s.fileName);
  const replay = panel?.replay ?? null;
  const event = replay ? pinnedEvent : null;
  const orientation = useCallTree((t) => t.orientation);
  const by = useCallTree((t) => t.by);
  const groupBy = useCallTree((t) => t.groupBy);
  const ownCodeOnly = useCallTree((t) => t.ownCodeOnly);
  const hideLibrary = useCallTree((t) => t.hideLibrary);
  const search = useCallTree((t) => t.search);
  const groups = useCallTree((t) => t.groups);
  const range = useCallTree((t) => t.range);
  const setFilters = useCallTree((t) => t.set);

  const query: TreeQuery = useMemo(
    () => ({ device, event, orientation, by, groupBy, ownCodeOnly, hideLibrary, search, groups, range }),
    [device, event, orientation, by, groupBy, ownCodeOnly, hideLibrary, search, groups, range],
  );
  const key = panel ? JSON.stringify(query) : null;
  const run = useCallback((q: TreeQuery) => ask((api) => api.tree(q)), [ask]);
  const latest = useLatest<TreeQuery, TreeAnswer>(key, query, run);
  const answer = latest.answer;
  // User Timing "call-tree render": this view's render and commit of a new answer (the e2e reads it).
  const renderStart = useRef(0);
  renderStart.current = performance.now();
  useLayoutEffect(() => {
    if (answer) performance.measure("call-tree render", { start: renderStart.current });
  }, [answer]);
  const index = useMemo(() => (answer ? indexTree(answer.root) : null), [answer]);

  const [overrides, setOverrides] = useState<Map<string, boolean>>(() => new Map());
  const [pages, setPages] = useState<Map<string, number>>(() => new Map());
  const [framesOpen, setFramesOpen] = useState<Set<string>>(() => new Set());
  const [focusKey, setFocusKey] = useState<string>("root");
  const [pinned, setPinned] = useState<Pinned | null>(null);
  const [zoomPath, setZoomPath] = useState<string[]>([]);
  const icicleWidth = useRef(0);
  const treeRef = useRef<HTMLDivElement>(null);

  const searchActive = !!answer && answer.matchBytes !== null;
  const rows = useMemo(
    () =>
      answer && index ? visibleRows(answer, index, overrides, pages, searchActive) : { rows: [], more: 0 },
    [answer, index, overrides, pages, searchActive],
  );
  const rowsRef = useRef(rows);
  rowsRef.current = rows;

  const toggle = useCallback((r: Row) => setOverrides((m) => new Map(m).set(r.node.key, !r.expanded)), []);
  const pin = useCallback(
    (k: string) => {
      if (!answer || !index) return;
      const path = pathTo(index, k);
      if (!path || path.length === 0) return;
      setPinned((p) =>
        p?.key === k
          ? null
          : { key: k, path, orientation: answer.orientation, layout: layoutOf(answer, answer) },
      );
    },
    [answer, index],
  );

  // Keys are stable across moments: keep the zoom at its deepest node still in the tree.
  const zoom = useMemo(() => {
    if (!answer || !index) return null;
    let node = answer.root;
    const kept: string[] = [];
    for (const k of zoomPath) {
      const e = index.byKey.get(k);
      if (!e || e.parent !== node.key) break;
      node = e.node;
      kept.push(k);
    }
    return { node, path: kept, matched: kept.some((k) => index.byKey.get(k)?.node.match) };
  }, [answer, index, zoomPath]);

  // The pinned node is the workspace's selection too: its details and actions in the sidebar.
  const side = S((s) => s.side);
  const generation = S((s) => s.generation);
  const momentNow = S((s) => momentAttr(momentOf(s)));
  const published = useRef(false);
  useEffect(() => {
    const sel = useSelection.getState();
    if (!pinned) {
      // Unpinned here: the sidebar lets it go (a remount starts unpinned and keeps the sidebar's).
      if (published.current && sel.item[side]?.kind === "frame") sel.select(side, null);
      published.current = false;
      return;
    }
    const now = index?.byKey.get(pinned.key)?.node ?? null;
    published.current = true;
    sel.select(side, {
      kind: "frame",
      generation,
      device,
      pinned,
      now: pinned.layout === (answer ? layoutOf(answer, answer) : "") ? now : null,
      total: answer?.totalBytes ?? 0,
      moment: momentNow,
    });
  }, [pinned, index, answer, side, generation, device, momentNow]);

  if (!panel) return null;

  const total = answer?.totalBytes ?? 0;
  const stem = fileStem(fileName);
  const tag = answer ? momentTag(answer) : "snapshot";
  const exportText = async (format: TreeExportFormat) => {
    const text = await ask((api) => api.treeExport(query, format));
    const ext = format === "folded" ? "txt" : format;
    const type =
      format === "json" ? "application/json" : format === "csv" ? "text/csv" : "text/plain;charset=utf-8";
    saveText(`${stem}-call-tree-${tag}${format === "folded" ? ".folded" : ""}.${ext}`, text, type);
  };
  const icicleStyle = () => {
    const th = themeColors();
    return {
      colors,
      searchActive,
      selectedKey: pinned?.key ?? null,
      bg: th.bg,
      fg: th.fg,
      muted: th.inactive,
    };
  };
  const title = answer
    ? `Call tree of ${fileName ?? "the snapshot"}, device ${device}, ${momentWords(answer, replay?.peakEvent ?? null)}: ${formatBytes(total)}${search ? `; search ${search}` : ""}`
    : "";
  const exportImage = (kind: "png" | "svg") => {
    if (!zoom || !answer) return;
    const width = Math.max(600, Math.round(icicleWidth.current || 1200));
    const lay = icicleLayout(zoom.node, zoom.path, zoom.matched, width);
    const height = Math.max(1, lay.rows) * ICICLE_ROW;
    const style = icicleStyle();
    if (kind === "svg") {
      const svg = icicleSvg(lay.rects, width, height, total, style, title);
      saveText(`${stem}-icicle-${tag}.svg`, svg, "image/svg+xml");
      return;
    }
    const scale = 2;
    const c = document.createElement("canvas");
    c.width = width * scale;
    c.height = (height + 24) * scale;
    const ctx = c.getContext("2d");
    if (!ctx) return;
    ctx.scale(scale, scale);
    ctx.fillStyle = style.bg;
    ctx.fillRect(0, 0, width, height + 24);
    ctx.fillStyle = style.fg;
    ctx.font = "12px system-ui, sans-serif";
    ctx.textBaseline = "middle";
    ctx.fillText(title, 4, 12);
    ctx.translate(0, 24);
    drawIcicle(ctx, lay.rects, total, style);
    c.toBlob((b) => {
      if (b) saveBlob(`${stem}-icicle-${tag}.png`, b);
    }, "image/png");
  };

  const focusRow = (k: string) => {
    setFocusKey(k);
    requestAnimationFrame(() => {
      const el = treeRef.current?.querySelector<HTMLElement>(`[data-key="${CSS.escape(k)}"]`);
      el?.focus();
    });
  };
  const onRowKey = (e: React.KeyboardEvent, key: string) => {
    // The rows drawn now (a memoised row may hold an older closure).
    const list = rowsRef.current.rows;
    const i = list.findIndex((x) => x.key === key);
    const r = list[i];
    if (!r) return;
    let handled = true;
    if (e.key === "ArrowDown") {
      if (i + 1 < list.length) focusRow(list[i + 1].key);
    } else if (e.key === "ArrowUp") {
      if (i > 0) focusRow(list[i - 1].key);
    } else if (e.key === "ArrowRight") {
      if (r.hasChildren && !r.expanded) toggle(r);
      else if (r.hasChildren && i + 1 < list.length) focusRow(list[i + 1].key);
    } else if (e.key === "ArrowLeft") {
      if (r.hasChildren && r.expanded) toggle(r);
      else if (r.parent) focusRow(r.parent);
    } else if (e.key === "Enter" || e.key === " ") {
      if (r.page) return;
      if (r.node.kind !== "more") pin(r.node.key);
    } else if (e.key === "Home") {
      if (list.length > 0) focusRow(list[0].key);
    } else if (e.key === "End") {
      if (list.length > 0) focusRow(list[list.length - 1].key);
    } else handled = false;
    if (handled) {
      e.preventDefault();
      // The page's ←/→ step the timeline's cursor: not while moving in the tree.
      e.stopPropagation();
    }
  };

  const peak = replay?.peakEvent ?? null;
  const pinnedNow = pinned && index ? (index.byKey.get(pinned.key)?.node ?? null) : null;
  const tabKey = rows.rows.some((r) => r.key === focusKey) ? focusKey : "root";

  return (
    <section
      className="card call-tree"
      aria-label={show === "flame" ? "Flame graph" : "Call tree"}
      data-testid="call-tree"
      data-show={show}
      data-state={!answer ? "loading" : latest.pending ? "updating" : "ready"}
      data-event={answer ? (answer.event ?? "snapshot") : ""}
      data-total={answer?.totalBytes ?? ""}
      data-match-bytes={answer?.matchBytes ?? ""}
      data-match-count={answer?.matchCount ?? ""}
    >
      <h2>
        Call tree — which code holds the live memory{" "}
        <span className="muted small">
          {answer ? momentWords(answer, peak) : "…"} · device {device}
        </span>
      </h2>
      <div className="toolbar">
        <span className="label">moment</span>
        <span className="group">
          <button
            type="button"
            aria-pressed={event === null}
            onClick={() => S.getState().pin(null)}
            title="The blocks alive when the snapshot was written"
            data-testid="tree-at-snapshot"
          >
            Snapshot
          </button>
          <button
            type="button"
            aria-pressed={event !== null && event === peak}
            disabled={peak === null}
            onClick={() => peak !== null && S.getState().pin(peak)}
            title={
              peak === null
                ? "This device has no trace: only the snapshot"
                : "The moment of the highest allocated total"
            }
            data-testid="tree-at-peak"
          >
            Peak
          </button>
        </span>
        <span className="muted small">
          {replay
            ? "or click the timeline / ←→ to move the cursor; the tree follows it"
            : "no trace: the snapshot only"}
        </span>
        <span className="spacer" />
        <span className="group">
          <button
            type="button"
            aria-pressed={orientation === "top-down"}
            onClick={() => setFilters({ orientation: "top-down" })}
            title="The program's entry first, the allocations at the leaves"
          >
            Top-down
          </button>
          <button
            type="button"
            aria-pressed={orientation === "bottom-up"}
            onClick={() => setFilters({ orientation: "bottom-up" })}
            title="The allocation sites first, their callers below"
          >
            Bottom-up
          </button>
        </span>
        <span className="group">
          <button
            type="button"
            aria-pressed={by === "stack" && !groupBy}
            onClick={() => setFilters({ by: "stack", groupBy: "" })}
            title="Every meaningful frame"
          >
            By stack
          </button>
          <button
            type="button"
            aria-pressed={by === "module" && !groupBy}
            onClick={() => setFilters({ by: "module", groupBy: "" })}
            title="Only forward/backward frames: the module nesting"
          >
            By module
          </button>
          <GroupModeButtons modes={answer?.groupModes} groupBy={groupBy} />
        </span>
      </div>
      <div className="toolbar">
        <SearchBox />
        <label title="Only frames of your own code; memory with no frame of your code is left out">
          <input
            type="checkbox"
            checked={ownCodeOnly}
            onChange={(e) => setFilters({ ownCodeOnly: e.currentTarget.checked })}
          />{" "}
          only own code
        </label>
        <label title="Drop the library runs from stacks that have your code (the memory lands on your innermost frame)">
          <input
            type="checkbox"
            checked={hideLibrary}
            onChange={(e) => setFilters({ hideLibrary: e.currentTarget.checked })}
          />{" "}
          hide library
        </label>
        <span className="spacer" />
        <span className="label">download</span>
        <span className="group" data-testid="tree-export">
          <button
            type="button"
            disabled={!answer}
            onClick={() => void exportText("folded")}
            title="Folded stacks (flamegraph.pl, speedscope, inferno): one line per path with its bytes"
          >
            Folded .txt
          </button>
          <button type="button" disabled={!answer} onClick={() => void exportText("json")}>
            JSON
          </button>
          <button type="button" disabled={!answer} onClick={() => void exportText("csv")}>
            CSV
          </button>
          <button
            type="button"
            disabled={!answer}
            onClick={() => exportImage("png")}
            title="The icicle below as a picture"
          >
            PNG
          </button>
          <button
            type="button"
            disabled={!answer}
            onClick={() => exportImage("svg")}
            title="The icicle below as a vector drawing"
          >
            SVG
          </button>
        </span>
      </div>
      <GroupEditor answer={answer} />
      {replay && <RangePicker answer={answer} events={replay.events} />}
      {latest.error && <p className="status-fail">The call tree could not be built: {latest.error}</p>}
      {answer && <Facts answer={answer} search={search} />}
      {answer && <CategoryKey answer={answer} colors={colors} />}
      {answer && (
        <>
          <div className="ct-head" aria-hidden="true">
            <span>frame (bold: your code · grey: library, click ▸ frames to see them)</span>
            <span>by category</span>
            <span className="num">live</span>
            <span className="num">self</span>
            <span className="num">blocks</span>
            <span className="num">share</span>
          </div>
          <div
            className="ct-tree"
            role="tree"
            aria-label="Call tree nodes"
            ref={treeRef}
            data-testid="tree-nodes"
          >
            {rows.rows.map((r) =>
              r.page ? (
                <PageRow
                  key={r.key}
                  row={r}
                  page={r.page}
                  tabbable={r.key === tabKey}
                  onMore={() =>
                    setPages((m) =>
                      new Map(m).set(r.node.key, (m.get(r.node.key) ?? CHILD_PAGE) + CHILD_PAGE * 4),
                    )
                  }
                  onKey={(e) => onRowKey(e, r.key)}
                />
              ) : (
                <TreeRow
                  key={r.key}
                  row={r}
                  total={total}
                  colors={colors}
                  names={answer.categoryNames}
                  tabbable={r.node.key === tabKey}
                  selected={pinned?.key === r.node.key}
                  framesOpen={framesOpen.has(r.node.key)}
                  onToggle={() => toggle(r)}
                  onFrames={() =>
                    setFramesOpen((s) => {
                      const n = new Set(s);
                      if (n.has(r.node.key)) n.delete(r.node.key);
                      else n.add(r.node.key);
                      return n;
                    })
                  }
                  onPick={() => {
                    setFocusKey(r.node.key);
                    if (r.node.kind === "more") toggle(r);
                    else pin(r.node.key);
                  }}
                  onKey={(e) => onRowKey(e, r.key)}
                />
              ),
            )}
            {rows.more > 0 && (
              <div className="muted small ct-cut">
                {formatCount(rows.more)} more rows not drawn — collapse a node, or zoom into it in the icicle
                below.
              </div>
            )}
          </div>
          {pinned && (
            <PinnedNode
              pinned={pinned}
              now={pinnedNow}
              sameLayout={pinned.layout === layoutOf(answer, answer)}
              total={total}
              onClose={() => setPinned(null)}
            />
          )}
          {zoom && (
            <div className="ct-icicle-box">
              <nav className="ct-crumbs small" aria-label="Icicle zoom">
                <span className="muted">icicle:</span>{" "}
                <button
                  type="button"
                  className="link"
                  onClick={() => setZoomPath([])}
                  aria-current={zoom.path.length === 0 ? "true" : undefined}
                >
                  all live memory
                </button>
                {zoom.path.map((k, i) => {
                  const n = index?.byKey.get(k)?.node;
                  return (
                    <span key={k}>
                      {" › "}
                      <button
                        type="button"
                        className="link"
                        aria-current={i === zoom.path.length - 1 ? "true" : undefined}
                        onClick={() => setZoomPath(zoom.path.slice(0, i + 1))}
                      >
                        {n?.name ?? k}
                      </button>
                    </span>
                  );
                })}
                <span className="muted">
                  {" "}
                  — click a node to zoom in (and pin it), the top bar or a crumb to zoom out; colour: its
                  largest category, pale: library
                </span>
              </nav>
              <Icicle
                zoomPath={zoom.path}
                zoom={zoom.node}
                zoomMatched={zoom.matched}
                total={total}
                colors={colors}
                searchActive={searchActive}
                selectedKey={pinned?.key ?? null}
                onWidth={(w) => {
                  icicleWidth.current = w;
                }}
                onZoomOut={() => setZoomPath(zoom.path.slice(0, -1))}
                onPick={(path, node) => {
                  if (node.children.length > 0) setZoomPath(path);
                  if (!index) return;
                  const p = pathTo(index, node.key);
                  if (p && p.length > 0)
                    setPinned({
                      key: node.key,
                      path: p,
                      orientation: answer.orientation,
                      layout: layoutOf(answer, answer),
                    });
                }}
              />
            </div>
          )}
        </>
      )}
    </section>
  );
}

function visibleRows(
  answer: TreeAnswer,
  index: NodeIndex,
  overrides: Map<string, boolean>,
  pages: Map<string, number>,
  searchActive: boolean,
): { rows: Row[]; more: number } {
  const rows: Row[] = [];
  let more = 0;
  const total = answer.totalBytes;
  const walk = (n: TreeNodeOut, depth: number, parent: string | null) => {
    const hasChildren = n.children.length > 0;
    const byDefault =
      depth === 0 ||
      (n.bytes >= total * OPEN_SHARE && depth < OPEN_DEPTH) ||
      (searchActive && index.matchAbove.has(n.key));
    const expanded = hasChildren && (overrides.get(n.key) ?? byDefault);
    if (rows.length >= MAX_ROWS) {
      more++;
      return;
    }
    rows.push({ key: n.key, node: n, depth, expanded, hasChildren, parent });
    if (!expanded) return;
    // The first CHILD_PAGE children (more on request), and up to as many more on a search match's way.
    const limit = pages.get(n.key) ?? CHILD_PAGE;
    let rest = 0;
    let restBytes = 0;
    let extra = CHILD_PAGE;
    n.children.forEach((c, i) => {
      const onMatchWay = searchActive && (c.match || index.matchAbove.has(c.key)) && extra-- > 0;
      if (i < limit || onMatchWay) walk(c, depth + 1, n.key);
      else {
        rest++;
        restBytes += c.bytes;
      }
    });
    if (rest > 0 && rows.length < MAX_ROWS) {
      rows.push({
        key: `${n.key}~page`,
        node: n,
        depth: depth + 1,
        expanded: false,
        hasChildren: false,
        parent: n.key,
        page: { rest, restBytes },
      });
    }
  };
  walk(answer.root, 0, null);
  return { rows, more };
}

/** The categories' colours (the bars and the icicle), those present at this moment. */
function CategoryKey({ answer, colors }: { answer: TreeAnswer; colors: string[] }) {
  return (
    <div className="legend ct-key" data-testid="tree-categories">
      <span className="muted">bars (share of all, by category):</span>
      {answer.categoryNames.map((name, c) =>
        (answer.root.byCategory[c] ?? 0) > 0 ? (
          <span key={name}>
            <span className="swatch" style={{ background: colors[c] ?? "#888" }} />
            {name}
          </span>
        ) : null,
      )}
      {answer.matchBytes !== null && <span className="muted">◆ highlighted: matches the search</span>}
    </div>
  );
}

function Facts({ answer, search }: { answer: TreeAnswer; search: string }) {
  const total = answer.totalBytes;
  return (
    <div className="ct-facts small">
      {answer.range && (
        <div data-testid="tree-range-facts" data-measure={answer.range.measure}>
          Events {answer.range.from}..{answer.range.to}, {answer.range.measure}:{" "}
          {MEASURE_WORDS[answer.range.measure]} (instead of the pinned moment).
        </div>
      )}
      <div>
        <Bytes value={total} testId="tree-total" /> {answer.range ? "measured" : "allocated"} in{" "}
        {formatCount(answer.totalBlocks)} blocks (rounded block bytes, as the allocator counts them).
        {answer.hiddenBytes > 0 && (
          <>
            {" "}
            Only own code: <Bytes value={answer.hiddenBytes} /> with no frame of your code is left out.
          </>
        )}
        {answer.shownNodes < answer.nodeCount && (
          <span className="muted">
            {" "}
            Showing {formatCount(answer.shownNodes)} of {formatCount(answer.nodeCount)} nodes; smaller ones
            (under {formatBytes(answer.minBytes)}) are summed into “… N more” rows.
          </span>
        )}
      </div>
      {answer.searchError && (
        <div className="status-fail" data-testid="tree-search-error">
          The search {search} is not a usable regular expression ({answer.searchError}); the tree is shown
          without it.
        </div>
      )}
      {answer.matchBytes !== null && (
        <div className="ct-match-line" data-testid="tree-match" data-bytes={answer.matchBytes}>
          <mark>Search “{search}”</mark>: <Bytes value={answer.matchBytes} /> (
          {formatPercent(total > 0 ? answer.matchBytes / total : 0)} of the live memory) is held by stacks
          with a matching frame at this moment · {formatCount(answer.matchCount)} matching node
          {answer.matchCount === 1 ? "" : "s"} (highlighted; also on the timeline and in the segment map)
          {answer.matchCount === 0 && answer.matchBytes > 0
            ? " — the match is in frames the tree does not show (allocator plumbing)"
            : ""}
          .
        </div>
      )}
    </div>
  );
}

/** A row redraws only when what it shows changes (its handlers read the current state). */
const TreeRow = memo(TreeRowView, (a, b) => {
  return (
    a.row.node === b.row.node &&
    a.row.expanded === b.row.expanded &&
    a.row.depth === b.row.depth &&
    a.tabbable === b.tabbable &&
    a.selected === b.selected &&
    a.framesOpen === b.framesOpen &&
    a.total === b.total &&
    a.colors === b.colors &&
    a.names === b.names
  );
});

function TreeRowView({
  row,
  total,
  colors,
  names,
  tabbable,
  selected,
  framesOpen,
  onToggle,
  onFrames,
  onPick,
  onKey,
}: {
  row: Row;
  total: number;
  colors: string[];
  names: string[];
  tabbable: boolean;
  selected: boolean;
  framesOpen: boolean;
  onToggle: () => void;
  onFrames: () => void;
  onPick: () => void;
  onKey: (e: React.KeyboardEvent) => void;
}) {
  const n = row.node;
  const share = total > 0 ? n.bytes / total : 0;
  const cls = ["ct-row", `ct-kind-${n.kind}`];
  if (n.own) cls.push("ct-own-row");
  if (n.match) cls.push("ct-match");
  if (selected) cls.push("ct-selected");
  const frames = n.kind === "library" ? n.collapsedFrames : null;
  return (
    <div
      role="treeitem"
      aria-level={row.depth + 1}
      aria-expanded={row.hasChildren ? row.expanded : undefined}
      aria-selected={selected}
      tabIndex={tabbable ? 0 : -1}
      className={cls.join(" ")}
      data-key={n.key}
      data-name={n.name}
      data-kind={n.kind}
      data-bytes={n.bytes}
      data-self={n.selfBytes}
      data-blocks={n.blocks}
      data-match={n.match ? "1" : undefined}
      data-own={n.own ? "1" : undefined}
      data-depth={row.depth}
      onClick={onPick}
      onKeyDown={onKey}
    >
      <div className="ct-line">
        <span className="ct-name" style={{ paddingLeft: row.depth * 14 }}>
          <button
            type="button"
            tabIndex={-1}
            className="ct-caret"
            aria-label={row.expanded ? "Collapse" : "Expand"}
            disabled={!row.hasChildren}
            onClick={(e) => {
              e.stopPropagation();
              onToggle();
            }}
          >
            {row.hasChildren ? (row.expanded ? "▾" : "▸") : "·"}
          </button>
          <span
            className={n.own ? "ct-label ct-own" : "ct-label"}
            title={n.frame ? `${n.frame.filename}:${n.frame.line} ${n.frame.name}` : n.name}
          >
            {n.name}
          </span>
          {n.detail && <span className="ct-detail">{n.kind === "library" ? `→ ${n.detail}` : n.detail}</span>}
          {frames && frames.length > 0 && (
            <button
              type="button"
              tabIndex={-1}
              className="link ct-frames-toggle"
              aria-expanded={framesOpen}
              onClick={(e) => {
                e.stopPropagation();
                onFrames();
              }}
            >
              {framesOpen ? "▾ frames" : "▸ frames"}
            </button>
          )}
          {n.kind === "more" && (n.hiddenMatches ?? 0) > 0 && (
            <span className="ct-detail">({n.hiddenMatches} matching inside)</span>
          )}
        </span>
        <CategoryBar node={n} total={total} colors={colors} names={names} />
        <span className="num">
          <Bytes value={n.bytes} />
        </span>
        <span className="num muted">{n.selfBytes > 0 ? <Bytes value={n.selfBytes} /> : "—"}</span>
        <span className="num muted">{formatCount(n.blocks)}</span>
        <span className="num">{formatPercent(share)}</span>
      </div>
      {framesOpen && frames && (
        <ol
          className="stack ct-collapsed"
          style={{ marginLeft: row.depth * 14 + 40 }}
          aria-label={`The ${frames.length} frames of ${n.name}`}
        >
          {frames.map((f, i) => (
            // biome-ignore lint/suspicious/noArrayIndexKey: frames repeat; position is the identity
            <li key={i}>{f}</li>
          ))}
        </ol>
      )}
    </div>
  );
}

/** "Show more": the children of a node past the first ones drawn. */
function PageRow({
  row,
  page,
  tabbable,
  onMore,
  onKey,
}: {
  row: Row;
  page: { rest: number; restBytes: number };
  tabbable: boolean;
  onMore: () => void;
  onKey: (e: React.KeyboardEvent) => void;
}) {
  return (
    <div
      role="treeitem"
      aria-level={row.depth + 1}
      aria-selected={false}
      tabIndex={tabbable ? 0 : -1}
      className="ct-row ct-kind-page"
      data-key={row.key}
      data-kind="page"
      onClick={onMore}
      onKeyDown={(e) => {
        if (e.key === "Enter" || e.key === " ") {
          e.preventDefault();
          e.stopPropagation();
          onMore();
        } else onKey(e);
      }}
    >
      <div className="ct-line">
        <span className="ct-name" style={{ paddingLeft: row.depth * 14 + 20 }}>
          <span className="link">
            show {formatCount(Math.min(page.rest, CHILD_PAGE * 4))} more of {formatCount(page.rest)} not drawn
          </span>
          <span className="ct-detail">(smaller children of {row.node.name})</span>
        </span>
        <span />
        <span className="num muted">
          <Bytes value={page.restBytes} />
        </span>
        <span />
        <span />
        <span />
      </div>
    </div>
  );
}

function CategoryBar({
  node,
  total,
  colors,
  names,
}: {
  node: TreeNodeOut;
  total: number;
  colors: string[];
  names: string[];
}) {
  const parts: { c: number; v: number }[] = [];
  node.byCategory.forEach((v, c) => {
    if (v > 0) parts.push({ c, v });
  });
  const title = parts.map((p) => `${names[p.c] ?? `category ${p.c}`}: ${formatBytes(p.v)}`).join(", ");
  return (
    <span className="ct-bar" title={title}>
      {parts.map((p) => (
        <span
          key={p.c}
          style={{ width: `${total > 0 ? (p.v / total) * 100 : 0}%`, background: colors[p.c] ?? "#888" }}
        />
      ))}
    </span>
  );
}

const MEASURE_WORDS: Record<TreeRangeLink["measure"], string> = {
  "live-at-end": "allocated in the range and still live at its end",
  "allocated-in": "allocated in the range, freed or not",
  "freed-in": "allocated before or in the range and freed in it",
};

/** A time range instead of the pinned moment: two event numbers (or an annotation's START..END) and a
 * measure; the tree then holds that measure's bytes (rounded sizes). */
function RangePicker({ answer, events }: { answer: TreeAnswer | null; events: number }) {
  const range = useCallTree((t) => t.range);
  const setFilters = useCallTree((t) => t.set);
  const [measure, setMeasure] = useState<TreeRangeLink["measure"]>(range?.measure ?? "live-at-end");
  const [from, setFrom] = useState(String(range?.from ?? 0));
  const [to, setTo] = useState(String(range?.to ?? Math.max(0, events - 1)));
  const [problem, setProblem] = useState<string | null>(null);
  useEffect(() => {
    if (!range) return;
    setMeasure(range.measure);
    setFrom(String(range.from));
    setTo(String(range.to));
  }, [range]);
  const apply = (f: string, t: string, m: TreeRangeLink["measure"]) => {
    const a = Number(f);
    const b = Number(t);
    if (
      !Number.isInteger(a) ||
      !Number.isInteger(b) ||
      a < 0 ||
      b < 0 ||
      f.trim() === "" ||
      t.trim() === ""
    ) {
      setProblem("The range takes two event numbers ≥ 0.");
      return;
    }
    if (a > b) {
      setProblem(`Event ${a} is after event ${b}.`);
      return;
    }
    if (b >= events) {
      setProblem(`The trace has events 0–${events - 1}.`);
      return;
    }
    setProblem(null);
    setFilters({ range: { from: a, to: b, measure: m } });
  };
  const spans = answer?.spans ?? [];
  return (
    <div className="toolbar ct-range" data-testid="tree-range">
      <span className="label" title="A time range instead of the timeline's pinned moment">
        range
      </span>
      <select
        aria-label="Range measure"
        value={measure}
        onChange={(e) => setMeasure(e.currentTarget.value as TreeRangeLink["measure"])}
      >
        {(Object.keys(MEASURE_WORDS) as TreeRangeLink["measure"][]).map((m) => (
          <option key={m} value={m} title={MEASURE_WORDS[m]}>
            {m}
          </option>
        ))}
      </select>
      <label>
        from event{" "}
        <input
          type="number"
          aria-label="Range from event"
          min={0}
          max={events - 1}
          value={from}
          onChange={(e) => setFrom(e.currentTarget.value)}
        />
      </label>
      <label>
        to{" "}
        <input
          type="number"
          aria-label="Range to event"
          min={0}
          max={events - 1}
          value={to}
          onChange={(e) => setTo(e.currentTarget.value)}
        />
      </label>
      {spans.length > 0 && (
        <select
          aria-label="Range from an annotation"
          value=""
          onChange={(e) => {
            const s = spans[Number(e.currentTarget.value)];
            if (!s) return;
            setFrom(String(s.from));
            setTo(String(s.to));
            apply(String(s.from), String(s.to), measure);
          }}
        >
          <option value="">annotation…</option>
          {spans.map((s, i) => (
            <option key={`${s.name}-${s.from}`} value={i}>
              {s.name} ({s.from}..{s.to})
            </option>
          ))}
        </select>
      )}
      <button type="button" onClick={() => apply(from, to, measure)}>
        Measure range
      </button>
      <button type="button" disabled={!range} onClick={() => setFilters({ range: null })}>
        Back to the moment
      </button>
      {problem && (
        <span className="status-fail" data-testid="tree-range-problem">
          {problem}
        </span>
      )}
    </div>
  );
}

/** Custom groups (Mosaic's custom categories): a name and a regex over `filename:line:name`; the root's
 * children become one node per group (the first group matching a frame of the stack), plus `(no group)`.
 * A regex that does not compile is said here (the worker leaves that group out); nothing throws. */
function GroupEditor({ answer }: { answer: TreeAnswer | null }) {
  const groups = useCallTree((t) => t.groups);
  const setFilters = useCallTree((t) => t.set);
  const [name, setName] = useState("");
  const [re, setRe] = useState("");
  const [problem, setProblem] = useState<string | null>(null);
  const add = () => {
    const n = name.trim();
    if (n.length === 0 || re.length === 0) {
      setProblem("A group needs a name and a regex.");
      return;
    }
    if (groups.some((g) => g.name === n)) {
      setProblem(`There is already a group ${n}.`);
      return;
    }
    try {
      new RegExp(re);
    } catch (e) {
      setProblem(`The regex of ${n} is not usable: ${e instanceof Error ? e.message : String(e)}`);
      return;
    }
    setProblem(null);
    setFilters({ groups: [...groups, { name: n, re }] });
    setName("");
    setRe("");
  };
  const errors = answer?.groupErrors ?? [];
  return (
    <div className="toolbar ct-groups" data-testid="tree-groups">
      <span className="label" title="Group the tree by regexes over frames (filename:line:name)">
        groups
      </span>
      {groups.map((g) => (
        <span key={g.name} className="ct-group-chip" data-testid="tree-group" data-name={g.name}>
          <b>{g.name}</b> = <code>{g.re}</code>{" "}
          <button
            type="button"
            aria-label={`Remove group ${g.name}`}
            onClick={() => setFilters({ groups: groups.filter((x) => x.name !== g.name) })}
          >
            ×
          </button>
        </span>
      ))}
      <input
        type="text"
        aria-label="Group name"
        placeholder="name, e.g. Attention"
        value={name}
        spellCheck={false}
        size={12}
        onChange={(e) => setName(e.currentTarget.value)}
        onKeyDown={(e) => {
          if (e.key === "Enter") add();
        }}
      />
      <input
        type="text"
        aria-label="Group regex"
        placeholder="regex, e.g. .*attn.*"
        value={re}
        spellCheck={false}
        size={18}
        onChange={(e) => setRe(e.currentTarget.value)}
        onKeyDown={(e) => {
          if (e.key === "Enter") add();
        }}
      />
      <button type="button" onClick={add}>
        Add group
      </button>
      {problem && (
        <span className="status-fail" data-testid="tree-group-problem">
          {problem}
        </span>
      )}
      {errors.map((e) => (
        <span key={e.name} className="status-fail" data-testid="tree-group-error">
          Group {e.name} is left out: its regex is not usable ({e.message}).
        </span>
      ))}
    </div>
  );
}

/** "Search frames": commits after a short pause or on Enter; Esc clears. */
function SearchBox() {
  const committed = useCallTree((t) => t.search);
  const setFilters = useCallTree((t) => t.set);
  const [text, setText] = useState(committed);
  const timer = useRef<ReturnType<typeof setTimeout> | null>(null);
  useEffect(() => {
    setText(committed);
  }, [committed]);
  useEffect(
    () => () => {
      if (timer.current) clearTimeout(timer.current);
    },
    [],
  );
  const commit = (v: string) => {
    if (timer.current) clearTimeout(timer.current);
    timer.current = null;
    if (v.trim() !== useCallTree.getState().search) setFilters({ search: v.trim() });
  };
  return (
    <span className="ct-search">
      <input
        type="search"
        aria-label="Search frames"
        placeholder="Search frames: text or /regex/"
        value={text}
        spellCheck={false}
        onChange={(e) => {
          const v = e.currentTarget.value;
          setText(v);
          if (timer.current) clearTimeout(timer.current);
          timer.current = setTimeout(() => commit(v), 300);
        }}
        onKeyDown={(e) => {
          if (e.key === "Enter") commit(text);
          else if (e.key === "Escape") {
            setText("");
            commit("");
          }
        }}
      />
    </span>
  );
}
