// M3: the stacked timeline. Drawn on canvas (no DOM node per allocation), wheel zoom keeps the point under
// the cursor, drag pans, the overview brush sets the range, the axis toggles to event index, hover shows
// each category's value, click pins, and "each allocation" mode shows a band's size, category, call site,
// rule and stack, with the full stack one click away.

import { spawnSync } from "node:child_process";
import { expect, type Page, test } from "@playwright/test";
import { cli, dropFile, ROOT, real, showTab, waitIdle, watchConsole } from "./helpers";

interface PyAllocation {
  addr: number;
  sizeBytes: number;
  freeCompletedEvent: number;
  frames: number;
  firstFrame: string | null;
}

/** test/tools/py_at_peak.py: the file's trace read by Python (standard library, no peakscope code). */
function pyAtPeak(
  file: string,
  args: string[],
): { allocations: number; event: Record<string, PyAllocation> } {
  const r = spawnSync("python3", [`${ROOT}/test/tools/py_at_peak.py`, real(file), ...args], {
    encoding: "utf8",
    maxBuffer: 64 << 20,
  });
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout);
}

async function plotBox(page: Page) {
  const tl = page.getByTestId("timeline");
  const canvas = await page.getByTestId("timeline-canvas").boundingBox();
  const attr = async (n: string) => Number(await tl.getAttribute(n));
  return {
    canvas: canvas!,
    left: await attr("data-plot-left"),
    width: await attr("data-plot-width"),
    top: await attr("data-plot-top"),
    height: await attr("data-plot-height"),
    x0: await attr("data-x0"),
    x1: await attr("data-x1"),
  };
}

async function open(page: Page, file: string) {
  await page.goto("./");
  await dropFile(page, real(file));
  await waitIdle(page);
}

