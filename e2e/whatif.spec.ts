// The "What if" card (issue 13) on a real training snapshot: the ranked suggestions carry the figures
// `peakscope whatif FILE --suggest --json` prints (the CLI runs here as the independent figure); choosing one
// draws the dashed curve on the timeline's own layer and a second peak marker where the new peak is, shows
// the new composition, and goes into the link — reloading the link (and dropping the file it asks for)
// brings the same what-if back. A category and a call site can be asked "what if … were halved / gone".

import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, type Page, test } from "@playwright/test";
import { cli, dropFile, ROOT, real, showTab, waitIdle, watchConsole } from "./helpers";

const TRAINING = real("Wedsonlin__assignment2-systems__medium_256_training_memory_snapshot.pickle");
const SHOTS = "/tmp/shots";
mkdirSync(SHOTS, { recursive: true });

type CliSuggestion = {
  id: string;
  peakBytes: number;
  peakEvent: number;
  savedBytes: number;
  fits: null | boolean;
};

/** Counts the overlay canvas's painted pixels (alpha > 0), in all of it and in the column at `atPx`. */
async function overlayPixels(page: Page, atPx?: number): Promise<{ all: number; column: number }> {
  return page.getByTestId("whatif-overlay").evaluate((c: HTMLCanvasElement, x) => {
    const ctx = c.getContext("2d");
    if (!ctx) return { all: 0, column: 0 };
    const d = ctx.getImageData(0, 0, c.width, c.height).data;
    const dpr = c.width / c.getBoundingClientRect().width;
    const col = x === undefined ? -1 : Math.round(x * dpr);
    let all = 0;
    let column = 0;
    for (let i = 3; i < d.length; i += 4) {
      if (d[i] === 0) continue;
      all++;
      const px = ((i - 3) / 4) % c.width;
      if (Math.abs(px - col) <= 1) column++;
    }
    return { all, column };
  }, atPx);
}

/** The "What if" tab's card (its own tab in the workspace: open it first). */
async function shootCard(page: Page, name: string) {
  await showTab(page, "What if");
  await page.getByTestId("whatif").screenshot({ path: `${SHOTS}/${name}.png` });
}

/** Opens the training snapshot and the workspace's "What if" tab (only the open tab's pane is rendered). */
async function openTraining(page: Page) {
  await page.goto("/");
  await dropFile(page, TRAINING);
  await waitIdle(page);
  await showTab(page, "What if");
}

