// Inferred categories and honest peaks, as a user at 2 a.m. sees them: memory allocated before recording
// began is marked as inferred, with the rule that named it, in the panel, the timeline and the map; the
// page says how to record the stacks instead; a file whose trace starts late and has no counters sidecar
// says its peak is only the recorded window's. Expected values come from the generator's truth file (or
// the CLI report), never from the page.

import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, test } from "@playwright/test";
import { cli, dropFile, ROOT, real, showTab, waitIdle, watchConsole } from "./helpers";

/** `generate.py known --record-from after-build --moment step2 OUT`: OUT, OUT.counters.json, OUT.truth.json. */
function afterBuildFixture(): { file: string; truth: any } {
  const dir = mkdtempSync(join(tmpdir(), "peakscope-inferred-"));
  const file = join(dir, "after-build.pickle");
  const r = spawnSync(
    "python3",
    [join(ROOT, "test/gen/generate.py"), "known", "--record-from", "after-build", "--moment", "step2", file],
    { encoding: "utf8" },
  );
  expect(r.status, r.stderr).toBe(0);
  return { file, truth: JSON.parse(readFileSync(`${file}.truth.json`, "utf8")) };
}

test.describe("inferred categories", () => {
  test("recording began after the model was built: parameters marked inferred, the rule, the fix", async ({
    page,
  }) => {
    const errors = watchConsole(page);
    const { file, truth } = afterBuildFixture();
    const unrecorded: Record<string, number> = truth.snapshot.unrecordedCategories;
    expect(unrecorded.parameters).toBeGreaterThan(0);
    await page.goto("./");
    await dropFile(page, file);
    await waitIdle(page);

    const cats = page.getByTestId("categories");
    // Every category the truth says was allocated before recording carries an inferred mark of its bytes.
    for (const [name, bytes] of Object.entries(unrecorded)) {
      const mark = cats.getByTestId(`inferred-${name}`);
      if (bytes === 0) {
        await expect(mark).toHaveCount(0);
        continue;
      }
      await expect(mark).toBeVisible();
      expect(Number(await mark.getAttribute("data-value")), `inferred ${name}`).toBe(bytes);
      await expect(mark).toContainText("inferred");
    }
    // The category's own row still holds all of it (inferred is a part, not an extra).
    const params = cats.locator('tr[data-category="parameters"]');
    expect(Number(await params.getAttribute("data-value"))).toBe(truth.snapshot.categories.parameters);

    // The rule that made it: named on the mark, described on hover, and in the disclosure on click.
    const mark = cats.getByTestId("inferred-parameters");
    await expect(mark).toContainText("matches-gradient");
    expect(await mark.getAttribute("title")).toContain("inferred (matches-gradient)");
    await expect(mark).toHaveAttribute("aria-expanded", "false");
    await mark.click();
    await expect(mark).toHaveAttribute("aria-expanded", "true");
    const rules = cats.getByTestId("inferred-rules");
    await expect(rules).toBeVisible();
    await expect(rules).toContainText("inferred (matches-gradient)");
    await expect(rules).toContainText("matches a gradient one for one");
    await mark.click();
    await expect(rules).toHaveCount(0);

    // The fix, in one line.
    await expect(page.getByTestId("record-fix-action")).toHaveText(
      "Recording started after these blocks were allocated: call peakscope_hook.start() before the model is built — see “Capture” in peakscope's README.",
    );

    // Top call sites: the pre-recording row is marked the same way, with its rule.
    const site = page
      .getByTestId("call-sites")
      .locator('button[data-site="allocated before recording (inferred)"]');
    await expect(site).toHaveAttribute("data-inferred", "matches-gradient");
    await expect(site.getByTestId("site-inferred")).toContainText("inferred · matches-gradient");
    expect(Number(await site.getAttribute("data-bytes"))).toBe(unrecorded.parameters);

    // The peak's inferred part (the parameters are alive at the peak too).
    const peakUnrecorded = truth.peak.unrecordedCategories?.parameters ?? unrecorded.parameters;
    expect(
      Number(
        await page.getByTestId("peak-gap").getByTestId("peak-inferred-parameters").getAttribute("data-value"),
      ),
    ).toBe(peakUnrecorded);

    // Timeline legend: parameters are partly inferred, with the rule in the title.
    const legend = page.getByTestId("timeline-legend").locator('button[data-category="parameters"]');
    await expect(legend).toContainText("partly inferred");
    await expect(legend).toHaveAttribute("data-inferred", "matches-gradient");
    expect(await legend.getAttribute("title")).toContain("inferred (matches-gradient)");

    // Segment map (its tab): the inferred blocks are counted in its legend (drawn hatched).
    await showTab(page, "Segments");
    expect(Number(await page.getByTestId("map-legend-inferred").getAttribute("data-value"))).toBe(
      unrecorded.parameters,
    );
    expect(errors).toEqual([]);
  });

  test("the map's and the timeline's hover name the rule of an inferred block", async ({ page }) => {
    const { file, truth } = afterBuildFixture();
    await page.goto("./");
    await dropFile(page, file);
    await waitIdle(page);
    // Walk the map's rows until a block says it was inferred (the parameters, allocated by model.to()
    // before recording began).
    await showTab(page, "Segments");
    const canvas = page.getByTestId("segment-map-canvas");
    await canvas.scrollIntoViewIfNeeded();
    const box = (await canvas.boundingBox())!;
    const tip = page.getByTestId("map-tooltip");
    let found = false;
    // Rows are 22 px tall with 8 px between them, 4 px from the top.
    for (let y = 15; y < box.height && !found; y += 30) {
      for (let x = 6; x < box.width - 4 && !found; x += 10) {
        await page.mouse.move(box.x + x, box.y + y);
        await waitIdle(page);
        if ((await tip.count()) === 0) continue;
        if ((await tip.getByTestId("inferred-line").count()) > 0) found = true;
      }
    }
    expect(found, "some block of the map says it was inferred").toBe(true);
    await expect(tip.getByTestId("inferred-line")).toContainText("inferred (matches-gradient)");
    expect(truth.snapshot.unrecordedCategories.parameters).toBeGreaterThan(0);

    // Each allocation: the parameters, alive since before recording, are the bottom bands all along;
    // hovering one says it was inferred, and by which rule.
    await page.getByTestId("mode-allocations").click();
    await waitIdle(page);
    const tl = page.getByTestId("timeline");
    await tl.scrollIntoViewIfNeeded();
    const left = Number(await tl.getAttribute("data-plot-left"));
    const top = Number(await tl.getAttribute("data-plot-top"));
    const width = Number(await tl.getAttribute("data-plot-width"));
    const height = Number(await tl.getAttribute("data-plot-height"));
    const c = (await page.getByTestId("timeline-canvas").boundingBox())!;
    await page.mouse.move(c.x + left + width * 0.2, c.y + top + height - 4);
    await waitIdle(page);
    const ttip = page.getByTestId("timeline-tooltip");
    await expect(ttip).toContainText("parameters");
    await expect(ttip.getByTestId("inferred-line")).toContainText("inferred (matches-gradient)");
  });
});

