// Links: the view state in the URL hash. `#src=URL` downloads a snapshot from a server the test runs
// itself (another origin, so CORS applies) and restores the view; `src2` opens a comparison; a refused
// or missing URL says why; garbage parameters are ignored with a notice; a link made from a dropped file
// carries its name and content hash (never the file) and asks for it; no request ever carries file bytes.

import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { expect, type Page, test } from "@playwright/test";
import { cli, dropFile, dropFiles, ROOT, real, showTab, waitIdle, watchConsole } from "./helpers";

const SMALL = "ZidongLiu__DeComFL__memory.pickle";
const INFERENCE = "Wedsonlin__assignment2-systems__medium_256_inference_memory_snapshot.pickle";
const TRAINING = "Wedsonlin__assignment2-systems__medium_256_training_memory_snapshot.pickle";

/** The independent inspector (Python's own unpickler, no peakscope code): trace entry counts. */
const pyInspect = (name: string): any =>
  JSON.parse(
    execFileSync("python3", [`${ROOT}/test/tools/py_inspect.py`, real(name)], {
      encoding: "utf8",
      maxBuffer: 64 << 20,
    }),
  );

/**
 * The test's own file server: /cors/NAME answers with Access-Control-Allow-Origin: *, /nocors/NAME
 * without it (the browser refuses to hand it to the page), /slow/NAME trickles the file out (/slowpad/NAME
 * with 12 MiB after it, over 3.6 s), anything else is 404. It records every request it gets.
 */