test.describe("what if", () => {
  // Tall enough for the "What if" card to be seen whole in the screenshots.
  test.use({ viewport: { width: 1400, height: 1700 } });
  test("suggestions equal the CLI's; one drawn dashed on the timeline; the link brings it back", async ({
    page,
  }) => {
    // Three CLI what-ifs on the training trace and two opens of it: past the default budget on a shared box.
    test.setTimeout(300_000);
    const errors = watchConsole(page);
    const truth = cli(["whatif", TRAINING, "--suggest", "--json"]);
    expect(truth.code).toBe(0);
    const expected = truth.json.suggestions as CliSuggestion[];
    expect(expected.length).toBeGreaterThan(5);
    await openTraining(page);

    const card = page.getByRole("region", { name: "What if", exact: true });
    await expect(card).toBeVisible();
    await expect(card.getByTestId("whatif-suggestions")).toBeVisible();
    await card.getByTestId("whatif-all").click();
    const items = card.getByTestId("whatif-suggestion");
    await expect(items).toHaveCount(expected.length);
    // Each listed peak is the CLI's, in the CLI's order; its text is the same bytes.
    for (let i = 0; i < expected.length; i++) {
      const item = items.nth(i);
      expect(await item.getAttribute("data-id")).toBe(expected[i].id);
      expect(Number(await item.getAttribute("data-peak"))).toBe(expected[i].peakBytes);
      expect(Number(await item.getAttribute("data-saved"))).toBe(expected[i].savedBytes);
      const shown = item.locator(".whatif-figures .bytes").first();
      expect(Number(await shown.getAttribute("data-bytes"))).toBe(expected[i].peakBytes);
    }
    // The baseline every suggestion is measured against (its peak + what it saves) is the file's peak by
    // Python's own replay (test/tools/replay.py, standard library).
    const base =
      Number(await items.first().getAttribute("data-peak")) +
      Number(await items.first().getAttribute("data-saved"));
    expect(base).toBe(pyReplayPeak(TRAINING));
    // No capacity is known for this file: no "fits" verdicts, and the card says how to give one.
    await expect(card.getByTestId("whatif-capacity")).toContainText("Device capacity unknown");
    await expect(card.locator("[data-fits]")).toHaveCount(0);
    await shootCard(page, "whatif-list");
    // A capacity typed in: fits / does not fit as `--capacity 6GiB` says.
    const capped = cli(["whatif", TRAINING, "--suggest", "--capacity", "6GiB", "--json"]).json;
    await card.getByTestId("whatif-capacity-input").fill("6GiB");
    await card.getByRole("button", { name: "Check fit" }).click();
    await expect(card.getByTestId("whatif-capacity")).toHaveAttribute("data-value", String(6 * 1024 ** 3));
    for (const s of capped.suggestions as CliSuggestion[]) {
      await expect(card.locator(`[data-id="${s.id}"] [data-fits]`)).toHaveAttribute(
        "data-fits",
        s.fits ? "1" : "0",
      );
    }
    await shootCard(page, "whatif-capacity");
    await card.getByTestId("whatif-capacity-input").fill("");
    await card.getByRole("button", { name: "Check fit" }).click();
    await expect(card.locator("[data-fits]")).toHaveCount(0);

    // Choose one that moves the peak: activation checkpointing of every top-level module.
    const found = expected.find((s) => s.id === "checkpoint:all");
    expect(found).toBeDefined();
    const ck = found as CliSuggestion;
    const baselinePeakEvent = truth.json.baselinePeakEvent as number;
    expect(ck.peakEvent).not.toBe(baselinePeakEvent);
    const layer = page.getByTestId("whatif-layer");
    await expect(layer).toHaveAttribute("data-shown", "0");
    expect((await overlayPixels(page)).all).toBe(0);
    await card.locator('[data-id="checkpoint:all"]').click();
    await waitIdle(page);
    await expect(card.locator('[data-id="checkpoint:all"]')).toHaveAttribute("aria-pressed", "true");
    await expect(layer).toHaveAttribute("data-shown", "1");
    await expect(layer).toHaveAttribute("data-peak-bytes", String(ck.peakBytes));
    await expect(layer).toHaveAttribute("data-peak-event", String(ck.peakEvent));
    // The dashed curve is painted, and the second peak marker stands at the new peak's x.
    const peakPx = Number(await layer.getAttribute("data-peak-px"));
    const px = await overlayPixels(page, peakPx);
    expect(px.all).toBeGreaterThan(2000);
    expect(px.column).toBeGreaterThan(40);
    // …which is not where the real peak is: on the event axis, x = the event index.
    await page.getByRole("button", { name: "Event index" }).click();
    await waitIdle(page);
    const tl = page.getByTestId("timeline");
    const x0 = Number(await tl.getAttribute("data-x0"));
    const x1 = Number(await tl.getAttribute("data-x1"));
    const left = Number(await tl.getAttribute("data-plot-left"));
    const width = Number(await tl.getAttribute("data-plot-width"));
    const toPx = (ev: number) => left + ((ev - x0) / (x1 - x0)) * width;
    const newPx = Number(await layer.getAttribute("data-peak-px"));
    expect(Math.abs(newPx - toPx(ck.peakEvent))).toBeLessThan(1);
    expect(Math.abs(newPx - toPx(baselinePeakEvent))).toBeGreaterThan(50);
    expect((await overlayPixels(page, newPx)).column).toBeGreaterThan(40);

    // The new composition: the CLI's categoriesAtPeak for this suggestion, summing to its peak.
    const one = cli(["whatif", TRAINING, ...specArgs(truth, ck.id), "--json"]);
    expect(one.code).toBe(0);
    expect(one.json.peakBytes).toBe(ck.peakBytes);
    const chosen = card.getByTestId("whatif-chosen");
    await expect(chosen).toHaveAttribute("data-peak", String(ck.peakBytes));
    await expect(chosen).toHaveAttribute("data-peak-event", String(ck.peakEvent));
    const rows = chosen.locator("tbody tr[data-category]");
    let sum = 0;
    for (const row of await rows.all()) {
      const name = (await row.getAttribute("data-category")) as string;
      const v = Number(await row.getAttribute("data-value"));
      expect(v).toBe(one.json.categoriesAtPeak[name]);
      sum += v;
    }
    expect(sum).toBe(ck.peakBytes);
    await expect(chosen).toContainText("the peak moves");
    await page.getByTestId("timeline").scrollIntoViewIfNeeded();
    await page.screenshot({ path: `${SHOTS}/whatif-chosen.png` });
    await page.getByTestId("timeline").screenshot({ path: `${SHOTS}/whatif-timeline.png` });
    await page.getByTestId("whatif").screenshot({ path: `${SHOTS}/whatif-panel.png` });

    // The link holds it; reloading asks for the dropped file, and dropping it restores the same what-if.
    await expect.poll(() => page.evaluate(() => location.hash)).toContain("whatif=");
    const hash = await page.evaluate(() => location.hash);
    expect(decodeURIComponent(hash)).toContain("--recompute ");
    await page.reload();
    await expect(page.getByTestId("link-prompt")).toBeVisible();
    await dropFile(page, TRAINING);
    await waitIdle(page);
    await showTab(page, "What if");
    const card2 = page.getByRole("region", { name: "What if", exact: true });
    await expect(card2.getByTestId("whatif-chosen")).toHaveAttribute("data-peak", String(ck.peakBytes));
    await expect(card2.locator('[data-id="checkpoint:all"]')).toContainText(
      "activation checkpointing of every",
    );
    await expect(card2.locator('[data-id="checkpoint:all"]')).toHaveAttribute("aria-pressed", "true");
    await expect(page.getByTestId("whatif-layer")).toHaveAttribute("data-peak-event", String(ck.peakEvent));
    expect((await overlayPixels(page)).all).toBeGreaterThan(2000);
    expect(await page.evaluate(() => location.hash)).toBe(hash);

    // Clear: the layer is empty again and the link loses whatif=.
    await card2.getByTestId("whatif-clear").click();
    await waitIdle(page);
    await expect(page.getByTestId("whatif-layer")).toHaveAttribute("data-shown", "0");
    await expect.poll(() => page.evaluate(() => location.hash)).not.toContain("whatif=");
    expect(errors).toEqual([]);
  });

  test("a category or a call site: what if it were halved / gone / recomputed", async ({ page }) => {
    const errors = watchConsole(page);
    await openTraining(page);
    const card = page.getByRole("region", { name: "What if", exact: true });
    // A category row (the Summary tab's numbers): the bar appears with it, and "halved" is
    // `--scale category:activations=1/2`; the answer is in the What if tab.
    await showTab(page, "Summary");
    const cats = page.getByTestId("categories");
    await cats.locator('tr[data-category="activations"] button.cat-button').click();
    const bar = cats.getByTestId("whatif-bar-category");
    await expect(bar).toContainText("What if activations were");
    await bar.locator('[data-action="halve"]').click();
    await waitIdle(page);
    const halved = cli(["whatif", TRAINING, "--scale", "category:activations=1/2", "--json"]).json;
    await showTab(page, "What if");
    await expect(card.getByTestId("whatif-chosen")).toHaveAttribute("data-peak", String(halved.peakBytes));
    await expect(card.getByTestId("whatif-chosen")).toContainText("category activations halved");
    await expect(page.getByTestId("whatif-layer")).toHaveAttribute(
      "data-peak-bytes",
      String(halved.peakBytes),
    );
    await shootCard(page, "whatif-category");
    await showTab(page, "Summary");
    // Parameters cannot be "recomputed": the button says why instead.
    await cats.locator('tr[data-category="parameters"] button.cat-button').click();
    await expect(cats.getByTestId("whatif-bar-category").locator('[data-action="recompute"]')).toBeDisabled();

    // A call site: "gone" is `--remove site:FILE:LINE`.
    const site = page.getByTestId("call-sites").locator("button.site").first();
    const key = (await site.getAttribute("data-site")) as string;
    await site.click();
    const sbar = page.getByTestId("whatif-bar-site");
    await expect(sbar).toBeVisible();
    await sbar.locator('[data-action="remove"]').click();
    await waitIdle(page);
    const m = /^(.*):(\d+):[^:]*$/.exec(key) as RegExpExecArray;
    expect(m).not.toBeNull();
    const gone = cli(["whatif", TRAINING, "--remove", `site:${m[1]}:${m[2]}`, "--json"]).json;
    await showTab(page, "What if");
    await expect(card.getByTestId("whatif-chosen")).toHaveAttribute("data-peak", String(gone.peakBytes));
    await expect(card.getByTestId("whatif-cli")).toContainText(`--remove site:${m[1]}:${m[2]}`);

    // Others (a call tree) ask through openWhatIf's event: a frame's recompute.
    const frame = cli(["whatif", TRAINING, "--recompute", "model.py:253", "--json"]).json;
    await page.evaluate(() =>
      window.dispatchEvent(
        new CustomEvent("peakscope:whatif", {
          detail: { target: { kind: "selection", selection: "frame:model.py:253" }, action: "recompute" },
        }),
      ),
    );
    await waitIdle(page);
    await expect(card.getByTestId("whatif-chosen")).toHaveAttribute("data-peak", String(frame.peakBytes));
    expect(errors).toEqual([]);
  });

  test("a category gone, on the known run: the new peak is the generator's, the baseline Python's replay", async ({
    page,
  }) => {
    const errors = watchConsole(page);
    const file = join(mkdtempSync(join(tmpdir(), "peakscope-whatif-known-")), "known.pickle");
    // Writes the known run and prints, from the simulation's own bookkeeping, the peak had each category's
    // allocations never been made (e2e/tools/gen_whatif.py).
    const g = spawnSync("python3", [join(ROOT, "e2e/tools/gen_whatif.py"), file], { encoding: "utf8" });
    expect(g.status, g.stderr).toBe(0);
    const gen = JSON.parse(g.stdout) as { peakBytes: number; without: Record<string, number> };
    const baseline = pyReplayPeak(file);
    expect(baseline).toBe(gen.peakBytes);
    // Without the temporaries the peak moves (to a lower moment of its own); without the optimizer state it
    // stays at the same moment, 48 MiB lower.
    expect(gen.without.temporary).toBeGreaterThan(gen.peakBytes - 24 * 2 ** 20);
    expect(gen.without.optimizer_state).toBe(gen.peakBytes - 48 * 2 ** 20);
    await page.goto("/");
    await dropFile(page, file);
    await waitIdle(page);
    const card = page.getByRole("region", { name: "What if", exact: true });
    for (const category of ["temporary", "optimizer_state"]) {
      await showTab(page, "Summary");
      const cats = page.getByTestId("categories");
      await cats.locator(`tr[data-category="${category}"] button.cat-button`).click();
      const bar = cats.getByTestId("whatif-bar-category");
      await expect(bar).toContainText(`What if ${category.replace(/_/g, " ")} were`);
      await bar.locator('[data-action="remove"]').click();
      await showTab(page, "What if");
      const chosen = card.getByTestId("whatif-chosen");
      await expect(chosen).toHaveAttribute("data-peak", String(gen.without[category]));
      await waitIdle(page);
      // "Peak now" in its composition table is the baseline: Python's replayed peak.
      await expect(chosen.locator("tr.total td").first().locator(".bytes")).toHaveAttribute(
        "data-bytes",
        String(baseline),
      );
      await expect(page.getByTestId("whatif-layer")).toHaveAttribute(
        "data-peak-bytes",
        String(gen.without[category]),
      );
    }
    expect(errors).toEqual([]);
  });

  test("an OOM: you needed X more; the capacity it implies; what fits", async ({ page }) => {
    const errors = watchConsole(page);
    const dir = mkdtempSync(join(tmpdir(), "peakscope-whatif-oom-"));
    const gen = spawnSync("python3", [join(ROOT, "test/gen/generate.py"), "variants", dir], {
      encoding: "utf8",
    });
    expect(gen.status, gen.stderr).toBe(0);
    const file = join(dir, "oom.pickle");
    const truth = cli(["whatif", file, "--suggest", "--json"]).json;
    expect(truth.oom.length).toBe(1);
    await page.goto("/");
    await dropFile(page, file);
    await waitIdle(page);
    await showTab(page, "What if");
    const card = page.getByRole("region", { name: "What if", exact: true });
    const oom = card.getByTestId("whatif-oom");
    await expect(oom).toHaveAttribute("data-needed", String(truth.oom[0].neededBytes));
    await expect(oom).toContainText(
      `Out of memory at event #${truth.oom[0].eventIndex}: you needed 12.00 MiB more.`,
    );
    await expect(card.getByTestId("whatif-capacity")).toHaveAttribute(
      "data-value",
      String(truth.capacity.bytes),
    );
    const items = card.getByTestId("whatif-suggestion");
    await expect(items).toHaveCount(truth.suggestions.length);
    for (const s of truth.suggestions as CliSuggestion[]) {
      const item = card.locator(`[data-id="${s.id}"]`);
      expect(Number(await item.getAttribute("data-peak"))).toBe(s.peakBytes);
      await expect(item.locator("[data-fits]")).toHaveAttribute("data-fits", s.fits ? "1" : "0");
    }
    await shootCard(page, "whatif-oom");
    expect(errors).toEqual([]);
  });
});

/** The peak of the file's first device trace by test/tools/replay.py (standard library, no peakscope code). */
function pyReplayPeak(file: string): number {
  const r = spawnSync("python3", [join(ROOT, "test/tools/replay.py"), file], {
    encoding: "utf8",
    maxBuffer: 64 << 20,
  });
  expect(r.status, r.stderr).toBe(0);
  const out = Object.values(JSON.parse(r.stdout))[0] as { devices: { peakBytes: number }[] };
  return out.devices[0].peakBytes;
}

/** The CLI words of a suggestion (`--recompute X --recompute Y`), from the CLI's own JSON. */
function specArgs(truth: { json: any }, id: string): string[] {
  const s = (truth.json.suggestions as { id: string; specs: string[] }[]).find((x) => x.id === id);
  return (s?.specs ?? []).flatMap((spec) => {
    const sp = spec.indexOf(" ");
    return [spec.slice(0, sp), spec.slice(sp + 1)];
  });
}
