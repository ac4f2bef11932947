// Light/dark follow the system (styles.css switches its variables on `prefers-color-scheme`): switching it
// with a file open repaints every canvas in the new theme's colours at once — not when something else
// happens to redraw it. The expected colours are the stylesheet's variables as the browser computes them
// in each scheme; the canvases' pixels are read back.

import { expect, type Locator, type Page, test } from "@playwright/test";
import { waitIdle, watchConsole } from "./helpers";

/** A CSS variable of the page's root as the browser computes it now ("#e6e9ed"). */
async function cssVar(page: Page, name: string): Promise<string> {
  return page.evaluate((n) => getComputedStyle(document.documentElement).getPropertyValue(n).trim(), name);
}

/** "#rrggbb" as [r, g, b]. */
function rgbOf(hex: string): [number, number, number] {
  const m = /^#([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i.exec(hex);
  if (!m) throw new Error(`not a #rrggbb colour: ${hex}`);
  return [Number.parseInt(m[1], 16), Number.parseInt(m[2], 16), Number.parseInt(m[3], 16)];
}

/** How many opaque pixels of a canvas have exactly that colour. */
async function pixelsOf(canvas: Locator, hex: string): Promise<number> {
  return canvas.evaluate((el, rgb) => {
    const c = el as HTMLCanvasElement;
    const d = c.getContext("2d")?.getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    if (!d) return -1;
    for (let i = 0; i < d.length; i += 4) {
      if (d[i] === rgb[0] && d[i + 1] === rgb[1] && d[i + 2] === rgb[2] && d[i + 3] === 255) n++;
    }
    return n;
  }, rgbOf(hex));
}

test("switching light/dark with a file open repaints the timeline and the overview in the new colours", async ({
  page,
}) => {
  const errors = watchConsole(page);
  await page.emulateMedia({ colorScheme: "light" });
  await page.goto("./#v=1&src=demo.pickle");
  await waitIdle(page);
  const timeline = page.getByTestId("timeline-canvas");
  const overview = page.getByTestId("timeline-overview");
  await expect(timeline).toBeVisible();
  await expect(overview).toBeVisible();
  // The timeline's grid lines are --grid; the overview's background is --panel.
  const light = { grid: await cssVar(page, "--grid"), panel: await cssVar(page, "--panel") };
  await expect.poll(() => pixelsOf(timeline, light.grid)).toBeGreaterThan(0);
  await expect.poll(() => pixelsOf(overview, light.panel)).toBeGreaterThan(0);

  await page.emulateMedia({ colorScheme: "dark" });
  const dark = { grid: await cssVar(page, "--grid"), panel: await cssVar(page, "--panel") };
  expect(dark.grid).not.toBe(light.grid);
  expect(dark.panel).not.toBe(light.panel);
  // Nothing else happens on the page: only the theme's change can repaint them.
  await expect.poll(() => pixelsOf(timeline, dark.grid)).toBeGreaterThan(0);
  await expect.poll(() => pixelsOf(timeline, light.grid)).toBe(0);
  await expect.poll(() => pixelsOf(overview, dark.panel)).toBeGreaterThan(0);
  await expect.poll(() => pixelsOf(overview, light.panel)).toBe(0);

  // And back.
  await page.emulateMedia({ colorScheme: "light" });
  await expect.poll(() => pixelsOf(timeline, light.grid)).toBeGreaterThan(0);
  await expect.poll(() => pixelsOf(timeline, dark.grid)).toBe(0);
  expect(errors).toEqual([]);
});
