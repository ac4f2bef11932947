// Library call sites and the pairing rule (issue 24, items 6 and 7), against the generator's truth
// (`test/gen/generate.py libraries`, memgen/libraries.py) and, on the real vLLM + Megatron file, against
// Python reading that file's frames. Expected numbers never come from the code under test.

import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { reportCommand } from "../src/cli/report";
import { CATEGORY_NAMES } from "../src/core/attribution/rules";
import type { ReportJson } from "../src/core/report";
import { HAVE_REAL, python, REAL_DIR, REPO } from "./helpers/python";

const dir = mkdtempSync(join(tmpdir(), "peakscope-libraries-"));
python([join(REPO, "test/gen/generate.py"), "libraries", dir]);

const truthOf = (name: string): any =>
  JSON.parse(readFileSync(join(dir, `${name}.pickle.truth.json`), "utf8"));

async function reportJson(path: string): Promise<ReportJson> {
  let out = "";
  let err = "";
  const code = await reportCommand([path, "--json"], {
    stdout: (s) => (out += s),
    stderr: (s) => (err += s),
  });
  expect(err).toBe("");
  const r = JSON.parse(out) as ReportJson;
  // Exit 2 says a check failed; none of severity error may (handopt's snapshot is below its peak: info).
  expect(r.checks.filter((c) => c.status === "fail" && c.severity === "error")).toEqual([]);
  expect(code === 0 || code === 2).toBe(true);
  return r;
}

/** The truth's categories with every category the tool names (absent ones 0). */
const allCategories = (c: Record<string, number>) =>
  Object.fromEntries(CATEGORY_NAMES.map((n) => [n, c[n] ?? 0]));

describe("library call sites: KV caches and fused parameter / gradient buffers", () => {
  it("serving: vLLM / SGLang / Hugging Face KV caches, Megatron and FSDP buffers exactly as the truth", async () => {
    const truth = truthOf("serving");
    const r = await reportJson(join(dir, "serving.pickle"));
    expect(r.categories).toEqual(allCategories(truth.categories));
    expect(r.categories.kv_cache).toBeGreaterThan(0);
    expect(r.totals.allocatedBytes).toBe(truth.allocatedBytes);
    // Named from their own stacks: nothing inferred.
    expect(Object.values(r.inferredBytes).reduce((n, v) => n + v, 0)).toBe(0);
  });
});

describe("pairs-traced-moments: a hand-written optimizer's traced moments name the pre-trace weights and .grad", () => {
  it("parameters and gradients exactly, marked inferred", async () => {
    const truth = truthOf("handopt");
    const r = await reportJson(join(dir, "handopt.pickle"));
    expect(r.categories).toEqual(allCategories(truth.categories));
    expect(r.inferredBytes.parameters).toBe(truth.categories.parameters);
    expect(r.inferredBytes.gradients).toBe(truth.categories.gradients);
  });

  it("one more pre-trace block of a size than its moments: that size stays unknown, the others are named", async () => {
    const truth = truthOf("handopt-unpaired");
    expect(truth.unpairedBytes).toBeGreaterThan(0);
    const r = await reportJson(join(dir, "handopt-unpaired.pickle"));
    expect(r.categories.unknown).toBe(truth.unpairedBytes);
    expect(r.categories.optimizer_state).toBe(truth.categories.optimizer_state);
    // What is named is what the truth says of the paired sizes: the rest of parameters and gradients.
    const namedTruth =
      truth.categories.parameters + truth.categories.gradients + truth.categories.input - truth.unpairedBytes;
    expect(r.categories.parameters + r.categories.gradients).toBe(namedTruth);
    expect(r.categories.parameters).toBe(r.categories.gradients);
  });
});

/** Python reading the verl file's frames: bytes of active blocks by the library frame that made them. */
const VERL_PY = `
import json, pickle, sys
snap = pickle.load(open(sys.argv[1], "rb"))
out = {"kv": 0, "megatronParam": 0, "megatronGrad": 0, "allocated": 0}
lines = {}
blocks = []
for s in snap["segments"]:
    for b in s["blocks"]:
        if b["state"] != "active_allocated": continue
        out["allocated"] += b["size"]
        fr = b.get("frames", [])
        py = [f for f in fr if f["filename"].endswith(".py")]
        inner = py[0] if py else None
        if inner and inner["filename"].endswith("vllm/worker/cache_engine.py"):
            out["kv"] += b["size"]
        elif inner and inner["filename"].endswith("megatron/core/distributed/param_and_grad_buffer.py") and inner["name"] == "__init__":
            blocks.append((inner["line"], b["size"]))
last = max(l for l, _ in blocks)
for l, n in blocks:
    out["megatronGrad" if l == last else "megatronParam"] += n
print(json.dumps(out))
`;

describe.runIf(HAVE_REAL)("the real vLLM + Megatron file (verl)", () => {
  it("vLLM's KV cache is kv_cache, Megatron's grad_data gradients and param_data parameters", async () => {
    const file = join(REAL_DIR, "volcengine__verl__mem.pickle");
    const py = JSON.parse(python(["-c", VERL_PY, file]));
    const r = await reportJson(file);
    expect(r.categories.kv_cache).toBe(py.kv);
    expect(r.categories.gradients).toBe(py.megatronGrad);
    expect(r.categories.parameters).toBeGreaterThanOrEqual(py.megatronParam);
    expect(CATEGORY_NAMES.reduce((n, c) => n + r.categories[c], 0) + r.reconciliationBytes).toBe(
      py.allocated,
    );
  });
});

describe("kv_cache's colour", () => {
  it("every category has its own colour in the page and in the HTML report", async () => {
    const { categoryColors } = await import("../src/ui/palette");
    const { CATEGORY_COLORS } = await import("../src/report-html/svg");
    const page = categoryColors(CATEGORY_NAMES);
    expect(new Set(page).size).toBe(CATEGORY_NAMES.length);
    const html = CATEGORY_NAMES.map((c) => CATEGORY_COLORS[c]);
    expect(html.every((c) => typeof c === "string")).toBe(true);
    expect(new Set(html).size).toBe(CATEGORY_NAMES.length);
    // The same colour for kv_cache in both places.
    expect(page[CATEGORY_NAMES.indexOf("kv_cache")]).toBe(CATEGORY_COLORS.kv_cache);
  });
});
