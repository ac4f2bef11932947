// The overview strip: the whole trace's allocated total in one line of pixels, with a brush showing the
// visible range. Drag the brush to pan, drag elsewhere to choose a range, click to centre there.

import { useCallback, useEffect, useRef, useState } from "react";
import type { ReplayFacts, TimelineAnswer } from "../../../../workers/api";
import { Canvas, type DrawFn, themeColors } from "../../components/Canvas";
import { type TimelineView, useSide } from "../../state/store";
import { MARGIN } from "./scales";

const HEIGHT = 44;

export function Overview({
  device,
  replay,
  view,
  onView,
}: {
  device: number;
  replay: ReplayFacts;
  view: TimelineView;
  onView: (v: TimelineView) => void;
}) {
  const ask = useSide()((s) => s.ask);
  const [width, setWidth] = useState(0);
  const [answer, setAnswer] = useState<TimelineAnswer | null>(null);
  const drag = useRef<{ mode: "move" | "select"; startX: number; view: TimelineView; moved: boolean } | null>(
    null,
  );
  const plotWidth = Math.max(1, width - MARGIN.left - MARGIN.right);
  const full = view.axis === "time" ? { x0: replay.t0, x1: replay.t1 } : { x0: 0, x1: replay.events - 1 };
  const span = Math.max(1e-9, full.x1 - full.x0);
  const f0 = full.x0 - span * 0.01;
  const f1 = full.x1 + span * 0.01;

  useEffect(() => {
    if (width <= 0) return;
    let stale = false;
    ask((api) => api.timeline({ device, axis: view.axis, x0: f0, x1: f1, buckets: plotWidth })).then(
      (a) => {
        if (!stale) setAnswer(a);
      },
      () => {}, // the worker was replaced meanwhile (the next file's)
    );
    return () => {
      stale = true;
    };
  }, [ask, device, view.axis, f0, f1, plotWidth, width]);

  const toPx = useCallback(
    (x: number) => MARGIN.left + ((x - f0) / (f1 - f0)) * plotWidth,
    [f0, f1, plotWidth],
  );
  const toX = useCallback(
    (px: number) => f0 + ((px - MARGIN.left) / plotWidth) * (f1 - f0),
    [f0, f1, plotWidth],
  );

  const draw: DrawFn = useCallback(
    (ctx, w, h) => {
      const th = themeColors();
      ctx.fillStyle = th.panel;
      ctx.fillRect(MARGIN.left, 0, plotWidth, h);
      if (answer) {
        let max = 0;
        for (let b = 0; b < answer.buckets; b++) max = Math.max(max, answer.allocMax[b] || 0);
        ctx.fillStyle = th.accent;
        ctx.globalAlpha = 0.6;
        for (let b = 0; b < answer.buckets; b++) {
          const v = answer.allocMax[b];
          if (!(v > 0) || max <= 0) continue;
          const bh = (v / max) * (h - 4);
          ctx.fillRect(MARGIN.left + b, h - bh, 1, bh);
        }
        ctx.globalAlpha = 1;
      }
      // Brush.
      const bx0 = Math.max(MARGIN.left, toPx(view.x0));
      const bx1 = Math.min(MARGIN.left + plotWidth, toPx(view.x1));
      ctx.fillStyle = th.fg;
      ctx.globalAlpha = 0.12;
      ctx.fillRect(MARGIN.left, 0, Math.max(0, bx0 - MARGIN.left), h);
      ctx.fillRect(bx1, 0, Math.max(0, MARGIN.left + plotWidth - bx1), h);
      ctx.globalAlpha = 1;
      ctx.strokeStyle = th.fg;
      ctx.lineWidth = 1.5;
      ctx.strokeRect(bx0 + 0.5, 0.75, Math.max(2, bx1 - bx0 - 1), h - 1.5);
      ctx.lineWidth = 1;
      ctx.fillStyle = th.muted;
      ctx.font = "11px system-ui, sans-serif";
      ctx.textAlign = "right";
      ctx.textBaseline = "middle";
      ctx.fillText("overview", MARGIN.left - 6, h / 2);
      void w;
    },
    [answer, plotWidth, toPx, view.x0, view.x1],
  );

  return (
    <div className="canvas-box" style={{ height: HEIGHT, marginTop: 4 }}>
      <Canvas
        draw={draw}
        height={HEIGHT}
        testId="timeline-overview"
        ariaLabel="Overview of the whole trace; the box is the visible range"
        onSize={setWidth}
        cursor="ew-resize"
        onPointerDown={(e) => {
          e.currentTarget.setPointerCapture(e.pointerId);
          const px = e.nativeEvent.offsetX;
          // Inside a brush that does not cover (nearly) everything: move it; otherwise draw a new one.
          const bw = toPx(view.x1) - toPx(view.x0);
          const inBrush = px >= toPx(view.x0) && px <= toPx(view.x1) && bw < plotWidth * 0.9;
          drag.current = { mode: inBrush ? "move" : "select", startX: px, view, moved: false };
        }}
        onPointerMove={(e) => {
          const d = drag.current;
          if (!d) return;
          const px = e.nativeEvent.offsetX;
          if (Math.abs(px - d.startX) > 2) d.moved = true;
          if (!d.moved) return;
          if (d.mode === "move") {
            const shift = toX(px) - toX(d.startX);
            onView({ ...d.view, x0: d.view.x0 + shift, x1: d.view.x1 + shift });
          } else {
            const a = toX(Math.min(px, d.startX));
            const b = toX(Math.max(px, d.startX));
            onView({ ...d.view, x0: a, x1: b });
          }
        }}
        onPointerUp={(e) => {
          const d = drag.current;
          drag.current = null;
          if (d && !d.moved) {
            const x = toX(e.nativeEvent.offsetX);
            const half = (d.view.x1 - d.view.x0) / 2;
            onView({ ...d.view, x0: x - half, x1: x + half });
          }
        }}
      />
    </div>
  );
}
