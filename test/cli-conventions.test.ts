// CLI conventions: `peakscope --help` / `help` exit 0 with the usage; every size the text output prints
// follows one rule (MiB with two decimals, exact bytes beside), the compare verdict included.

import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { main } from "../src/cli/main";
import { python, REAL_DIR } from "./helpers/python";

function io() {
  const out: string[] = [];
  const err: string[] = [];
  return { out, err, io: { stdout: (s: string) => out.push(s), stderr: (s: string) => err.push(s) } };
}

async function run(args: string[]) {
  const r = io();
  const code = await main(args, r.io);
  return { code, out: r.out.join(""), err: r.err.join("") };
}

describe("help", () => {
  it("peakscope --help, -h and help print the usage and exit 0; no command exits 1", async () => {
    for (const args of [["--help"], ["-h"], ["help"]]) {
      const r = io();
      expect(await main(args, r.io)).toBe(0);
      const text = r.out.join("");
      for (const c of ["inspect", "report", "view"]) expect(text).toContain(`peakscope ${c} `);
      expect(r.err).toEqual([]);
    }
    const r = io();
    expect(await main([], r.io)).toBe(1);
    expect(r.err.join("")).toContain("usage:");
    const u = io();
    expect(await main(["frobnicate"], u.io)).toBe(1);
    expect(u.err.join("")).toContain("unknown command frobnicate");
  });

  it("COMMAND --help prints that command's usage and exits 0", async () => {
    for (const c of ["inspect", "report", "view"]) {
      const r = io();
      expect(await main([c, "--help"], r.io)).toBe(0);
      expect(r.out.join("")).toContain(`peakscope ${c} FILE`);
    }
  });
});

describe("one unit rule for every size the CLI prints", () => {
  const dir = mkdtempSync(join(tmpdir(), "peakscope-units-"));
  const a = join(dir, "step2.pickle");
  const b = join(dir, "mid.pickle");
  python(["test/gen/generate.py", "known", a]);
  python(["test/gen/generate.py", "known", "--moment", "mid_backward", b]);
  const real = (f: string) => resolve(REAL_DIR, f);
  const INFERENCE = real("Wedsonlin__assignment2-systems__medium_256_inference_memory_snapshot.pickle");
  const TRAINING = real("Wedsonlin__assignment2-systems__medium_256_training_memory_snapshot.pickle");

  it("inspect, report, --at, --compare, tree, whatif and ranks print MiB with two decimals, never KiB / GiB", async () => {
    const texts: string[] = [];
    for (const args of [
      ["inspect", a],
      ["inspect", real("Constructor-Sun__code_location__memory_snapshot.pickle")],
      ["report", a],
      ["report", a, "--at", "50"],
      ["report", a, "--compare", b],
      ["report", INFERENCE, "--compare", TRAINING],
      ["tree", TRAINING, "--at", "peak"],
      ["whatif", TRAINING, "--suggest"],
      ["ranks", INFERENCE, TRAINING, a],
    ]) {
      const r = await run(args);
      expect([0, 2], args.join(" ")).toContain(r.code);
      texts.push(r.out);
    }
    const all = texts.join("\n");
    expect(all).not.toMatch(/\b(KiB|GiB|TiB|kB|KB|MB|GB)\b/);
    const sizes = [...all.matchAll(/([-+−]?[\d.]+) MiB/g)].map((m) => m[1]);
    expect(sizes.length).toBeGreaterThan(50);
    for (const s of sizes) expect(s, s).toMatch(/^[-+]?\d+\.\d\d$/);
  });

  it("the compare verdict and the delta table say the same number in the same unit", async () => {
    const json = JSON.parse((await run(["report", INFERENCE, "--compare", TRAINING, "--json"])).out);
    const text = (await run(["report", INFERENCE, "--compare", TRAINING])).out;
    const total = json.compare.totalDeltaBytes;
    const mib = `${total < 0 ? "-" : "+"}${(Math.abs(total) / 2 ** 20).toFixed(2)} MiB`;
    expect(json.compare.verdict).toContain(mib);
    expect(text).toContain(json.compare.verdict);
    for (const [name, d] of Object.entries(json.compare.categories) as [string, number][]) {
      const want = `${d < 0 ? "-" : "+"}${(Math.abs(d) / 2 ** 20).toFixed(2)} MiB`;
      expect(text, name).toMatch(new RegExp(`\\n    ${name}\\s+\\${want.replace(".", "\\.")}`));
    }
  });
});
