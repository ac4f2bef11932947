// Shared e2e helpers: open files the way a user does (drop or picker), wait on the page's idle signal,
// run the peakscope CLI for independent expected values, and collect console errors.

import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { basename, join, resolve } from "node:path";
import { expect, type Page } from "@playwright/test";

export const ROOT = resolve(import.meta.dirname, "..");
export const REAL = resolve(ROOT, "../shared/fixtures/real");
export const real = (name: string) => resolve(REAL, name);

/** Runs `peakscope <args>` (the Node CLI on the same core) and parses its JSON output. */
export function cli(args: string[]): { code: number; json: any; stderr: string } {
  const r = spawnSync(process.execPath, [resolve(ROOT, "bin/peakscope.mjs"), ...args], {
    cwd: ROOT,
    encoding: "utf8",
    maxBuffer: 256 * 1024 * 1024,
  });
  let json: any = null;
  try {
    json = JSON.parse(r.stdout);
  } catch {
    json = null;
  }
  return { code: r.status ?? -1, json, stderr: r.stderr };
}

/** Drops a file on the page with a real DataTransfer carrying the file's bytes. */
export async function dropFile(page: Page, path: string, bytes?: Buffer): Promise<void> {
  await dropFiles(page, [{ path, bytes }]);
}

/**
 * Drops several files at once (one DataTransfer). `at: "right"` drops on the right half of the window:
 * with a file open, that is the "compare with the open file" zone.
 */
export async function dropFiles(
  page: Page,
  files: (string | { path: string; bytes?: Buffer; name?: string })[],
  opts: { at?: "left" | "right" } = {},
): Promise<void> {
  const list = files.map((f) => {
    const o = typeof f === "string" ? { path: f } : f;
    return { b64: (o.bytes ?? readFileSync(o.path)).toString("base64"), name: o.name ?? basename(o.path) };
  });
  // The window's drop listener is attached by an effect (DropTarget), which has run once App's effect has
  // set body[data-state]: a drop dispatched before that was lost (the page stayed empty; seen once in CI).
  await page.waitForFunction(() => !!document.body?.dataset.state);
  await page.evaluate(
    async ({ list, right }) => {
      const dt = new DataTransfer();
      for (const { b64, name } of list) {
        const bin = atob(b64);
        const arr = new Uint8Array(bin.length);
        for (let i = 0; i < bin.length; i++) arr[i] = bin.charCodeAt(i);
        dt.items.add(new File([arr], name, { type: "application/octet-stream" }));
      }
      const target = document.querySelector("main") ?? document.body;
      const clientX = right ? window.innerWidth * 0.75 : 0;
      for (const type of ["dragenter", "dragover", "drop"]) {
        target.dispatchEvent(
          new DragEvent(type, { dataTransfer: dt, bubbles: true, cancelable: true, clientX, clientY: 200 }),
        );
      }
    },
    { list, right: opts.at === "right" },
  );
}

/**
 * Waits until the page says it finished (body[data-state] is ready, error or empty and no worker request
 * is in flight), then checks the state is one of `states`; a wrong state fails with the page's error text.
 * `timeoutMs`: longer for loads that are heavy by design (many large files at once) on a shared machine.
 */
export async function waitIdle(
  page: Page,
  states: string[] = ["ready"],
  timeoutMs = 60_000,
): Promise<string> {
  const handle = await page.waitForFunction(
    () => {
      const b = document.body;
      const s = b.dataset.state ?? "";
      return (s === "ready" || s === "error" || s === "empty") && b.dataset.busy === "0" ? s : null;
    },
    undefined,
    { timeout: timeoutMs },
  );
  const state = (await handle.jsonValue()) as string;
  if (!states.includes(state)) {
    const err = await page
      .locator("[data-testid=error-message]")
      .textContent()
      .catch(() => null);
    throw new Error(`page state is ${state}, expected ${states.join(" or ")}${err ? `: ${err}` : ""}`);
  }
  return state;
}

/** Collects console errors and uncaught exceptions; assert it stays empty at the end of a test. */
export function watchConsole(page: Page): string[] {
  const errors: string[] = [];
  page.on("console", (m) => {
    if (m.type() === "error") errors.push(m.text());
  });
  page.on("pageerror", (e) => errors.push(String(e)));
  return errors;
}

/** Records every request the page makes (to prove nothing leaves the machine). */
export function watchRequests(page: Page): string[] {
  const urls: string[] = [];
  page.on("request", (r) => urls.push(r.url()));
  return urls;
}

export async function numberOf(page: Page, testId: string): Promise<number> {
  const v = await page.getByTestId(testId).getAttribute("data-value");
  expect(v, `data-value of ${testId}`).not.toBeNull();
  return Number(v);
}

/** Opens one of the workspace's tabs (Summary, Call tree, Flame, Segments, What if, Allocator, Checks). */
export async function showTab(page: Page, name: string): Promise<void> {
  const tab = page.getByRole("tab", { name, exact: true });
  await tab.click();
  await expect(tab).toHaveAttribute("aria-selected", "true");
  await waitIdle(page);
}

/**
 * Serves the files of `dir` whose names match `names` over HTTP on 127.0.0.1 with CORS (what `#src=` links
 * need), 404 for anything else. `src(files)` is the hash of a link to them in order (`src`, `src2`, …);
 * `close()` also ends kept-alive connections (the page's would hold close() until the test's timeout).
 */
export async function serveFiles(
  dir: string,
  names: RegExp,
): Promise<{ url: (name: string) => string; src: (files: string[]) => string; close: () => Promise<void> }> {
  const server = createServer((req, res) => {
    const m = /^\/([\w.-]+)$/.exec(req.url ?? "");
    let body: Buffer | null = null;
    try {
      body = m && names.test(m[1]) ? readFileSync(join(dir, m[1])) : null;
    } catch {
      body = null;
    }
    if (!body) {
      res.writeHead(404, { "Access-Control-Allow-Origin": "*" }).end("not found");
      return;
    }
    res.writeHead(200, { "Access-Control-Allow-Origin": "*", "Content-Length": body.length }).end(body);
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  const url = (name: string) => `http://127.0.0.1:${port}/${name}`;
  return {
    url,
    src: (files) =>
      `v=1&${files.map((f, i) => `${i === 0 ? "src" : `src${i + 1}`}=${encodeURIComponent(url(f))}`).join("&")}`,
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}
