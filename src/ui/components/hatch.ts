// The "inferred" hatch on canvases: thin ╲ lines over a filled rectangle (the CSS swatch .swatch.inferred
// draws the same). Pending-free blocks use the other diagonal in the background colour, so both can be told.

const STEP = 5;

export function hatchRect(
  ctx: CanvasRenderingContext2D,
  x: number,
  y: number,
  w: number,
  h: number,
  color: string,
): void {
  if (!(w >= 2) || !(h >= 2)) return;
  ctx.save();
  ctx.beginPath();
  ctx.rect(x, y, w, h);
  ctx.clip();
  ctx.strokeStyle = color;
  ctx.globalAlpha *= 0.6;
  ctx.lineWidth = 1;
  ctx.beginPath();
  // Lines from top-left to bottom-right (x − y constant, a multiple of STEP: neighbouring rectangles join).
  for (let c = Math.floor((x - h - y) / STEP) * STEP; c + y < x + w; c += STEP) {
    ctx.moveTo(c + y, y);
    ctx.lineTo(c + y + h, y + h);
  }
  ctx.stroke();
  ctx.restore();
}
