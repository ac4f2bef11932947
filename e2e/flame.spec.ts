// The workspace's Flame tab (the icicle of the call tree) at the peak, on the generator's known run: its root
// is the peak's bytes and a searched frame's bytes are the blocks alive at the peak under that frame — both
// from Python reading the file (test/tools/py_at_peak.py: test/tools/replay.py's replay, then the alloc
// entries' frames), and both equal to the generator's truth where it keeps one.

import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, test } from "@playwright/test";
import { dropFile, ROOT, showTab, waitIdle, watchConsole } from "./helpers";

// train.py:61 is `opt.step()` (the optimizer state and its temporaries); _multi_tensor_adam makes the sqrt
// temporaries of the foreach AdamW.
const QUERIES = ["train.py:61", "_multi_tensor_adam"];

test("Flame at the peak: the root is Python's peak, a searched frame holds Python's bytes", async ({
  page,
}) => {
  const errors = watchConsole(page);
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
  const py = JSON.parse(r.stdout) as { peakBytes: number; peakEvent: number; search: Record<string, number> };
  // The Python replay and the generator's bookkeeping agree on the peak and its event.
  expect([py.peakBytes, py.peakEvent]).toEqual([truth.peak.allocatedBytes, truth.peak.eventIndex]);
  expect(py.search._multi_tensor_adam).toBe(truth.peak.kinds.optimizer_temp);
  expect(py.search["train.py:61"]).toBeGreaterThan(py.search._multi_tensor_adam);

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
