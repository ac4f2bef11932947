// M2: the side panel. Every number equals `peakscope report --json` on the same file (totals, categories,
// checks, top call sites), per device; a counters sidecar dropped with the snapshot drives the counter
// checks exactly as `--counters` does; the peak-vs-snapshot gap is flagged beyond 2%.

import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, statSync, writeFileSync } from "node:fs";
import { expect, type Page, test } from "@playwright/test";
import { cli, dropFile, ROOT, real, showTab, waitIdle, watchConsole } from "./helpers";

/** test/tools/py_inspect.py's reading of a file (standard library, no peakscope code). */
function pyInspect(path: string): any {
  const r = spawnSync("python3", [`${ROOT}/test/tools/py_inspect.py`, path], {
    encoding: "utf8",
    maxBuffer: 64 << 20,
  });
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout);
}

/** The workspace's Summary tab holds the numbers (and Python's totals); its Checks tab the checks. */
async function expectPanelEqualsReport(page: Page, report: any, device: number, file: string) {
  await showTab(page, "Summary");
  const dev = report.devices.find((d: any) => d.device === device);
  expect(dev, `device ${device} in the report`).toBeTruthy();
  const value = async (testId: string) => Number(await page.getByTestId(testId).getAttribute("data-value"));
  expect(await value("total-reserved")).toBe(dev.reservedBytes);
  expect(await value("total-active")).toBe(dev.activeBytes);
  expect(await value("total-allocated")).toBe(dev.allocatedBytes);
  // No requested sizes in the file: no figure (an empty data-value), never a 0 that looks measured.
  expect(await page.getByTestId("total-requested").getAttribute("data-value")).toBe(
    dev.requestedBytes === null ? "" : String(dev.requestedBytes),
  );
  // The same totals by Python's restricted unpickler (test/tools/py_inspect.py: Σ over the device's segments).
  const py = pyInspect(file).devices.find((d: any) => d.device === device);
  expect(
    [await value("total-reserved"), await value("total-active"), await value("total-allocated")],
    "totals (Python)",
  ).toEqual([py.reservedBytes, py.activeBytes, py.allocatedBytes]);
  // Categories: every category, bytes equal.
  const cats = page.getByTestId("categories").locator("tbody tr[data-category]");
  await expect(cats).toHaveCount(Object.keys(dev.categories).length);
  for (const [name, bytes] of Object.entries(dev.categories)) {
    const row = page.getByTestId("categories").locator(`tr[data-category="${name}"]`);
    expect(Number(await row.getAttribute("data-value")), `category ${name}`).toBe(bytes);
  }
  // Top call sites: same order, sites and bytes.
  const sites = page.getByTestId("call-sites").locator("button[data-site]");
  await expect(sites).toHaveCount(report.topCallSites.length);
  for (let i = 0; i < report.topCallSites.length; i++) {
    const s = report.topCallSites[i];
    await expect(sites.nth(i)).toHaveAttribute("data-site", s.site);
    expect(Number(await sites.nth(i).getAttribute("data-bytes"))).toBe(s.bytes);
  }
  await showTab(page, "Checks");
  // Checks: same ids, statuses and details (the details carry both numbers); trace-replay is among them.
  const checks = page.getByTestId("checks").locator("[data-check]");
  await expect(checks).toHaveCount(report.checks.length);
  for (const c of report.checks) {
    const el = page.getByTestId("checks").locator(`[data-check="${c.id}"]`);
    await expect(el).toHaveAttribute("data-status", c.status);
    await expect(el.locator(".why")).toHaveText(c.detail);
  }
  await showTab(page, "Summary");
}

