// The segment/block map at one moment (the snapshot by default, or the pinned event): every reserved
// segment to scale, packed into rows, its blocks tiled inside, coloured by category or by state,
// rounding waste in red, private pools and expandable segments marked. Hover shows the block and its
// stack; click keeps it below the map.

import { useCallback, useEffect, useMemo, useState } from "react";
import type { BlockDetail, SegmentMapAnswer } from "../../../../workers/api";
import { Bytes } from "../../components/Bytes";
import { Canvas, type DrawFn, themeColors } from "../../components/Canvas";
import { hatchRect } from "../../components/hatch";
import { InferredLine, InferredSwatch, WORKSPACE_NOTE } from "../../components/Inferred";
import { NoSegments } from "../../components/NoSegments";
import { CompactStack, firstSentence, StackList } from "../../components/StackList";
import { formatAddress, formatBytes, formatCount } from "../../format";
import { STATE_COLORS } from "../../palette";
import { useApp } from "../../state/app";
import { useSide, useSideKey } from "../../state/store";
import { MapSearchLayer, MapSearchLegend } from "../call-tree/MapSearchLayer";
import { useSelection } from "../workspace/selection";

const ROW_H = 22;
const ROW_GAP = 8;
const SEG_GAP = 3;
const MIN_SEG_PX = 3;
const PAD = 4;
const MAP_GEOMETRY = { rowH: ROW_H, rowGap: ROW_GAP, pad: PAD };
const POOL_COLOR = "#882255";
const EXPANDABLE_COLOR = "#44AA99";

interface Piece {
  seg: number;
  row: number;
  x: number;
  w: number;
  /** Byte range of the segment this piece shows. */
  b0: number;
  b1: number;
}

interface Layout {
  pieces: Piece[];
  rows: number;
  bytesPerPx: number;
  height: number;
}

/** The scale that fills about `targetRows` rows: what this map would choose on its own. */
function naturalBytesPerPx(a: SegmentMapAnswer, width: number): number {
  const usable = Math.max(50, width - 2 * PAD);
  let total = 0;
  for (let i = 0; i < a.segments; i++) total += a.segSize[i];
  const targetRows = Math.min(14, Math.max(2, Math.ceil(Math.sqrt(a.segments) / 1.5)));
  // Room taken by gaps and minimum widths comes out of the rows' width.
  const bytesPerPx = total / Math.max(1, usable * targetRows - a.segments * (SEG_GAP + 1));
  return bytesPerPx > 0 ? bytesPerPx : 1;
}

/** Packs segments left to right into rows at one scale; a segment wider than a row wraps. */
function layout(a: SegmentMapAnswer, width: number, bytesPerPx: number): Layout {
  const usable = Math.max(50, width - 2 * PAD);
  const pieces: Piece[] = [];
  let row = 0;
  let x = 0;
  for (let s = 0; s < a.segments; s++) {
    const size = a.segSize[s];
    let w = Math.max(MIN_SEG_PX, size / bytesPerPx);
    if (x > 0 && x + w > usable && w <= usable) {
      row++;
      x = 0;
    }
    let b0 = 0;
    while (w > 0) {
      const room = usable - x;
      const take = Math.min(w, room);
      const bytes = w <= room ? size - b0 : take * bytesPerPx;
      pieces.push({ seg: s, row, x: PAD + x, w: take, b0, b1: b0 + bytes });
      b0 += bytes;
      w -= take;
      x += take;
      if (w > 0) {
        row++;
        x = 0;
      }
    }
    x += SEG_GAP;
    if (x >= usable) {
      row++;
      x = 0;
    }
  }
  const rows = pieces.length > 0 ? pieces[pieces.length - 1].row + 1 : 0;
  return { pieces, rows, bytesPerPx, height: Math.max(40, rows * (ROW_H + ROW_GAP) + PAD * 2) };
}

