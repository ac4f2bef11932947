// Screenshots for looking at the page (DPR 1, 1400x900) into /tmp/shots/. Runs only with SHOTS=1.

import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, test } from "@playwright/test";
import { dropFile, dropFiles, ROOT, real, showTab, waitIdle, watchConsole } from "./helpers";

const DIR = process.env.SHOTS_DIR ?? "/tmp/shots";
const FILES = (process.env.SHOTS_FILES ?? "Constructor-Sun__code_location__memory_snapshot.pickle").split(
  ",",
);

test.describe("screenshots", () => {
  test.skip(!process.env.SHOTS, "set SHOTS=1 to take screenshots");

  test("demo", async ({ page }) => {
    mkdirSync(DIR, { recursive: true });
    await page.goto("./");
    await page.getByRole("button", { name: "Open demo" }).click();
    await waitIdle(page);
    await page.screenshot({ path: `${DIR}/demo.png` });
    await page.screenshot({ path: `${DIR}/demo-full.png`, fullPage: true });
  });

  test("empty page", async ({ page }) => {
    mkdirSync(DIR, { recursive: true });
    await page.goto("./");
    await expect(page.getByRole("heading", { level: 1 })).toBeVisible();
    await page.screenshot({ path: `${DIR}/empty.png` });
  });

  for (const file of FILES) {
    test(`file ${file}`, async ({ page }) => {
      mkdirSync(DIR, { recursive: true });
      const errors = watchConsole(page);
      await page.goto("./");
      await dropFile(page, real(file));
      await waitIdle(page, ["ready", "error"]);
      const stem = file.replace(/\.[^.]+$/, "").slice(0, 40);
      await page.screenshot({ path: `${DIR}/${stem}.png` });
      await page.screenshot({ path: `${DIR}/${stem}-full.png`, fullPage: true });
      expect(errors).toEqual([]);
    });
  }
});

test.describe("screenshots of interactions", () => {
  test.skip(!process.env.SHOTS, "set SHOTS=1 to take screenshots");

  test("allocation bands, hover, pinned peak, dark mode", async ({ page, browser }) => {
    mkdirSync(DIR, { recursive: true });
    const errors = watchConsole(page);
    await page.goto("./");
    await dropFile(page, real("Nesta-gitU__discrete_diffusion__memory_snapshot.json"));
    await waitIdle(page);
    await page.getByTestId("mode-allocations").click();
    await waitIdle(page);
    const c = (await page.getByTestId("timeline-canvas").boundingBox())!;
    await page.mouse.move(c.x + c.width * 0.8, c.y + c.height * 0.45);
    await waitIdle(page);
    await page.screenshot({ path: `${DIR}/bands-hover.png` });
    await page.mouse.move(c.x + c.width * 0.5, c.y + c.height * 0.6);
    await page.getByTestId("mode-stacked").click();
    await waitIdle(page);
    await page.mouse.move(c.x + c.width * 0.7, c.y + c.height * 0.5);
    await waitIdle(page);
    await page.screenshot({ path: `${DIR}/stacked-hover.png` });
    await page.getByTestId("jump-peak").click();
    await waitIdle(page);
    // The map is the Segments tab's (issue 21's workspace).
    await showTab(page, "Segments");
    const m = page.getByTestId("segment-map-canvas");
    await m.scrollIntoViewIfNeeded();
    const mb = (await m.boundingBox())!;
    await page.mouse.move(mb.x + mb.width * 0.3, mb.y + 15);
    await waitIdle(page);
    await page.screenshot({ path: `${DIR}/map-peak-hover.png` });
    expect(errors).toEqual([]);

    const dark = await browser.newPage({ colorScheme: "dark", viewport: { width: 1400, height: 900 } });
    await dark.goto("./");
    await dropFile(dark, real("ZidongLiu__DeComFL__memory.pickle"));
    await waitIdle(dark);
    await dark.screenshot({ path: `${DIR}/dark.png` });
    await dark.close();
  });
});

test.describe("screenshots of a comparison and of a link", () => {
  test.skip(!process.env.SHOTS, "set SHOTS=1 to take screenshots");

  test("compare view", async ({ page }) => {
    mkdirSync(DIR, { recursive: true });
    const errors = watchConsole(page);
    await page.goto("./");
    await dropFiles(page, [
      real("Wedsonlin__assignment2-systems__medium_256_inference_memory_snapshot.pickle"),
      real("Wedsonlin__assignment2-systems__medium_256_training_memory_snapshot.pickle"),
    ]);
    await waitIdle(page);
    await page.screenshot({ path: `${DIR}/compare.png` });
    await page.getByRole("tab", { name: "Call sites" }).click();
    const first = page.getByTestId("diff-sites").locator("button[data-site]").first();
    await first.click();
    await waitIdle(page);
    const c = (await page.getByTestId("column-a").getByTestId("timeline-canvas").boundingBox())!;
    await page.mouse.move(c.x + c.width * 0.5, c.y + c.height * 0.5);
    await waitIdle(page);
    await page.screenshot({ path: `${DIR}/compare-highlight-hover.png` });
    await page.screenshot({ path: `${DIR}/compare-full.png`, fullPage: true });
    expect(errors).toEqual([]);
  });

  test("drop zones over an open file", async ({ page }) => {
    mkdirSync(DIR, { recursive: true });
    await page.goto("./");
    await dropFiles(page, [real("ZidongLiu__DeComFL__memory.pickle")]);
    await waitIdle(page);
    await page.evaluate(() => {
      const dt = new DataTransfer();
      dt.items.add(new File(["x"], "other.pickle"));
      const main = document.querySelector("main")!;
      for (const type of ["dragenter", "dragover"]) {
        main.dispatchEvent(
          new DragEvent(type, {
            dataTransfer: dt,
            bubbles: true,
            cancelable: true,
            clientX: 1000,
            clientY: 300,
          }),
        );
      }
    });
    await expect(page.getByTestId("drop-zones")).toBeVisible();
    await page.screenshot({ path: `${DIR}/drop-zones.png` });
  });

  test("link-restored view", async ({ page }) => {
    mkdirSync(DIR, { recursive: true });
    await page.goto(
      "./#v=1&src=demo.pickle&device=0&axis=event&t0=100&t1=700&pin=400&cat=activations&bogus=1",
    );
    await waitIdle(page);
    await page.screenshot({ path: `${DIR}/link-restored.png` });
    await page.goto("./#v=1&name=train.pickle&hash=0123456789abcdef0123456789abcdef&t0=1&t1=2");
    await page.waitForTimeout(300);
    await page.screenshot({ path: `${DIR}/link-waiting.png` });
  });
});

