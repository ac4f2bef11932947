// The call tree's search in the segment map: a transparent canvas over the map (no pointer events) that
// pales every allocated block whose stack does not match "Search frames" and outlines those that do, and
// its line in the map's legend (how many blocks, how many bytes). Mounted with one line each in
// SegmentMap.tsx, which passes its answer and layout.

import { useCallback, useEffect, useMemo, useState } from "react";
import { create } from "zustand";
import type { SegmentMapAnswer } from "../../../../workers/api";
import { Canvas, type DrawFn, themeColors } from "../../components/Canvas";
import { formatBytes, formatCount } from "../../format";
import { useSide } from "../../state/store";
import { usableSearch, useCallTree } from "./store";

interface MapLayout {
  pieces: { seg: number; row: number; x: number; w: number; b0: number; b1: number }[];
  height: number;
}

interface Stats {
  search: string;
  blocks: number;
  bytes: number;
}

const useMapSearch = create<{ stats: [Stats | null, Stats | null] }>()(() => ({ stats: [null, null] }));

function publish(side: 0 | 1, s: Stats | null): void {
  const next: [Stats | null, Stats | null] = [...useMapSearch.getState().stats];
  next[side] = s;
  useMapSearch.setState({ stats: next });
}

export function MapSearchLayer({
  answer,
  layout,
  event,
  geometry,
}: {
  answer: SegmentMapAnswer | null;
  layout: MapLayout | null;
  event: number | null;
  geometry: { rowH: number; rowGap: number; pad: number };
}) {
  const S = useSide();
  const side = S((s) => s.side);
  const ask = S((s) => s.ask);
  const device = S((s) => s.device);
  const search = usableSearch(useCallTree((t) => t.search));
  const ownCodeOnly = useCallTree((t) => t.ownCodeOnly);
  const [refs, setRefs] = useState<{ key: string; set: Set<number> } | null>(null);
  // At any event the refs are allocation ids of the whole replay: the same set for every event, so the
  // cursor moving does not ask again. At the snapshot they are block ids.
  const atSnapshot = event === null;
  const key = `${device}|${atSnapshot}|${ownCodeOnly}|${search}`;

  useEffect(() => {
    if (!search) {
      setRefs(null);
      return;
    }
    let stale = false;
    ask((api) => api.treeSearchRefs({ device, event: atSnapshot ? null : 0, search, ownCodeOnly })).then(
      (a) => {
        if (!stale) setRefs({ key, set: new Set(a) });
      },
      () => {
        if (!stale) setRefs(null);
      },
    );
    return () => {
      stale = true;
    };
  }, [ask, device, atSnapshot, search, ownCodeOnly, key]);

  const current = refs && refs.key === key ? refs.set : null;
  const stats = useMemo(() => {
    if (!answer || !current) return null;
    let blocks = 0;
    let bytes = 0;
    for (let j = 0; j < answer.blocks; j++) {
      if (answer.blockState[j] === 1 && current.has(answer.blockRef[j])) {
        blocks++;
        bytes += answer.blockSize[j];
      }
    }
    return { search, blocks, bytes };
  }, [answer, current, search]);
  useEffect(() => {
    publish(side, stats);
    return () => publish(side, null);
  }, [side, stats]);

  const draw: DrawFn = useCallback(
    (ctx) => {
      if (!answer || !layout || !current) return;
      const th = themeColors();
      const { rowH, rowGap, pad } = geometry;
      for (const p of layout.pieces) {
        const y = pad + p.row * (rowH + rowGap);
        const scale = p.w / Math.max(1, p.b1 - p.b0);
        const first = answer.segFirstBlock[p.seg];
        const count = answer.segBlockCount[p.seg];
        for (let j = first; j < first + count; j++) {
          const st = answer.blockState[j];
          if (st === 0) continue;
          const off = answer.blockOffset[j];
          const size = answer.blockSize[j];
          if (off + size <= p.b0 || off >= p.b1) continue;
          const x0 = p.x + (Math.max(off, p.b0) - p.b0) * scale;
          const x1 = p.x + (Math.min(off + size, p.b1) - p.b0) * scale;
          const w = Math.max(0.75, x1 - x0);
          if (st === 1 && current.has(answer.blockRef[j])) {
            // The foreground colour: it reads on every category's fill (the map's blocks are small).
            ctx.strokeStyle = th.fg;
            ctx.lineWidth = 1.5;
            ctx.strokeRect(x0 + 0.75, y + 0.75, Math.max(0.5, w - 1.5), rowH - 1.5);
          } else {
            ctx.fillStyle = th.bg;
            ctx.globalAlpha = 0.7;
            ctx.fillRect(x0, y, w, rowH);
            ctx.globalAlpha = 1;
          }
        }
      }
      ctx.lineWidth = 1;
    },
    [answer, layout, current, geometry],
  );

  if (!search || !layout) return null;
  return (
    <Canvas
      draw={draw}
      height={layout.height}
      testId="map-search-layer"
      ariaLabel={`Blocks whose stack matches ${search}, outlined`}
      style={{ position: "absolute", left: 0, top: 0, pointerEvents: "none" }}
    />
  );
}

export function MapSearchLegend() {
  const side = useSide()((s) => s.side);
  const stats = useMapSearch((m) => m.stats[side]);
  if (!stats) return null;
  return (
    <span
      className="ct-layer-legend"
      data-testid="map-search-legend"
      data-blocks={stats.blocks}
      data-bytes={stats.bytes}
    >
      <span
        className="swatch"
        style={{ background: "transparent", borderColor: "var(--fg)", borderWidth: 2 }}
      />
      outlined: {formatCount(stats.blocks)} blocks ({formatBytes(stats.bytes)}) whose stack matches “
      {stats.search}” (Call tree search); the others paled
    </span>
  );
}
