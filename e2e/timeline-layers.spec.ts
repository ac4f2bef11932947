// The pinned timeline's layers and the selection (issue 21): phase bands from the attribution's phases,
// the capacity line in GiB, the tooltip's phase and allocation under the pointer, a block or a call-tree
// node in the sidebar, the moment in the link, and a profiler trace's kind sentence within one screen.
// Expected values: the generator's truth (test/gen, `known` run) and Python reading the files
// (e2e/tools/py_phases.py, test/tools/replay.py, py_inspect's unpickler), never the page's own code.
// Screenshots (light and dark, 1440×900) go to test-results/tl21-shots for people to look at.

import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { expect, type Page, test } from "@playwright/test";
import { dropFile, ROOT, showTab, waitIdle, watchConsole } from "./helpers";

const SHOTS = resolve(ROOT, "test-results/tl21-shots");
const PROFILER = resolve(ROOT, "../shared/fixtures/profiler/AdamM1909__unsloth_puzzels__trace.json");

interface Truth {
  peak: { allocatedBytes: number; eventIndex: number };
  liveBlocks: { address: number; size: number; category: string; site: string | null; label: string }[];
}
interface PyReplay {
  peakEvent: number;
  peakBytes: number;
  events: number;
  blocks: [number, number][];
}

let dir = "";
let known = "";
let truth: Truth;
let phases: { events: number; runs: [string, number, number][] };
let replay: PyReplay;

test.beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), "tl21-e2e-"));
  known = join(dir, "known.pickle");
  execFileSync("python3", ["test/gen/generate.py", "known", known], { cwd: ROOT });
  truth = JSON.parse(readFileSync(`${known}.truth.json`, "utf8"));
  phases = JSON.parse(
    execFileSync("python3", ["e2e/tools/py_phases.py", known], { cwd: ROOT, encoding: "utf8" }),
  );
  const r = JSON.parse(
    execFileSync("python3", ["test/tools/replay.py", known], { cwd: ROOT, encoding: "utf8" }),
  );
  replay = (Object.values(r)[0] as { devices: PyReplay[] }).devices[0];
  mkdirSync(SHOTS, { recursive: true });
});

async function open(page: Page, file: string): Promise<void> {
  await page.setViewportSize({ width: 1440, height: 900 });
  await page.goto("./");
  await dropFile(page, file);
  await waitIdle(page);
}

/** Switches the timeline to the event axis and returns the page point of event `ev` at `fromBottom` px. */
async function pointAt(page: Page, ev: number, fromBottom: number): Promise<{ x: number; y: number }> {
  const tl = page.getByTestId("timeline");
  if ((await tl.getAttribute("data-axis")) !== "event") {
    await tl.getByRole("button", { name: "Event index", exact: true }).click();
    await expect(tl).toHaveAttribute("data-axis", "event");
    await waitIdle(page);
  }
  const n = async (k: string) => Number(await tl.getAttribute(`data-${k}`));
  const [x0, x1, left, width, top, height] = await Promise.all(
    ["x0", "x1", "plot-left", "plot-width", "plot-top", "plot-height"].map(n),
  );
  const box = await page.getByTestId("timeline-canvas").boundingBox();
  if (!box) throw new Error("no timeline canvas");
  // The middle of the event's span of pixels.
  const px = left + ((ev + 0.5 - x0) / (x1 - x0)) * width;
  return { x: box.x + px, y: box.y + top + height - fromBottom };
}

/** axe-core's serious and critical violations on the page as it is now. */
async function axeSerious(page: Page): Promise<string[]> {
  await page.addScriptTag({ path: resolve(ROOT, "node_modules/axe-core/axe.min.js") });
  return page.evaluate(async () => {
    const axe = (window as any).axe;
    const r = await axe.run(document, { resultTypes: ["violations"] });
    return r.violations
      .filter((v: { impact: string }) => v.impact === "serious" || v.impact === "critical")
      .map((v: { id: string; nodes: { target: string[] }[] }) => `${v.id}: ${v.nodes[0]?.target.join(" ")}`);
  });
}

