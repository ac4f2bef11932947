// Two files side by side: dropped together, or a second dropped on the "compare" half of an open one,
// or picked with "Compare with…". The difference between them equals `peakscope report A --compare B
// --json` — at the peaks by default (`compare.atPeaks`), at the snapshots when "Compare at" says so; each
// column equals its own report; zoom and cursor are linked (and can be unlinked); clicking a call site of
// the difference highlights its blocks in both maps.

import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { expect, type Locator, type Page, test } from "@playwright/test";
import { cli, dropFiles, ROOT, real, waitIdle, watchConsole } from "./helpers";

interface PyTotals {
  reservedBytes: number;
  allocatedBytes: number;
  activeBytes: number;
  /** Σ sizes of the active_allocated blocks, every device: what a comparison compares. */
  liveBlockBytes: number;
}

/** The file read by Python's restricted unpickler (test/tools/py_inspect.py --blocks): no peakscope code. */
function pyTotals(path: string): PyTotals {
  const j = JSON.parse(
    execFileSync("python3", [`${ROOT}/test/tools/py_inspect.py`, path, "--blocks"], {
      encoding: "utf8",
      maxBuffer: 64 << 20,
    }),
  );
  const live = (j.devices as { liveBlockBytes: number }[]).reduce((s, d) => s + d.liveBlockBytes, 0);
  return { ...j.totals, liveBlockBytes: live };
}

/** Chooses the moment the verdict, Categories and Call sites compare ("Compare at"). */
async function compareAt(page: Page, at: "peaks" | "snapshots") {
  await page
    .getByRole("radiogroup", { name: "Compare at" })
    .getByRole("radio", { name: at === "peaks" ? "Peaks" : "Snapshots" })
    .check();
  await expect(page.getByTestId("verdict")).toHaveAttribute("data-moment", at);
  await waitIdle(page);
}

interface PyPeakSites {
  device: number;
  peakBytes: number;
  peakEvent: number;
  /** Bytes live at the peak by the innermost own-code line (parent/file.py:line:function). */
  ownLines: Record<string, number>;
}

/** Each file replayed to its peak by test/tools/py_peak_sites.py (Python; no peakscope code). */
function pyPeaks(...paths: string[]): PyPeakSites[] {
  const j = JSON.parse(
    execFileSync("python3", [`${ROOT}/test/tools/py_peak_sites.py`, ...paths], {
      encoding: "utf8",
      maxBuffer: 64 << 20,
    }),
  );
  return paths.map((p) => j[p.split("/").pop() as string]);
}

/** At the peaks: the verdict's delta and the totals are Python's peak of B minus its peak of A. */
async function expectPeaksEqualPython(page: Page, a: PyPeakSites, b: PyPeakSites) {
  await expect(page.getByTestId("verdict")).toHaveAttribute("data-moment", "peaks");
  expect(Number(await page.getByTestId("verdict").getAttribute("data-delta"))).toBe(
    b.peakBytes - a.peakBytes,
  );
  const row = page.getByTestId("diff").getByTestId("diff-total-peak");
  expect(Number(await row.getAttribute("data-a")), "A's peak (Python)").toBe(a.peakBytes);
  expect(Number(await row.getAttribute("data-b")), "B's peak (Python)").toBe(b.peakBytes);
}

/** The difference's totals and its verdict's delta, against Python's reading of both files. */
async function expectDiffEqualsPython(page: Page, a: PyTotals, b: PyTotals) {
  const diff = page.getByTestId("diff");
  await expect(page.getByTestId("verdict")).toHaveAttribute("data-moment", "snapshots");
  expect(Number(await page.getByTestId("verdict").getAttribute("data-delta"))).toBe(
    b.liveBlockBytes - a.liveBlockBytes,
  );
  for (const key of ["allocated", "reserved", "active"] as const) {
    const row = diff.getByTestId(`diff-total-${key}`);
    expect(Number(await row.getAttribute("data-a")), `A ${key} (Python)`).toBe(a[`${key}Bytes`]);
    expect(Number(await row.getAttribute("data-b")), `B ${key} (Python)`).toBe(b[`${key}Bytes`]);
  }
}

const INFERENCE = "Wedsonlin__assignment2-systems__medium_256_inference_memory_snapshot.pickle";
const TRAINING = "Wedsonlin__assignment2-systems__medium_256_training_memory_snapshot.pickle";

/**
 * The difference panel shows exactly the CLI's compare section (`report A --compare B --json`): its
 * `atPeaks` at the peaks, the section itself at the snapshots.
 */
