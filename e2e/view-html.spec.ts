// `peakscope view FILE [FILE2] --no-open` serves a page that opens FILE (FILE2: a comparison) from the same
// localhost server, and shows what `peakscope inspect --json` / `report --compare --json` say; `peakscope
// report FILE --html OUT` opens from file:// in Chromium with the network blocked and no script, and
// shows the numbers of `report --json`.

import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { expect, type Page, test } from "@playwright/test";
import { cli, numberOf, ROOT, real, waitIdle, watchConsole } from "./helpers";

const DIST = resolve(ROOT, process.env.E2E_DIST ?? "dist");
const SMALL = "ZidongLiu__DeComFL__memory.pickle";
const INFERENCE = "Wedsonlin__assignment2-systems__medium_256_inference_memory_snapshot.pickle";
const TRAINING = "Wedsonlin__assignment2-systems__medium_256_training_memory_snapshot.pickle";
const SHOTS = process.env.SHOTS_DIR ?? resolve(ROOT, "test-results/shots");

const children: ChildProcess[] = [];
test.afterAll(() => {
  for (const c of children) c.kill("SIGTERM");
});

/** Runs `peakscope view FILES --no-open --port 0`; resolves with the page URL it prints. */
async function view(files: string[]): Promise<string> {
  const child = spawn(
    process.execPath,
    [resolve(ROOT, "bin/peakscope.mjs"), "view", ...files, "--no-open", "--port", "0", "--site", DIST],
    { cwd: ROOT, stdio: ["ignore", "pipe", "inherit"] },
  );
  children.push(child);
  return new Promise<string>((done, fail) => {
    let out = "";
    child.stdout!.on("data", (d) => {
      out += String(d);
      const m = /peakscope view: (http:\/\/127\.0\.0\.1:\d+\/\S+)\r?\n/.exec(out);
      if (m) done(m[1]);
    });
    child.on("exit", (code) => fail(new Error(`peakscope view exited with ${code}: ${out}`)));
  });
}

/** The independent inspector (Python's own unpickler, no peakscope code): the expected numbers. */
function pyInspect(file: string): any {
  return JSON.parse(
    execFileSync("python3", [resolve(ROOT, "test/tools/py_inspect.py"), real(file)], {
      encoding: "utf8",
      maxBuffer: 64 << 20,
    }),
  );
}

async function expectSummaryEqualsInspect(page: Page, file: string) {
  const want = pyInspect(file);
  expect(want.devices.length).toBeGreaterThan(0);
  await expect(page.getByTestId("summary-file")).toHaveText(file);
  expect(await numberOf(page, "summary-segments")).toBe(want.segments);
  expect(await numberOf(page, "summary-blocks")).toBe(want.blocks);
  expect(await numberOf(page, "summary-trace-entries")).toBe(want.traceEntries);
  for (const d of want.devices) {
    const row = page.getByTestId(`summary-device-${d.device}`);
    const cell = async (field: string) =>
      Number(await row.locator(`[data-field="${field}"]`).getAttribute("data-value"));
    expect(await cell("reserved"), `device ${d.device} reserved`).toBe(d.reservedBytes);
    expect(await cell("allocated"), `device ${d.device} allocated`).toBe(d.allocatedBytes);
    expect(await cell("active"), `device ${d.device} active`).toBe(d.activeBytes);
  }
}

test.describe("peakscope view", () => {
  test("view FILE --no-open: the page opens FILE from the same server and shows its totals", async ({
    page,
  }) => {
    const errors = watchConsole(page);
    const url = await view([real(SMALL)]);
    const origin = new URL(url).origin;
    const requests: string[] = [];
    page.on("request", (r) => requests.push(r.url()));
    await page.goto(url);
    await waitIdle(page);
    await expectSummaryEqualsInspect(page, SMALL);
    // everything came from the view server (the file included), nothing from anywhere else
    expect(requests.filter((u) => !u.startsWith(`${origin}/`) && !u.startsWith("blob:"))).toEqual([]);
    expect(requests.some((u) => u.includes(`/_peakscope/`) && u.endsWith(`/${SMALL}`))).toBe(true);
    expect(errors).toEqual([]);
  });

  test("view A B --no-open: a comparison, its verdict the CLI's", async ({ page }) => {
    const errors = watchConsole(page);
    const url = await view([real(INFERENCE), real(TRAINING)]);
    const report = cli(["report", real(INFERENCE), "--compare", real(TRAINING), "--json"]).json;
    await page.goto(url);
    await waitIdle(page);
    await expect(page.locator("body")).toHaveAttribute("data-mode", "compare");
    // Peaks compared by default (both files have a trace): the CLI's compare.atPeaks.
    await expect(page.getByTestId("verdict")).toHaveText(report.compare.atPeaks.verdict);
    expect(errors).toEqual([]);
  });
});