/** The segment map, or a sentence for a file without segments. */
export function SegmentMap() {
  return (
    <NoSegments panel="Segment map">
      <SegmentMapView />
    </NoSegments>
  );
}

function SegmentMapView() {
  const S = useSide();
  const k = useSideKey();
  const side = S((s) => s.side);
  const ask = S((s) => s.ask);
  const device = S((s) => s.device);
  const pinned = S((s) => s.pinnedEvent);
  const panel = S((s) => s.panel);
  const colors = S((s) => s.colors);
  const colorBy = S((s) => s.mapColor);
  const setColorBy = S((s) => s.setMapColor);
  const highlightSite = S((s) => s.highlightSite);
  const highlightBy = S((s) => s.highlightBy);
  const highlightCategory = S((s) => s.highlightCategory);
  const dimCategory = highlightCategory
    ? (panel?.categories.findIndex((c) => c.name === highlightCategory) ?? -1)
    : -1;
  const [answer, setAnswer] = useState<SegmentMapAnswer | null>(null);
  const [width, setWidth] = useState(0);
  const [hover, setHover] = useState<{ x: number; y: number; block: number; seg: number } | null>(null);
  const [hoverDetail, setHoverDetail] = useState<BlockDetail | null>(null);
  const [selected, setSelected] = useState<{ ref: number; event: number | null; detail: BlockDetail } | null>(
    null,
  );
  const event = panel?.replay ? pinned : null;
  const workspaceId = panel?.categories.findIndex((c) => c.name === "workspace") ?? -1;

  useEffect(() => {
    if (!panel) return;
    let stale = false;
    ask((api) => api.segmentMap({ device, event, highlightSite, highlightBy })).then(
      (a) => {
        if (!stale) setAnswer(a);
      },
      () => {},
    );
    return () => {
      stale = true;
    };
  }, [ask, device, event, panel, highlightSite, highlightBy]);

  // In a comparison both maps share the larger scale, so the same width is the same bytes in both.
  const compare = useApp((a) => a.mode === "compare");
  const setScale = useApp((a) => a.setScale);
  const natural = answer && width > 0 ? naturalBytesPerPx(answer, width) : 0;
  useEffect(() => setScale(side, "mapBytesPerPx", natural), [setScale, side, natural]);
  const otherScale = useApp((a) => a.scales.mapBytesPerPx[1 - side]);
  const bytesPerPx = compare ? Math.max(natural, otherScale) : natural;
  const lay = useMemo(
    () => (answer && width > 0 && bytesPerPx > 0 ? layout(answer, width, bytesPerPx) : null),
    [answer, width, bytesPerPx],
  );

  const hoverRef = hover && answer && hover.block >= 0 ? answer.blockRef[hover.block] : -1;
  useEffect(() => {
    if (hoverRef < 0) {
      setHoverDetail(null);
      return;
    }
    let stale = false;
    ask((api) => api.block({ device, event }, hoverRef)).then(
      (d) => {
        if (!stale) setHoverDetail(d);
      },
      () => {}, // the worker was replaced meanwhile (the next file's)
    );
    return () => {
      stale = true;
    };
  }, [ask, device, event, hoverRef]);

  const draw: DrawFn = useCallback(
    (ctx) => {
      if (!answer || !lay) return;
      drawMap(ctx, answer, lay, {
        colors,
        colorBy,
        hoverBlock: hover?.block ?? -1,
        highlight: !!highlightSite,
        dimCategory,
      });
    },
    [answer, lay, colors, colorBy, hover, highlightSite, dimCategory],
  );

  const hitTest = (px: number, py: number) => {
    if (!answer || !lay) return null;
    const row = Math.floor((py - PAD) / (ROW_H + ROW_GAP));
    const inRow = py - PAD - row * (ROW_H + ROW_GAP);
    if (row < 0 || inRow > ROW_H) return null;
    for (const p of lay.pieces) {
      if (p.row !== row || px < p.x || px >= p.x + p.w) continue;
      const off = p.b0 + ((px - p.x) / p.w) * (p.b1 - p.b0);
      const s = p.seg;
      const first = answer.segFirstBlock[s];
      const count = answer.segBlockCount[s];
      let lo = first;
      let hi = first + count - 1;
      let found = -1;
      while (lo <= hi) {
        const mid = (lo + hi) >>> 1;
        if (answer.blockOffset[mid] <= off) {
          found = mid;
          lo = mid + 1;
        } else hi = mid - 1;
      }
      return { x: px, y: py, block: found, seg: s };
    }
    return null;
  };

  if (!panel) return null;
  const st = answer?.stats;
  const moment =
    event === null ? (
      "at the snapshot"
    ) : (
      <>
        after event #{formatCount(event)}
        {event === panel.replay?.peakEvent ? " (the peak)" : ""}
      </>
    );
  return (
    <section
      className="card"
      aria-labelledby={`map-title-${k}`}
      data-testid="segment-map"
      data-highlighted={answer ? countOnes(answer.blockHighlight) : 0}
      data-event={event ?? "snapshot"}
    >
      <h2 id={`map-title-${k}`}>
        Segments and blocks — device {device} {moment}
      </h2>
      <div className="toolbar">
        <span className="label">colour by</span>
        <span className="group">
          <button type="button" aria-pressed={colorBy === "category"} onClick={() => setColorBy("category")}>
            Category
          </button>
          <button type="button" aria-pressed={colorBy === "state"} onClick={() => setColorBy("state")}>
            State
          </button>
        </span>
        {st && answer && (
          <span className="small" data-testid="map-stats">
            {formatCount(answer.segments)} segments · reserved <Bytes value={st.reservedBytes} /> · allocated{" "}
            <Bytes value={st.allocatedBytes} /> · free in segments <Bytes value={st.freeBytes} /> (largest
            free block <Bytes value={st.largestFreeBytes} />) · rounding waste{" "}
            <Bytes value={st.roundingWasteBytes} />
            {st.pendingFreeBytes > 0 && (
              <>
                {" "}
                · pending free <Bytes value={st.pendingFreeBytes} />
              </>
            )}
          </span>
        )}
      </div>
      {answer && answer.segments === 0 ? (
        <p className="muted">No segments are reserved on device {device} at this moment.</p>
      ) : (
        <div className="canvas-box" style={{ height: lay?.height ?? 60 }}>
          <Canvas
            draw={draw}
            height={lay?.height ?? 60}
            testId="segment-map-canvas"
            ariaLabel={`Segments of device ${device} with their blocks, to scale`}
            onSize={setWidth}
            cursor="pointer"
            onPointerMove={(e) => setHover(hitTest(e.nativeEvent.offsetX, e.nativeEvent.offsetY))}
            onPointerLeave={() => setHover(null)}
            onClick={(e) => {
              const h = hitTest(e.nativeEvent.offsetX, e.nativeEvent.offsetY);
              if (!h || h.block < 0 || !answer) return;
              const ref = answer.blockRef[h.block];
              if (ref < 0) return;
              void ask((api) => api.block({ device, event }, ref)).then(
                (d) => {
                  if (!d) return;
                  setSelected({ ref, event, detail: d });
                  // The workspace's sidebar shows it too, with its events and actions.
                  const generation = S.getState().generation;
                  useSelection
                    .getState()
                    .select(side, { kind: "block", generation, device, ref, event, detail: d });
                },
                () => {},
              );
            }}
          />
          <MapSearchLayer answer={answer} layout={lay} event={event} geometry={MAP_GEOMETRY} />
          {hover && answer && (
            <MapTip answer={answer} hover={hover} detail={hoverDetail} width={width} lay={lay} />
          )}
        </div>
      )}
      <div className="legend">
        {colorBy === "category" ? (
          (panel.categories ?? []).map((c) => (
            <span key={c.id}>
              <span className="swatch" style={{ background: colors[c.id] }} />
              {c.name}
            </span>
          ))
        ) : (
          <>
            <span>
              <span className="swatch" style={{ background: STATE_COLORS.allocated }} />
              allocated
            </span>
            <span>
              <span className="swatch" style={{ background: STATE_COLORS.pendingFree }} />
              pending free (freed, held for another stream)
            </span>
          </>
        )}
        {st && st.inferredBytes > 0 && (
          <span
            data-testid="map-legend-inferred"
            data-value={st.inferredBytes}
            title="Allocated before recording began, so no stack says what these blocks are: their category was inferred from sizes and lifetimes. Hover a block for the rule."
          >
            <InferredSwatch />
            hatched: category inferred ({formatBytes(st.inferredBytes)}, no stack)
          </span>
        )}
        {st && st.workspaceBytes > 0 && (
          <span data-testid="map-legend-workspace" title={WORKSPACE_NOTE}>
            <span className="swatch" style={{ background: colors[workspaceId] ?? STATE_COLORS.unknown }} />
            torch_npu workspace ({formatBytes(st.workspaceBytes)}): timing not recorded
          </span>
        )}
        <span>
          <span className="swatch" style={{ background: "var(--inactive)" }} />
          free (inactive, cached)
        </span>
        <span>
          <span className="swatch" style={{ background: "var(--fg)" }} />
          rounding waste (dark strip)
        </span>
        <span>
          <span className="swatch" style={{ background: POOL_COLOR }} />
          private pool (CUDA graph / MemPool)
        </span>
        <span>
          <span className="swatch" style={{ background: EXPANDABLE_COLOR }} />
          expandable segment
        </span>
        <MapSearchLegend />
        {lay && (
          <span className="muted">
            scale: 1 px ≈ {formatBytes(lay.bytesPerPx)}
            {compare ? " (the same in both files)" : ""}; tiny segments drawn ≥ 3 px
          </span>
        )}
      </div>
      {answer?.note && <p className="small notice">{answer.note}</p>}
      {selected && (
        <BlockPanel
          detail={selected.detail}
          onClose={() => setSelected(null)}
          loadFull={() =>
            ask((api) => api.fullStack({ device, kind: "block", ref: selected.ref, event: selected.event }))
          }
        />
      )}
    </section>
  );
}