test.describe("timeline", () => {
  test("canvas, not one node per allocation; time axis with readable ticks; legend", async ({ page }) => {
    const errors = watchConsole(page);
    await open(page, "ZidongLiu__DeComFL__memory.pickle");
    const tl = page.getByTestId("timeline");
    await expect(tl).toHaveAttribute("data-axis", "time");
    // plot + overview, and a few layers over the plot (health curves, what-if, tree search…), each one canvas
    await expect(
      tl.locator("canvas[data-testid=timeline-canvas], canvas[data-testid=timeline-overview]"),
    ).toHaveCount(2);
    expect(await tl.locator("canvas").count()).toBeLessThanOrEqual(8);
    const nodes = await page.evaluate(() => document.querySelectorAll("*").length);
    expect(nodes).toBeLessThan(2000); // 23,105 trace events, 61 segments: never a node each
    await expect(page.getByTestId("timeline-legend")).toContainText("parameters");
    await expect(page.getByTestId("timeline-legend")).toContainText("reserved");
    // The canvas has ink: pixels that are not the background.
    const inked = await page.getByTestId("timeline-canvas").evaluate((c: HTMLCanvasElement) => {
      const d = c.getContext("2d")!.getImageData(0, 0, c.width, c.height).data;
      let n = 0;
      for (let i = 0; i < d.length; i += 4) if (d[i + 3] > 0) n++;
      return n;
    });
    expect(inked).toBeGreaterThan(10000);
    expect(errors).toEqual([]);
  });

  test("hover shows each category's value; the values add up to the allocated total", async ({ page }) => {
    await open(page, "ZidongLiu__DeComFL__memory.pickle");
    const b = await plotBox(page);
    await page.mouse.move(b.canvas.x + b.left + b.width * 0.5, b.canvas.y + b.top + b.height * 0.5);
    const tip = page.getByTestId("timeline-tooltip");
    await expect(tip).toBeVisible();
    await expect(tip).toContainText("allocated");
    await expect(tip).toContainText("reserved");
    await expect(tip).toContainText(/parameters|input|activations/);
    const allocated = Number(await tip.locator("tr[data-row=allocated]").getAttribute("data-value"));
    const cats = tip.locator("tr[data-row=category]");
    expect(await cats.count()).toBeGreaterThan(0);
    let sum = 0;
    for (let i = 0; i < (await cats.count()); i++)
      sum += Number(await cats.nth(i).getAttribute("data-value"));
    expect(sum).toBe(allocated);
    expect(allocated).toBeGreaterThan(0);
  });

  test("wheel zooms around the cursor; drag pans; Reset zoom restores", async ({ page }) => {
    await open(page, "ZidongLiu__DeComFL__memory.pickle");
    const b = await plotBox(page);
    const px = b.left + b.width * 0.25;
    const xAt = (v: { x0: number; x1: number }) => v.x0 + ((px - b.left) / b.width) * (v.x1 - v.x0);
    const before = xAt(b);
    await page.mouse.move(b.canvas.x + px, b.canvas.y + b.top + 20);
    await page.mouse.wheel(0, -300);
    // The state changes first (the range narrows), then the page goes idle after it.
    const span = async () => {
      const v = await plotBox(page);
      return v.x1 - v.x0;
    };
    await expect.poll(span).toBeLessThan(b.x1 - b.x0);
    await waitIdle(page);
    const z = await plotBox(page);
    expect(z.x1 - z.x0).toBeLessThan((b.x1 - b.x0) * 0.7);
    expect(Math.abs(xAt(z) - before)).toBeLessThan((b.x1 - b.x0) * 0.002);
    // Drag right by 100 px: the range moves left by 100 px worth of time.
    await page.mouse.move(b.canvas.x + px, b.canvas.y + b.top + 20);
    await page.mouse.down();
    await page.mouse.move(b.canvas.x + px + 50, b.canvas.y + b.top + 20);
    await page.mouse.move(b.canvas.x + px + 100, b.canvas.y + b.top + 20);
    await page.mouse.up();
    await expect.poll(async () => (await plotBox(page)).x0).not.toBe(z.x0);
    await waitIdle(page);
    const p = await plotBox(page);
    const perPx = (z.x1 - z.x0) / z.width;
    expect(p.x0).toBeCloseTo(z.x0 - 100 * perPx, -1);
    expect(p.x1 - p.x0).toBeCloseTo(z.x1 - z.x0, 0);
    await page.getByRole("button", { name: "Reset zoom" }).click();
    await expect.poll(span).toBeGreaterThan(p.x1 - p.x0);
    await waitIdle(page);
    const r = await plotBox(page);
    expect(r.x0).toBeCloseTo(b.x0, 0);
    expect(r.x1).toBeCloseTo(b.x1, 0);
  });

  test("the overview brush selects a range; keys + and − zoom", async ({ page }) => {
    await open(page, "ZidongLiu__DeComFL__memory.pickle");
    const b = await plotBox(page);
    const ov = (await page.getByTestId("timeline-overview").boundingBox())!;
    await page.mouse.move(ov.x + b.left + b.width * 0.2, ov.y + ov.height / 2);
    await page.mouse.down();
    await page.mouse.move(ov.x + b.left + b.width * 0.3, ov.y + ov.height / 2);
    await page.mouse.move(ov.x + b.left + b.width * 0.4, ov.y + ov.height / 2);
    await page.mouse.up();
    const span = async () => {
      const v = await plotBox(page);
      return v.x1 - v.x0;
    };
    await expect.poll(span).toBeLessThan(b.x1 - b.x0);
    await waitIdle(page);
    const s = await plotBox(page);
    expect((s.x1 - s.x0) / (b.x1 - b.x0)).toBeCloseTo(0.2, 1);
    await page.keyboard.press("-");
    await expect.poll(span).toBeGreaterThan(s.x1 - s.x0);
    await waitIdle(page);
    const out = await plotBox(page);
    expect((out.x1 - out.x0) / (s.x1 - s.x0)).toBeCloseTo(2, 1);
    await page.keyboard.press("+");
    await expect.poll(span).toBeLessThan(out.x1 - out.x0);
    await waitIdle(page);
    const back = await plotBox(page);
    expect((back.x1 - back.x0) / (s.x1 - s.x0)).toBeCloseTo(1, 1);
  });

  test("event-index axis on demand; a trace without time_us offers only the event axis", async ({ page }) => {
    await open(page, "ZidongLiu__DeComFL__memory.pickle");
    await page.getByRole("button", { name: "Event index" }).click();
    await waitIdle(page);
    await expect(page.getByTestId("timeline")).toHaveAttribute("data-axis", "event");
    const inspect = cli(["inspect", real("ZidongLiu__DeComFL__memory.pickle"), "--json"]).json;
    const b = await plotBox(page);
    expect(b.x1).toBeGreaterThan(inspect.devices[0].traceEntries - 1);
    expect(b.x0).toBeLessThan(0);

    await dropFile(page, real("Maphsge4__select_n__04d383cd__snapshot.pickle"));
    await waitIdle(page);
    await expect(page.getByTestId("timeline")).toHaveAttribute("data-axis", "event");
    await expect(page.getByRole("button", { name: "Time", exact: true })).toBeDisabled();
  });

  test("click pins the moment; the segment map follows it", async ({ page }) => {
    await open(page, "ZidongLiu__DeComFL__memory.pickle");
    // The file opens at its peak (the snapshot is far below it); start from the snapshot, in Segments.
    await expect(page.locator("body")).toHaveAttribute("data-moment", "peak");
    await showTab(page, "Segments");
    await page.getByTestId("moment-snapshot").click();
    await waitIdle(page);
    const b = await plotBox(page);
    await expect(page.getByTestId("segment-map")).toHaveAttribute("data-event", "snapshot");
    await page.mouse.click(b.canvas.x + b.left + b.width * 0.5, b.canvas.y + b.top + 30);
    await waitIdle(page);
    const ev = await page.getByTestId("segment-map").getAttribute("data-event");
    expect(Number(ev)).toBeGreaterThan(0);
    await expect(page.getByTestId("pinned")).toContainText(
      `after event #${Number(ev).toLocaleString("en-US")}`,
    );
    await expect(page.locator("body")).toHaveAttribute("data-moment", /^(peak|event:\d+)$/);
    await page.keyboard.press("Escape");
    await waitIdle(page);
    await expect(page.getByTestId("segment-map")).toHaveAttribute("data-event", "snapshot");
  });

  test("each allocation: hover a band for size, category, call site, rule and stack; full stack on click", async ({
    page,
  }) => {
    const errors = watchConsole(page);
    const FILE = "Nesta-gitU__discrete_diffusion__memory_snapshot.json";
    await open(page, FILE);
    await page.getByTestId("mode-allocations").click();
    await waitIdle(page);
    const tl = page.getByTestId("timeline");
    // Every band is one allocation of the trace (Python counts them: one per alloc entry, plus the blocks
    // alive before it); with the whole trace in view, more than ten are wide enough to draw.
    const all = pyAtPeak(FILE, []).allocations;
    const bands = Number(await tl.getAttribute("data-bands"));
    expect(bands).toBeGreaterThan(10);
    expect(bands).toBeLessThanOrEqual(all);
    await expect(page.getByTestId("bands-note")).toContainText("allocations drawn as bands");
    const b = await plotBox(page);
    const tip = page.getByTestId("timeline-tooltip");
    // Scan the upper part of the plot (where the large allocations stack) for a band.
    let found = false;
    for (let fx = 0.75; fx <= 0.95 && !found; fx += 0.05) {
      for (let fy = 0.2; fy <= 0.8 && !found; fy += 0.1) {
        await page.mouse.move(b.canvas.x + b.left + b.width * fx, b.canvas.y + b.top + b.height * fy);
        await waitIdle(page);
        found = (await tip.count()) > 0 && (await tip.textContent())!.includes("call site");
      }
    }
    expect(found).toBe(true);
    await expect(tip).toContainText(/MiB|GiB|KiB/);
    await expect(tip).toContainText("why:");
    // Click keeps it below the timeline, with its stack and the full stack one click away.
    await page.mouse.down();
    await page.mouse.up();
    await waitIdle(page);
    const detail = page.getByTestId("allocation-detail");
    await expect(detail).toBeVisible();
    await expect(detail).toContainText("call site");
    // The allocation it names is the trace's: Python reads the alloc entry at that event — its address,
    // its rounded block size (test/tools/replay.py's rule), the entry that completes its free, its stack.
    const text = (await detail.textContent()) as string;
    const allocEvent = Number(/allocated at event #([\d,]+)/.exec(text)?.[1].replaceAll(",", ""));
    expect(Number.isInteger(allocEvent), text).toBe(true);
    const py = pyAtPeak(FILE, ["--event", String(allocEvent)]).event[String(allocEvent)];
    await expect(detail.locator("strong code").first()).toHaveText(`0x${py.addr.toString(16)}`);
    expect(Number(await detail.locator("strong .bytes").first().getAttribute("data-bytes"))).toBe(
      py.sizeBytes,
    );
    expect(text).toContain(
      py.freeCompletedEvent < 0
        ? "still allocated at the snapshot"
        : `freed at event #${py.freeCompletedEvent.toLocaleString("en-US")}`,
    );
    // Every stack of this file starts in the allocator's own C++ frames (Python reads the first frame), so
    // some frames are hidden and "Show full stack" offers all of them: Python's count.
    expect(py.firstFrame).toBe("torch::unwind::unwind()");
    const stack = detail.getByTestId("allocation-stack");
    await expect(stack.locator("li").first()).toBeVisible();
    const shown = await stack.locator("li").count();
    expect(shown).toBeLessThan(py.frames);
    const full = detail.getByTestId("full-stack");
    await expect(full).toHaveText(`Show full stack (${py.frames} frames)`);
    await full.click();
    await expect(stack.locator("li")).toHaveCount(py.frames);
    await waitIdle(page);
    expect(errors).toEqual([]);
  });
});
