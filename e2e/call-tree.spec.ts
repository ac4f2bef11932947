// Issue 12: the "Call tree" of the live memory. The real training snapshot (Wedsonlin, a cs336 assignment:
// AdamW on a Transformer) holds its optimizer state in two `step` frames of its own optimizer.py; the tree
// shows them with the bytes Python sums from the pickle itself (and the CLI's tree agrees). "Search frames"
// highlights the matching nodes and states the matching bytes live — equal to Python's sum of the blocks
// whose stack has a matching frame — and the same search outlines blocks in the segment map and draws a
// line on the timeline. Folded / JSON / CSV / PNG / SVG downloads happen and parse; folded lines sum to the
// root. The cursor moving with the tree open keeps main-thread tasks under 50 ms; a pinned node keeps its
// stack; filters travel in the share link; two files offer B − A. Custom groups (`Optimizer=optimizer\.py`)
// and range measures (two events, or an annotation's START..END) equal the CLI's `--group` / `--range`. Screenshots: /tmp/shots/tree-*.png.

import { spawnSync } from "node:child_process";
import { mkdirSync, readFileSync } from "node:fs";
import { expect, type Page, test } from "@playwright/test";
import { cli, dropFile, dropFiles, real, showTab, waitIdle, watchConsole } from "./helpers";

const FILE = "Wedsonlin__assignment2-systems__medium_256_training_memory_snapshot.pickle";
const SHOTS = "/tmp/shots";

interface PyFacts {
  total: number;
  optimizerMatch: number;
  step: Record<string, number>;
  stepFile: string;
}

/** Independent figures: the pickle read by Python's own unpickler (no peakscope code). */
function pythonFacts(): PyFacts {
  const code = `
import json, pickle, sys
s = pickle.load(open(sys.argv[1], "rb"))
total = 0; match = 0; step = {}; step_file = ""
for seg in s["segments"]:
    for b in seg["blocks"]:
        if b["state"] != "active_allocated":
            continue
        total += b["size"]
        frames = b.get("frames") or []
        if any("optimizer.py" in ("%s:%s:%s" % (f["filename"], f["line"], f["name"])).lower() for f in frames):
            match += b["size"]
        seen = set()
        for f in frames:
            if f["filename"].endswith("/optimizer.py") and f["name"] == "step" and f["line"] not in seen:
                seen.add(f["line"]); step_file = f["filename"]
                step[str(f["line"])] = step.get(str(f["line"]), 0) + b["size"]
print(json.dumps({"total": total, "optimizerMatch": match, "step": step, "stepFile": step_file}))
`;
  const r = spawnSync("python3", ["-c", code, real(FILE)], { encoding: "utf8", maxBuffer: 64 << 20 });
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as PyFacts;
}

interface CliNode {
  name: string;
  bytes: number;
  match?: true;
  children: CliNode[];
}

function cliNodes(root: CliNode): CliNode[] {
  const out: CliNode[] = [];
  const walk = (n: CliNode) => {
    out.push(n);
    for (const c of n.children) walk(c);
  };
  walk(root);
  return out;
}

/** Bytes under the outermost matching nodes (a top-down tree: their subtrees are the matching stacks). */
function topMatchBytes(n: CliNode): number {
  if (n.match) return n.bytes;
  return n.children.reduce((s, c) => s + topMatchBytes(c), 0);
}

/** Pixels of the timeline's search layer painted in the search colour (#00A5C8, give or take blending). */
async function searchColourPixels(page: Page): Promise<number> {
  return page.getByTestId("tree-search-layer").evaluate((c: HTMLCanvasElement) => {
    const ctx = c.getContext("2d");
    if (!ctx) return 0;
    const d = ctx.getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 0; i < d.length; i += 4) {
      if (d[i + 3] > 200 && d[i] < 40 && Math.abs(d[i + 1] - 165) < 30 && Math.abs(d[i + 2] - 200) < 30) n++;
    }
    return n;
  });
}

