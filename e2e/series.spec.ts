// A series of dumps (test/gen/generate.py leaks --series: dumps after steps 2–7, a kept list planted) dropped
// on the page opens the Series view: the growth table with the leak (site and bytes from series.truth.json),
// a site's live bytes per dump on click, two dumps compared; the steady series says no leak. One trace with a
// leak shows its steps as bands on the timeline and the Growth section naming the leak.

import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, test } from "@playwright/test";
import { dropFiles, ROOT, serveFiles, waitIdle, watchConsole } from "./helpers";

interface SeriesTruth {
  leakSites: { site: string; category: string }[];
  dumps: { file: string; step: number; leakBytes: number[] }[];
}

const dir = mkdtempSync(join(tmpdir(), "peakscope-series-e2e-"));
const gen = (args: string[]) =>
  execFileSync("python3", [join(ROOT, "test/gen/generate.py"), "leaks", ...args]);
const filesOf = (d: string) =>
  readdirSync(d)
    .filter((f) => f.endsWith(".pickle") || f.endsWith(".counters.json"))
    .map((f) => join(d, f));

test.describe("series of dumps", () => {
  /** A steady run long enough that the Growth table folds its middle rows (GrowthSection's EDGE_ROWS = 20). */
  const MANY_STEPS = 60;
  test.beforeAll(() => {
    gen(["--leak", "list", "--series", join(dir, "list")]);
    gen(["--leak", "none", "--series", join(dir, "none")]);
    gen(["--leak", "cache", join(dir, "trace-cache.pickle")]);
    gen(["--leak", "none", "--steps", String(MANY_STEPS), join(dir, "trace-steady-many.pickle")]);
  });

  test("a series with a kept list: the growth table names the leak; a site per dump; two dumps compared", async ({
    page,
  }) => {
    const errors = watchConsole(page);
    const truth = JSON.parse(readFileSync(join(dir, "list", "series.truth.json"), "utf8")) as SeriesTruth;
    await page.goto("/");
    await dropFiles(page, filesOf(join(dir, "list")));
    const view = page.getByRole("region", { name: "Series" });
    await expect(view).toBeVisible();
    await expect(page.locator("body")).toHaveAttribute("data-mode", "series");
    await waitIdle(page);
    await expect(view).toHaveAttribute("data-verdict", "leak");
    const leak = truth.leakSites[0];
    const label = `${leak.site
      .split("/")
      .pop()
      ?.replace(/:main$/, "")} main`; // train.py:62 main
    await expect(view.getByTestId("series-leak")).toContainText(label);
    await expect(view.getByTestId("series-leak")).toContainText("2.00 MiB");
    const table = view.getByRole("table", { name: "Growth per call site and category" });
    await expect(table.locator("thead th")).toContainText(truth.dumps.map((d) => `step ${d.step}`));
    const row = table.locator("tr[data-kind=leak]");
    await expect(row).toHaveCount(1);
    await expect(row).toContainText(label);
    await row.click();
    const site = view.getByTestId("series-site");
    await expect(site.locator("li")).toHaveCount(truth.dumps.length);
    const shown = await site
      .locator("[data-bytes]")
      .evaluateAll((els) => els.map((e) => Number(e.getAttribute("data-bytes"))));
    expect(shown).toEqual(truth.dumps.map((d) => d.leakBytes[0]));
    // Compare: first and last dump by default; the input category grew by the leak's bytes.
    const grown = truth.dumps[truth.dumps.length - 1].leakBytes[0] - truth.dumps[0].leakBytes[0];
    const cmp = view.getByTestId("series-compare");
    await expect(cmp.getByTestId("series-compare-verdict")).toContainText("growth");
    await expect(cmp.locator(`[data-bytes="${grown}"]`).first()).toBeVisible();
    await cmp.getByRole("combobox", { name: "Compare dump A" }).selectOption({ index: 4 });
    const grown2 = truth.dumps[truth.dumps.length - 1].leakBytes[0] - truth.dumps[4].leakBytes[0];
    await expect(cmp.locator(`[data-bytes="${grown2}"]`).first()).toBeVisible();
    expect(errors).toEqual([]);
  });

  test("#src with the dumps' URLs opens the series (it is in the link)", async ({ page }) => {
    const server = await serveFiles(join(dir, "list"), /^peakscope-rank0-step\d\.pickle$/);
    try {
      await page.goto(`./#${server.src([2, 3, 4, 5, 6, 7].map((s) => `peakscope-rank0-step${s}.pickle`))}`);
      await waitIdle(page);
      const view = page.getByRole("region", { name: "Series" });
      await expect(view).toHaveAttribute("data-verdict", "leak");
      await expect(view.locator("tr[data-kind=leak]")).toContainText("train.py:62 main");
      expect(await page.evaluate(() => location.hash)).toContain("peakscope-rank0-step7.pickle");
    } finally {
      await server.close();
    }
  });

  test("a series link keeps the picked growth row and the compared pair, and opens with them", async ({
    page,
  }) => {
    const truth = JSON.parse(readFileSync(join(dir, "list", "series.truth.json"), "utf8")) as SeriesTruth;
    const server = await serveFiles(join(dir, "list"), /^peakscope-rank0-step\d\.pickle$/);
    try {
      await page.goto(`./#${server.src(truth.dumps.map((d) => d.file))}`);
      await waitIdle(page);
      const view = page.getByRole("region", { name: "Series" });
      await expect(view).toHaveAttribute("data-verdict", "leak");
      // pick the leak's row and a pair: both go into the link
      await view.locator("tr[data-kind=leak]").click();
      const cmp = view.getByTestId("series-compare");
      const a = truth.dumps[1].file;
      const b = truth.dumps[3].file;
      await cmp.getByRole("combobox", { name: "Compare dump A" }).selectOption(a);
      await cmp.getByRole("combobox", { name: "with dump B" }).selectOption(b);
      const hash = await page.evaluate(() => location.hash);
      const params = new URLSearchParams(hash.slice(1));
      const leak = truth.leakSites[0];
      expect(params.get("pick")).toBe(leak.site);
      expect(params.get("pickcat")).toBe(leak.category);
      expect(params.getAll("pair")).toEqual([a, b]);
      // the same link in a fresh page opens with them: the row picked, its bytes per dump, the pair
      const fresh = await page.context().newPage();
      await fresh.goto(`./${hash}`);
      await waitIdle(fresh);
      const view2 = fresh.getByRole("region", { name: "Series" });
      await expect(view2.locator("tr[data-kind=leak]")).toHaveAttribute("aria-selected", "true");
      const shown = await view2
        .getByTestId("series-site")
        .locator("[data-bytes]")
        .evaluateAll((els) => els.map((e) => Number(e.getAttribute("data-bytes"))));
      expect(shown).toEqual(truth.dumps.map((d) => d.leakBytes[0]));
      const cmp2 = view2.getByTestId("series-compare");
      await expect(cmp2.getByRole("combobox", { name: "Compare dump A" })).toHaveValue(a);
      await expect(cmp2.getByRole("combobox", { name: "with dump B" })).toHaveValue(b);
      // B − A of the leaking site, from the truth
      const delta = truth.dumps[3].leakBytes[0] - truth.dumps[1].leakBytes[0];
      await expect(cmp2.locator(`[data-bytes="${delta}"]`).first()).toBeVisible();
      await fresh.close();
    } finally {
      await server.close();
    }
  });

  test("the steady series: no leak, and the lazily made buffer is warm-up", async ({ page }) => {
    await page.goto("/");
    await dropFiles(page, filesOf(join(dir, "none")));
    const view = page.getByRole("region", { name: "Series" });
    await waitIdle(page);
    await expect(view).toHaveAttribute("data-verdict", "none");
    await expect(view.getByTestId("series-verdict")).toContainText("no growth found");
    await expect(view.getByTestId("series-leak")).toHaveCount(0);
    await expect(view.locator("tr[data-kind=one-off]")).toContainText("train.py:64 main");
  });

  test("one trace: steps as bands on the timeline, and the Growth section names the leak", async ({
    page,
  }) => {
    await page.goto("/");
    await dropFiles(page, [join(dir, "trace-cache.pickle")]);
    await waitIdle(page);
    const growth = page.getByTestId("growth");
    await expect(growth).toHaveAttribute("data-verdict", "leak");
    await expect(growth.getByTestId("growth-leak")).toContainText("train.py:63 main");
    await expect(growth.getByTestId("growth-leak")).toContainText("+1.00 MiB");
    await expect(growth.getByTestId("growth-steps").locator("tbody tr")).toHaveCount(8);
    await expect(page.getByTestId("step-bands")).toHaveAttribute("aria-label", /step 1 kept .*step 8/);
  });

  test("a trace of many steps: the Growth table lists the first and last 20, the bands say how many", async ({
    page,
  }) => {
    await page.goto("/");
    await dropFiles(page, [join(dir, "trace-steady-many.pickle")]);
    await waitIdle(page);
    const growth = page.getByTestId("growth");
    await expect(growth).toHaveAttribute("data-verdict", "none");
    const rows = growth.getByTestId("growth-steps").locator("tbody tr");
    // the generator wrote MANY_STEPS steps: 20 listed, the gap row, 20 listed
    await expect(rows).toHaveCount(41);
    await expect(rows.nth(0).locator("td").first()).toHaveText("1");
    await expect(rows.nth(19).locator("td").first()).toHaveText("20");
    await expect(growth.getByTestId("growth-steps-gap")).toContainText(`${MANY_STEPS - 40} steps not listed`);
    await expect(rows.nth(21).locator("td").first()).toHaveText(String(MANY_STEPS - 19));
    await expect(rows.nth(40).locator("td").first()).toHaveText(String(MANY_STEPS));
    await expect(page.getByTestId("step-bands")).toHaveAttribute(
      "aria-label",
      new RegExp(`^Steps of the trace as bands: ${MANY_STEPS} steps; step 1 kept .*step 24 kept [^,]*, …$`),
    );
  });
});