test.describe("torch_npu workspace", () => {
  test("shown apart, with a note that its timing is not recorded; left out of the peak gap", async ({
    page,
  }) => {
    const errors = watchConsole(page);
    const dir = mkdtempSync(join(tmpdir(), "peakscope-workspace-"));
    const file = join(dir, "npu-workspace.pickle");
    const r = spawnSync(
      "python3",
      [join(ROOT, "test/gen/generate.py"), "known", "--layout", "npu", "--workspace", "active", file],
      { encoding: "utf8" },
    );
    expect(r.status, r.stderr).toBe(0);
    const truth = JSON.parse(readFileSync(`${file}.truth.json`, "utf8"));
    expect(truth.snapshot.workspaceBytes).toBeGreaterThan(0);
    await page.goto("./");
    await dropFile(page, file);
    await waitIdle(page);
    const row = page.getByTestId("categories").locator('tr[data-category="workspace"]');
    expect(Number(await row.getAttribute("data-value"))).toBe(truth.snapshot.workspaceBytes);
    await expect(row).toHaveClass(/apart/);
    await expect(page.getByTestId("workspace-note")).toContainText(
      "torch_npu workspace: not in memory_allocated(); its timing is not recorded",
    );
    await expect(
      page.getByTestId("timeline-legend").locator('button[data-category="workspace"]'),
    ).toContainText("not on the timeline");
    // The gap compares like with like: the peak (never the workspace) against the snapshot without it.
    const peak = Number(await page.getByTestId("peak-bytes").getAttribute("data-value"));
    expect(peak).toBe(truth.peak.allocatedBytes);
    const gap = Number(await page.getByTestId("gap-bytes").getAttribute("data-bytes"));
    expect(gap).toBe(
      truth.peak.allocatedBytes - (truth.snapshot.allocatedBytes - truth.snapshot.workspaceBytes),
    );
    expect(errors).toEqual([]);
  });
});