async function expectDiffEqualsCli(page: Page, report: any, at: "peaks" | "snapshots") {
  const c = at === "peaks" ? report.compare.atPeaks : report.compare;
  expect(c, `the CLI's comparison at the ${at}`).toBeTruthy();
  const diff = page.getByTestId("diff");
  // The verdict is in the pinned header; the rest in the diff tabs (every pane stays mounted).
  await expect(page.getByTestId("verdict")).toHaveAttribute("data-moment", at);
  await expect(page.getByTestId("verdict")).toHaveText(c.verdict);
  expect(Number(await page.getByTestId("verdict").getAttribute("data-delta"))).toBe(c.totalDeltaBytes);
  if (at === "peaks") {
    // Allocated at each peak, and nothing of the snapshots.
    const row = diff.getByTestId("diff-total-peak");
    expect(Number(await row.getAttribute("data-a")), "A's peak").toBe(c.basePeak.allocatedBytes);
    expect(Number(await row.getAttribute("data-b")), "B's peak").toBe(c.otherPeak.allocatedBytes);
    await expect(diff.getByTestId("diff-total-allocated")).toHaveCount(0);
  } else {
    await expect(diff.getByTestId("diff-total-peak")).toHaveCount(0);
    for (const key of ["allocated", "reserved", "active"]) {
      const row = diff.getByTestId(`diff-total-${key}`);
      const field = `${key}Bytes`;
      expect(Number(await row.getAttribute("data-a")), `A ${key}`).toBe(report.totals[field]);
      expect(Number(await row.getAttribute("data-b")), `B ${key}`).toBe(report.compare.otherTotals[field]);
    }
  }
  // Every category, its signed delta, largest change first.
  const rows = diff.getByTestId("diff-categories").locator("tr[data-category]");
  await expect(rows).toHaveCount(Object.keys(c.categories).length);
  const shown: number[] = [];
  for (let i = 0; i < (await rows.count()); i++) {
    const name = (await rows.nth(i).getAttribute("data-category"))!;
    const delta = Number(await rows.nth(i).getAttribute("data-delta"));
    expect(delta, `category ${name}`).toBe(c.categories[name]);
    shown.push(Math.abs(delta));
  }
  expect(shown).toEqual([...shown].sort((x, y) => y - x));
  // Call sites: the CLI's order, sites and deltas.
  const sites = diff.getByTestId("diff-sites").locator("button[data-site]");
  await expect(sites).toHaveCount(c.callSites.length);
  for (let i = 0; i < c.callSites.length; i++) {
    await expect(sites.nth(i)).toHaveAttribute("data-site", c.callSites[i].site);
    expect(Number(await sites.nth(i).getAttribute("data-delta"))).toBe(c.callSites[i].deltaBytes);
  }
}

/** A column's checks equal its own `peakscope report FILE [--counters F] --json`. */
async function expectChecksEqual(column: Locator, report: any) {
  for (const c of report.checks) {
    await expect(column.getByTestId("checks").locator(`[data-check="${c.id}"]`), c.id).toHaveAttribute(
      "data-status",
      c.status,
    );
  }
}

async function timelineRange(column: Locator) {
  const tl = column.getByTestId("timeline");
  const n = async (a: string) => Number(await tl.getAttribute(a));
  return { x0: await n("data-x0"), x1: await n("data-x1"), anchor: await n("data-anchor") };
}

