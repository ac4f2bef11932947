// M1: opening files. Drop, pick, demo; the summary's numbers equal Python's own unpickler on the same file
// (test/tools/py_inspect.py, no peakscope code); the reader's exact error for a broken file (the CLI's
// reader prints the same message); the page stays usable; no console errors.

import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { expect, test } from "@playwright/test";
import { cli, dropFile, numberOf, ROOT, real, waitIdle, watchConsole, watchRequests } from "./helpers";
import { writeBigPickle } from "./synth";

const FILES = [
  "Constructor-Sun__code_location__memory_snapshot.pickle",
  "Muduard__LayoutEditing__memory_snapshot.pkl",
  "Nesta-gitU__discrete_diffusion__memory_snapshot.json",
];

/** The file's counts and totals by Python's restricted unpickler (test/tools/py_inspect.py). */
function pyInspect(path: string): any {
  const r = spawnSync("python3", [`${ROOT}/test/tools/py_inspect.py`, path], {
    encoding: "utf8",
    maxBuffer: 64 << 20,
  });
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout);
}

async function expectSummaryEqualsPython(page: import("@playwright/test").Page, file: string) {
  const want = pyInspect(real(file));
  await expect(page.getByTestId("summary-file")).toHaveText(file);
  await expect(page.getByTestId("summary-format")).toHaveText(want.format);
  await expect(page.getByTestId("summary-protocol")).toHaveText(String(want.pickleProtocol ?? "none"));
  expect(await numberOf(page, "summary-segments")).toBe(want.segments);
  expect(await numberOf(page, "summary-blocks")).toBe(want.blocks);
  expect(await numberOf(page, "summary-trace-entries")).toBe(want.traceEntries);
  const rows = page.getByTestId("summary-devices").locator("tbody tr[data-device]");
  await expect(rows).toHaveCount(want.devices.length);
  for (const d of want.devices) {
    const row = page.getByTestId(`summary-device-${d.device}`);
    const cell = async (field: string) =>
      Number(await row.locator(`[data-field="${field}"]`).getAttribute("data-value"));
    expect(await cell("segments"), `device ${d.device} segments`).toBe(d.segments);
    expect(await cell("blocks"), `device ${d.device} blocks`).toBe(d.blocks);
    expect(await cell("traceEntries"), `device ${d.device} trace entries`).toBe(d.traceEntries);
    expect(await cell("reserved"), `device ${d.device} reserved`).toBe(d.reservedBytes);
    expect(await cell("allocated"), `device ${d.device} allocated`).toBe(d.allocatedBytes);
    expect(await cell("active"), `device ${d.device} active`).toBe(d.activeBytes);
  }
  await expect(page).toHaveTitle(new RegExp(file.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")));
}

test.describe("opening a snapshot", () => {
  for (const file of FILES) {
    test(`drop ${file}: summary equals Python's reading`, async ({ page }) => {
      const errors = watchConsole(page);
      await page.goto("./");
      await dropFile(page, real(file));
      await waitIdle(page);
      await expectSummaryEqualsPython(page, file);
      expect(errors).toEqual([]);
    });
  }

  test("pick a file with the button's input", async ({ page }) => {
    const errors = watchConsole(page);
    const file = "ZidongLiu__DeComFL__memory.pickle";
    await page.goto("./");
    await page.getByTestId("file-input").setInputFiles(real(file));
    await waitIdle(page);
    await expectSummaryEqualsPython(page, file);
    // the slices came from the second worker that reads while this one parses (workers/parallel-reader.ts)
    await expect(page.getByTestId("summary-read")).toHaveAttribute("data-read-by", "parallel");
    // the trace entries went through the WebAssembly scanner: the page's CSP allows compiling it
    // ('wasm-unsafe-eval'); without that the JS scanner quietly takes them all, at half the speed
    // (it still takes the few the WebAssembly one gives up on: 112 of this file's 23,105)
    const entries = Number(await page.getByTestId("summary-trace-entries").getAttribute("data-value"));
    expect(entries).toBeGreaterThan(20_000);
    const byWasm = Number(await page.getByTestId("summary-read").getAttribute("data-wasm-entries"));
    expect(byWasm).toBeGreaterThan(0.95 * entries);
    expect(byWasm).toBeLessThanOrEqual(entries);
    expect(errors).toEqual([]);
  });

  test("a truncated file shows the reader's exact message, then the next file opens", async ({
    page,
  }, info) => {
    const errors = watchConsole(page);
    const source = real("Constructor-Sun__code_location__memory_snapshot.pickle");
    const cut = readFileSync(source).subarray(0, 5000);
    const truncatedPath = info.outputPath("truncated.pickle");
    const { writeFileSync } = await import("node:fs");
    writeFileSync(truncatedPath, cut);
    const expected = cli(["inspect", truncatedPath, "--json"]);
    expect(expected.code).toBe(1);
    const message = expected.stderr.trim().replace(/^peakscope: /, "");
    expect(message).toContain("truncated");

    await page.goto("./");
    await dropFile(page, truncatedPath, cut);
    expect(await waitIdle(page, ["error"])).toBe("error");
    await expect(page.getByTestId("error-message")).toHaveText(message);

    // The page is still usable: the next file opens normally and the error goes away.
    const next = "jogregoire__How-Diffusion-Models-Work__my_snapshot.pickle";
    await dropFile(page, real(next));
    await waitIdle(page);
    await expect(page.getByTestId("error")).toHaveCount(0);
    await expectSummaryEqualsPython(page, next);
    expect(errors).toEqual([]);
  });

  test("a file that is not a snapshot says what it is", async ({ page }, info) => {
    const errors = watchConsole(page);
    const path = info.outputPath("notes.pickle");
    const { writeFileSync } = await import("node:fs");
    writeFileSync(path, "hello, this is not a pickle\n");
    const expected = cli(["inspect", path, "--json"]);
    expect(expected.code).toBe(1);
    await page.goto("./");
    await dropFile(page, path);
    await waitIdle(page, ["error"]);
    await expect(page.getByTestId("error-message")).toHaveText(
      expected.stderr.trim().replace(/^peakscope: /, ""),
    );
    expect(errors).toEqual([]);
  });

  test("the page requests nothing but its own assets", async ({ page, baseURL }) => {
    const urls = watchRequests(page);
    await page.goto("./");
    await dropFile(page, real("drisspg__transformer_nuggets__mini_snapshot.pickle"));
    await waitIdle(page);
    await expect(page.getByTestId("summary-file")).toHaveText(
      "drisspg__transformer_nuggets__mini_snapshot.pickle",
    );
    // The requests were seen (the page and its scripts), and every one stayed on the page's origin.
    expect(urls).toContain(baseURL!);
    const foreign = urls.filter(
      (u) => !u.startsWith(baseURL!) && !u.startsWith("data:") && !u.startsWith("blob:"),
    );
    expect(foreign).toEqual([]);
  });

  test("the demo opens from the same origin", async ({ page, baseURL }) => {
    const errors = watchConsole(page);
    const urls = watchRequests(page);
    await page.goto("./");
    await page.getByRole("button", { name: "Open demo" }).click();
    await waitIdle(page);
    await expect(page.getByTestId("summary-file")).toHaveText("demo.pickle");
    // The segment count Python's unpickler reads from the same file.
    const py = spawnSync(
      "python3",
      [
        "-c",
        'import pickle,sys; print(len(pickle.load(open(sys.argv[1],"rb"))["segments"]))',
        `${ROOT}/public/demo.pickle`,
      ],
      { encoding: "utf8" },
    );
    expect(py.status, py.stderr).toBe(0);
    expect(await numberOf(page, "summary-segments")).toBe(Number(py.stdout.trim()));
    expect(urls).toContain(`${baseURL}demo.pickle`);
    expect(errors).toEqual([]);
  });
});

test.describe("a large file", () => {
  // 3,000,000 trace entries, ~177 MB: slow enough to cancel, large enough to show the worker keeps up.
  const big = `${ROOT}/test-results/e2e-big.pickle`;
  const BIG_ENTRIES = 3_000_000;
  test.beforeAll(async () => {
    const { existsSync, statSync } = await import("node:fs");
    if (!existsSync(big) || statSync(big).size < 170e6) await writeBigPickle(big, BIG_ENTRIES);
  });

  test("progress shows phase, percent and MB/s; Cancel leaves a usable page", async ({ page }) => {
    const errors = watchConsole(page);
    await page.goto("./");
    await page.getByTestId("file-input").setInputFiles(big);
    await expect(page.getByTestId("progress")).toBeVisible();
    await expect(page.getByTestId("progress-rate")).toHaveText(/^\d+ MB\/s$/);
    await expect(page.getByTestId("progress-phase")).toHaveText(/reading|parsing|building|attributing/);
    await expect(page.getByTestId("progress-percent")).toHaveText(/^\d+%$/);
    // The first picture: memory over the entries read so far, while the file is still being read.
    await expect(page.getByTestId("load-preview")).toBeVisible();
    expect(Number(await page.getByTestId("load-preview").getAttribute("data-entries"))).toBeGreaterThan(0);
    await page.screenshot({ path: "test-results/load-preview.png" });
    await page.getByTestId("cancel").click();
    expect(await waitIdle(page, ["empty"])).toBe("empty");
    await expect(page.locator("body")).toHaveAttribute("data-cancelled", "1");
    await expect(page.getByTestId("progress")).toHaveCount(0);
    // The next file opens normally.
    const next = "drisspg__transformer_nuggets__mini_snapshot.pickle";
    await dropFile(page, real(next));
    await waitIdle(page);
    await expect(page.getByTestId("summary-file")).toHaveText(next);
    expect(errors).toEqual([]);
  });

  test("opens completely: counts equal what was written, the timeline draws", async ({ page }) => {
    const errors = watchConsole(page);
    await page.goto("./");
    await page.getByTestId("file-input").setInputFiles(big);
    await waitIdle(page);
    // writeBigPickle wrote exactly BIG_ENTRIES trace entries and no segment.
    expect(await numberOf(page, "summary-trace-entries")).toBe(BIG_ENTRIES);
    // Served cross-origin isolated (scripts/serve.mjs), so its columns (87 MB) were shared memory
    // (src/core/model/warm-memory.ts) and its slices were scanned in the scanner's shared memory: the
    // counts above read them.
    expect(await page.evaluate(() => crossOriginIsolated)).toBe(true);
    expect(await numberOf(page, "summary-segments")).toBe(0);
    await expect(page.getByTestId("timeline")).toHaveAttribute("data-axis", "time");
    const nodes = await page.evaluate(() => document.querySelectorAll("*").length);
    expect(nodes).toBeLessThan(2000);
    // Zooming asks the worker for one bucket per pixel again: the visible domain gets narrower.
    const timeline = page.getByTestId("timeline");
    const span = async () =>
      Number(await timeline.getAttribute("data-x1")) - Number(await timeline.getAttribute("data-x0"));
    const before = await span();
    const canvas = (await page.getByTestId("timeline-canvas").boundingBox())!;
    await page.mouse.move(canvas.x + canvas.width / 2, canvas.y + canvas.height / 2);
    await page.mouse.wheel(0, -400);
    // Wait for the state to change first, then for the page's idle signal after it.
    await expect.poll(span).toBeLessThan(before);
    await waitIdle(page);
    expect(await span()).toBeLessThan(before);
    expect(errors).toEqual([]);
  });
});