async function shot(page: Page, name: string, target?: ReturnType<Page["locator"]>) {
  mkdirSync(SHOTS, { recursive: true });
  if (!target) {
    await page.screenshot({ path: `${SHOTS}/tree-${name}.png`, fullPage: true });
    return;
  }
  // The page's sticky top bar would cover the element's top: static for the picture (through the CSSOM:
  // the page's CSP refuses injected style sheets).
  const bar = page.locator(".topbar");
  await bar.evaluate((el: HTMLElement) => {
    el.style.position = "static";
  });
  await target.screenshot({ path: `${SHOTS}/tree-${name}.png` });
  await bar.evaluate((el: HTMLElement) => {
    el.style.position = "";
  });
}

/** The workspace's Call tree tab at the snapshot (a late-recorded file opens at its peak). */
async function toCallTree(page: Page) {
  await showTab(page, "Call tree");
  await page.getByTestId("moment-snapshot").click();
  await expect(page.locator("body")).toHaveAttribute("data-moment", "snapshot");
  await waitIdle(page);
}

async function openFile(page: Page) {
  await page.goto("./");
  await dropFile(page, real(FILE));
  await waitIdle(page);
  await toCallTree(page);
  const tree = page.getByRole("region", { name: "Call tree", exact: true });
  await expect(tree).toBeVisible();
  await expect(tree).toHaveAttribute("data-state", "ready");
  return tree;
}

async function download(
  page: Page,
  button: ReturnType<Page["locator"]>,
): Promise<{ name: string; body: Buffer }> {
  const [d] = await Promise.all([page.waitForEvent("download"), button.click()]);
  const path = await d.path();
  expect(path).toBeTruthy();
  return { name: d.suggestedFilename(), body: readFileSync(path as string) };
}

