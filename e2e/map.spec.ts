// M4: the segment/block map at the timeline's moment. Snapshot by default; jump to the peak or the OOM;
// arrow keys step events; hover shows a block and its stack; an empty stack explains itself.

import { spawnSync } from "node:child_process";
import { expect, type Page, test } from "@playwright/test";
import { cli, dropFile, ROOT, real, showTab, waitIdle, watchConsole } from "./helpers";

/** Opens a file and the workspace's Segments tab. */
async function open(page: Page, file: string) {
  await page.goto("./");
  await dropFile(page, real(file));
  await waitIdle(page);
  await showTab(page, "Segments");
}

/** Python's own reading of the pickle (e2e/tools/py_peak.py). */
function pyPeak(file: string): { peakEvent: number; snapshotBytes: number } {
  const r = spawnSync("python3", [`${ROOT}/e2e/tools/py_peak.py`, real(file)], { encoding: "utf8" });
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout);
}

const statBytes = async (page: Page, label: string) => {
  const stats = page.getByTestId("map-stats");
  const el = stats.locator(`[data-bytes]`).nth(["reserved", "allocated"].indexOf(label));
  return Number(await el.getAttribute("data-bytes"));
};

test.describe("segment map", () => {
  test("at the snapshot: every segment, totals equal the report", async ({ page }) => {
    const errors = watchConsole(page);
    const file = "volcengine__verl__mem.pickle";
    const { json: report } = cli(["report", real(file), "--json"]);
    const inspect = cli(["inspect", real(file), "--json"]).json;
    await open(page, file);
    const map = page.getByTestId("segment-map");
    await expect(map).toHaveAttribute("data-event", "snapshot");
    await expect(page.getByTestId("map-stats")).toContainText(`${inspect.devices[0].segments} segments`);
    expect(await statBytes(page, "reserved")).toBe(report.devices[0].reservedBytes);
    // Allocated blocks sum to the allocated total (less reconciliation, none in this file).
    expect(await statBytes(page, "allocated")).toBe(
      report.devices[0].allocatedBytes - report.devices[0].reconciliationBytes,
    );
    // Private pools are named in the legend.
    await expect(map).toContainText("private pool");
    expect(errors).toEqual([]);
  });

  test("jump to peak shows the peak's state; arrow keys step events", async ({ page }) => {
    const file = "ZidongLiu__DeComFL__memory.pickle";
    await page.goto("./");
    await dropFile(page, real(file));
    await waitIdle(page);
    const peak = Number(await page.getByTestId("peak-bytes").getAttribute("data-value"));
    await showTab(page, "Segments");
    // Back to the snapshot first, so the jump is what moves the map.
    await page.getByTestId("moment-snapshot").click();
    await waitIdle(page);
    await expect(page.getByTestId("segment-map")).toHaveAttribute("data-event", "snapshot");
    await page.getByTestId("jump-peak").click();
    await waitIdle(page);
    const map = page.getByTestId("segment-map");
    const ev = Number(await map.getAttribute("data-event"));
    // The peak's event as Python finds it walking the trace.
    expect(ev).toBe(pyPeak(file).peakEvent);
    await expect(map).toContainText("(the peak)");
    expect(await statBytes(page, "allocated")).toBe(peak);
    await page.keyboard.press("ArrowLeft");
    await waitIdle(page);
    await expect(map).toHaveAttribute("data-event", String(ev - 1));
    await page.keyboard.press("ArrowRight");
    await page.keyboard.press("ArrowRight");
    await waitIdle(page);
    await expect(map).toHaveAttribute("data-event", String(ev + 1));
  });

  test("jump to OOM: the map is at the trace's OOM entry", async ({ page }) => {
    const file = "Nesta-gitU__discrete_diffusion__memory_snapshot.json";
    // The OOM entry's index in the device's trace, by Python's unpickler (the ".json" file is a pickle).
    const py = spawnSync(
      "python3",
      [
        "-c",
        'import pickle,sys; s=pickle.load(open(sys.argv[1],"rb")); t=next(t for t in s["device_traces"] if t); print([i for i,e in enumerate(t) if e["action"]=="oom"][0])',
        real(file),
      ],
      { encoding: "utf8" },
    );
    expect(py.status, py.stderr).toBe(0);
    const oomEvent = Number(py.stdout.trim());
    await open(page, file);
    await page.getByTestId("jump-oom").click();
    await waitIdle(page);
    const ev = Number(await page.getByTestId("segment-map").getAttribute("data-event"));
    expect(ev).toBe(oomEvent);
    await expect(page.getByTestId("pinned")).toContainText(`after event #${ev.toLocaleString("en-US")}`);
  });

  test("hover shows the block and its stack; click keeps it", async ({ page }) => {
    const errors = watchConsole(page);
    const FILE = "ZidongLiu__DeComFL__memory.pickle";
    await open(page, FILE);
    await page.getByTestId("segment-map-canvas").scrollIntoViewIfNeeded();
    const box = (await page.getByTestId("segment-map-canvas").boundingBox())!;
    const tip = page.getByTestId("map-tooltip");
    let found = false;
    for (let fx = 0.05; fx < 0.95 && !found; fx += 0.05) {
      await page.mouse.move(box.x + box.width * fx, box.y + 15);
      await waitIdle(page);
      found = (await tip.count()) > 0 && (await tip.textContent())!.includes("call site");
    }
    expect(found).toBe(true);
    await expect(tip).toContainText("Segment 0x");
    await expect(tip).toContainText("Block 0x");
    await page.mouse.down();
    await page.mouse.up();
    await waitIdle(page);
    const detail = page.getByTestId("block-detail");
    await expect(detail).toBeVisible();
    await expect(detail).toContainText("call site");
    // The file opens at its peak; the block kept is one of the blocks allocated there by Python's own
    // replay (test/tools/replay.py: [address, rounded bytes] of each block allocated after the peak event).
    const rp = spawnSync("python3", [`${ROOT}/test/tools/replay.py`, real(FILE)], { encoding: "utf8" });
    expect(rp.status, rp.stderr).toBe(0);
    const top = JSON.parse(rp.stdout)[FILE].devices[0] as { peakEvent: number; blocks: [number, number][] };
    await expect(page.getByTestId("segment-map")).toHaveAttribute("data-event", String(top.peakEvent));
    await expect(detail.locator("strong").first()).toContainText("active allocated");
    const addr = Number.parseInt(
      ((await detail.locator("strong code").first().textContent()) as string).slice(2),
      16,
    );
    const size = Number(await detail.locator("strong .bytes").first().getAttribute("data-bytes"));
    expect(top.blocks.filter(([a]) => a === addr)).toEqual([[addr, size]]);
    expect(errors).toEqual([]);
  });

  test("a file with no stacks says why instead of showing nothing", async ({ page }) => {
    await open(page, "Muduard__LayoutEditing__33ade60d__dump_snapshot.pickle");
    await expect(page.getByTestId("timeline-empty")).toContainText("No trace for this device");
    await page.getByTestId("segment-map-canvas").scrollIntoViewIfNeeded();
    const box = (await page.getByTestId("segment-map-canvas").boundingBox())!;
    const tip = page.getByTestId("map-tooltip");
    let text = "";
    for (let fx = 0.02; fx < 0.98; fx += 0.04) {
      await page.mouse.move(box.x + box.width * fx, box.y + 15);
      await waitIdle(page);
      text = (await tip.count()) > 0 ? ((await tip.textContent()) ?? "") : "";
      if (text.includes("No stacks")) break;
    }
    expect(text).toContain("No stacks anywhere in this file");
  });

  test("colour by state", async ({ page }) => {
    await open(page, "volcengine__verl__mem.pickle");
    await page.getByRole("button", { name: "State", exact: true }).click();
    await waitIdle(page);
    await expect(page.getByTestId("segment-map")).toContainText("pending free");
  });
});
