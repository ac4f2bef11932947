// Issue 24: what the newest PyTorch writes, on the page. The generator's `newest` file (test/gen/generate.py
// newest: the known run with pinned host memory, forward stacks, user_metadata and an annotate note) is
// dropped with its counters sidecar; the host lane's numbers equal the generator's truth, the call tree
// grouped by forward line shows each forward line with its truth bytes at the peak, and the annotated
// allocation is on screen with its note. Screenshots: /tmp/shots/newest-*.png.

import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { expect, test } from "@playwright/test";
import { dropFiles, ROOT, waitIdle, watchConsole } from "./helpers";

const SHOTS = "/tmp/shots";
const dir = mkdtempSync(join(tmpdir(), "peakscope-e2e-newest-"));
const gen = spawnSync("python3", [resolve(ROOT, "test/gen/generate.py"), "newest", dir], {
  encoding: "utf8",
});
const FILE = join(dir, "full.pickle");
const truth = (): any => JSON.parse(readFileSync(`${FILE}.truth.json`, "utf8"));

test.beforeAll(() => {
  expect(gen.status, gen.stderr).toBe(0);
  mkdirSync(SHOTS, { recursive: true });
});

test("host lane, forward-grouped tree and an annotated allocation", async ({ page }) => {
  const errors = watchConsole(page);
  const t = truth();
  await page.goto("./");
  await dropFiles(page, [FILE, `${FILE}.counters.json`]);
  await waitIdle(page);

  // the summary's "host (pinned)" row and the lane
  const row = page.getByTestId("summary-host");
  await expect(row).toBeVisible();
  await expect(row.locator("[data-field=reserved]")).toHaveAttribute(
    "data-value",
    String(t.newest.host.reservedBytes),
  );
  const lane = page.getByRole("region", { name: "Host (pinned) memory" });
  await expect(lane).toBeVisible();
  await expect(lane.getByTestId("host-peak")).toHaveAttribute(
    "data-value",
    String(t.newest.host.peakAllocatedBytes),
  );
  await expect(lane.getByTestId("host-allocated")).toHaveAttribute(
    "data-value",
    String(t.newest.host.allocatedBytes),
  );
  await expect(lane.getByTestId("host-segments")).toHaveText(String(t.newest.host.segments));
  await expect(lane.getByTestId("host-timeline")).toBeVisible();
  await expect(lane.getByTestId("host-map").locator("rect")).toHaveCount(t.newest.host.segments);
  await lane.scrollIntoViewIfNeeded();
  await lane.screenshot({ path: `${SHOTS}/newest-host.png` });

  // the annotated allocation, with its note
  const notes = page.getByRole("region", { name: "Notes on allocations" });
  const noted = notes.getByTestId("annotated-allocation");
  await expect(noted).toHaveCount(1);
  await expect(noted.locator("[data-field=note]")).toHaveText(t.newest.annotation.text);
  await notes.scrollIntoViewIfNeeded();
  await notes.screenshot({ path: `${SHOTS}/newest-annotation.png` });

  // the call tree at the peak, grouped by forward line
  await page.getByRole("tab", { name: "Call tree" }).click();
  const tree = page.getByRole("region", { name: "Call tree" });
  await tree.getByTestId("tree-at-peak").click();
  await waitIdle(page);
  await tree.getByTestId("tree-by-forward").click();
  await waitIdle(page);
  for (const [site, bytes] of Object.entries(t.newest.forwardSitesAtPeak as Record<string, number>)) {
    const [file, line, fn] = site.split(":");
    const label = `${file.split("/").at(-1)}:${line} ${fn}`;
    const item = tree.locator(`[role=treeitem][data-name="${label}"]`);
    await expect(item).toBeVisible();
    await expect(item).toHaveAttribute("data-bytes", String(bytes));
  }
  await tree.scrollIntoViewIfNeeded();
  await tree.screenshot({ path: `${SHOTS}/newest-forward-tree.png` });
  expect(errors).toEqual([]);
});