function countOnes(a: Uint8Array): number {
  let n = 0;
  for (let i = 0; i < a.length; i++) n += a[i];
  return n;
}

function drawMap(
  ctx: CanvasRenderingContext2D,
  a: SegmentMapAnswer,
  lay: Layout,
  o: {
    colors: string[];
    colorBy: "category" | "state";
    hoverBlock: number;
    highlight: boolean;
    /** Category drawn in full while the others are dimmed; -1 for none. */
    dimCategory: number;
  },
): void {
  const th = themeColors();
  for (const p of lay.pieces) {
    const y = PAD + p.row * (ROW_H + ROW_GAP);
    const s = p.seg;
    const scale = p.w / Math.max(1, p.b1 - p.b0);
    // Free background.
    ctx.fillStyle = th.inactive;
    ctx.fillRect(p.x, y, p.w, ROW_H);
    const first = a.segFirstBlock[s];
    const count = a.segBlockCount[s];
    for (let j = first; j < first + count; j++) {
      const off = a.blockOffset[j];
      const size = a.blockSize[j];
      if (off + size <= p.b0 || off >= p.b1) continue;
      const state = a.blockState[j];
      if (state === 0) continue;
      const x0 = p.x + (Math.max(off, p.b0) - p.b0) * scale;
      const x1 = p.x + (Math.min(off + size, p.b1) - p.b0) * scale;
      const w = Math.max(0.75, x1 - x0);
      let color: string;
      if (o.colorBy === "state")
        color =
          state === 2
            ? STATE_COLORS.pendingFree
            : state === 1
              ? STATE_COLORS.allocated
              : STATE_COLORS.unknown;
      else color = o.colors[a.blockCategory[j]] ?? STATE_COLORS.unknown;
      const dimmed =
        (o.highlight && !a.blockHighlight[j]) || (o.dimCategory >= 0 && a.blockCategory[j] !== o.dimCategory);
      ctx.globalAlpha = dimmed ? 0.2 : 1;
      ctx.fillStyle = color;
      ctx.fillRect(x0, y, w, ROW_H);
      if (state === 2 && w >= 3) {
        // Pending free: hatched.
        ctx.strokeStyle = th.bg;
        ctx.beginPath();
        for (let hx = x0 - ROW_H; hx < x0 + w; hx += 5) {
          ctx.moveTo(Math.max(x0, hx), y + ROW_H - Math.max(0, x0 - hx));
          ctx.lineTo(Math.min(x0 + w, hx + ROW_H), y + Math.max(0, hx + ROW_H - (x0 + w)));
        }
        ctx.stroke();
      }
      // Inferred category (no stack: allocated before recording): the ╲ hatch.
      if (a.blockFlags[j] & 1) hatchRect(ctx, x0, y, w, ROW_H, th.fg);
      // Rounding waste: the tail of the block beyond what was requested.
      const req = a.blockRequested[j];
      if (Number.isFinite(req) && req < size) {
        const ws = off + req;
        const wx0 = p.x + (Math.max(ws, p.b0) - p.b0) * scale;
        const wx1 = x1;
        if (wx1 - wx0 >= 0.5 && ws < p.b1) {
          ctx.fillStyle = th.fg;
          ctx.fillRect(wx0, y + ROW_H * 0.55, wx1 - wx0, ROW_H * 0.45);
        }
      }
      ctx.globalAlpha = 1;
      // Separator between neighbouring blocks when there is room.
      if (w >= 5) {
        ctx.fillStyle = th.bg;
        ctx.fillRect(x1 - 0.5, y, 0.5, ROW_H);
      }
    }
    // Segment frame and markers.
    ctx.strokeStyle = th.muted;
    ctx.lineWidth = 1;
    ctx.strokeRect(p.x + 0.5, y + 0.5, Math.max(1, p.w - 1), ROW_H - 1);
    const flags = a.segFlags[s];
    if (flags & 1) {
      ctx.fillStyle = POOL_COLOR;
      ctx.fillRect(p.x, y - 4, p.w, 3);
    }
    if (flags & 2) {
      ctx.fillStyle = EXPANDABLE_COLOR;
      ctx.fillRect(p.x, y + ROW_H + 1, p.w, 3);
    }
  }
  // Hovered block outline.
  if (o.hoverBlock >= 0) {
    for (const p of lay.pieces) {
      const j = o.hoverBlock;
      if (j < a.segFirstBlock[p.seg] || j >= a.segFirstBlock[p.seg] + a.segBlockCount[p.seg]) continue;
      const off = a.blockOffset[j];
      const size = a.blockSize[j];
      if (off + size <= p.b0 || off >= p.b1) continue;
      const scale = p.w / Math.max(1, p.b1 - p.b0);
      const x0 = p.x + (Math.max(off, p.b0) - p.b0) * scale;
      const x1 = p.x + (Math.min(off + size, p.b1) - p.b0) * scale;
      const y = PAD + p.row * (ROW_H + ROW_GAP);
      ctx.strokeStyle = th.fg;
      ctx.lineWidth = 2;
      ctx.strokeRect(x0, y - 1, Math.max(2, x1 - x0), ROW_H + 2);
      ctx.lineWidth = 1;
    }
  }
}