test.describe("call tree", () => {
  test("optimizer step frames hold the optimizer state: bytes equal Python's and the CLI's", async ({
    page,
  }) => {
    const errors = watchConsole(page);
    const py = pythonFacts();
    const c = cli(["tree", real(FILE), "--at", "snapshot", "--json"]);
    expect(c.code, c.stderr).toBe(0);
    expect(c.json.totalBytes).toBe(py.total);
    const cliSteps = cliNodes(c.json.root).filter(
      (n) => n.name.includes("optimizer.py") && n.name.includes("step"),
    );
    expect(cliSteps.length).toBeGreaterThanOrEqual(2);

    const tree = await openFile(page);
    await expect(tree).toHaveAttribute("data-event", "snapshot");
    await expect(tree).toHaveAttribute("data-total", String(py.total));
    await expect(tree.getByRole("tree")).toBeVisible();
    for (const [line, bytes] of Object.entries(py.step)) {
      const name = `optimizer.py:${line} step`;
      const row = tree.locator(`[role=treeitem][data-name="${name}"]`);
      await expect(row, name).toHaveCount(1);
      await expect(row).toHaveAttribute("data-bytes", String(bytes));
      // Your own code (a cs336 optimizer, not torch's): emphasised.
      await expect(row).toHaveAttribute("data-own", "1");
      // …and the CLI's node of the same name agrees.
      expect(cliSteps.find((n) => n.name === name)?.bytes).toBe(bytes);
    }
    // Bytes per node: total = self + children (the root's children add up).
    const root = tree.locator('[role=treeitem][data-key="root"]');
    await expect(root).toHaveAttribute("data-bytes", String(py.total));
    // A collapsed library run expands into its frames.
    const lib = tree.locator("[role=treeitem][data-kind=library]").first();
    await expect(lib).toContainText(/torch · \d+ frames/);
    await lib.getByRole("button", { name: /frames/ }).click();
    await expect(lib.locator("ol.ct-collapsed li").first()).toBeVisible();
    await shot(page, "snapshot", tree);

    // Pin, don't hover: a click keeps the node's full stack (own frames with their file names).
    await tree.locator(`[role=treeitem][data-name="optimizer.py:76 step"]`).click();
    const pinned = tree.getByTestId("tree-pinned");
    await expect(pinned).toBeVisible();
    await expect(pinned.getByTestId("tree-pinned-stack")).toContainText(py.stepFile);
    await expect(pinned.getByTestId("tree-pinned-stack")).toContainText("nsys_profile.py");
    await expect(pinned.getByTestId("tree-pinned-bytes")).toHaveAttribute(
      "data-bytes",
      String(py.step["76"]),
    );
    await page.context().grantPermissions(["clipboard-read", "clipboard-write"]);
    await pinned.getByRole("button", { name: "Copy stack" }).click();
    await expect(pinned.getByRole("status")).toHaveText("Copied");
    const copied = await page.evaluate(() => navigator.clipboard.readText());
    expect(copied).toContain(`${py.stepFile}:76`);
    expect(copied).toContain("[your code]");
    const overflow = await pinned
      .getByTestId("tree-pinned-stack")
      .evaluate((el) => getComputedStyle(el).overflowY);
    expect(["auto", "scroll"]).toContain(overflow);

    // A pinned frame offers "what if this were gone": the page's new peak equals the CLI's for the
    // same selection (every allocation with that frame in its stack removed).
    const frameText = `${py.stepFile}:76:step`;
    const expected = cli(["whatif", real(FILE), "--remove", `frame:${frameText}`, "--json"]);
    expect(expected.code, expected.stderr).toBe(0);
    await pinned.getByTestId("tree-pinned-whatif").getByRole("button", { name: "gone" }).click();
    await showTab(page, "What if");
    await expect(page.getByTestId("whatif-chosen").first()).toHaveAttribute(
      "data-peak",
      String(expected.json.peakBytes),
    );
    await showTab(page, "Call tree");

    // Bottom-up: the allocation sites first, still the same total.
    await tree.getByRole("button", { name: "Bottom-up" }).click();
    await waitIdle(page);
    await expect(root).toHaveAttribute("data-bytes", String(py.total));
    await shot(page, "bottom-up", tree);
    await tree.getByRole("button", { name: "Top-down" }).click();
    await tree.getByRole("button", { name: "By module" }).click();
    await waitIdle(page);
    await expect(root).toHaveAttribute("data-bytes", String(py.total));
    await tree.getByRole("button", { name: "By stack" }).click();
    await waitIdle(page);
    expect(errors).toEqual([]);
  });

  test("Search frames highlights nodes, states matching bytes, marks timeline and map; link keeps it", async ({
    page,
  }) => {
    const errors = watchConsole(page);
    const py = pythonFacts();
    const c = cli(["tree", real(FILE), "--at", "snapshot", "--json", "--search", "optimizer.py"]);
    expect(c.code, c.stderr).toBe(0);
    // The CLI's matchBytes, two ways: the bytes under its outermost matching nodes, and its printed line.
    expect(topMatchBytes(c.json.root)).toBe(py.optimizerMatch);
    const text = spawnSync(
      process.execPath,
      ["bin/peakscope.mjs", "tree", real(FILE), "--search", "optimizer.py"],
      {
        encoding: "utf8",
      },
    ).stdout;
    const mib = Number(/search "optimizer\.py": ([\d.]+) MiB/.exec(text)?.[1]);
    expect(Math.abs(mib - py.optimizerMatch / 2 ** 20)).toBeLessThan(0.01);

    const tree = await openFile(page);
    const box = page.getByRole("searchbox", { name: "Search frames" });
    await box.fill("optimizer.py");
    await box.press("Enter");
    await waitIdle(page);
    await expect(tree).toHaveAttribute("data-match-bytes", String(py.optimizerMatch));
    await expect(tree.getByTestId("tree-match")).toHaveAttribute("data-bytes", String(py.optimizerMatch));
    await expect(tree.getByTestId("tree-match")).toContainText("optimizer.py");
    const matched = tree.locator("[role=treeitem][data-match='1']");
    expect(await matched.count()).toBeGreaterThanOrEqual(3);
    await expect(tree.locator(`[role=treeitem][data-name="optimizer.py:76 step"]`)).toHaveAttribute(
      "data-match",
      "1",
    );
    // The segment map (its tab) outlines the matching blocks: their bytes are the same.
    await showTab(page, "Segments");
    const mapLegend = page.getByTestId("map-search-legend");
    await expect(mapLegend).toHaveAttribute("data-bytes", String(py.optimizerMatch));
    await showTab(page, "Call tree");
    // The timeline: a line of the matching bytes over time (painted in the search colour), named in its legend.
    await expect(page.getByTestId("tree-search-layer")).toBeVisible();
    await expect.poll(() => searchColourPixels(page)).toBeGreaterThan(100);
    await expect(page.getByTestId("tree-search-legend")).toContainText("optimizer.py");
    // "Each allocation" mode: the matching bands are outlined (counted in the legend).
    await page.getByTestId("mode-allocations").click();
    await waitIdle(page);
    const outlined = Number(await page.getByTestId("tree-search-legend").getAttribute("data-bands"));
    expect(outlined).toBeGreaterThan(0);
    await page.getByTestId("timeline").screenshot({ path: `${SHOTS}/tree-search-bands.png` });
    await page.getByTestId("mode-stacked").click();
    await waitIdle(page);
    // A map block clicked keeps its stack below the map, with Copy.
    await showTab(page, "Segments");
    const map = page.getByTestId("segment-map-canvas");
    for (let x = 8; x < 400; x += 12) {
      await map.click({ position: { x, y: 15 } });
      await waitIdle(page);
      // A free block has no stack (nothing to copy): on to the next.
      if (await page.getByTestId("block-detail").getByTestId("copy-stack").isVisible()) break;
    }
    await expect(page.getByTestId("block-detail").getByTestId("copy-stack")).toBeVisible();
    await page.getByTestId("segment-map").screenshot({ path: `${SHOTS}/tree-search-map.png` });
    await showTab(page, "Call tree");
    // The filters travel in the share link.
    await tree.getByLabel("hide library").check();
    await waitIdle(page);
    await page.waitForFunction(() => location.hash.includes("thide=1") && location.hash.includes("tq="));
    const hash = await page.evaluate(() => location.hash);
    expect(decodeURIComponent(hash)).toContain("tq=optimizer.py");
    await shot(page, "search");
    await shot(page, "search-tree", tree);
    await page.getByTestId("timeline").screenshot({ path: `${SHOTS}/tree-search-timeline.png` });

    // A bad /regex/ says so and keeps the tree.
    await box.fill("/optimizer(/");
    await box.press("Enter");
    await waitIdle(page);
    await expect(tree.getByTestId("tree-search-error")).toBeVisible();
    await expect(tree).toHaveAttribute("data-total", String(py.total));
    // A /regex/ that works.
    await box.fill("/optimizer\\.py:7[67]/");
    await box.press("Enter");
    await waitIdle(page);
    await expect(tree).toHaveAttribute("data-match-bytes", String(py.step["76"] + py.step["77"]));

    // Reloading the link restores the filters (once the file is dropped again).
    await page.goto(`./${hash}`);
    await dropFile(page, real(FILE));
    await waitIdle(page);
    await toCallTree(page);
    await expect(page.getByRole("searchbox", { name: "Search frames" })).toHaveValue("optimizer.py");
    await expect(
      page.getByRole("region", { name: "Call tree", exact: true }).getByLabel("hide library"),
    ).toBeChecked();
    await expect(page.getByRole("region", { name: "Call tree", exact: true })).toHaveAttribute(
      "data-match-bytes",
      String(py.optimizerMatch),
    );
    expect(errors.filter((e) => !/ignored/.test(e))).toEqual([]);
  });

  test("custom groups: the group node's bytes equal the CLI's --group; a bad regex is said; the link keeps them", async ({
    page,
  }) => {
    const errors = watchConsole(page);
    const c = cli(["tree", real(FILE), "--at", "snapshot", "--json", "--group", "Optimizer=optimizer\\.py"]);
    expect(c.code, c.stderr).toBe(0);
    const cliGroup = (c.json.root as CliNode).children.find((n) => n.name === "Optimizer");
    expect(cliGroup?.bytes).toBeGreaterThan(0);

    const tree = await openFile(page);
    const editor = tree.getByTestId("tree-groups");
    // A regex that does not compile is said, not added.
    await editor.getByLabel("Group name").fill("Broken");
    await editor.getByLabel("Group regex").fill("attn(");
    await editor.getByRole("button", { name: "Add group" }).click();
    await expect(editor.getByTestId("tree-group-problem")).toBeVisible();
    await expect(editor.getByTestId("tree-group")).toHaveCount(0);

    await editor.getByLabel("Group name").fill("Optimizer");
    await editor.getByLabel("Group regex").fill("optimizer\\.py");
    await editor.getByRole("button", { name: "Add group" }).click();
    await waitIdle(page);
    await expect(editor.getByTestId("tree-group")).toHaveCount(1);
    await expect(editor.getByTestId("tree-group-problem")).toHaveCount(0);
    const group = tree.locator('[role=treeitem][data-kind=group][data-name="Optimizer"]');
    await expect(group).toHaveCount(1);
    await expect(group).toHaveAttribute("data-bytes", String(cliGroup?.bytes));
    const rest = tree.locator('[role=treeitem][data-kind=group][data-name="(no group)"]');
    await expect(rest).toHaveAttribute(
      "data-bytes",
      String((c.json.root as CliNode).children.find((n) => n.name === "(no group)")?.bytes),
    );
    await expect(tree).toHaveAttribute("data-total", String(c.json.totalBytes));
    await shot(page, "groups", tree);

    // The link keeps the group; reloading it restores the group and its bytes.
    await page.waitForFunction(() => location.hash.includes("tg="));
    const hash = await page.evaluate(() => location.hash);
    await page.goto(`./${hash}`);
    await dropFile(page, real(FILE));
    await waitIdle(page);
    await toCallTree(page);
    const tree2 = page.getByRole("region", { name: "Call tree", exact: true });
    await expect(tree2.getByTestId("tree-group")).toHaveCount(1);
    await expect(tree2.getByTestId("tree-group")).toHaveAttribute("data-name", "Optimizer");
    await expect(tree2.locator('[role=treeitem][data-kind=group][data-name="Optimizer"]')).toHaveAttribute(
      "data-bytes",
      String(cliGroup?.bytes),
    );

    // Removing it brings the plain tree back; a link with a bad regex says so and keeps the tree.
    await tree2.getByRole("button", { name: "Remove group Optimizer" }).click();
    await waitIdle(page);
    await expect(tree2.locator("[role=treeitem][data-kind=group]")).toHaveCount(0);
    await page.goto("./#v=1&tg=Broken:attn(");
    await dropFile(page, real(FILE));
    await waitIdle(page);
    await toCallTree(page);
    const tree3 = page.getByRole("region", { name: "Call tree", exact: true });
    await expect(tree3.getByTestId("tree-group-error")).toContainText("Broken");
    await expect(tree3).toHaveAttribute("data-total", String(c.json.totalBytes));
    await expect(tree3.locator("[role=treeitem][data-kind=group]")).toHaveCount(0);
    expect(errors.filter((e) => !/ignored/.test(e))).toEqual([]);
  });

  test("range measures: the tree's bytes equal the CLI's --range; the link keeps the range", async ({
    page,
  }) => {
    const errors = watchConsole(page);
    const c = cli(["tree", real(FILE), "--range", "0..2780", "--measure", "allocated-in", "--json"]);
    expect(c.code, c.stderr).toBe(0);
    const live = cli(["tree", real(FILE), "--range", "0..2780", "--json"]);
    expect(live.code, live.stderr).toBe(0);
    const tree = await openFile(page);
    const picker = tree.getByTestId("tree-range");
    // A backwards range is said, not measured.
    await picker.getByLabel("Range from event").fill("9");
    await picker.getByLabel("Range to event").fill("2");
    await picker.getByRole("button", { name: "Measure range" }).click();
    await expect(picker.getByTestId("tree-range-problem")).toBeVisible();

    await picker.getByLabel("Range from event").fill("0");
    await picker.getByLabel("Range to event").fill("2780");
    await picker.getByLabel("Range measure").selectOption("allocated-in");
    await picker.getByRole("button", { name: "Measure range" }).click();
    await waitIdle(page);
    await expect(tree.getByTestId("tree-range-facts")).toHaveAttribute("data-measure", "allocated-in");
    await expect(tree).toHaveAttribute("data-total", String(c.json.totalBytes));
    await expect(tree.locator('[role=treeitem][data-key="root"]')).toHaveAttribute(
      "data-bytes",
      String(c.json.root.bytes),
    );
    await picker.getByLabel("Range measure").selectOption("live-at-end");
    await picker.getByRole("button", { name: "Measure range" }).click();
    await waitIdle(page);
    await expect(tree).toHaveAttribute("data-total", String(live.json.totalBytes));

    await page.waitForFunction(() => location.hash.includes("trange=live-at-end:0..2780"));
    const hash = await page.evaluate(() => location.hash);
    await page.goto(`./${hash}`);
    await dropFile(page, real(FILE));
    await waitIdle(page);
    await toCallTree(page);
    const tree2 = page.getByRole("region", { name: "Call tree", exact: true });
    await expect(tree2.getByTestId("tree-range-facts")).toHaveAttribute("data-measure", "live-at-end");
    await expect(tree2).toHaveAttribute("data-total", String(live.json.totalBytes));
    // Back to the moment: the snapshot's tree again.
    await tree2.getByRole("button", { name: "Back to the moment" }).click();
    await waitIdle(page);
    await expect(tree2.getByTestId("tree-range-facts")).toHaveCount(0);

    // An annotation's START..END (Mosaic's example file: record_function spans) as the range.
    const mosaic = "facebookresearch__mosaic__output.pickle";
    const m = cli(["tree", real(mosaic), "--range", "2..1037", "--json"]);
    expect(m.code, m.stderr).toBe(0);
    await page.goto("./");
    await dropFile(page, real(mosaic));
    await waitIdle(page);
    await toCallTree(page);
    const tree3 = page.getByRole("region", { name: "Call tree", exact: true });
    const spans = tree3.getByTestId("tree-range").getByLabel("Range from an annotation");
    await expect(spans.locator("option", { hasText: "Annotation3 (2..1037)" })).toHaveCount(1);
    await spans.selectOption({ label: "Annotation3 (2..1037)" });
    await waitIdle(page);
    await expect(tree3.getByTestId("tree-range-facts")).toHaveAttribute("data-measure", "live-at-end");
    await expect(tree3).toHaveAttribute("data-total", String(m.json.totalBytes));
    await shot(page, "range", tree3);
    expect(errors.filter((e) => !/ignored/.test(e))).toEqual([]);
  });

  test("downloads: folded sums to the root, JSON and CSV parse, PNG and SVG are images", async ({ page }) => {
    const py = pythonFacts();
    const tree = await openFile(page);
    const bar = tree.getByTestId("tree-export");

    const folded = await download(page, bar.getByRole("button", { name: "Folded .txt" }));
    expect(folded.name).toMatch(/call-tree-snapshot\.folded\.txt$/);
    const lines = folded.body.toString("utf8").trim().split("\n");
    let sum = 0;
    for (const l of lines) {
      const m = /^(.+) (\d+)$/.exec(l);
      expect(m, l).not.toBeNull();
      sum += Number(m?.[2]);
    }
    expect(sum).toBe(py.total);
    expect(lines.some((l) => l.includes("optimizer.py:76 step"))).toBe(true);

    const json = await download(page, bar.getByRole("button", { name: "JSON" }));
    const j = JSON.parse(json.body.toString("utf8"));
    expect(j.root.bytes).toBe(py.total);
    expect(j.totalBytes).toBe(py.total);

    const csv = await download(page, bar.getByRole("button", { name: "CSV" }));
    const rows = csv.body.toString("utf8").trim().split("\n");
    const head = rows[0].split(",");
    expect(head.slice(0, 9)).toEqual([
      "depth",
      "key",
      "kind",
      "name",
      "detail",
      "own",
      "bytes",
      "selfBytes",
      "blocks",
    ]);
    const rootRow = rows[1].split(",");
    expect(rootRow[0]).toBe("0");
    expect(Number(rootRow[6])).toBe(py.total);

    const png = await download(page, bar.getByRole("button", { name: "PNG" }));
    expect(png.name).toMatch(/\.png$/);
    expect(png.body.subarray(0, 8).toString("hex")).toBe("89504e470d0a1a0a");
    expect(png.body.length).toBeGreaterThan(2000);

    const svg = await download(page, bar.getByRole("button", { name: "SVG" }));
    const s = svg.body.toString("utf8");
    expect(s.startsWith("<svg")).toBe(true);
    expect(s).toContain("optimizer.py:76 step");
    // Parsed as XML in a page of its own (this one's Trusted Types policy refuses DOMParser strings).
    const blank = await page.context().newPage();
    const ok = await blank.evaluate((text) => {
      const doc = new DOMParser().parseFromString(text, "image/svg+xml");
      return doc.querySelector("parsererror") === null && doc.querySelectorAll("rect").length > 3;
    }, s);
    await blank.close();
    expect(ok).toBe(true);
  });

  test("follows the cursor without long main-thread tasks; peak; icicle zoom and breadcrumbs", async ({
    page,
  }) => {
    const errors = watchConsole(page);
    const tree = await openFile(page);
    const peak = cli(["tree", real(FILE), "--at", "peak", "--json"]);
    expect(peak.code, peak.stderr).toBe(0);
    await tree.getByTestId("tree-at-peak").click();
    await waitIdle(page);
    await expect(tree).toHaveAttribute("data-event", String(peak.json.event));
    await expect(tree).toHaveAttribute("data-total", String(peak.json.totalBytes));
    await shot(page, "peak", tree);

    // Step the cursor with the keyboard, fast, while the tree is open. The tree's own main-thread work
    // per answer (User Timing: its render and commit, the icicle's drawing) stays far under 50 ms, and the
    // 40 steps are coalesced into fewer builds (debounced, one request in flight). Long tasks of the
    // whole page are recorded too: on this shared 2-vCPU box the timeline and map redraws alone pass
    // 50 ms at times (the same run without the tree shows them), so they are reported, not asserted.
    await page.evaluate(() => {
      performance.clearMeasures();
      const w = window as unknown as { __long: number[] };
      w.__long = [];
      new PerformanceObserver((list) => {
        for (const e of list.getEntries()) w.__long.push(Math.round(e.duration));
      }).observe({ type: "longtask", buffered: false });
    });
    await page.locator("body").click({ position: { x: 5, y: 5 } });
    const steps = 40;
    for (let i = 0; i < steps; i++) await page.keyboard.press(i % 2 ? "ArrowLeft" : "Shift+ArrowLeft");
    await waitIdle(page);
    const m = await page.evaluate(() => ({
      render: performance.getEntriesByName("call-tree render").map((e) => e.duration),
      icicle: performance.getEntriesByName("call-tree icicle").map((e) => e.duration),
      long: (window as unknown as { __long: number[] }).__long,
    }));
    test.info().annotations.push({
      type: "main thread",
      description: `tree renders ${m.render.length} (max ${Math.max(0, ...m.render).toFixed(1)} ms), icicle draws ${m.icicle.length} (max ${Math.max(0, ...m.icicle).toFixed(1)} ms), page long tasks: [${m.long.join(", ")}]`,
    });
    console.log(test.info().annotations.at(-1)?.description);
    expect(m.render.length).toBeGreaterThan(0);
    expect(m.render.length).toBeLessThan(steps);
    // Times are printed above, never asserted (issue 26): the behaviour checked is that moving the
    // moment re-renders the tree without one render per step.
    const ev = Number(await tree.getAttribute("data-event"));
    const at = cli(["tree", real(FILE), "--at", String(ev), "--json"]);
    await expect(tree).toHaveAttribute("data-total", String(at.json.totalBytes));

    // Icicle: click a node to zoom, breadcrumbs back out.
    await tree.getByTestId("tree-at-snapshot").click();
    await waitIdle(page);
    // Depth 1 (rows are 20 px), the leftmost child: the largest.
    await tree.getByTestId("icicle-canvas").click({ position: { x: 10, y: 30 } });
    await waitIdle(page);
    const crumbs = tree.getByRole("navigation", { name: "Icicle zoom" });
    await expect(crumbs.getByRole("button")).toHaveCount(2);
    await expect(tree.getByTestId("tree-pinned")).toBeVisible();
    await shot(page, "icicle-zoomed", tree);
    await crumbs.getByRole("button", { name: "all live memory" }).click();
    await expect(crumbs.getByRole("button")).toHaveCount(1);
    expect(errors).toEqual([]);
  });

  test("compile_context regions as a band on the timeline (counted by Python)", async ({ page }) => {
    const errors = watchConsole(page);
    const file = "facebookresearch__mosaic__output.pickle";
    const r = spawnSync(
      "python3",
      [
        "-c",
        `
import json, pickle, sys
t = pickle.load(open(sys.argv[1], "rb"))["device_traces"][0]
runs = 0; prev = None; texts = []
for e in t:
    c = e.get("compile_context")
    if c in (None, "", "N/A"):
        prev = None; continue
    if c != prev:
        runs += 1
        if c not in texts: texts.append(c)
    prev = c
print(json.dumps({"runs": runs, "texts": texts}))
`,
        real(file),
      ],
      { encoding: "utf8" },
    );
    expect(r.status, r.stderr).toBe(0);
    const py = JSON.parse(r.stdout) as { runs: number; texts: string[] };
    expect(py.runs).toBeGreaterThan(0);
    await page.goto("./");
    await dropFile(page, real(file));
    await waitIdle(page);
    await toCallTree(page);
    const legend = page.getByTestId("compile-context-legend");
    await expect(legend).toHaveAttribute("data-regions", String(py.runs));
    for (const t of py.texts) await expect(legend).toContainText(t);
    await expect(page.getByTestId("compile-context-layer")).toBeVisible();
    await page.getByTestId("timeline").screenshot({ path: `${SHOTS}/tree-compile-context.png` });
    // A file without compile_context has no band.
    await page.goto("./");
    await dropFile(page, real(FILE));
    await waitIdle(page);
    await toCallTree(page);
    await expect(page.getByTestId("compile-context-legend")).toHaveCount(0);
    expect(errors).toEqual([]);
  });

  test("two files: the B − A tree", async ({ page }) => {
    const errors = watchConsole(page);
    await page.goto("./");
    const other = "Wedsonlin__assignment2-systems__medium_256_inference_memory_snapshot.pickle";
    await dropFiles(page, [real(FILE), real(other)]);
    await waitIdle(page);
    await page.getByRole("tab", { name: "Tree" }).click();
    const diff = page.getByRole("region", { name: "Call tree difference" });
    await expect(diff).toBeVisible();
    // Peaks are compared by default; this check is about the snapshots.
    await diff.getByRole("button", { name: "Both snapshots" }).click();
    const a = cli(["tree", real(FILE), "--at", "snapshot", "--json"]).json.totalBytes;
    const bb = cli(["tree", real(other), "--at", "snapshot", "--json"]).json.totalBytes;
    // Which file is A: the compare bar names it first.
    const aName = await page.locator(".compare-names strong").first().textContent();
    const delta = aName === FILE ? bb - a : a - bb;
    await expect(diff.getByTestId("tree-diff-total")).toHaveAttribute("data-bytes", String(delta));
    await expect(diff.getByRole("treeitem").first()).toBeVisible();
    await shot(page, "diff", diff);
    expect(errors).toEqual([]);
  });
});
