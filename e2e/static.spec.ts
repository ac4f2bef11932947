// The built site as a static host serves it: from a sub-path (`/some/sub/path/`), with no CDN, offline
// once loaded, under its strict Content-Security-Policy (no inline script, no eval, Trusted Types, no
// violation while it works).

import { type ChildProcess, spawn } from "node:child_process";
import { expect, test } from "@playwright/test";
import { dropFile, ROOT, real, waitIdle, watchConsole } from "./helpers";

const DIST = process.env.E2E_DIST ?? "dist";
const SUB = "/some/sub/path/";

let server: ChildProcess;
let base = "";

test.beforeAll(async () => {
  server = spawn(process.execPath, [`${ROOT}/scripts/serve.mjs`, DIST, "--port", "0", "--base", SUB], {
    cwd: ROOT,
    stdio: ["ignore", "pipe", "inherit"],
  });
  base = await new Promise<string>((resolve, reject) => {
    let out = "";
    server.stdout!.on("data", (d) => {
      out += String(d);
      const m = /at (http:\/\/\S+)/.exec(out);
      if (m) resolve(m[1]);
    });
    server.on("exit", (code) => reject(new Error(`serve.mjs exited with ${code}`)));
  });
});
test.afterAll(() => {
  server?.kill();
});

test("dist/ from a sub-path: every asset relative, strict CSP, offline once loaded", async ({
  page,
  context,
}) => {
  expect(base.endsWith(SUB)).toBe(true);
  const errors = watchConsole(page);
  const bad: string[] = [];
  const urls: string[] = [];
  page.on("response", (r) => {
    if (r.status() >= 400) bad.push(`${r.status()} ${r.url()}`);
  });
  context.on("request", (r) => urls.push(r.url()));
  await page.addInitScript(() => {
    (window as any).__csp = [];
    document.addEventListener("securitypolicyviolation", (e) =>
      (window as any).__csp.push(`${e.violatedDirective} ${e.blockedURI}`),
    );
  });
  await page.goto(base);
  await expect(page.getByRole("heading", { level: 1 })).toBeVisible();

  // The policy: scripts only from the site, no inline, no eval, Trusted Types; fetch to self and http(s).
  const csp = await page.locator('meta[http-equiv="Content-Security-Policy"]').getAttribute("content");
  // WebAssembly may be compiled (the trace scanner), JavaScript may not be eval'd
  expect(csp).toContain("script-src 'self' 'wasm-unsafe-eval';");
  expect(csp).not.toMatch(/(^|\s)'unsafe-eval'/);
  expect(csp).toContain("require-trusted-types-for 'script'");
  expect(csp).toContain("connect-src 'self' https: http:;");
  expect(csp).not.toContain("unsafe-inline");
  // Trusted Types are enforced: no string becomes markup, whatever code tries.
  const markup = await page.evaluate(() => {
    try {
      document.body.insertAdjacentHTML("beforeend", "<i>x</i>");
      return "inserted";
    } catch {
      return "blocked";
    }
  });
  expect(markup).toBe("blocked");
  // That refusal is the one violation expected: forget it.
  await page.evaluate(() => {
    (window as any).__csp = [];
  });
  errors.length = 0;

  // The demo, fetched relative to the sub-path.
  await page.getByRole("button", { name: "Open demo" }).click();
  await waitIdle(page);
  await expect(page.getByTestId("summary-file")).toHaveText("demo.pickle");
  await expect.poll(() => page.evaluate(() => location.hash)).toContain("src=demo.pickle");

  // Offline: files still open (the worker runs from the copy the page fetched at start).
  await context.setOffline(true);
  await dropFile(page, real("ZidongLiu__DeComFL__memory.pickle"));
  await waitIdle(page);
  await expect(page.getByTestId("summary-file")).toHaveText("ZidongLiu__DeComFL__memory.pickle");
  await dropFile(page, real("drisspg__transformer_nuggets__mini_snapshot.pickle"));
  await waitIdle(page);
  await expect(page.getByTestId("summary-file")).toHaveText(
    "drisspg__transformer_nuggets__mini_snapshot.pickle",
  );
  await context.setOffline(false);

  // A link under the sub-path restores its view.
  await page.goto(`${base}#v=1&src=demo.pickle&axis=event&t0=10&t1=120`);
  await waitIdle(page);
  const tl = page.getByTestId("timeline");
  expect(Number(await tl.getAttribute("data-x0"))).toBe(10);
  expect(Number(await tl.getAttribute("data-x1"))).toBe(120);

  expect(bad).toEqual([]);
  for (const u of urls)
    expect(u.startsWith(base) || u.startsWith("blob:") || u.startsWith("data:"), u).toBe(true);
  expect(await page.evaluate(() => (window as any).__csp)).toEqual([]);
  expect(errors).toEqual([]);
});