function MapTip({
  answer,
  hover,
  detail,
  width,
  lay,
}: {
  answer: SegmentMapAnswer;
  hover: { x: number; y: number; block: number; seg: number };
  detail: BlockDetail | null;
  width: number;
  lay: Layout | null;
}) {
  const s = hover.seg;
  const j = hover.block;
  const flags = answer.segFlags[s];
  const left = hover.x + 16 + 440 > width ? Math.max(0, hover.x - 456) : hover.x + 16;
  const top = Math.min(hover.y + 12, Math.max(0, (lay?.height ?? 0) - 40));
  const size = j >= 0 ? answer.blockSize[j] : 0;
  const req = j >= 0 ? answer.blockRequested[j] : Number.NaN;
  const state = j >= 0 ? answer.blockState[j] : -1;
  return (
    <div className="tooltip" style={{ left, top }} data-testid="map-tooltip">
      <div>
        <strong>Segment</strong> {formatAddress(answer.segAddress[s])}, {formatBytes(answer.segSize[s])}
        {flags & 1 ? " · private pool" : ""}
        {flags & 2 ? " · expandable" : ""}
        {flags & 4 ? " · small pool" : ""}
      </div>
      {j >= 0 && (
        <div>
          <strong>Block</strong> {formatAddress(answer.segAddress[s] + answer.blockOffset[j])}:{" "}
          {formatBytes(size)}{" "}
          {state === 0 ? "free (cached, inactive)" : state === 2 ? "pending free" : "allocated"}
          {Number.isFinite(req) && req < size && state !== 0
            ? ` · requested ${formatBytes(req)}, waste ${formatBytes(size - req)}`
            : ""}
        </div>
      )}
      {detail && state !== 0 && (
        <div className="detail">
          <div>
            <strong>{detail.category.replace(/_/g, " ")}</strong> · call site{" "}
            <code>{detail.site ?? "—"}</code>
          </div>
          {detail.inferred ? (
            <InferredLine rule={detail.inferred.rule} description={detail.inferred.description} short />
          ) : (
            detail.rule && (
              <div className="muted small">
                why: <strong>{detail.rule}</strong> — {firstSentence(detail.ruleDetail)}
              </div>
            )
          )}
          {detail.workspace && <div className="small notice">{WORKSPACE_NOTE}.</div>}
          <CompactStack stack={detail.stack} emptyReason={detail.emptyStackReason} />
          <div className="muted small">Click to keep this block below the map.</div>
        </div>
      )}
    </div>
  );
}

