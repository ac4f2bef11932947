// "Save report" (issue 14): the page downloads one self-contained HTML file — the same file as
// `peakscope report FILE --html` (only the "made <time>" stamp differs) — that opens from file:// with the
// network blocked and shows the allocated total `report --json` prints. And the page's empty and partial-file
// messages say where capturing is explained (the README's "Capture" section: the built site does not ship
// the README, so it is named in words).

import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, test } from "@playwright/test";
import { cli, dropFile, ROOT, real, showTab, waitIdle, watchConsole } from "./helpers";

const TRAINING = real("Wedsonlin__assignment2-systems__medium_256_training_memory_snapshot.pickle");
const NO_TRACE = real("Muduard__LayoutEditing__33ade60d__dump_snapshot.pickle");
const SHOTS = "/tmp/shots";
mkdirSync(SHOTS, { recursive: true });
const SEE = "see “Capture” in peakscope's README";

const unstamped = (html: string) => html.replace(/made \d{4}-\d\d-\d\dT[\d:.]+Z/, "made TIME");

test.describe("save report", () => {
  test("downloads the report --html file; it opens offline and shows report --json's allocated", async ({
    page,
    browser,
  }) => {
    const errors = watchConsole(page);
    const dir = mkdtempSync(join(tmpdir(), "peakscope-save-"));
    const cliHtml = join(dir, "cli.html");
    const truth = cli(["report", TRAINING, "--json", "--html", cliHtml]);
    expect(truth.json).not.toBeNull();
    const allocated = truth.json.totals.allocatedBytes as number;
    // and the allocated total is what Python's own reading of the file sums (test/tools/py_inspect.py)
    const py = JSON.parse(
      execFileSync("python3", [`${ROOT}/test/tools/py_inspect.py`, TRAINING], {
        encoding: "utf8",
        maxBuffer: 64 << 20,
      }),
    );
    expect(allocated).toBe(py.totals.allocatedBytes);

    await page.goto("/");
    await expect(page.getByTestId("save-report")).toHaveCount(0);
    await dropFile(page, TRAINING);
    await waitIdle(page);
    const [download] = await Promise.all([
      page.waitForEvent("download"),
      page.getByTestId("save-report").click(),
    ]);
    expect(download.suggestedFilename()).toBe(
      "Wedsonlin__assignment2-systems__medium_256_training_memory_snapshot.pickle.report.html",
    );
    const saved = join(dir, download.suggestedFilename());
    await download.saveAs(saved);
    const html = readFileSync(saved, "utf8");
    // The same file as the CLI writes, but for the time it was made.
    expect(unstamped(html)).toBe(unstamped(readFileSync(cliHtml, "utf8")));

    // Opened from disk, offline, with every request but the file itself refused.
    const ctx = await browser.newContext({ offline: true, javaScriptEnabled: false });
    const requests: string[] = [];
    await ctx.route("**/*", (route) => {
      requests.push(route.request().url());
      return route.request().url().startsWith("file:") ? route.continue() : route.abort();
    });
    const report = await ctx.newPage();
    await report.goto(`file://${saved}`);
    const total = report.getByTestId("total-allocated");
    await expect(total).toBeVisible();
    expect(Number(await total.getAttribute("data-value"))).toBe(allocated);
    await expect(report.getByTestId("file")).toHaveText(
      "Wedsonlin__assignment2-systems__medium_256_training_memory_snapshot.pickle",
    );
    expect(requests.filter((u) => !u.startsWith("file:"))).toEqual([]);
    await report.screenshot({ path: `${SHOTS}/whatif-saved-report.png` });
    await ctx.close();
    expect(errors).toEqual([]);
  });

  test("empty and partial files say how to capture, and where that is explained", async ({ page }) => {
    const errors = watchConsole(page);
    await page.goto("/");
    await waitIdle(page, ["empty"]);
    await expect(page.getByTestId("empty-capture")).toHaveText(
      `No snapshot yet? Capture one with python/peakscope_hook.py — five lines, ${SEE}.`,
    );
    await page.screenshot({ path: `${SHOTS}/whatif-empty.png` });

    // A file without a trace.
    await dropFile(page, NO_TRACE);
    await waitIdle(page);
    await expect(page.getByTestId("timeline-empty")).toContainText(
      "No trace for this device: history was not recorded, or this device had no allocations. Call peakscope_hook.start() (or torch.cuda.memory._record_memory_history()) before the model is built — " +
        `${SEE}.`,
    );
    await page.getByTestId("timeline-empty").screenshot({ path: `${SHOTS}/whatif-no-trace.png` });
    // The what-if lives in its own tab (only the open tab's pane is rendered).
    await showTab(page, "What if");
    await expect(page.getByRole("region", { name: "What if", exact: true })).toContainText(
      "No trace on this device",
    );

    // A truncated trace, recorded late, without its counters sidecar.
    await dropFile(page, TRAINING);
    await waitIdle(page);
    // The truncation note and the record-earlier fix are in the Summary; the counters hint in Checks.
    await showTab(page, "Summary");
    await expect(page.getByTestId("truncation")).toContainText(
      `Give peakscope_hook.start(max_entries=…) enough entries to hold the peak — ${SEE}.`,
    );
    await expect(page.getByTestId("record-fix-action")).toHaveText(
      `Recording started after these blocks were allocated: call peakscope_hook.start() before the model is built — ${SEE}.`,
    );
    await showTab(page, "Checks");
    await expect(page.getByTestId("counters-hint")).toHaveText(
      `Drop Wedsonlin__assignment2-systems__medium_256_training_memory_snapshot.pickle.counters.json with the dump (peakscope_hook writes it) — ${SEE}.`,
    );
    await page.getByTestId("checks").screenshot({ path: `${SHOTS}/whatif-counters-hint.png` });
    expect(errors).toEqual([]);
  });
});
