// Hostile files, one after another in one page: pickles that try GLOBAL/REDUCE, 100k-deep nesting, huge
// declared lengths, random bytes, files cut at many offsets, frame names holding HTML. Each ends in the
// reader's own error (the same message as the CLI's reader) or a correct rendering (the generator's
// counts); snapshot strings stay text (no element is ever made from them, no script runs); and the page
// opens the next file (its count from Python's unpickler).

import { execFileSync, spawnSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { expect, test } from "@playwright/test";
import { dropFile, numberOf, ROOT, real, waitIdle, watchConsole } from "./helpers";

/** The CLI reader's message for each file (null when it reads), from one Node process. */
function readerMessages(paths: string[]): Record<string, string | null> {
  const r = spawnSync(process.execPath, [join(ROOT, "e2e/tools/read-errors.mjs"), ...paths], {
    cwd: ROOT,
    encoding: "utf8",
  });
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout);
}

test("hostile and broken files: an error or a correct rendering, never markup; the page stays usable", async ({
  page,
}, info) => {
  test.setTimeout(120_000);
  const errors = watchConsole(page);
  const dialogs: string[] = [];
  page.on("dialog", (d) => {
    dialogs.push(d.message());
    void d.dismiss();
  });
  const dir = info.outputPath("hostile");
  execFileSync("python3", [join(ROOT, "test/gen/generate.py"), "hostile", dir], { stdio: "pipe" });
  const manifest = JSON.parse(readFileSync(join(dir, "manifest.json"), "utf8"));
  // A real file cut at many offsets (a download that broke off).
  const source = real("drisspg__transformer_nuggets__mini_snapshot.pickle");
  const whole = readFileSync(source);
  const cuts = [1, 2, 3, 11, 100, 1000, 4096, 10_000, 25_000, 40_000, whole.length - 100, whole.length - 1];
  const cutFiles = cuts.map((n) => {
    const path = join(dir, `cut-${n}.pickle`);
    writeFileSync(path, whole.subarray(0, n));
    return { file: basename(path), expect: "refuse", what: `the first ${n} bytes of a real snapshot` };
  });
  const cases: {
    file: string;
    expect: string;
    what: string;
    xss?: string;
    segments?: number;
    traceEntries?: number;
  }[] = [...manifest.files, ...cutFiles];
  const messages = readerMessages(cases.map((c) => join(dir, c.file)));
  // The markup case and the loading case are in the manifest (so their checks below do run).
  expect(cases.some((c) => c.xss && c.expect === "load" && c.traceEntries !== undefined)).toBe(true);

  await page.goto("./");
  for (const c of cases) {
    const path = join(dir, c.file);
    await dropFile(page, path);
    const state = await waitIdle(page, ["ready", "error"]);
    const want = messages[path];
    // The generator's manifest decides; where it allows both, the CLI's reader does (on every path the
    // page must agree with the reader: its message, or the file's counts).
    const expected =
      c.expect === "refuse" ? "error" : c.expect === "load" ? "ready" : want === null ? "ready" : "error";
    expect(state, `${c.file}: ${c.what}`).toBe(expected);
    expect(want === null ? "ready" : "error", `${c.file}: the CLI's reader agrees`).toBe(state);
    if (state === "error") {
      await expect(page.getByTestId("error-message"), c.file).toHaveText(want!);
    } else {
      await expect(page.getByTestId("summary-file")).toHaveText(c.file);
      // The generator's counts for the files it means to load.
      if (c.segments !== undefined) expect(await numberOf(page, "summary-segments"), c.file).toBe(c.segments);
      if (c.traceEntries !== undefined) {
        expect(await numberOf(page, "summary-trace-entries"), c.file).toBe(c.traceEntries);
      }
    }
    if (c.xss) {
      // The markup is on the page as text: in the call sites and stacks, never as an element.
      await expect(page.getByTestId("side-panel")).toContainText(c.xss);
    }
    expect(await page.locator("img, iframe, object, embed, script:not([src])").count(), c.file).toBe(0);
  }
  expect(dialogs, "no script from a file ran").toEqual([]);

  // The next real file opens normally: its trace entries as Python's unpickler counts them.
  const next = "ZidongLiu__DeComFL__memory.pickle";
  const py = spawnSync("python3", [join(ROOT, "test/tools/py_inspect.py"), real(next)], { encoding: "utf8" });
  expect(py.status, py.stderr).toBe(0);
  const want = JSON.parse(py.stdout);
  await dropFile(page, real(next));
  await waitIdle(page);
  await expect(page.getByTestId("error")).toHaveCount(0);
  await expect(page.getByTestId("summary-file")).toHaveText(next);
  expect(await numberOf(page, "summary-trace-entries")).toBe(want.traceEntries);
  expect(errors).toEqual([]);
});