test.describe("screenshots of inferred categories", () => {
  test.skip(!process.env.SHOTS, "set SHOTS=1 to take screenshots");

  test("panel, legend and map: recording began after the build; a late real trace", async ({ browser }) => {
    mkdirSync(DIR, { recursive: true });
    const dir = mkdtempSync(join(tmpdir(), "peakscope-shots-"));
    const fixture = join(dir, "after-build.pickle");
    const gen = spawnSync(
      "python3",
      [
        join(ROOT, "test/gen/generate.py"),
        "known",
        "--record-from",
        "after-build",
        "--moment",
        "step2",
        fixture,
      ],
      { encoding: "utf8" },
    );
    expect(gen.status, gen.stderr).toBe(0);
    const npu = join(dir, "npu-workspace.pickle");
    const gen2 = spawnSync(
      "python3",
      [join(ROOT, "test/gen/generate.py"), "known", "--layout", "npu", "--workspace", "active", npu],
      { encoding: "utf8" },
    );
    expect(gen2.status, gen2.stderr).toBe(0);
    const files: [string, string][] = [
      ["after-build", fixture],
      ["npu-workspace", npu],
      [
        "wedsonlin-training",
        real("Wedsonlin__assignment2-systems__medium_256_training_memory_snapshot.pickle"),
      ],
    ];
    for (const [stem, file] of files) {
      // Tall enough that the sticky side panel shows every card without scrolling.
      const page = await browser.newPage({ viewport: { width: 1400, height: 2600 } });
      const errors = watchConsole(page);
      await page.goto("./");
      await dropFile(page, file);
      await waitIdle(page);
      const inferred = page.getByTestId("categories").locator("button.inferred-badge").first();
      if ((await inferred.count()) > 0) await inferred.click();
      await waitIdle(page);
      await page.getByTestId("side-panel").screenshot({ path: `${DIR}/inferred-${stem}-panel.png` });
      await page.getByTestId("timeline").screenshot({ path: `${DIR}/inferred-${stem}-timeline.png` });
      // Hover the map (the Segments tab's) until a block says it was inferred.
      await showTab(page, "Segments");
      const m = page.getByTestId("segment-map-canvas");
      const mb = (await m.boundingBox())!;
      const tip = page.getByTestId("map-tooltip");
      let found = false;
      for (let y = 15; y < mb.height && !found; y += 30) {
        for (let x = 6; x < mb.width - 4 && !found; x += 10) {
          await page.mouse.move(mb.x + x, mb.y + y);
          await waitIdle(page);
          found = (await tip.count()) > 0 && (await tip.getByTestId("inferred-line").count()) > 0;
        }
      }
      await page.getByTestId("segment-map").screenshot({ path: `${DIR}/inferred-${stem}-map.png` });
      // Each allocation: hover a band of the bottom (pre-recording allocations are stacked first).
      await page.getByTestId("mode-allocations").click();
      await waitIdle(page);
      const c = (await page.getByTestId("timeline-canvas").boundingBox())!;
      await page.mouse.move(c.x + c.width * 0.5, c.y + c.height - 52);
      await waitIdle(page);
      await page.getByTestId("timeline").screenshot({ path: `${DIR}/inferred-${stem}-bands.png` });
      expect(errors).toEqual([]);
      await page.close();
    }
  });
});

test.describe("screenshots of the workspace's panes", () => {
  test.skip(!process.env.SHOTS, "set SHOTS=1 to take screenshots");

  test("every tab, light and dark, 1440×900; docs/img/page.png", async ({ browser }) => {
    test.setTimeout(300_000);
    mkdirSync(DIR, { recursive: true });
    const file = real("Wedsonlin__assignment2-systems__medium_256_training_memory_snapshot.pickle");
    for (const scheme of ["light", "dark"] as const) {
      const page = await browser.newPage({ colorScheme: scheme, viewport: { width: 1440, height: 900 } });
      const errors = watchConsole(page);
      await page.goto("./");
      await dropFile(page, file);
      await waitIdle(page);
      await expect(page.locator("body")).toHaveAttribute("data-moment", "peak");
      const tabs = await page.getByRole("tab").allTextContents();
      for (const name of tabs) {
        await page.getByRole("tab", { name, exact: true }).click();
        await waitIdle(page);
        const stem = name.toLowerCase().replace(/\s+/g, "-");
        await page.screenshot({ path: `${DIR}/ws-${scheme}-${stem}.png` });
        if (scheme === "light" && name === "Summary") {
          mkdirSync(join(ROOT, "docs/img"), { recursive: true });
          await page.screenshot({ path: join(ROOT, "docs/img/page.png") });
        }
      }
      await page.keyboard.press("?");
      await page.screenshot({ path: `${DIR}/ws-${scheme}-shortcuts.png` });
      expect(errors).toEqual([]);
      await page.close();
    }
  });
});
