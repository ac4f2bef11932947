// The first picture of a big file: memory over the trace entries read so far, drawn while the worker is
// still parsing. Requested bytes relative to where the trace began; the full timeline replaces it.

import { useEffect, useRef } from "react";
import type { LoadPreview as Preview } from "../../core/model/preview";
import { formatBytes, formatCount } from "../../core/units";

const WIDTH_CSS_PX = 640;
const HEIGHT_CSS_PX = 120;

export function LoadPreview({ preview }: { preview: Preview }) {
  const canvas = useRef<HTMLCanvasElement>(null);
  const maxBytes = preview.allocatedBytes.reduce((m, v) => Math.max(m, v), 0);
  useEffect(() => {
    const c = canvas.current;
    const ctx = c?.getContext("2d");
    if (!c || !ctx) return;
    const dpr = window.devicePixelRatio || 1;
    c.width = WIDTH_CSS_PX * dpr;
    c.height = HEIGHT_CSS_PX * dpr;
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, WIDTH_CSS_PX, HEIGHT_CSS_PX);
    const ys = preview.allocatedBytes;
    const yOf = (v: number) => HEIGHT_CSS_PX - 4 - (maxBytes > 0 ? (v / maxBytes) * (HEIGHT_CSS_PX - 8) : 0);
    ctx.fillStyle = getComputedStyle(c).getPropertyValue("--accent").trim() || "#3b82f6";
    ctx.globalAlpha = 0.55;
    ctx.beginPath();
    ctx.moveTo(0, HEIGHT_CSS_PX);
    for (let i = 0; i < ys.length; i++)
      ctx.lineTo((i / Math.max(1, ys.length - 1)) * WIDTH_CSS_PX, yOf(ys[i]));
    ctx.lineTo(WIDTH_CSS_PX, HEIGHT_CSS_PX);
    ctx.closePath();
    ctx.fill();
  }, [preview, maxBytes]);
  return (
    <figure className="load-preview" data-testid="load-preview" data-entries={preview.entries}>
      <canvas ref={canvas} style={{ width: WIDTH_CSS_PX, height: HEIGHT_CSS_PX }} />
      <figcaption>
        Memory over the first {formatCount(preview.entries)} trace entries read so far (up to{" "}
        {formatBytes(maxBytes)} above where the trace began; requested bytes). The full timeline, by category,
        appears when the file is read.
      </figcaption>
    </figure>
  );
}