async function fileServer(): Promise<{ url: string; server: Server; hits: string[] }> {
  const hits: string[] = [];
  const server = createServer((req, res) => {
    hits.push(`${req.method} ${req.url}`);
    const m = /^\/(cors|nocors|slow|slowpad)\/([\w.-]+)$/.exec(req.url ?? "");
    let body: Buffer | null = null;
    try {
      body = m ? readFileSync(real(m[2])) : null;
      // slowpad: 12 MiB after the pickle's STOP (read as trailing bytes), so that parsing starts
      // (after the first 4 MiB) while most of the body is still to come
      if (body && m?.[1] === "slowpad") body = Buffer.concat([body, Buffer.alloc(12 << 20)]);
    } catch {
      body = null;
    }
    if (!m || !body) {
      res.writeHead(404, { "Access-Control-Allow-Origin": "*" }).end("not found");
      return;
    }
    const headers: Record<string, string | number> = {
      "Content-Type": "application/octet-stream",
      "Content-Length": body.length,
    };
    if (m[1] !== "nocors") headers["Access-Control-Allow-Origin"] = "*";
    res.writeHead(200, headers);
    if (m[1] !== "slow" && m[1] !== "slowpad") {
      res.end(body);
      return;
    }
    const whole = body;
    let at = 0;
    const step = Math.ceil(whole.length / (m[1] === "slowpad" ? 60 : 20));
    const timer = setInterval(() => {
      if (res.destroyed) {
        clearInterval(timer);
        return;
      }
      res.write(whole.subarray(at, at + step));
      at += step;
      if (at >= whole.length) {
        clearInterval(timer);
        res.end();
      }
    }, 60);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, server, hits };
}

async function timeline(page: Page, scope = page.locator("body")) {
  const tl = scope.getByTestId("timeline");
  const n = async (a: string) => Number(await tl.getAttribute(a));
  return {
    axis: await tl.getAttribute("data-axis"),
    mode: await tl.getAttribute("data-mode"),
    cat: await tl.getAttribute("data-highlight-category"),
    t0: (await n("data-x0")) - (await n("data-origin")),
    t1: (await n("data-x1")) - (await n("data-origin")),
  };
}

test.describe("links", () => {
  let srv: Awaited<ReturnType<typeof fileServer>>;
  test.beforeAll(async () => {
    srv = await fileServer();
  });
  test.afterAll(async () => {
    await new Promise((r) => srv.server.close(r));
  });

  test("#src= from another origin restores the view; src2 compares; refused and missing URLs say why", async ({
    page,
  }) => {
    const errors = watchConsole(page);
    const inspect = pyInspect(SMALL);
    const pin = Math.floor(inspect.devices[0].traceEntries / 2);
    const src = `${srv.url}/slow/${SMALL}`;
    await page.goto(
      `./#v=1&src=${encodeURIComponent(src)}&device=0&view=allocations&axis=event&t0=1000&t1=5000&pin=${pin}&cat=parameters`,
    );
    // A download in progress shows its phase and how far it got.
    await expect(page.getByTestId("progress-phase")).toHaveText("downloading");
    await expect(page.getByTestId("progress-percent")).toHaveText(/^\d+%$/);
    await waitIdle(page);
    await expect(page.getByTestId("summary-file")).toHaveText(SMALL);
    expect(Number(await page.getByTestId("summary-trace-entries").getAttribute("data-value"))).toBe(
      inspect.traceEntries,
    );
    const v = await timeline(page);
    expect(v).toEqual({ axis: "event", mode: "allocations", cat: "parameters", t0: 1000, t1: 5000 });
    // The pinned event is the page's one moment.
    await expect(page.locator("body")).toHaveAttribute("data-moment", `event:${pin}`);
    // The highlighted category is pressed in the Summary's category table (the tab a file opens on).
    await expect(page.getByRole("tab", { name: "Summary", exact: true })).toHaveAttribute(
      "aria-selected",
      "true",
    );
    await expect(
      page.getByTestId("categories").locator('tr[data-category="parameters"] button'),
    ).toHaveAttribute("aria-pressed", "true");
    expect(srv.hits).toContain(`GET /slow/${SMALL}`);
    // The page writes the same view back into its own hash, src first.
    await expect
      .poll(() => page.evaluate(() => location.hash))
      .toMatch(
        new RegExp(
          `^#v=1&src=${src.replace(/[.?]/g, "\\$&")}&device=0&view=allocations&axis=event&t0=1000&t1=5000&pin=${pin}&cat=parameters`,
        ),
      );
    // The segment map (its own tab) shows the state after the pinned event.
    await showTab(page, "Segments");
    await expect(page.getByTestId("segment-map")).toHaveAttribute("data-event", String(pin));

    // src + src2: a comparison, the difference equal to the CLI's.
    const report = cli(["report", real(INFERENCE), "--compare", real(TRAINING), "--json"]).json;
    await page.goto(
      `./#v=1&src=${encodeURIComponent(`${srv.url}/cors/${INFERENCE}`)}&src2=${encodeURIComponent(`${srv.url}/cors/${TRAINING}`)}`,
    );
    await waitIdle(page);
    await expect(page.locator("body")).toHaveAttribute("data-mode", "compare");
    // Peaks compared by default (both files have a trace): the CLI's compare.atPeaks.
    await expect(page.getByTestId("verdict")).toHaveText(report.compare.atPeaks.verdict);

    // A server that does not allow this origin (no CORS header), and a missing file.
    await page.goto(`./#v=1&src=${encodeURIComponent(`${srv.url}/nocors/${SMALL}`)}`);
    await waitIdle(page, ["error"]);
    await expect(page.getByTestId("error-message")).toContainText("Access-Control-Allow-Origin");
    await expect(page.getByTestId("error-message")).toContainText(`${srv.url}/nocors/${SMALL}`);
    await page.goto(`./#v=1&src=${encodeURIComponent(`${srv.url}/cors/missing.pickle`)}`);
    await waitIdle(page, ["error"]);
    await expect(page.getByTestId("error-message")).toContainText("HTTP 404");
    // The refused fetch logs a CORS error in the console: that one is expected.
    expect(errors.filter((e) => !/CORS|Failed to load resource|ERR_FAILED/i.test(e))).toEqual([]);
  });

  test("a link with garbage parameters still loads, says what it ignored, and renders nothing from them", async ({
    page,
  }) => {
    const errors = watchConsole(page);
    await page.goto(
      "./#v=9&src=demo.pickle&device=banana&t0=abc&t1=&pin=-3&axis=sideways&view=3d&cat=%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E&foo=%3Cb%3Ebar%3C/b%3E&link=2",
    );
    await waitIdle(page);
    await expect(page.getByTestId("summary-file")).toHaveText("demo.pickle");
    const notices = page.getByTestId("notice");
    await expect(notices.first()).toBeVisible();
    const text = (await notices.allTextContents()).join(" ");
    for (const bad of [
      "v=9",
      "device=banana",
      "t0=abc",
      "pin=-3",
      "axis=sideways",
      "view=3d",
      "foo",
      "link=2",
    ]) {
      expect(text, bad).toContain(bad);
    }
    // The unknown category is named as text, never made into an element.
    expect(text).toContain("<img src=x onerror=alert(1)>");
    expect(await page.locator("img, b").count()).toBe(0);
    // Nonsense that is not even parameters, in a fresh page: the page is still there.
    await page.goto("about:blank");
    await page.goto("./#%%%&&&===&v");
    await expect(page.getByRole("heading", { level: 1 })).toBeVisible();
    await dropFile(page, real(SMALL));
    await waitIdle(page);
    await expect(page.getByTestId("summary-file")).toHaveText(SMALL);
    expect(errors).toEqual([]);
  });

  test("#src=: the file is read while it downloads; Cancel stops it and leaves a usable page", async ({
    page,
  }) => {
    const errors = watchConsole(page);
    await page.goto(`./#v=1&src=${encodeURIComponent(`${srv.url}/slowpad/${TRAINING}`)}`);
    // trace entries are read while the rest is still coming
    await expect(page.getByTestId("progress-phase")).toHaveText("downloading");
    await expect(page.getByTestId("load-preview")).toBeVisible();
    // the first picture came while the download was still going (not after it)
    expect(await page.getByTestId("progress-phase").textContent()).toBe("downloading");
    expect(
      Number(
        await page
          .getByTestId("progress-percent")
          .textContent()
          .then((t) => t?.replace("%", "")),
      ),
    ).toBeLessThan(90);
    await page.getByTestId("cancel").click();
    expect(await waitIdle(page, ["empty"])).toBe("empty");
    await expect(page.locator("body")).toHaveAttribute("data-cancelled", "1");
    await expect(page.getByTestId("progress")).toHaveCount(0);
    const inspect = pyInspect(SMALL);
    await page.goto(`./#v=1&src=${encodeURIComponent(`${srv.url}/cors/${SMALL}`)}`);
    await waitIdle(page);
    expect(Number(await page.getByTestId("summary-trace-entries").getAttribute("data-value"))).toBe(
      inspect.traceEntries,
    );
    expect(errors).toEqual([]);
  });

  test("the link's content hash is SHA-256 over each 4 MiB piece's SHA-256 (a file of three pieces)", async ({
    page,
  }) => {
    // a real snapshot with 7 MiB after its STOP (read, with a note): 9 MiB, so three pieces
    const bytes = Buffer.concat([readFileSync(real(SMALL)), Buffer.alloc(7 << 20, 0x5a)]);
    const piece = 4 << 20;
    const digests: Buffer[] = [];
    for (let at = 0; at < bytes.length; at += piece)
      digests.push(
        createHash("sha256")
          .update(bytes.subarray(at, at + piece))
          .digest(),
      );
    expect(digests.length).toBe(3);
    const want = createHash("sha256").update(Buffer.concat(digests)).digest("hex").slice(0, 32);
    await page.goto("./");
    await dropFile(page, real(SMALL), bytes);
    await waitIdle(page);
    await page.getByTestId("copy-link").click();
    const link = await page.getByTestId("link-text").inputValue();
    expect(new URLSearchParams(new URL(link).hash.slice(1)).get("hash")).toBe(want);
  });

  test("a link made from a dropped file carries its name and hash, asks for it, and checks the one dropped", async ({
    page,
    context,
    baseURL,
  }) => {
    const errors = watchConsole(page);
    await page.goto("./");
    await dropFile(page, real(SMALL));
    await waitIdle(page);
    // Zoom and pin something, then copy the link.
    const c = (await page.getByTestId("timeline-canvas").boundingBox())!;
    const whole = await timeline(page);
    await page.mouse.move(c.x + c.width * 0.5, c.y + c.height * 0.5);
    await page.mouse.wheel(0, -500);
    // the wheel zoomed in: the visible range is narrower than before
    await expect
      .poll(async () => {
        const z = await timeline(page);
        return z.t1 - z.t0;
      })
      .toBeLessThan(whole.t1 - whole.t0);
    await waitIdle(page);
    const body = page.locator("body");
    const before = await body.getAttribute("data-moment");
    await page.mouse.click(c.x + c.width * 0.5, c.y + c.height * 0.5);
    // the click pinned an event: the page's one moment is that event (not the peak it opened at)
    await expect(body).not.toHaveAttribute("data-moment", before ?? "");
    await expect(body).toHaveAttribute("data-moment", /^event:\d+$/);
    await waitIdle(page);
    const pinned = (await body.getAttribute("data-moment"))!.slice("event:".length);
    expect(Number(pinned)).toBeGreaterThan(0);
    // the segment map (its own tab) shows the state after that event
    await showTab(page, "Segments");
    await expect(page.getByTestId("segment-map")).toHaveAttribute("data-event", pinned!);
    const view = await timeline(page);
    await page.getByTestId("copy-link").click();
    const link = await page.getByTestId("link-text").inputValue();
    expect(link.startsWith(baseURL!)).toBe(true);
    const params = new URLSearchParams(new URL(link).hash.slice(1));
    expect(params.get("name")).toBe(SMALL);
    expect(params.get("hash")).toMatch(/^[0-9a-f]{32}$/);
    expect(params.has("src")).toBe(false);
    expect(params.get("pin")).toBe(pinned);

    // Opened elsewhere: it asks for the file; a different file is told apart.
    const other = await context.newPage();
    const otherErrors = watchConsole(other);
    await other.goto(link);
    await expect(other.getByTestId("link-prompt")).toBeVisible();
    await expect(other.getByTestId("link-file")).toHaveText(SMALL);
    await dropFile(other, real(INFERENCE));
    await waitIdle(other);
    await expect(other.locator('[data-testid=notice][data-topic=match][data-kind="warn"]')).toContainText(
      `is not the file the link was made from`,
    );
    // The same name with other content is caught by the hash (a fresh load of the link).
    await other.goto("about:blank");
    await other.goto(link);
    await expect(other.getByTestId("link-prompt")).toBeVisible();
    // (bytes after the pickle's STOP are read past, as in torch_npu dumps: still a readable snapshot)
    const changed = Buffer.concat([readFileSync(real(SMALL)), Buffer.from("trailing bytes")]);
    await dropFile(other, real(SMALL), changed);
    await waitIdle(other);
    await expect(other.locator("[data-testid=notice][data-topic=match]")).toContainText(
      "its content differs",
    );
    // The right file: it matches, and the view comes back.
    await other.goto("about:blank");
    await other.goto(link);
    await dropFile(other, real(SMALL));
    await waitIdle(other);
    await expect(other.locator('[data-testid=notice][data-topic=match][data-kind="ok"]')).toContainText(
      "is the file the link was made from",
    );
    const restored = await timeline(other);
    expect(restored.axis).toBe(view.axis);
    expect(Math.abs(restored.t0 - view.t0)).toBeLessThanOrEqual(1);
    expect(Math.abs(restored.t1 - view.t1)).toBeLessThanOrEqual(1);
    await expect(other.locator("body")).toHaveAttribute("data-moment", `event:${pinned}`);
    await showTab(other, "Segments");
    await expect(other.getByTestId("segment-map")).toHaveAttribute("data-event", pinned!);
    expect(errors).toEqual([]);
    expect(otherErrors).toEqual([]);
  });

  test("a link made from two compared files asks for both and restores the comparison and its shared axis", async ({
    page,
    context,
  }) => {
    const errors = watchConsole(page);
    const report = cli(["report", real(INFERENCE), "--compare", real(TRAINING), "--json"]).json;
    await page.goto("./");
    await dropFiles(page, [real(INFERENCE), real(TRAINING)]);
    await waitIdle(page);
    // By default each file has its own time axis, and the link says so.
    const toggle = page.getByTestId("link-toggle");
    await expect(toggle).not.toBeChecked();
    await page.getByTestId("copy-link").click();
    const own = new URLSearchParams(new URL(await page.getByTestId("link-text").inputValue()).hash.slice(1));
    expect([own.get("name"), own.get("name2"), own.get("link")]).toEqual([INFERENCE, TRAINING, "0"]);
    // Turned on (not the default, so the restored page can only have it from the link): link=1.
    // (Escape closes the link box first, as it covers the compare bar.)
    await page.keyboard.press("Escape");
    await expect(page.getByTestId("link-text")).toHaveCount(0);
    await toggle.check();
    await waitIdle(page);
    await page.getByTestId("copy-link").click();
    const link = await page.getByTestId("link-text").inputValue();
    const params = new URLSearchParams(new URL(link).hash.slice(1));
    expect([params.get("name"), params.get("name2"), params.get("link")]).toEqual([INFERENCE, TRAINING, "1"]);

    const other = await context.newPage();
    await other.goto(link);
    await expect(other.getByTestId("link-file")).toHaveText([INFERENCE, TRAINING]);
    // Dropped in the other order: each goes back to its side.
    await dropFiles(other, [real(TRAINING), real(INFERENCE)]);
    await waitIdle(other);
    await expect(other.getByTestId("column-a").getByTestId("column-file")).toHaveText(INFERENCE);
    await expect(other.locator('[data-testid=notice][data-topic=match][data-kind="ok"]')).toHaveCount(2);
    // Peaks compared by default (both files have a trace): the CLI's compare.atPeaks.
    await expect(other.getByTestId("verdict")).toHaveText(report.compare.atPeaks.verdict);
    await expect(other.getByTestId("link-toggle")).toBeChecked();
    expect(errors).toEqual([]);
  });

  test("no request carries a dropped file's bytes, its name or the link", async ({
    page,
    context,
    baseURL,
  }) => {
    const requests: { url: string; method: string; body: number }[] = [];
    context.on("request", (r) =>
      requests.push({ url: r.url(), method: r.method(), body: r.postDataBuffer()?.length ?? 0 }),
    );
    await page.goto("./");
    await dropFile(page, real(INFERENCE));
    await waitIdle(page);
    await page.getByTestId("compare-input").setInputFiles(real(TRAINING));
    await waitIdle(page);
    await page.getByTestId("copy-link").click();
    await expect(page.getByTestId("link-text")).toBeVisible();
    expect(requests.length).toBeGreaterThan(0);
    for (const r of requests) {
      expect(r.method, r.url).toBe("GET");
      expect(r.body, r.url).toBe(0);
      expect(
        r.url.startsWith(baseURL!) || r.url.startsWith("blob:") || r.url.startsWith("data:"),
        r.url,
      ).toBe(true);
      expect(r.url).not.toContain("Wedsonlin");
      expect(r.url).not.toContain("#");
    }
    // Only the page's own assets were fetched.
    const paths = requests.filter((r) => r.url.startsWith(baseURL!)).map((r) => new URL(r.url).pathname);
    for (const p of paths) expect(p, p).toMatch(/^\/(|index\.html|assets\/[\w.-]+\.(js|css))$/);
  });

  test("a capacity typed in What if is kept in the link (cap=, in bytes) and restored from it", async ({
    page,
    context,
  }) => {
    const errors = watchConsole(page);
    // "20GiB" typed: 20 × 2^30 bytes, computed here.
    const capacityBytes = 20 * 2 ** 30;
    await page.goto("./#v=1&src=demo.pickle");
    await waitIdle(page);
    await expect.poll(() => page.evaluate(() => location.hash)).not.toContain("cap=");
    await showTab(page, "What if");
    await page.getByTestId("whatif-capacity-input").fill("20GiB");
    await page.getByRole("button", { name: "Check fit" }).click();
    await waitIdle(page);
    await expect(page.getByTestId("capacity-line")).toHaveAttribute("data-bytes", String(capacityBytes));
    await page.getByTestId("copy-link").click();
    const link = await page.getByTestId("link-text").inputValue();
    expect(new URLSearchParams(new URL(link).hash.slice(1)).get("cap")).toBe(String(capacityBytes));

    const other = await context.newPage();
    const otherErrors = watchConsole(other);
    await other.goto(link);
    await waitIdle(other);
    // The timeline's capacity line, the Summary's "does it fit" and What if's capacity: the typed bytes.
    const line = other.getByTestId("capacity-line");
    await expect(line).toHaveAttribute("data-bytes", String(capacityBytes));
    await expect(line).toHaveAttribute("data-source", "option");
    await showTab(other, "Summary");
    const fits = other.getByTestId("summary-fits");
    await expect(fits).toContainText("as typed in What if");
    await expect(fits.locator(".bytes")).toHaveAttribute("data-bytes", String(capacityBytes));
    await showTab(other, "What if");
    await expect(other.getByTestId("whatif-capacity")).toHaveAttribute("data-value", String(capacityBytes));
    await expect(other.getByTestId("whatif-capacity-input")).toHaveValue(/^20(\.0+)? GiB$/);
    expect(errors).toEqual([]);
    expect(otherErrors).toEqual([]);
  });
});
