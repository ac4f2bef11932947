// The workspace's Flame tab (the icicle of the call tree) at the peak, on the generator's known run: its root
// is the peak's bytes and a searched frame's bytes are the blocks alive at the peak under that frame — both
// from Python reading the file (test/tools/py_at_peak.py: test/tools/replay.py's replay, then the alloc
// entries' frames), and both equal to the generator's truth where it keeps one. A node clicked in the icicle
// shows its frame and its bytes in the right sidebar — the same Python bytes.

import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, type Page, test } from "@playwright/test";
import { dropFile, ROOT, showTab, waitIdle, watchConsole } from "./helpers";

// train.py:61 is `opt.step()` (the optimizer state and its temporaries); _multi_tensor_adam makes the sqrt
// temporaries of the foreach AdamW.
const QUERIES = ["train.py:61", "_multi_tensor_adam"];

interface PyAtPeak {
  peakBytes: number;
  peakEvent: number;
  search: Record<string, number>;
}

/** The generator's known run, its truth, and Python's reading of it at the peak (searches: QUERIES). */
function knownRun(): { file: string; truth: any; py: PyAtPeak } {
  const file = join(mkdtempSync(join(tmpdir(), "peakscope-e2e-flame-")), "known.pickle");
  const gen = spawnSync("python3", [join(ROOT, "test/gen/generate.py"), "known", file], { encoding: "utf8" });
  expect(gen.status, gen.stderr).toBe(0);
  const truth = JSON.parse(readFileSync(`${file}.truth.json`, "utf8"));
  const r = spawnSync(
    "python3",
    [join(ROOT, "test/tools/py_at_peak.py"), file, ...QUERIES.flatMap((q) => ["--search", q])],
    { encoding: "utf8" },
  );
  expect(r.status, r.stderr).toBe(0);
  return { file, truth, py: JSON.parse(r.stdout) as PyAtPeak };
}

/** Opens the file, shows the Flame tab and moves to the peak. */
async function flameAtPeak(page: Page, file: string, py: PyAtPeak) {
  await page.goto("./");
  await dropFile(page, file);
  await waitIdle(page);
  await showTab(page, "Flame");
  const flame = page.getByRole("region", { name: "Flame graph", exact: true });
  await expect(flame).toHaveAttribute("data-show", "flame");
  await flame.getByTestId("tree-at-peak").click();
  await expect(flame).toHaveAttribute("data-event", String(py.peakEvent));
  await waitIdle(page);
  await expect(flame).toHaveAttribute("data-total", String(py.peakBytes));
  return flame;
}

test("Flame at the peak: the root is Python's peak, a searched frame holds Python's bytes", async ({
  page,
}) => {
  const errors = watchConsole(page);
  const { file, truth, py } = knownRun();
  // The Python replay and the generator's bookkeeping agree on the peak and its event.
  expect([py.peakBytes, py.peakEvent]).toEqual([truth.peak.allocatedBytes, truth.peak.eventIndex]);
  expect(py.search._multi_tensor_adam).toBe(truth.peak.kinds.optimizer_temp);
  expect(py.search["train.py:61"]).toBeGreaterThan(py.search._multi_tensor_adam);

  const flame = await flameAtPeak(page, file, py);
  // The icicle is drawn: more than one row of frames under the root.
  expect(Number(await flame.getByTestId("icicle").getAttribute("data-rows"))).toBeGreaterThan(1);
  const box = page.getByRole("searchbox", { name: "Search frames" });
  for (const q of QUERIES) {
    await box.fill(q);
    await box.press("Enter");
    await expect(flame).toHaveAttribute("data-match-bytes", String(py.search[q]));
    await waitIdle(page);
    await expect(flame).toHaveAttribute("data-total", String(py.peakBytes));
  }
  expect(errors).toEqual([]);
});

test("a node clicked in the icicle names its frame and its bytes in the sidebar: Python's bytes at the peak", async ({
  page,
}) => {
  const errors = watchConsole(page);
  const { file, truth, py } = knownRun();
  // train.py:61, `opt.step()` in main(): an own-code frame (a node of its own, not inside a folded library
  // run); the optimizer's temporaries under it are the truth's optimizer_temp.
  const frame = "train.py:61";
  expect(py.search[frame]).toBeGreaterThan(truth.peak.kinds.optimizer_temp);
  const flame = await flameAtPeak(page, file, py);
  // Searched, the matching node and what is under it are drawn opaque, everything else paled: the node
  // is the shallowest opaque run of pixels (read back from the canvas, not from the page's layout).
  const box = page.getByRole("searchbox", { name: "Search frames" });
  await box.fill(frame);
  await box.press("Enter");
  await expect(flame).toHaveAttribute("data-match-bytes", String(py.search[frame]));
  await waitIdle(page);
  const canvas = flame.getByTestId("icicle-canvas");
  const rowPx = 20;
  const tops = await canvas.evaluate((el, rowPx) => {
    const c = el as HTMLCanvasElement;
    const ctx = c.getContext("2d");
    if (!ctx) return [];
    const scale = c.width / c.getBoundingClientRect().width;
    const rows = Math.floor(c.height / (rowPx * scale));
    const opaque = (row: number) => {
      const y = Math.floor((row * rowPx + rowPx / 2) * scale);
      const d = ctx.getImageData(0, y, c.width, 1).data;
      return Array.from({ length: c.width }, (_, x) => d[x * 4 + 3] === 255);
    };
    const found: { row: number; x0: number; x1: number }[] = [];
    let above = Array.from({ length: c.width }, () => false);
    for (let row = 0; row < rows; row++) {
      const here = opaque(row);
      for (let x = 0; x < c.width; x++) {
        if (!here[x] || above[x] || (x > 0 && here[x - 1])) continue;
        let x1 = x;
        while (x1 + 1 < c.width && here[x1 + 1]) x1++;
        // A run under an opaque parent is part of a match already found.
        found.push({ row, x0: x / scale, x1: x1 / scale });
      }
      above = here.map((v, x) => v || above[x]);
    }
    return found;
  }, rowPx);
  expect(tops, "one node matches the frame").toHaveLength(1);
  const [node] = tops;
  await canvas.click({ position: { x: (node.x0 + node.x1) / 2, y: node.row * rowPx + rowPx / 2 } });
  await waitIdle(page);
  const details = page.getByTestId("selection-frame");
  await expect(details).toBeVisible();
  // Named as the call tree names an own-code frame: its file and line, then the function (main()).
  await expect(details.locator("p").first().locator("strong")).toHaveText(`${frame} main`);
  await expect(details).toHaveAttribute("data-bytes", String(py.search[frame]));
  await expect(details.getByTestId("selection-frame-bytes")).toHaveAttribute(
    "data-bytes",
    String(py.search[frame]),
  );
  await expect(details).toContainText("live at the peak");
  expect(errors).toEqual([]);
});