test.describe("compare", () => {
  test("two files dropped together: the difference equals report --compare; linked zoom; highlight in both", async ({
    page,
  }) => {
    const errors = watchConsole(page);
    const report = cli(["report", real(INFERENCE), "--compare", real(TRAINING), "--json"]).json;
    expect(report?.compare, "the CLI's compare section").toBeTruthy();
    await page.goto("./");
    await dropFiles(page, [real(INFERENCE), real(TRAINING)]);
    await waitIdle(page);
    await expect(page.locator("body")).toHaveAttribute("data-mode", "compare");
    const a = page.getByTestId("column-a");
    const b = page.getByTestId("column-b");
    await expect(a.getByTestId("column-file")).toHaveText(INFERENCE);
    await expect(b.getByTestId("column-file")).toHaveText(TRAINING);
    // Peaks compared by default: the CLI's compare.atPeaks, and Python's peak of B minus its peak of A.
    const group = page.getByRole("radiogroup", { name: "Compare at" });
    await expect(group.getByRole("radio", { name: "Peaks" })).toBeChecked();
    await expectDiffEqualsCli(page, report, "peaks");
    const [pyA, pyB] = pyPeaks(real(INFERENCE), real(TRAINING));
    await expectPeaksEqualPython(page, pyA, pyB);
    // The titles say which moment each number is.
    await expect(page.getByTestId("verdict")).toHaveAttribute("title", /at each file's peak/);
    await expect(page.getByTestId("diff-total-peak").locator(".bytes").first()).toHaveAttribute(
      "title",
      new RegExp(`A's peak: after event #${pyA.peakEvent.toLocaleString("en-US")} on device ${pyA.device}`),
    );
    // Toggled: the snapshots, as the CLI's compare section and Python's snapshot totals say.
    await compareAt(page, "snapshots");
    await expect(group.getByRole("radio", { name: "Snapshots" })).toBeChecked();
    await expectDiffEqualsCli(page, report, "snapshots");
    await expectDiffEqualsPython(page, pyTotals(real(INFERENCE)), pyTotals(real(TRAINING)));
    await expect(page.getByTestId("verdict")).toHaveAttribute("title", /at each file's snapshot/);
    // Each track: its timeline and totals (the totals equal each file's report); its map in Call sites.
    for (const [col, map, totals] of [
      [a, page.getByTestId("map-a"), report.totals],
      [b, page.getByTestId("map-b"), report.compare.otherTotals],
    ] as const) {
      await expect(col.getByTestId("timeline-canvas")).toBeVisible();
      await expect(map.getByTestId("segment-map-canvas")).toBeAttached();
      expect(Number(await col.getByTestId("total-allocated").getAttribute("data-value"))).toBe(
        totals.allocatedBytes,
      );
      expect(Number(await col.getByTestId("total-reserved").getAttribute("data-value"))).toBe(
        totals.reservedBytes,
      );
    }

    // By default each file has its own time axis: each timeline spans its own trace (two different spans).
    const own = [await timelineRange(a), await timelineRange(b)];
    await expect(page.getByTestId("link-toggle")).not.toBeChecked();
    expect(own[0].x1 - own[0].x0).not.toBeCloseTo(own[1].x1 - own[1].x0, 0);
    // The shared axis is a toggle: aligned at each trace's start, the same offsets from each anchor.
    await page.getByTestId("link-toggle").check();
    await waitIdle(page);
    const ra = await timelineRange(a);
    const rb = await timelineRange(b);
    expect(ra.x0 - ra.anchor).toBeCloseTo(rb.x0 - rb.anchor, 0);
    expect(ra.x1 - ra.anchor).toBeCloseTo(rb.x1 - rb.anchor, 0);

    // Linked zoom: wheel on A zooms B to the same offsets; the cursor shows on the other side.
    const box = (await a.getByTestId("timeline-canvas").boundingBox())!;
    await page.mouse.move(box.x + box.width * 0.4, box.y + box.height * 0.5);
    await page.mouse.wheel(0, -400);
    // The state changes first (A's range narrows), then the page goes idle after it.
    const spanOf = async (col: Locator) => {
      const r = await timelineRange(col);
      return r.x1 - r.x0;
    };
    await expect.poll(() => spanOf(a)).toBeLessThan(ra.x1 - ra.x0);
    await waitIdle(page);
    const za = await timelineRange(a);
    const zb = await timelineRange(b);
    expect(za.x1 - za.x0).toBeLessThan(ra.x1 - ra.x0);
    expect(zb.x0 - zb.anchor).toBeCloseTo(za.x0 - za.anchor, 0);
    expect(zb.x1 - zb.anchor).toBeCloseTo(za.x1 - za.anchor, 0);

    // Unlinked: A zooms alone.
    await page.getByTestId("link-toggle").uncheck();
    await page.mouse.move(box.x + box.width * 0.4, box.y + box.height * 0.5);
    await page.mouse.wheel(0, -400);
    await expect.poll(() => spanOf(a)).toBeLessThan(za.x1 - za.x0);
    await waitIdle(page);
    const ua = await timelineRange(a);
    const ub = await timelineRange(b);
    expect(ua.x1 - ua.x0).toBeLessThan(za.x1 - za.x0);
    expect(ub).toEqual(zb);

    // A call site of the difference at the snapshots: its blocks light up in both maps, each at its
    // snapshot (B holds them; A has none).
    await page.getByRole("tab", { name: "Call sites" }).click();
    const [ma, mb] = [page.getByTestId("map-a"), page.getByTestId("map-b")];
    await expect(ma.getByTestId("segment-map")).toHaveAttribute("data-event", "snapshot");
    await expect(mb.getByTestId("segment-map")).toHaveAttribute("data-event", "snapshot");
    const top = report.compare.callSites[0];
    const button = page.getByTestId("diff-sites").locator(`button[data-site="${top.site}"]`);
    await button.click();
    await waitIdle(page);
    await expect(button).toHaveAttribute("aria-pressed", "true");
    const lit = async (col: Locator) =>
      Number(await col.getByTestId("segment-map").getAttribute("data-highlighted"));
    expect(await lit(mb)).toBeGreaterThan(0);
    expect(await lit(ma)).toBe(0);
    // A site both files hold: lit on both sides.
    const shared = report.topCallSites.find((s: any) =>
      report.compare.callSites.some((d: any) => d.label === s.label),
    );
    // Both files run the same model code: such a site exists (no conditional expect, issue 26).
    expect(shared, "a call site both files hold").toBeTruthy();
    const d = report.compare.callSites.find((x: any) => x.label === shared.label);
    await page.getByTestId("diff-sites").locator(`button[data-site="${d.site}"]`).click();
    await waitIdle(page);
    expect(await lit(ma)).toBeGreaterThan(0);
    expect(await lit(mb)).toBeGreaterThan(0);

    // Back to the peaks: the list is compare.atPeaks's, and each map moves to its file's peak (Python's
    // peak event), so a site's blocks light up where they are live at the peak.
    await compareAt(page, "peaks");
    await expect(ma.getByTestId("segment-map")).toHaveAttribute("data-event", String(pyA.peakEvent));
    await expect(mb.getByTestId("segment-map")).toHaveAttribute("data-event", String(pyB.peakEvent));
    const peakSites = report.compare.atPeaks.callSites;
    const shown = page.getByTestId("diff-sites").locator("button[data-site]");
    await expect(shown).toHaveCount(peakSites.length);
    // A line only B holds at its peak (Python: live there in B, not in A).
    const onlyB = peakSites.find((s: any) => pyB.ownLines[s.site] > 0 && !(s.site in pyA.ownLines));
    expect(onlyB, "a line only B holds at its peak").toBeTruthy();
    await page.getByTestId("diff-sites").locator(`button[data-site="${onlyB.site}"]`).click();
    await waitIdle(page);
    expect(await lit(mb)).toBeGreaterThan(0);
    expect(await lit(ma)).toBe(0);
    // A line both hold at their peaks (Python), whose bytes changed: lit on both sides.
    const both = peakSites.find((s: any) => pyA.ownLines[s.site] > 0 && pyB.ownLines[s.site] > 0);
    expect(both, "a line both files hold at their peaks").toBeTruthy();
    expect(both.deltaBytes).toBe(pyB.ownLines[both.site] - pyA.ownLines[both.site]);
    await page.getByTestId("diff-sites").locator(`button[data-site="${both.site}"]`).click();
    await waitIdle(page);
    expect(await lit(ma)).toBeGreaterThan(0);
    expect(await lit(mb)).toBeGreaterThan(0);
    expect(errors).toEqual([]);
  });

  test("an old 2.0-layout file, then a multi-device one dropped on the compare half", async ({ page }) => {
    const errors = watchConsole(page);
    const OLD = "Yiyi-philosophy__LLM-inference__oom_snapshot.pickle";
    const NEW = "Maphsge4__select_n__04d383cd__snapshot.pickle"; // torch 2.1, no time_us, 4 devices
    const report = cli(["report", real(OLD), "--compare", real(NEW), "--json"]).json;
    await page.goto("./");
    await dropFiles(page, [real(OLD)]);
    await waitIdle(page);
    await expect(page.locator("body")).toHaveAttribute("data-mode", "single");
    await dropFiles(page, [real(NEW)], { at: "right" });
    await waitIdle(page);
    await expect(page.locator("body")).toHaveAttribute("data-mode", "compare");
    await expect(page.getByTestId("column-a").getByTestId("column-file")).toHaveText(OLD);
    await expect(page.getByTestId("column-b").getByTestId("column-file")).toHaveText(NEW);
    await expectDiffEqualsCli(page, report, "peaks");
    await compareAt(page, "snapshots");
    await expectDiffEqualsCli(page, report, "snapshots");
    const [pyOld, pyNew] = [pyTotals(real(OLD)), pyTotals(real(NEW))];
    await expectDiffEqualsPython(page, pyOld, pyNew);
    // B's devices are its own to choose.
    await expect(page.getByTestId("column-b").getByTestId("device-select")).toBeVisible();
    // Swap: B becomes the base; the difference is the CLI's the other way round.
    const swapped = cli(["report", real(NEW), "--compare", real(OLD), "--json"]).json;
    await page.getByTestId("swap").click();
    await waitIdle(page);
    await expect(page.getByTestId("column-a").getByTestId("column-file")).toHaveText(NEW);
    await expectDiffEqualsCli(page, swapped, "snapshots");
    await expectDiffEqualsPython(page, pyNew, pyOld);
    await compareAt(page, "peaks");
    await expectDiffEqualsCli(page, swapped, "peaks");
    // Dropping one file on the left half opens it alone again.
    await dropFiles(page, [real(OLD)]);
    await waitIdle(page);
    await expect(page.locator("body")).toHaveAttribute("data-mode", "single");
    await expect(page.getByTestId("summary-file")).toHaveText(OLD);
    expect(errors).toEqual([]);
  });

  test("a file without a trace: the snapshots are compared, and the page says why", async ({ page }) => {
    const errors = watchConsole(page);
    const NONE = "Muduard__LayoutEditing__memory_snapshot.pkl"; // a bare list of segments: no trace, no peak
    const report = cli(["report", real(TRAINING), "--compare", real(NONE), "--json"]).json;
    expect(report.compare.atPeaks).toBeNull();
    await page.goto("./");
    await dropFiles(page, [real(TRAINING), real(NONE)]);
    await waitIdle(page);
    const group = page.getByRole("radiogroup", { name: "Compare at" });
    await expect(group.getByRole("radio", { name: "Peaks" })).toBeDisabled();
    await expect(group.getByRole("radio", { name: "Snapshots" })).toBeChecked();
    await expect(page.getByTestId("compare-at-reason")).toHaveText(
      "B has no trace to replay: snapshots compared",
    );
    await expect(page.getByTestId("compare-at-reason")).toHaveAttribute("title", /its peak is unknown/);
    await expect(page.getByTestId("compare-at-reason")).toBeInViewport({ ratio: 1 });
    await expectDiffEqualsCli(page, report, "snapshots");
    await expectDiffEqualsPython(page, pyTotals(real(TRAINING)), pyTotals(real(NONE)));
    expect(errors).toEqual([]);
  });

  test("runs from different machines, each with its counters sidecar (Compare with…, or all four dropped)", async ({
    page,
  }, info) => {
    const errors = watchConsole(page);
    // The known run twice: Linux CUDA after step 3; Windows paths mid-backward. Each gets
    // OUT.counters.json beside it; both traces hold a _snapshot() marker (after step 2).
    const A = info.outputPath("linux-step3.pickle");
    const B = info.outputPath("windows-mid.pickle");
    const gen = (out: string, args: string[]) =>
      execFileSync("python3", [`${ROOT}/test/gen/generate.py`, "known", ...args, out], { stdio: "pipe" });
    gen(A, ["--layout", "cuda-all", "--paths", "linux", "--moment", "step3"]);
    gen(B, ["--layout", "cuda-all", "--paths", "windows", "--moment", "mid_backward"]);
    // Each trace's first time_us and its first _snapshot() marker's, read with Python's own pickle.
    const times = (file: string) =>
      JSON.parse(
        execFileSync("python3", [
          "-c",
          "import json,pickle,sys; t=pickle.load(open(sys.argv[1],'rb'))['device_traces'][0]; " +
            "print(json.dumps([t[0]['time_us'], next(e['time_us'] for e in t if e['action']=='snapshot')]))",
          file,
        ]).toString(),
      ) as [number, number];
    const report = cli([
      "report",
      A,
      "--counters",
      `${A}.counters.json`,
      "--compare",
      B,
      "--counters-other",
      `${B}.counters.json`,
      "--json",
    ]).json;
    const reportB = cli(["report", B, "--counters", `${B}.counters.json`, "--json"]).json;
    await page.goto("./");
    await page.getByTestId("file-input").setInputFiles([A, `${A}.counters.json`]);
    await waitIdle(page);
    await page.getByTestId("compare-input").setInputFiles([B, `${B}.counters.json`]);
    await waitIdle(page);
    await expect(page.locator("body")).toHaveAttribute("data-mode", "compare");
    await expectDiffEqualsCli(page, report, "peaks");
    await expectPeaksEqualTruth(page, A, B);
    await compareAt(page, "snapshots");
    await expectDiffEqualsCli(page, report, "snapshots");
    await expectDiffEqualsTruth(page, A, B);
    // Each side honours its own sidecar.
    const a = page.getByTestId("column-a");
    const b = page.getByTestId("column-b");
    await expect(a.getByTestId("column-counters")).toHaveText("linux-step3.pickle.counters.json");
    await expect(b.getByTestId("column-counters")).toHaveText("windows-mid.pickle.counters.json");
    await expectChecksEqual(a, report);
    await expectChecksEqual(b, reportB);
    // Both have _snapshot() markers: the axes meet at each file's first one; "each trace's start" on demand.
    const [startA, snapA] = times(A);
    const [startB, snapB] = times(B);
    // Alignment belongs to the shared axis (each file has its own by default).
    await page.getByTestId("link-toggle").check();
    await waitIdle(page);
    const anchor = async (col: Locator) =>
      Number(await col.getByTestId("timeline").getAttribute("data-anchor"));
    expect(await anchor(a)).toBe(snapA);
    expect(await anchor(b)).toBe(snapB);
    await expect(page.getByTestId("align-select")).toHaveValue("snapshot");
    await page.getByTestId("align-select").selectOption("start");
    await waitIdle(page);
    expect(await anchor(a)).toBe(startA);
    expect(await anchor(b)).toBe(startB);
    const ra = await timelineRange(a);
    const rb = await timelineRange(b);
    expect(ra.x0 - ra.anchor).toBeCloseTo(rb.x0 - rb.anchor, 0);

    // All four files dropped at once, in no particular order: each sidecar goes with its snapshot.
    await dropFiles(page, [`${B}.counters.json`, A, B, `${A}.counters.json`]);
    await waitIdle(page);
    await expect(a.getByTestId("column-file")).toHaveText("linux-step3.pickle");
    await expect(a.getByTestId("column-counters")).toHaveText("linux-step3.pickle.counters.json");
    await expect(b.getByTestId("column-counters")).toHaveText("windows-mid.pickle.counters.json");
    await compareAt(page, "snapshots");
    await expectDiffEqualsCli(page, report, "snapshots");
    await expectDiffEqualsTruth(page, A, B);
    await compareAt(page, "peaks");
    await expectDiffEqualsCli(page, report, "peaks");
    await expectPeaksEqualTruth(page, A, B);
    expect(errors).toEqual([]);
  });

  test("Compare at: Snapshots is kept in the link and restored from it", async ({ page, context }) => {
    const errors = watchConsole(page);
    await page.goto("./");
    await dropFiles(page, [real(INFERENCE), real(TRAINING)]);
    await waitIdle(page);
    const linkParams = async (p: Page) => {
      await p.getByTestId("copy-link").click();
      const link = await p.getByTestId("link-text").inputValue();
      await p.keyboard.press("Escape");
      await expect(p.getByTestId("link-text")).toHaveCount(0);
      return { link, params: new URLSearchParams(new URL(link).hash.slice(1)) };
    };
    // Peaks, the default (both files have a trace): the link does not say it.
    await expect(page.getByTestId("compare-at-peaks")).toBeChecked();
    expect((await linkParams(page)).params.get("at")).toBeNull();
    await compareAt(page, "snapshots");
    const { link, params } = await linkParams(page);
    expect(params.get("at")).toBe("snapshots");

    const other = await context.newPage();
    const otherErrors = watchConsole(other);
    await other.goto(link);
    await expect(other.getByTestId("link-file")).toHaveText([INFERENCE, TRAINING]);
    await dropFiles(other, [real(INFERENCE), real(TRAINING)]);
    await waitIdle(other);
    const group = other.getByRole("radiogroup", { name: "Compare at" });
    await expect(group.getByRole("radio", { name: "Snapshots" })).toBeChecked();
    await expect(group.getByRole("radio", { name: "Peaks" })).not.toBeChecked();
    // The verdict is the snapshots' difference: Python's live blocks of B minus those of A.
    await expectDiffEqualsPython(other, pyTotals(real(INFERENCE)), pyTotals(real(TRAINING)));
    // The restored page writes the same choice back into its own link.
    await expect.poll(() => other.evaluate(() => location.hash)).toContain("at=snapshots");
    expect(errors).toEqual([]);
    expect(otherErrors).toEqual([]);
  });
});

/**
 * At the peaks, against the generator's truth of both files (its simulation's peak: bytes and categories):
 * the verdict's delta, the peak row, each category's B − A.
 */
async function expectPeaksEqualTruth(page: Page, fileA: string, fileB: string) {
  const [ta, tb] = [fileA, fileB].map((f) => JSON.parse(readFileSync(`${f}.truth.json`, "utf8")));
  await expect(page.getByTestId("verdict")).toHaveAttribute("data-moment", "peaks");
  expect(Number(await page.getByTestId("verdict").getAttribute("data-delta"))).toBe(
    tb.peak.allocatedBytes - ta.peak.allocatedBytes,
  );
  const row = page.getByTestId("diff").getByTestId("diff-total-peak");
  expect(Number(await row.getAttribute("data-a"))).toBe(ta.peak.allocatedBytes);
  expect(Number(await row.getAttribute("data-b"))).toBe(tb.peak.allocatedBytes);
  const rows = page.getByTestId("diff").getByTestId("diff-categories").locator("tr[data-category]");
  for (const row of await rows.all()) {
    const name = (await row.getAttribute("data-category")) as string;
    const delta = (tb.peak.categories[name] ?? 0) - (ta.peak.categories[name] ?? 0);
    expect(Number(await row.getAttribute("data-delta")), `category ${name} at the peaks (truth)`).toBe(delta);
  }
}

interface TruthSite {
  site: string | null;
  category: string;
  bytes: number;
}

/**
 * The difference against the generator's truth of both files (OUT.truth.json: the simulation's own
 * bookkeeping of every live block, never read back from the pickle): each category's B − A, the total, and
 * per call site — a line of train.py is the same site on Linux and Windows paths, so a line holding the same
 * bytes on both sides is no difference, and a line that changed shows its B − A.
 */
async function expectDiffEqualsTruth(page: Page, fileA: string, fileB: string) {
  const [ta, tb] = [fileA, fileB].map((f) => JSON.parse(readFileSync(`${f}.truth.json`, "utf8")));
  const diff = page.getByTestId("diff");
  const catA = ta.snapshot.categories as Record<string, number>;
  const catB = tb.snapshot.categories as Record<string, number>;
  expect(Number(await page.getByTestId("verdict").getAttribute("data-delta"))).toBe(
    tb.snapshot.allocatedBytes - ta.snapshot.allocatedBytes,
  );
  const rows = diff.getByTestId("diff-categories").locator("tr[data-category]");
  const shown = new Map<string, number>();
  for (const row of await rows.all()) {
    shown.set(
      (await row.getAttribute("data-category")) as string,
      Number(await row.getAttribute("data-delta")),
    );
  }
  for (const name of Object.keys(catA)) {
    const delta = catB[name] - catA[name];
    // A category that did not change may be listed (with 0) or not; one that did must be, with its delta.
    expect(shown.get(name) ?? 0, `category ${name} (truth)`).toBe(delta);
  }
  // Sites by their line of the user's file, path dropped: B − A from the truth's live blocks.
  const byLine = new Map<string, number>();
  const add = (t: { callSites: TruthSite[] }, sign: number) => {
    for (const s of t.callSites) {
      if (s.site === null) continue;
      const key = s.site.split(/[\\/]/).pop() as string;
      byLine.set(key, (byLine.get(key) ?? 0) + sign * s.bytes);
    }
  };
  add(ta, -1);
  add(tb, 1);
  expect([...byLine.keys()].length).toBeGreaterThan(2);
  const sites = diff.getByTestId("diff-sites").locator("button[data-site]");
  for (const [line, delta] of byLine) {
    // The same bytes on both sides: not listed; otherwise listed once, with its delta.
    const buttons = await diff.getByTestId("diff-sites").locator(`button[data-site$="${line}"]`).all();
    const got = await Promise.all(buttons.map(async (x) => Number(await x.getAttribute("data-delta"))));
    expect(got, line).toEqual(delta === 0 ? [] : [delta]);
  }
  // Every changed site is listed: their deltas add up to the total change.
  let sum = 0;
  for (const b of await sites.all()) sum += Number(await b.getAttribute("data-delta"));
  expect(sum).toBe(tb.snapshot.allocatedBytes - ta.snapshot.allocatedBytes);
}

// The comparison as a workspace (issue 21, point 6): two tracks under one pinned header, diff tabs below,
// nothing scrolls but the chosen pane. Expected values come from Python reading each pickle.
test.describe("compare as a workspace at 1440×900", () => {
  test.use({ viewport: { width: 1440, height: 900 } });

  /** Each file's trace: the first and last event's time_us, read with Python's own pickle. */
  const traceTimes = (file: string) =>
    JSON.parse(
      execFileSync("python3", [
        "-c",
        "import json,pickle,sys; s=pickle.load(open(sys.argv[1],'rb')); " +
          "t=next(t for t in s['device_traces'] if t); print(json.dumps([t[0]['time_us'], t[-1]['time_us']]))",
        file,
      ]).toString(),
    ) as [number, number];

  test("two tracks, each on its own time axis; diff tabs switch panes; the page never scrolls; B − A in view", async ({
    page,
  }) => {
    const errors = watchConsole(page);
    await page.goto("./");
    await dropFiles(page, [real(INFERENCE), real(TRAINING)]);
    await waitIdle(page);
    const a = page.getByTestId("column-a");
    const b = page.getByTestId("column-b");
    // Both tracks sit in the pinned strip, A above B, each labelled.
    const strip = page.getByTestId("compare-strip");
    await expect(strip.getByTestId("column-a")).toBeVisible();
    await expect(strip.getByTestId("column-b")).toBeVisible();
    await expect(a).toHaveAttribute("aria-label", /^File A: on its own time axis/);
    await expect(b).toHaveAttribute("aria-label", /^File B: on its own time axis/);
    const boxA = (await a.boundingBox())!;
    const boxB = (await b.boundingBox())!;
    expect(boxB.y).toBeGreaterThanOrEqual(boxA.y + boxA.height);
    // Each track's x domain is its own trace (Python's first and last time_us), with the view's 1 % margin.
    for (const [track, file] of [
      [a, INFERENCE],
      [b, TRAINING],
    ] as const) {
      const [first, last] = traceTimes(real(file));
      const tl = track.getByTestId("timeline");
      await expect(tl).toHaveAttribute("data-axis", "time");
      const x0 = Number(await tl.getAttribute("data-x0"));
      const x1 = Number(await tl.getAttribute("data-x1"));
      const pad = (last - first) * 0.01;
      expect(Math.abs(x1 - (last + pad)), `${file}: axis end`).toBeLessThan(1);
      expect(Math.abs(x0 - (first - pad)), `${file}: axis start`).toBeLessThan(1);
    }
    // Each track's head states its peak as Python replays it; "≥ … (recorded window)" when the trace began
    // with memory already held (no sidecar here to say the run's peak).
    for (const [track, file] of [
      [a, INFERENCE],
      [b, TRAINING],
    ] as const) {
      const py = spawnSync("python3", [resolve(ROOT, "e2e/tools/py_peak.py"), real(file)], {
        encoding: "utf8",
      });
      expect(py.status, py.stderr).toBe(0);
      const { peakBytes, initialBytes } = JSON.parse(py.stdout) as {
        peakBytes: number;
        initialBytes: number;
      };
      const head = track.getByTestId("track-peak");
      await expect(head).toHaveAttribute("data-value", /^\d+$/);
      // Within 0.1 %: Python walks requested sizes back from the snapshot, the page replays block bytes
      // (the same tolerance as e2e/workspace.spec.ts).
      const shown = Number(await head.getAttribute("data-value"));
      expect(Math.abs(shown - peakBytes), file).toBeLessThanOrEqual(peakBytes * 0.001);
      await expect(head).toHaveAttribute("data-window-only", initialBytes > 0 ? "1" : "0");
      if (initialBytes > 0) await expect(head).toContainText("(recorded window)");
    }
    // The shared axis is the toggle: both tracks say so.
    await page.getByTestId("link-toggle").check();
    await waitIdle(page);
    await expect(a).toHaveAttribute("aria-label", /^File A: on the shared time axis/);
    await expect(b).toHaveAttribute("aria-label", /^File B: on the shared time axis/);
    await page.getByTestId("link-toggle").uncheck();
    await waitIdle(page);

    // The diff tabs: exactly these, each showing its own pane; arrows move between them.
    const tabs = page.getByRole("tablist", { name: "Difference B − A" }).getByRole("tab");
    await expect(tabs).toHaveText(["Categories", "Call sites", "Tree"]);
    const panes = {
      Categories: page.getByTestId("diff-categories"),
      "Call sites": page.getByTestId("diff-sites"),
      Tree: page.getByRole("region", { name: "Call tree difference" }),
    };
    const scrolls = () =>
      page.evaluate(() => ({
        doc: document.documentElement.scrollHeight,
        win: window.innerHeight,
        docW: document.documentElement.scrollWidth,
        winW: window.innerWidth,
      }));
    for (const name of ["Categories", "Call sites", "Tree"] as const) {
      await page.getByRole("tab", { name, exact: true }).click();
      await waitIdle(page);
      await expect(page.getByRole("tab", { name, exact: true })).toHaveAttribute("aria-selected", "true");
      const panel = page.getByRole("tabpanel", { name, exact: true });
      await expect(panel).toBeVisible();
      await expect(page.getByRole("tabpanel")).toHaveCount(1); // the others are hidden
      await expect(panes[name]).toBeVisible();
      for (const other of Object.keys(panes) as (keyof typeof panes)[])
        if (other !== name) await expect(panes[other]).toBeHidden();
      // The document does not scroll (down or sideways); the pane scrolls inside when it must.
      const s = await scrolls();
      expect(s.doc, name).toBeLessThanOrEqual(s.win);
      expect(s.docW, name).toBeLessThanOrEqual(s.winW);
      // The B − A column is inside the window and inside the pane (never cut off).
      const cell =
        name === "Categories"
          ? panel.locator("table.diff-totals th", { hasText: "B − A" })
          : name === "Call sites"
            ? panel.locator(".site-bytes").first()
            : panel.locator(".ct-head .num", { hasText: "B − A" });
      const c = (await cell.boundingBox())!;
      const p = (await panel.boundingBox())!;
      expect(c.x + c.width, `${name}: B − A right edge`).toBeLessThanOrEqual(Math.min(1440, p.x + p.width));
      expect(c.x, name).toBeGreaterThanOrEqual(p.x);
    }
    // Arrow keys move between the tabs.
    await page.getByRole("tab", { name: "Categories" }).click();
    await page.keyboard.press("ArrowRight");
    await expect(page.getByRole("tab", { name: "Call sites" })).toHaveAttribute("aria-selected", "true");
    await expect(page.getByRole("tab", { name: "Call sites" })).toBeFocused();
    await page.keyboard.press("ArrowLeft");
    await expect(page.getByRole("tab", { name: "Categories" })).toHaveAttribute("aria-selected", "true");
    // Every B − A cell of the totals is in view.
    for (const cell of await page.getByTestId("diff-delta-cell").all()) {
      const c = (await cell.boundingBox())!;
      expect(c.x + c.width).toBeLessThanOrEqual(1440);
      await expect(cell).toBeInViewport();
    }
    // The call sites list is long: its pane scrolls inside, the document still does not.
    await page.getByRole("tab", { name: "Call sites" }).click();
    const sitesPane = page.getByRole("tabpanel", { name: "Call sites" });
    const inner = await sitesPane.evaluate((el) => ({ sh: el.scrollHeight, ch: el.clientHeight }));
    expect(inner.sh).toBeGreaterThan(inner.ch);
    const last = page.getByTestId("diff-sites").locator("button[data-site]").last();
    await last.scrollIntoViewIfNeeded();
    await expect(last).toBeInViewport();
    expect(await sitesPane.evaluate((el) => el.scrollTop)).toBeGreaterThan(0);
    const s = await scrolls();
    expect(s.doc).toBeLessThanOrEqual(s.win);
    // The Tree compares the peaks by default: B − A is Python's peak of B minus its peak of A (within 0.1 %).
    await page.getByRole("tab", { name: "Tree" }).click();
    const tree = page.getByRole("region", { name: "Call tree difference" });
    await expect(tree.getByRole("button", { name: "Both peaks" })).toHaveAttribute("aria-pressed", "true");
    const pyPeak = (file: string) =>
      (
        JSON.parse(
          execFileSync("python3", [resolve(ROOT, "e2e/tools/py_peak.py"), real(file)]).toString(),
        ) as {
          peakBytes: number;
        }
      ).peakBytes;
    const [peakA, peakB] = [pyPeak(INFERENCE), pyPeak(TRAINING)];
    await expect(tree.getByTestId("tree-diff-total")).toHaveAttribute("data-bytes", /^-?\d+$/);
    const treeDelta = Number(await tree.getByTestId("tree-diff-total").getAttribute("data-bytes"));
    expect(Math.abs(treeDelta - (peakB - peakA))).toBeLessThanOrEqual((peakA + peakB) * 0.001);
    // A file's own analysis opens in a dialog (its checks, as in its own report).
    await a.getByTestId("track-details").click();
    await expect(a.getByTestId("track-details-dialog")).toBeVisible();
    await expect(a.getByTestId("track-details-dialog").getByTestId("checks")).toBeVisible();
    await page.keyboard.press("Escape");
    await expect(a.getByTestId("track-details-dialog")).toBeHidden();
    expect(errors).toEqual([]);
  });

  for (const scheme of ["light", "dark"] as const) {
    test(`screenshots (${scheme}) and axe-core: no serious violations on any diff tab`, async ({
      browser,
    }) => {
      // The built page's CSP (Trusted Types) refuses injected scripts: axe runs in a context without it.
      const context = await browser.newContext({
        bypassCSP: true,
        baseURL: test.info().project.use.baseURL,
        viewport: { width: 1440, height: 900 },
        colorScheme: scheme,
      });
      const page = await context.newPage();
      const errors = watchConsole(page);
      await page.goto("./");
      await dropFiles(page, [real(INFERENCE), real(TRAINING)]);
      await waitIdle(page);
      mkdirSync("/tmp/shots", { recursive: true });
      for (const name of ["Categories", "Call sites", "Tree"]) {
        await page.getByRole("tab", { name, exact: true }).click();
        await waitIdle(page);
        const slug = name.toLowerCase().replace(" ", "-");
        await page.screenshot({ path: `/tmp/shots/compare-${slug}-${scheme}.png` });
        await page.addScriptTag({ path: resolve(ROOT, "node_modules/axe-core/axe.min.js") });
        const violations = await page.evaluate(async () => {
          const axe = (window as any).axe;
          const r = await axe.run(document, { resultTypes: ["violations"] });
          return r.violations
            .filter((v: { impact: string }) => v.impact === "serious" || v.impact === "critical")
            .map(
              (v: { id: string; nodes: { target: string[] }[] }) =>
                `${v.id}: ${v.nodes[0]?.target.join(" ")}`,
            );
        });
        expect(violations, name).toEqual([]);
      }
      expect(errors).toEqual([]);
      await context.close();
    });
  }
});