test.describe("timeline layers and selection", () => {
  test("phase bands equal Python's phases; the tooltip names the phase and the allocation under the pointer", async ({
    page,
  }) => {
    const errors = watchConsole(page);
    await open(page, known);
    const bands = page.getByTestId("phase-bands");
    await expect(bands).toHaveAttribute("data-runs", String(phases.runs.length));
    await expect(bands).toHaveAttribute(
      "data-phases",
      phases.runs.map(([p, a, b]) => `${p}:${a}-${b}`).join(" "),
    );
    // Labelled for assistive technology: the layer's name counts its runs.
    await expect(bands).toHaveAttribute(
      "aria-label",
      /Phases of the run as bands.*forward.*backward.*optimizer/,
    );
    await expect(page.getByTestId("phase-legend")).toContainText("forward");
    await expect(page.getByTestId("phase-legend")).toContainText("optimizer step");

    // The peak column, 2 px above the chart's bottom: the oldest parameter (the generator's W0).
    const peak = truth.peak.eventIndex;
    expect(replay.peakEvent).toBe(peak);
    const at = await pointAt(page, peak, 2);
    await page.mouse.move(at.x, at.y);
    const tip = page.getByTestId("timeline-tooltip");
    await expect(tip).toBeVisible();
    const phaseAtPeak = phases.runs.find(([, a, b]) => a <= peak && peak < b)?.[0];
    await expect(page.getByTestId("tooltip-phase")).toHaveAttribute("data-phase", phaseAtPeak ?? "none");
    const w0 = truth.liveBlocks.find((b) => b.label === "W0");
    const block = page.getByTestId("tooltip-block");
    await expect(block).toHaveAttribute("data-addr", String(w0?.address));
    await expect(block).toHaveAttribute("data-size", String(w0?.size));
    await expect(block).toHaveAttribute("data-category", w0?.category ?? "");
    await expect(block).toHaveAttribute("data-event", String(peak));
    await expect(block).toContainText("train.py:43");
    await expect(block).toContainText(`0x${w0?.address.toString(16)}`);

    // Up the same column, 5 px at a time to the top of the stack: each allocation under the pointer is
    // live at the peak in Python's replay, at its size; several are met on the way.
    const live = new Map(replay.blocks.map(([a, s]) => [a, s]));
    const seen = new Set<number>();
    const canvasTop = (await page.getByTestId("timeline-canvas").boundingBox())?.y ?? 0;
    for (let up = 2; up < 400; up += 5) {
      const p = await pointAt(page, peak, up);
      await page.mouse.move(p.x, p.y);
      if ((await block.count()) === 0) break; // above the stack: no allocation part of the tooltip
      await expect(block).toHaveAttribute("data-py", String(Math.round(p.y - canvasTop)));
      const addr = Number(await block.getAttribute("data-addr"));
      expect(live.get(addr), `0x${addr.toString(16)} live at the peak`).toBe(
        Number(await block.getAttribute("data-size")),
      );
      seen.add(addr);
    }
    expect(seen.size).toBeGreaterThanOrEqual(4);
    // A column in the first backward run says "backward".
    const back = phases.runs.find(([p]) => p === "backward");
    if (!back) throw new Error("the known run has a backward run");
    const mid = Math.floor((back[1] + back[2]) / 2);
    const pb = await pointAt(page, mid, 2);
    await page.mouse.move(pb.x, pb.y);
    await expect(page.getByTestId("tooltip-phase")).toHaveAttribute("data-phase", "backward");
    await page.mouse.move(at.x, at.y);
    await expect(block).toHaveAttribute("data-addr", String(w0?.address));
    await page.screenshot({ path: join(SHOTS, "timeline-tooltip-light.png") });
    expect(errors).toEqual([]);
  });

  test("capacity typed in What if: a line labelled in GiB, within the scale or said above it", async ({
    page,
  }) => {
    const errors = watchConsole(page);
    await open(page, known);
    await expect(page.getByTestId("capacity-line")).toHaveCount(0);
    await showTab(page, "What if");
    // 100 MiB: below the known run's peak (the truth's), so the line is inside the chart.
    const cap = 100 * 1024 ** 2;
    expect(cap).toBeLessThan(truth.peak.allocatedBytes);
    await page.getByTestId("whatif-capacity-input").fill("100MiB");
    await page.getByRole("button", { name: "Check fit" }).click();
    await waitIdle(page);
    const line = page.getByTestId("capacity-line");
    await expect(line).toHaveAttribute("data-bytes", String(cap));
    await expect(line).toHaveAttribute("data-above", "0");
    await expect(line).toHaveAttribute("aria-label", /Capacity line: capacity 0\.10 GiB/);
    await expect(page.getByTestId("capacity-legend")).toContainText("capacity 0.10 GiB");
    await page.screenshot({ path: join(SHOTS, "timeline-capacity-light.png") });
    // 80 GB typed (read as GiB): far above the scale, said at the top edge.
    await page.getByTestId("whatif-capacity-input").fill("80GB");
    await page.getByRole("button", { name: "Check fit" }).click();
    await waitIdle(page);
    await expect(line).toHaveAttribute("data-bytes", String(80 * 1024 ** 3));
    await expect(line).toHaveAttribute("data-above", "1");
    await expect(page.getByTestId("capacity-legend")).toContainText("capacity 80.00 GiB");
    expect(errors).toEqual([]);
  });

  test("a block clicked in Segments and a node in the Call tree show their details in the sidebar", async ({
    page,
  }) => {
    const errors = watchConsole(page);
    await open(page, known);
    // The snapshot's blocks: the generator's live blocks are the truth.
    await page.getByTestId("moment-snapshot").click();
    await expect(page.locator("body")).toHaveAttribute("data-moment", "snapshot");
    await showTab(page, "Segments");
    const canvas = page.getByTestId("segment-map-canvas");
    const box = await canvas.boundingBox();
    if (!box) throw new Error("no segment map");
    // The first segment's first block: a few px into the map's first row.
    const byAddr = new Map(truth.liveBlocks.map((b) => [b.address, b]));
    const sel = page.getByTestId("selection-block");
    let found = false;
    for (let dx = 4; dx < Math.min(box.width, 600) && !found; dx += 24) {
      await canvas.click({ position: { x: dx, y: 12 } });
      await waitIdle(page);
      if ((await sel.count()) === 0) continue;
      const addr = Number(await sel.getAttribute("data-addr"));
      if (byAddr.has(addr)) found = true;
    }
    expect(found, "a live block of the truth was clicked").toBe(true);
    const addr = Number(await sel.getAttribute("data-addr"));
    const t = byAddr.get(addr);
    await expect(sel).toHaveAttribute("data-size", String(t?.size));
    await expect(sel).toHaveAttribute("data-category", t?.category ?? "");
    await expect(page.getByTestId("selection-block-events")).toContainText(
      /Allocated at event #|Allocated before/,
    );
    if (t?.site?.includes("train.py")) {
      const line = t.site.split(":")[1];
      await expect(page.getByTestId("selection-block-own")).toContainText(`train.py:${line}`);
    }
    // Its allocation event: the trace's alloc entry at that address (Python's read of the file).
    const py = spawnSync(
      "python3",
      [
        "-c",
        "import pickle,sys\ns=pickle.load(open(sys.argv[1],'rb'))\nt=s['device_traces'][0]\na=int(sys.argv[2])\nprint(max(i for i,e in enumerate(t) if e['action']=='alloc' and e['addr']==a))",
        known,
        String(addr),
      ],
      { encoding: "utf8" },
    );
    expect(py.status, py.stderr).toBe(0);
    await expect(sel).toHaveAttribute("data-alloc-event", py.stdout.trim());
    for (const scheme of ["light", "dark"] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      await page.screenshot({ path: join(SHOTS, `sidebar-block-${scheme}.png`) });
    }
    await page.emulateMedia({ colorScheme: "light" });
    // "Show its allocation" makes that event the moment.
    await page.getByTestId("selection-show-alloc").click();
    await expect(page.locator("body")).toHaveAttribute("data-moment", `event:${py.stdout.trim()}`);

    // A call-tree node: its bytes at the snapshot equal the truth's call site (train.py:61, optimizer state).
    await page.getByTestId("moment-snapshot").click();
    await showTab(page, "Call tree");
    const optSite = truth.liveBlocks.filter((b) => b.site?.endsWith("train.py:61:main"));
    const optBytes = optSite.reduce((s, b) => s + b.size, 0);
    expect(optBytes).toBeGreaterThan(0);
    const row = page.locator('[role="treeitem"]', { hasText: "train.py:61" }).first();
    await row.click();
    const frame = page.getByTestId("selection-frame");
    await expect(frame).toBeVisible();
    await expect(frame).toHaveAttribute("data-bytes", String(optBytes));
    await expect(page.getByTestId("selection-frame-own")).toContainText("train.py:61");
    for (const scheme of ["light", "dark"] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      await page.screenshot({ path: join(SHOTS, `sidebar-frame-${scheme}.png`) });
    }
    expect(errors).toEqual([]);
  });

  test("the moment is written into the link and restored from it", async ({ page }) => {
    const errors = watchConsole(page);
    await page.setViewportSize({ width: 1440, height: 900 });
    const demo = resolve(ROOT, "public/demo.pickle");
    const events = JSON.parse(
      execFileSync("python3", ["e2e/tools/py_peak.py", demo], { cwd: ROOT, encoding: "utf8" }),
    ).events as number;
    expect(events).toBeGreaterThan(100);
    const a = Math.floor(events / 4);
    const b = Math.floor(events / 2);
    await page.goto(`./#v=1&src=demo.pickle&moment=range:${a}..${b}`);
    await waitIdle(page);
    await expect(page.locator("body")).toHaveAttribute("data-moment", `range:${a}..${b}`);
    await expect.poll(() => page.evaluate(() => location.hash)).toContain(`moment=range:${a}..${b}`);
    // The snapshot, from a link.
    await page.goto("about:blank");
    await page.goto("./#v=1&src=demo.pickle&moment=snapshot");
    await waitIdle(page);
    await expect(page.locator("body")).toHaveAttribute("data-moment", "snapshot");
    // One event: stepped in the page, written as event:N, restored by a fresh page from the link.
    await page.getByTestId("moment-peak").click();
    await page.getByTestId("moment-next").click();
    await waitIdle(page);
    const moment = await page.locator("body").getAttribute("data-moment");
    expect(moment).toMatch(/^event:\d+$/);
    await expect.poll(() => page.evaluate(() => location.hash)).toContain(`moment=${moment}`);
    const url = page.url();
    await page.goto("about:blank");
    await page.goto(url);
    await waitIdle(page);
    await expect(page.locator("body")).toHaveAttribute("data-moment", moment ?? "");
    // A bad value is named in the link notice; the rest applies.
    await page.goto("about:blank");
    await page.goto("./#v=1&src=demo.pickle&moment=yesterday");
    await waitIdle(page);
    await expect(page.getByText(/moment=yesterday/)).toBeVisible();
    expect(errors).toEqual([]);
  });

  test("a profiler trace says its kind and what it lacks within one screen", async ({ page }) => {
    const errors = watchConsole(page);
    // Python: the file is a chrome trace whose memory events are "[memory]" instants.
    const py = spawnSync(
      "python3",
      [
        "-c",
        "import json,sys\nd=json.load(open(sys.argv[1]))\nev=d['traceEvents'] if isinstance(d,dict) else d\nprint(sum(1 for e in ev if e.get('name')=='[memory]'))",
        PROFILER,
      ],
      { encoding: "utf8" },
    );
    expect(py.status, py.stderr).toBe(0);
    expect(Number(py.stdout)).toBeGreaterThan(0);
    await open(page, PROFILER);
    const words = page.getByTestId("summary-kind-words");
    await expect(words).toBeVisible();
    await expect(words).toHaveAttribute("data-kind", "profiler-trace");
    await expect(words).toContainText("torch.profiler trace");
    await expect(words).toContainText("no segments");
    const box = await words.locator("p").first().boundingBox();
    expect(box && box.y + box.height).toBeLessThanOrEqual(900);
    for (const scheme of ["light", "dark"] as const) {
      await page.emulateMedia({ colorScheme: scheme });
      await page.screenshot({ path: join(SHOTS, `profiler-summary-${scheme}.png`) });
    }
    expect(errors).toEqual([]);
  });

  test("axe-core: no serious or critical violations with the layers, the tooltip and the selection shown", async ({
    browser,
  }) => {
    // The built page's CSP (Trusted Types) refuses injected scripts: axe runs in a context without it.
    const context = await browser.newContext({ bypassCSP: true, baseURL: test.info().project.use.baseURL });
    const page = await context.newPage();
    await open(page, known);
    await showTab(page, "What if");
    await page.getByTestId("whatif-capacity-input").fill("100MiB");
    await page.getByRole("button", { name: "Check fit" }).click();
    await waitIdle(page);
    await expect(page.getByTestId("capacity-line")).toBeVisible();
    const at = await pointAt(page, truth.peak.eventIndex, 2);
    await page.mouse.move(at.x, at.y);
    await expect(page.getByTestId("tooltip-block")).not.toHaveAttribute("data-addr", "");
    expect(await axeSerious(page), "timeline with layers and tooltip").toEqual([]);
    await page.mouse.move(1, 1);
    await page.getByTestId("moment-snapshot").click();
    await showTab(page, "Segments");
    await page.getByTestId("segment-map-canvas").click({ position: { x: 4, y: 12 } });
    await expect(page.getByTestId("selection-block")).toBeVisible();
    expect(await axeSerious(page), "block selected").toEqual([]);
    await showTab(page, "Call tree");
    await page.locator('[role="treeitem"]', { hasText: "train.py:61" }).first().click();
    await expect(page.getByTestId("selection-frame")).toBeVisible();
    expect(await axeSerious(page), "node selected").toEqual([]);
    await open(page, PROFILER);
    await expect(page.getByTestId("summary-kind-words")).toBeVisible();
    expect(await axeSerious(page), "profiler summary").toEqual([]);
    await context.close();
  });

  test("dark theme: bands, capacity and tooltip", async ({ page }) => {
    await page.emulateMedia({ colorScheme: "dark" });
    await open(page, known);
    await showTab(page, "What if");
    await page.getByTestId("whatif-capacity-input").fill("100MiB");
    await page.getByRole("button", { name: "Check fit" }).click();
    await waitIdle(page);
    await expect(page.getByTestId("capacity-line")).toHaveAttribute("data-above", "0");
    const at = await pointAt(page, truth.peak.eventIndex, 60);
    await page.mouse.move(at.x, at.y);
    await expect(page.getByTestId("tooltip-block")).not.toHaveAttribute("data-addr", "");
    await page.screenshot({ path: join(SHOTS, "timeline-tooltip-dark.png") });
  });
});
