// Files opened one after another do not pile up: the page ends the worker that held the previous file
// (client.ts: freshWorker) and starts a new one, so its model goes with it. Measured with the DevTools
// protocol: every worker's and the page's JS heap plus ArrayBuffer backing stores, after a forced GC,
// over 20 loads of a ~100 MB snapshot; and no more than two workers are alive at a time (the one that
// holds the file, and a spare with nothing open, started for the next file).

import { execFileSync } from "node:child_process";
import { existsSync, statSync } from "node:fs";
import { expect, type Page, test } from "@playwright/test";
import { ROOT, waitIdle, watchConsole } from "./helpers";

const BIG = `${ROOT}/test-results/e2e-big100.pickle`;

/** Page + workers: heap used and ArrayBuffer backing stores, after a GC in each. */
async function memoryProbe(page: Page) {
  const cdp = await page.context().newCDPSession(page);
  const workers = new Set<string>();
  const pending = new Map<number, (v: any) => void>();
  let id = 0;
  cdp.on("Target.attachedToTarget", (e: any) => {
    if (e.targetInfo.type === "worker") workers.add(e.sessionId);
  });
  cdp.on("Target.detachedFromTarget", (e: any) => workers.delete(e.sessionId));
  cdp.on("Target.receivedMessageFromTarget", (e: any) => {
    const m = JSON.parse(e.message);
    pending.get(m.id)?.(m.result ?? { error: m.error });
    pending.delete(m.id);
  });
  // Non-flat sessions: this CDP client talks to each worker through the page's session.
  await cdp.send("Target.setAutoAttach", { autoAttach: true, waitForDebuggerOnStart: false, flatten: false });
  const inWorker = (sessionId: string, method: string) =>
    new Promise<any>((resolve) => {
      const i = ++id;
      pending.set(i, resolve);
      void cdp.send("Target.sendMessageToTarget", { sessionId, message: JSON.stringify({ id: i, method }) });
    });
  return {
    workers: () => workers.size,
    async measure(): Promise<{ page: number; workers: number; count: number }> {
      let w = 0;
      for (const s of workers) {
        await inWorker(s, "HeapProfiler.collectGarbage");
        const u = await inWorker(s, "Runtime.getHeapUsage");
        w += (u.usedSize ?? 0) + (u.backingStorageSize ?? 0);
      }
      await cdp.send("HeapProfiler.collectGarbage");
      const p: any = await cdp.send("Runtime.getHeapUsage");
      return { page: p.usedSize + (p.backingStorageSize ?? 0), workers: w, count: workers.size };
    },
  };
}

test.describe("memory", () => {
  test.beforeAll(() => {
    if (!existsSync(BIG) || statSync(BIG).size < 90e6) {
      execFileSync("python3", [`${ROOT}/test/gen/generate.py`, "big", "--target-mb", "100", BIG], {
        stdio: "pipe",
      });
    }
  });

  test("20 consecutive loads of a 100 MB snapshot do not grow the heap", async ({ page }) => {
    test.setTimeout(240_000);
    const errors = watchConsole(page);
    await page.goto("./");
    const probe = await memoryProbe(page);
    const samples: { page: number; workers: number; count: number }[] = [];
    const t0 = Date.now();
    for (let i = 0; i < 20; i++) {
      await page.getByTestId("file-input").setInputFiles(BIG);
      await waitIdle(page);
      await expect(page.getByTestId("summary-file")).toHaveText("e2e-big100.pickle");
      samples.push(await probe.measure());
      // the worker that holds the file, and at most one spare started for the next (client.ts: prewarm)
      expect(samples[i].count, "live workers after a load").toBeLessThanOrEqual(2);
    }
    const mb = (b: number) => (b / 1e6).toFixed(1);
    console.log(
      `20 loads in ${((Date.now() - t0) / 1000).toFixed(1)} s; MB page+worker after each: ${samples
        .map((s) => mb(s.page + s.workers))
        .join(" ")}`,
    );
    // After the first loads have warmed up, the total stays flat (within 10% of the 3rd load's).
    const base = samples[2].page + samples[2].workers;
    const last = samples[19].page + samples[19].workers;
    expect(last, `${mb(last)} MB after 20 loads vs ${mb(base)} MB after 3`).toBeLessThan(base * 1.1);
    // And the worker holds about one file's model, not several.
    const worst = Math.max(...samples.slice(2).map((s) => s.page + s.workers));
    expect(worst).toBeLessThan(base * 1.15);
    expect(errors).toEqual([]);
  });
});
