// One generic canvas: sized to its box in CSS pixels, backed at devicePixelRatio, redrawn on one
// requestAnimationFrame when its draw function or size changes, or when the theme changes (light/dark
// follow the system: draw functions read themeColors() when they paint, so a repaint is all they need).
// Views give it `draw` and handle pointer events themselves (hit-testing in CSS pixels).

import {
  type CSSProperties,
  forwardRef,
  useCallback,
  useEffect,
  useImperativeHandle,
  useRef,
  useState,
  useSyncExternalStore,
} from "react";
import { beginWork, endWork } from "../state/idle";

export type DrawFn = (ctx: CanvasRenderingContext2D, width: number, height: number) => void;

export interface CanvasHandle {
  redraw(): void;
  element(): HTMLCanvasElement | null;
}

interface Props {
  draw: DrawFn;
  height: number;
  className?: string;
  style?: CSSProperties;
  testId?: string;
  /** Extra `data-*` attributes (what the canvas shows, for tests and tools: pixels are not readable). */
  dataset?: Record<string, string | number>;
  ariaLabel: string;
  onSize?: (width: number, height: number) => void;
  onPointerMove?: (e: React.PointerEvent<HTMLCanvasElement>) => void;
  onPointerDown?: (e: React.PointerEvent<HTMLCanvasElement>) => void;
  onPointerUp?: (e: React.PointerEvent<HTMLCanvasElement>) => void;
  onPointerLeave?: (e: React.PointerEvent<HTMLCanvasElement>) => void;
  onWheel?: (e: WheelEvent) => void;
  onClick?: (e: React.MouseEvent<HTMLCanvasElement>) => void;
  onDoubleClick?: (e: React.MouseEvent<HTMLCanvasElement>) => void;
  cursor?: string;
}

export const Canvas = forwardRef<CanvasHandle, Props>(function Canvas(props, ref) {
  const { draw, height, onSize, onWheel } = props;
  const theme = useThemeVersion();
  const canvas = useRef<HTMLCanvasElement>(null);
  const [width, setWidth] = useState(0);
  const frame = useRef(0);
  const drawRef = useRef(draw);
  drawRef.current = draw;

  // Size read through a ref: a frame requested before a resize must paint at the new size.
  const size = useRef({ width: 0, height });
  size.current = { width, height };

  const paint = useCallback(() => {
    frame.current = 0;
    try {
      const c = canvas.current;
      const { width: w0, height: h0 } = size.current;
      if (!c || w0 <= 0) return;
      const dpr = window.devicePixelRatio || 1;
      const w = Math.round(w0 * dpr);
      const h = Math.round(h0 * dpr);
      if (c.width !== w) c.width = w;
      if (c.height !== h) c.height = h;
      const ctx = c.getContext("2d");
      if (!ctx) return;
      ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
      ctx.clearRect(0, 0, w0, h0);
      drawRef.current(ctx, w0, h0);
    } finally {
      endWork();
    }
  }, []);

  const redraw = useCallback(() => {
    if (!frame.current) {
      beginWork();
      frame.current = requestAnimationFrame(paint);
    }
  }, [paint]);

  useImperativeHandle(ref, () => ({ redraw, element: () => canvas.current }), [redraw]);

  // biome-ignore lint/correctness/useExhaustiveDependencies: redraw whenever the draw function, the size or the theme changes
  useEffect(() => {
    redraw();
  }, [draw, redraw, width, height, theme]);

  useEffect(
    () => () => {
      if (frame.current) {
        cancelAnimationFrame(frame.current);
        frame.current = 0;
        endWork();
      }
    },
    [],
  );

  useEffect(() => {
    const c = canvas.current;
    const box = c?.parentElement;
    if (!c || !box) return;
    const ro = new ResizeObserver(() => {
      const w = Math.floor(box.clientWidth);
      setWidth(w);
    });
    ro.observe(box);
    setWidth(Math.floor(box.clientWidth));
    return () => ro.disconnect();
  }, []);

  useEffect(() => {
    if (width > 0) onSize?.(width, height);
  }, [width, height, onSize]);

  useEffect(() => {
    const c = canvas.current;
    if (!c || !onWheel) return;
    // Non-passive so the page does not scroll while zooming.
    c.addEventListener("wheel", onWheel, { passive: false });
    return () => c.removeEventListener("wheel", onWheel);
  }, [onWheel]);

  return (
    <canvas
      ref={canvas}
      className={props.className}
      data-testid={props.testId}
      {...Object.fromEntries(Object.entries(props.dataset ?? {}).map(([k, v]) => [`data-${k}`, v]))}
      role="img"
      aria-label={props.ariaLabel}
      style={{
        width: width || "100%",
        height,
        display: "block",
        cursor: props.cursor,
        touchAction: "none",
        ...props.style,
      }}
      onPointerMove={props.onPointerMove}
      onPointerDown={props.onPointerDown}
      onPointerUp={props.onPointerUp}
      onPointerLeave={props.onPointerLeave}
      onClick={props.onClick}
      onDoubleClick={props.onDoubleClick}
    />
  );
});

// The theme's version: bumped when the system's light/dark preference changes (styles.css switches its
// variables on `prefers-color-scheme`). One listener for the page, however many canvases subscribe.
let themeVersion = 0;
const themeListeners = new Set<() => void>();
let themeQuery: MediaQueryList | null = null;

function subscribeTheme(listener: () => void): () => void {
  if (!themeQuery && typeof window !== "undefined" && window.matchMedia) {
    themeQuery = window.matchMedia("(prefers-color-scheme: dark)");
    themeQuery.addEventListener("change", () => {
      themeVersion += 1;
      for (const l of themeListeners) l();
    });
  }
  themeListeners.add(listener);
  return () => themeListeners.delete(listener);
}

/** A number that changes whenever the theme does: a dependency for whatever paints theme colours. */
export function useThemeVersion(): number {
  return useSyncExternalStore(
    subscribeTheme,
    () => themeVersion,
    () => 0,
  );
}

/** Theme colours read from CSS variables, so canvases follow light/dark. */
export function themeColors(): {
  fg: string;
  muted: string;
  grid: string;
  bg: string;
  panel: string;
  accent: string;
  danger: string;
  reserved: string;
  inactive: string;
} {
  const cs = getComputedStyle(document.documentElement);
  const v = (name: string, fallback: string) => cs.getPropertyValue(name).trim() || fallback;
  return {
    fg: v("--fg", "#1b1b1b"),
    muted: v("--muted", "#666"),
    grid: v("--grid", "#e5e5e5"),
    bg: v("--bg", "#fff"),
    panel: v("--panel", "#fafafa"),
    accent: v("--accent", "#0072B2"),
    danger: v("--danger", "#c62828"),
    reserved: v("--reserved", "#333"),
    inactive: v("--inactive", "#d9d9d9"),
  };
}