test.describe("honest peak", () => {
  test("a late trace without a counters sidecar: the run's peak is not in the file, and how to get it", async ({
    page,
  }) => {
    const errors = watchConsole(page);
    const name = "kkaitlyn111__cs336-a2-systems__memory_ctx128_fullstep.pickle";
    const { json: report } = cli(["report", real(name), "--json"]);
    // The premise, from the CLI: no sidecar beside the file, and a replayed peak that is only the window's.
    expect(report.counters).toBeNull();
    expect(report.peak.isRunPeak).toBe(false);
    // …and from the file itself (Python's unpickler, no peakscope code): the trace starts late — blocks
    // no trace event allocated (live at the snapshot, or freed inside the trace) were already allocated
    // when recording began; their bytes are what the trace begins with.
    const py = spawnSync(
      "python3",
      [
        "-c",
        `
import json, pickle, sys
s = pickle.load(open(sys.argv[1], "rb"))
live = {}; events = 0; before = 0
for t in s.get("device_traces") or []:
    for e in t:
        events += 1
        if e["action"] == "alloc":
            live[e["addr"]] = e["size"]
        elif e["action"] == "free_completed":
            if e["addr"] in live:
                del live[e["addr"]]
            else:
                before += e["size"]  # allocated before the trace, freed inside it
for seg in s["segments"]:
    addr = seg["address"]
    for b in seg["blocks"]:
        if b["state"] == "active_allocated" and addr not in live:
            before += b["size"]
        addr += b["size"]
print(json.dumps({"events": events, "beforeTraceBytes": before}))
`,
        real(name),
      ],
      { encoding: "utf8", maxBuffer: 64 << 20 },
    );
    expect(py.status, py.stderr).toBe(0);
    const late = JSON.parse(py.stdout) as { events: number; beforeTraceBytes: number };
    expect(late.events).toBeGreaterThan(0);
    expect(late.beforeTraceBytes).toBeGreaterThan(0);
    await page.goto("./");
    await dropFile(page, real(name));
    await waitIdle(page);
    const peak = page.getByTestId("peak-gap");
    await expect(peak).toHaveAttribute("data-run-peak", "0");
    // The card's title says whose peak it is; the disclosure says why and how much was there before.
    await expect(peak.getByRole("heading")).toContainText("Peak of the recorded window vs snapshot");
    await expect(peak.getByTestId("peak-not-in-file")).toContainText("(recorded window)");
    await expect(peak.getByTestId("peak-not-in-file")).toContainText(
      "so the run's peak may have come before it",
    );
    await expect(peak.getByTestId("peak-not-in-file").locator(".bytes").nth(1)).toHaveAttribute(
      "data-bytes",
      String(late.beforeTraceBytes),
    );
    await expect(peak.getByTestId("peak-not-in-file")).toContainText("max_memory_allocated");
    await expect(peak.getByTestId("peak-not-in-file")).toContainText("max_entries");
    await expect(peak).not.toContainText("within 2");
    await expect(peak.locator(".gap-flag.ok")).toHaveCount(0);
    expect(Number(await page.getByTestId("peak-bytes").getAttribute("data-value"))).toBe(
      report.peak.allocatedBytes,
    );
    // The snapshot-vs-peak check (the Checks tab) is skipped with the core's explanation.
    await showTab(page, "Checks");
    const check = page.getByTestId("checks").locator('[data-check="snapshot-vs-peak"]');
    await expect(check).toHaveAttribute("data-status", "skipped");
    await expect(check.locator(".why")).toContainText("the run's peak is not in this file");
    expect(errors).toEqual([]);
  });
});