test.describe("side panel", () => {
  test("numbers equal peakscope report --json, on every device", async ({ page }) => {
    const errors = watchConsole(page);
    const file = "Constructor-Sun__code_location__memory_snapshot.pickle";
    const { json: report, code } = cli(["report", real(file), "--json"]);
    expect([0, 2]).toContain(code);
    await page.goto("./");
    await dropFile(page, real(file));
    await waitIdle(page);
    await expectPanelEqualsReport(page, report, 0, real(file));
    // The device selector switches every number to that device.
    for (const d of [1, 2]) {
      await page.getByTestId("device-select").selectOption(String(d));
      await waitIdle(page);
      await expect(page.getByRole("heading", { name: `Memory at the snapshot — device ${d}` })).toBeVisible();
      await expectPanelEqualsReport(page, report, d, real(file));
    }
    expect(errors).toEqual([]);
  });

  test("a file big enough to be attributed on a second thread: the same numbers as the report", async ({
    page,
  }) => {
    // Its trace columns are in shared memory (≥ 1.16 M entries: model/builder.ts), so a helper thread
    // attributes while the page's worker replays (workers/attribution-helper.ts); the report attributes
    // and replays one after the other, in Node.
    test.setTimeout(240_000);
    const big = `${ROOT}/test-results/e2e-big230.pickle`;
    if (!existsSync(big) || statSync(big).size < 200e6) {
      execFileSync("python3", [`${ROOT}/test/gen/generate.py`, "big", "--target-mb", "230", big], {
        stdio: "pipe",
      });
    }
    const errors = watchConsole(page);
    const { json: report } = cli(["report", big, "--json"]);
    await page.goto("./");
    await page.getByTestId("file-input").setInputFiles(big);
    await waitIdle(page, ["ready"], 120_000);
    await showTab(page, "Summary");
    await expect(page.getByTestId("summary-read")).toHaveAttribute("data-attributed-by", "helper");
    // its trace paired on that thread as the file was read (src/core/attribution/streamed-pairing.ts)
    await expect(page.getByTestId("summary-read")).toHaveAttribute("data-paired-while-read", "1");
    // its slices after the first read by the reader worker straight into the scanner's shared memory and
    // scanned there (model/wasm-scanner.ts sliceMemory): at least all but the first and last 4 MiB
    const inPlace = Number(await page.getByTestId("summary-read").getAttribute("data-slices-in-place"));
    expect(inPlace).toBeGreaterThanOrEqual(Math.floor(statSync(big).size / (4 << 20)) - 2);
    await expectPanelEqualsReport(page, report, 0, big);
    expect(errors).toEqual([]);
  });

  for (const file of [
    "volcengine__verl__mem.pickle",
    "facebookresearch__mosaic__output.pickle",
    "Yiyi-philosophy__LLM-inference__oom_snapshot.pickle",
  ]) {
    test(`${file}: panel equals the report (failing checks, pools, torch 2.0 layout)`, async ({ page }) => {
      const errors = watchConsole(page);
      const { json: report } = cli(["report", real(file), "--json"]);
      await page.goto("./");
      await dropFile(page, real(file));
      await waitIdle(page);
      await expectPanelEqualsReport(page, report, report.devices[0]?.device ?? 0, real(file));
      expect(errors).toEqual([]);
    });
  }

  test("a counters sidecar dropped with the snapshot drives the counter checks like --counters", async ({
    page,
  }, info) => {
    const errors = watchConsole(page);
    const file = "ZidongLiu__DeComFL__memory.pickle";
    // Python's totals of the file (py_inspect: Σ over segments), not the code under test's.
    const dev = pyInspect(real(file)).devices[0];
    // A sidecar that agrees on reserved and disagrees on allocated (one check passes, one fails).
    const sidecar = {
      memory_allocated: dev.allocatedBytes + 64 * 1024 * 1024,
      memory_reserved: dev.reservedBytes,
      max_memory_allocated: dev.allocatedBytes * 2,
      max_memory_reserved: dev.reservedBytes,
      device: dev.device,
    };
    const path = info.outputPath(`${file}.counters.json`);
    writeFileSync(path, JSON.stringify(sidecar));
    const withCounters = cli(["report", real(file), "--counters", path, "--json"]);
    expect(withCounters.code).toBe(2);
    const statuses = withCounters.json.checks.map((c: any) => c.status);
    expect(statuses).toContain("fail");
    expect(statuses).toContain("pass");

    await page.goto("./");
    await page.getByTestId("file-input").setInputFiles([real(file), path]);
    await waitIdle(page);
    await showTab(page, "Checks");
    await expect(page.getByTestId("checks")).toContainText(`${file}.counters.json`);
    // The Checks tab against what the test built and Python read: reserved agrees, allocated is 64 MiB off;
    // the structural checks state Python's sums.
    const check = (id: string) => page.getByTestId("checks").locator(`[data-check="${id}"]`);
    const exact = (n: number) => `${n.toLocaleString("en-US")} B`;
    await expect(check("reserved-counter")).toHaveAttribute("data-status", "pass");
    await expect(check("allocated-counter")).toHaveAttribute("data-status", "fail");
    await expect(check("allocated-counter").locator(".why")).toContainText(exact(dev.allocatedBytes));
    await expect(check("allocated-counter").locator(".why")).toContainText(exact(sidecar.memory_allocated));
    await expect(check("block-tiling").locator(".why")).toContainText(
      `Σ total_size ${exact(dev.reservedBytes)}`,
    );
    await expect(check("active-total").locator(".why")).toContainText(
      `Σ active_size ${exact(dev.activeBytes)}`,
    );
    await expectPanelEqualsReport(page, withCounters.json, dev.device, real(file));
    // Peak from the counters (max_memory_allocated), far above the snapshot: flagged.
    await expect(page.getByTestId("peak-gap")).toHaveAttribute("data-flagged", "1");
    expect(Number(await page.getByTestId("peak-bytes").getAttribute("data-value"))).toBe(
      sidecar.max_memory_allocated,
    );
    expect(errors).toEqual([]);
  });

  test("peak vs snapshot: the replayed peak, the gap beyond 2% stated as information, not a red failure", async ({
    page,
  }) => {
    const errors = watchConsole(page);
    const file = "ZidongLiu__DeComFL__memory.pickle";
    const { json: report } = cli(["report", real(file), "--json"]);
    await page.goto("./");
    await dropFile(page, real(file));
    await waitIdle(page);
    const gap = page.getByTestId("peak-gap");
    const peak = Number(await page.getByTestId("peak-bytes").getAttribute("data-value"));
    const snap = Number(await page.getByTestId("snapshot-bytes").getAttribute("data-value"));
    expect(snap).toBe(report.devices[0].allocatedBytes);
    expect(peak).toBe(report.peak.allocatedBytes);
    // …which is the peak of Python's own replay (test/tools/replay.py: rounded block bytes).
    const rp = spawnSync("python3", [`${ROOT}/test/tools/replay.py`, real(file)], { encoding: "utf8" });
    expect(rp.status, rp.stderr).toBe(0);
    expect(peak).toBe(JSON.parse(rp.stdout)[file].devices[0].peakBytes);
    expect(peak).toBeGreaterThan(snap);
    // Python's own reading of the pickle: the snapshot is far (> 2 %) below the peak in this file.
    const py = spawnSync("python3", [`${ROOT}/e2e/tools/py_peak.py`, real(file)], { encoding: "utf8" });
    expect(py.status, py.stderr).toBe(0);
    const pyFacts = JSON.parse(py.stdout);
    expect(pyFacts.snapshotBytes).toBe(snap);
    expect((pyFacts.peakBytes - pyFacts.snapshotBytes) / pyFacts.peakBytes).toBeGreaterThan(0.02);
    await expect(gap).toHaveAttribute("data-flagged", "1");
    // Information: an accent rule, the text in the foreground colour — never the danger red.
    await expect(gap.locator(".gap-flag.info")).toHaveCount(1);
    const color = await gap.locator(".gap-flag strong").evaluate((e) => getComputedStyle(e).color);
    expect(color).not.toBe("rgb(198, 40, 40)");
    // The peak's composition sums to the peak; the snapshot's to the snapshot.
    const rows = gap.locator("tr[data-category]");
    let sumPeak = 0;
    let sumSnap = 0;
    for (let i = 0; i < (await rows.count()); i++) {
      sumPeak += Number(await rows.nth(i).locator("[data-field=peak]").getAttribute("data-value"));
      sumSnap += Number(await rows.nth(i).locator("[data-field=snapshot]").getAttribute("data-value"));
    }
    expect(sumPeak).toBe(peak);
    expect(sumSnap).toBe(snap - report.devices[0].reconciliationBytes);
    expect(errors).toEqual([]);
  });

  test("a truncated ring buffer is announced", async ({ page }) => {
    await page.goto("./");
    await dropFile(page, real("Wedsonlin__assignment2-systems__medium_256_training_memory_snapshot.pickle"));
    await waitIdle(page);
    await expect(page.getByTestId("truncation")).toContainText("frees are of allocations made before it");
  });

  test("clicking a call site highlights it", async ({ page }) => {
    const file = "Nesta-gitU__discrete_diffusion__memory_snapshot.json";
    const { json: report } = cli(["report", real(file), "--json"]);
    await page.goto("./");
    await dropFile(page, real(file));
    await waitIdle(page);
    const first = page.getByTestId("call-sites").locator("button[data-site]").first();
    await first.click();
    await waitIdle(page);
    await expect(first).toHaveAttribute("aria-pressed", "true");
    await expect(page.getByTestId("call-sites")).toContainText(`Highlighting ${report.topCallSites[0].site}`);
    await showTab(page, "Segments");
    const highlighted = Number(await page.getByTestId("segment-map").getAttribute("data-highlighted"));
    expect(highlighted).toBeGreaterThanOrEqual(report.topCallSites[0].blocks);
  });
});