test.describe("peakscope report --html", () => {
  for (const file of [TRAINING, SMALL]) {
    test(`${file}: opens from file:// with the network blocked, no script, the numbers of --json`, async ({
      browser,
    }) => {
      const dir = mkdtempSync(join(tmpdir(), "peakscope-e2e-html-"));
      const out = join(dir, `${file}.html`);
      const made = cli(["report", real(file), "--html", out]);
      expect([0, 2]).toContain(made.code);
      expect(statSync(out).size).toBeGreaterThan(1000);
      const r = cli(["report", real(file), "--json"]).json;
      // The totals the page shows are checked against Python reading the file, not only the CLI.
      const py = pyInspect(file);

      // no network, no JavaScript
      const context = await browser.newContext({ javaScriptEnabled: false, offline: true });
      await context.route("**/*", (route) =>
        route.request().url().startsWith("file:") ? route.continue() : route.abort(),
      );
      const page = await context.newPage();
      const errors = watchConsole(page);
      const requests: string[] = [];
      page.on("request", (q) => requests.push(q.url()));
      await page.goto(`file://${out}`);
      await expect(page.getByRole("heading", { level: 1 })).toHaveText("peakscope report");
      await expect(page.getByTestId("file")).toHaveText(r.file);
      expect(requests).toEqual([`file://${out}`]);

      const shown = async (id: string) => {
        const el = page.getByTestId(id);
        return { value: Number(await el.getAttribute("data-value")), text: (await el.textContent())?.trim() };
      };
      const mib = (n: number) => `${(n / 2 ** 20).toFixed(2)} MiB`;
      for (const k of ["reserved", "active", "allocated"]) {
        const s = await shown(`total-${k}`);
        expect(s.value, k).toBe(r.totals[`${k}Bytes`]);
        expect(s.value, `${k} (Python)`).toBe(py.totals[`${k}Bytes`]);
        expect(s.text, k).toBe(mib(r.totals[`${k}Bytes`]));
      }
      for (const [name, n] of Object.entries(r.categories)) {
        const row = page.getByTestId(`category-${name}`);
        expect(Number(await row.getAttribute("data-value")), name).toBe(n);
        await expect(row.locator("td").nth(1)).toHaveText(mib(n as number));
        expect(Number(await row.getAttribute("data-inferred")), `${name} inferred`).toBe(
          r.inferredBytes[name] ?? 0,
        );
      }
      for (const c of r.checks)
        await expect(page.getByTestId(`check-${c.id}`), c.id).toHaveAttribute("data-status", c.status);
      // both files have a trace, so a peak: checked on every path (no conditional expect)
      expect(r.peak).not.toBeNull();
      // the peak's event is the one Python's replay of the trace finds (e2e/tools/py_peak.py)
      const pyPeak = JSON.parse(
        execFileSync("python3", [resolve(ROOT, "e2e/tools/py_peak.py"), real(file)], { encoding: "utf8" }),
      );
      expect(r.peak.eventIndex).toBe(pyPeak.peakEvent);
      const p = await shown("peak");
      expect(p.value).toBe(r.peak.allocatedBytes);
      expect(p.text).toBe(mib(r.peak.allocatedBytes));
      for (const [i, s] of r.topCallSites.entries()) {
        const row = page.getByTestId(`site-${i}`);
        expect(Number(await row.getAttribute("data-value"))).toBe(s.bytes);
        await expect(row.locator(".site").first()).toHaveText(s.label);
      }
      // both pictures are drawn
      for (const d of r.timeline.devices) {
        const tl = page.getByTestId(`timeline-${d.device}`);
        expect((await tl.boundingBox())?.height ?? 0).toBeGreaterThan(100);
        expect(Number(await tl.getAttribute("data-points"))).toBeLessThanOrEqual(2000);
        expect(Number(await tl.getAttribute("data-peak"))).toBe(d.peakAllocatedBytes);
      }
      for (const d of r.devices) {
        const map = page.getByTestId(`segments-${d.device}`);
        expect((await map.boundingBox())?.height ?? 0).toBeGreaterThan(10);
        expect(Number(await map.getAttribute("data-reserved"))).toBe(d.reservedBytes);
      }
      // nothing refused by the page's own CSP, nothing else logged
      expect(errors).toEqual([]);
      mkdirSync(SHOTS, { recursive: true });
      await page.screenshot({ path: join(SHOTS, `report-html-${file.split("__")[0]}.png`), fullPage: true });
      await context.close();
    });
  }

  test("with JavaScript on, the CSP refuses nothing (the one style is hashed)", async ({ page }) => {
    const dir = mkdtempSync(join(tmpdir(), "peakscope-e2e-html-"));
    const out = join(dir, "r.html");
    cli(["report", real(SMALL), "--html", out]);
    const errors = watchConsole(page);
    await page.goto(`file://${out}`);
    const csp = await page.locator('meta[http-equiv="Content-Security-Policy"]').getAttribute("content");
    expect(csp).toMatch(/^default-src 'none'; style-src 'sha256-/);
    // the stylesheet applied (the CSP let it in): the status badges are coloured boxes
    const badge = page.locator(".st.pass").first();
    expect(await badge.evaluate((e) => getComputedStyle(e).color)).toBe("rgb(255, 255, 255)");
    const violations = await page.evaluate(() => document.querySelectorAll("script").length);
    expect(violations).toBe(0);
    expect(errors).toEqual([]);
  });
});
