// Profiler traces, export_memory_timeline files and MemoryViz pages open in the page through its file
// input; the peak shown equals Python's reading of the same file (test/tools/py_artifacts.py, standard
// library). Selectors are the stable ones (body[data-state], data-* on the summary and the peak card):
// the layout around them is being redesigned.

import { execFileSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join, resolve } from "node:path";
import { expect, type Page, test } from "@playwright/test";
import { dropFiles, ROOT, serveFiles, waitIdle, watchConsole } from "./helpers";

const DIR = resolve(ROOT, "../shared/fixtures/profiler");
const FILES: { name: string; kind: string }[] = [
  { name: "AdamM1909__unsloth_puzzels__trace.json", kind: "profiler-trace" },
  { name: "harryjmoss__particle_transformer__gpu_working_chrome_trace.json", kind: "profiler-trace" },
  {
    name: "pytorch__kineto__tb_plugin_samples_resnet50_num_workers_0_worker0.1623143089861.pt.trace.json.gz",
    kind: "profiler-trace",
  },
  {
    name: "tonghuikang__optimizer-memory-profiles__profiling_modal_gpu_adam_profile.raw.json.gz",
    kind: "memory-timeline",
  },
  { name: "tonghuikang__optimizer-memory-profiles__snapshot.html", kind: "memoryviz-html" },
];

// biome-ignore lint/suspicious/noExplicitAny: Python's JSON
function pythonReading(path: string): any {
  return JSON.parse(
    execFileSync("python3", ["test/tools/py_artifacts.py", path], { cwd: ROOT, encoding: "utf8" }),
  )[path];
}

/** The peak the page shows first: the first accelerator's, else the CPU's (CUDA first, CPU apart). */
function expectedPeak(py: {
  kind: string;
  peakAllocatedBytes?: number;
  devices?: Record<string, { peakAllocatedBytes: number }>;
}): number | null {
  if (py.kind === "memory-timeline") return py.peakAllocatedBytes ?? null;
  if (py.kind !== "profiler-trace" || !py.devices) return null;
  const keys = Object.keys(py.devices).sort(
    (a, b) => Number(a.startsWith("cpu")) - Number(b.startsWith("cpu")),
  );
  return py.devices[keys[0]].peakAllocatedBytes;
}

test.describe("opening what torch.profiler and MemoryViz write", () => {
  for (const f of FILES) {
    test(`pick ${f.name}: it opens, says its kind, and the peak equals Python's`, async ({ page }) => {
      const errors = watchConsole(page);
      const path = resolve(DIR, f.name);
      const py = pythonReading(path);
      await page.goto("./");
      await page.getByTestId("file-input").setInputFiles(path);
      expect(await waitIdle(page)).toBe("ready");
      await expect(page.locator("body[data-state=ready]")).toHaveCount(1);
      await expect(page.getByTestId("summary-kind")).toHaveAttribute("data-kind", f.kind);
      const peak = page.getByTestId("peak-bytes").first();
      await expect(peak).toHaveCount(1);
      const want = expectedPeak(py);
      if (want !== null) {
        expect(Number(await peak.getAttribute("data-value"))).toBe(want);
        // no segments: said in words, the segment map replaced by a sentence, no snapshot comparison
        expect(Number(await page.getByTestId("summary-kind").getAttribute("data-lacks"))).toBeGreaterThan(0);
        await expect(page.locator('[data-testid="peak-gap"][data-artifact="1"]')).toHaveCount(1);
        // a trace opens at its peak: its end is no snapshot
        await expect(page.locator("body")).toHaveAttribute("data-moment", "peak");
        await page.getByRole("tab", { name: "Segments" }).click();
        await expect(page.locator('[data-testid="no-segments"][data-panel="Segment map"]')).toHaveCount(1);
      } else {
        expect(py.kind).toBe("memoryviz-html");
        expect(Number(await peak.getAttribute("data-value"))).toBeGreaterThan(0);
      }
      expect(errors).toEqual([]);
    });
  }

  test("a trace without memory events: one message saying how to record it", async ({ page }) => {
    await page.goto("./");
    await page.getByTestId("file-input").setInputFiles({
      name: "no-memory.json",
      mimeType: "application/json",
      buffer: Buffer.from(
        '{"schemaVersion":1,"traceEvents":[{"ph":"X","name":"aten::mm","pid":1,"tid":1,"ts":1,"dur":2}]}',
      ),
    });
    expect(await waitIdle(page, ["error", "empty", "ready"])).not.toBe("ready");
    await expect(page.getByText(/profile_memory=True/).first()).toBeVisible();
  });

  test.describe("three ranks' profiler traces", () => {
    // generate.py profiler --rank R: the known run's trace as rank R writes it (distributedInfo), with the
    // generator's truth (its peak) on stdout
    const dir = mkdtempSync(join(tmpdir(), "peakscope-trace-ranks-"));
    const ranks = [0, 1, 2].map((rank) => {
      const path = join(dir, `rank${rank}.pt.trace.json`);
      const truth = JSON.parse(
        execFileSync("python3", ["test/gen/generate.py", "profiler", "--rank", String(rank), path], {
          cwd: ROOT,
          encoding: "utf8",
        }),
      ) as { rank: number; peakAllocatedBytes: number };
      return { rank, path, truth };
    });

    async function expectRanks(page: Page) {
      const ov = page.getByRole("region", { name: "Rank overview" });
      await expect(ov).toBeVisible();
      await expect(ov.getByTestId("rank-row")).toHaveCount(ranks.length);
      for (const r of ranks) {
        const row = ov.locator(`[data-testid=rank-row][data-rank="${r.truth.rank}"]`);
        await expect(row).toHaveAttribute("data-file", basename(r.path));
        await expect(row).toHaveAttribute("data-peak", String(r.truth.peakAllocatedBytes));
        await expect(row).toHaveAttribute("data-peak-source", "trace");
      }
    }

    test("dropped together: the rank overview, each rank's peak the generator's", async ({ page }) => {
      const errors = watchConsole(page);
      await page.goto("./");
      await dropFiles(
        page,
        ranks.map((r) => r.path),
      );
      await waitIdle(page);
      await expectRanks(page);
      expect(errors).toEqual([]);
    });

    test("through #src: the same overview, the URLs in the link", async ({ page }) => {
      const server = await serveFiles(dir, /^rank\d\.pt\.trace\.json$/);
      try {
        await page.goto(`./#${server.src(ranks.map((r) => basename(r.path)))}`);
        await waitIdle(page);
        await expectRanks(page);
        expect(await page.evaluate(() => location.hash)).toContain("rank2.pt.trace.json");
      } finally {
        await server.close();
      }
    });
  });
});