function BlockPanel({
  detail,
  onClose,
  loadFull,
}: {
  detail: BlockDetail;
  onClose: () => void;
  loadFull: () => Promise<import("../../../../workers/api").FrameText[]>;
}) {
  return (
    <div className="detail" data-testid="block-detail">
      <div className="toolbar">
        <strong>
          Block <code>{formatAddress(detail.address)}</code>: <Bytes value={detail.sizeBytes} />{" "}
          {detail.state.replace(/_/g, " ")}
        </strong>
        <span className="spacer" />
        <button type="button" onClick={onClose}>
          Close
        </button>
      </div>
      <div>
        category <strong>{detail.category.replace(/_/g, " ")}</strong> · call site{" "}
        <code>{detail.site ?? "—"}</code> · stream {detail.stream}
        {Number.isFinite(detail.requestedBytes) && (
          <>
            {" "}
            · requested <Bytes value={detail.requestedBytes} />
          </>
        )}
      </div>
      {detail.inferred ? (
        <InferredLine rule={detail.inferred.rule} description={detail.inferred.description} />
      ) : (
        detail.rule && (
          <div className="muted small">
            why this category: rule <strong>{detail.rule}</strong> — {detail.ruleDetail}
          </div>
        )
      )}
      {detail.workspace && <div className="small notice">{WORKSPACE_NOTE}.</div>}
      <StackList
        stack={detail.stack}
        emptyReason={detail.emptyStackReason}
        loadFull={loadFull}
        testId="block-stack"
      />
    </div>
  );
}
