// buildReport on planted models (categories add up to allocated exactly), and the CLI's exit codes on
// planted files written by Python's own pickle module.

import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { reportCommand } from "../src/cli/report";
import { CATEGORY_NAMES } from "../src/core/attribution";
import { buildReport } from "../src/core/report";
import { parseCounters } from "../src/core/report/counters";
import { renderReportText } from "../src/core/report/text";
import { REAL_STACKS } from "./attribution-real-stacks";
import { python } from "./helpers/python";
import { buildModel, MiB } from "./report-fixtures";

const S = REAL_STACKS;
const sumCats = (c: Record<string, number>) => CATEGORY_NAMES.reduce((n, k) => n + c[k], 0);

describe("buildReport", () => {
  const model = buildModel([
    {
      device: 0,
      blocks: [
        { size: 8 * MiB, frames: S.moduleCudaNative.frames },
        { size: 8 * MiB, frames: S.accumulateGrad.frames },
        {
          size: 3 * MiB + 512,
          state: "active_pending_free",
          frames: S.lightningForwardInsideOptimizerStep.frames,
        },
        { size: 2 * MiB, state: "inactive" },
      ],
    },
    {
      device: 1,
      blocks: [
        { size: 16 * MiB, frames: S.adamInitGroup.frames },
        { size: 1536, frames: S.ownCodeTransfer.frames },
        { size: 512 },
        { size: 4 * MiB, frames: S.vllmKvCache.frames },
      ],
    },
  ]);
  const r = buildReport(model);

  it("totals come from the segment fields, per device and overall", () => {
    expect(r.totals).toEqual({
      reservedBytes: 8 * MiB + 8 * MiB + 3 * MiB + 512 + 2 * MiB + 16 * MiB + 1536 + 512 + 4 * MiB,
      activeBytes: 16 * MiB + 3 * MiB + 512 + 16 * MiB + 2048 + 4 * MiB,
      allocatedBytes: 16 * MiB + 16 * MiB + 2048 + 4 * MiB,
      requestedBytes: 16 * MiB + 16 * MiB + 2048 + 4 * MiB,
    });
    expect(r.devices.map((d) => [d.device, d.allocatedBytes])).toEqual([
      [0, 16 * MiB],
      [1, 20 * MiB + 2048],
    ]);
  });

  it("categories add up to allocated exactly, overall and per device; pending-free is apart", () => {
    expect(r.categories).toEqual({
      parameters: 8 * MiB,
      gradients: 8 * MiB,
      optimizer_state: 16 * MiB,
      activations: 0,
      input: 1536,
      temporary: 0,
      workspace: 0,
      kv_cache: 4 * MiB, // vLLM's KV cache (the real vllmKvCache stack): kv-cache
      other: 0,
      unknown: 512,
    });
    // The frame-less 512 B block: nothing in the file says what it is (no gradient of its size).
    expect(r.unknownBytesByReason).toEqual({
      "before-recording": 512,
      "ring-buffer-evicted": 0,
      "no-stacks-recorded": 0,
      reconstructed: 0,
    });
    expect(r.inferredBytes).toEqual({});
    expect(sumCats(r.categories) + r.reconciliationBytes).toBe(r.totals.allocatedBytes);
    expect(r.reconciliationBytes).toBe(0);
    for (const d of r.devices) expect(sumCats(d.categories)).toBe(d.allocatedBytes);
    expect(r.pendingFreeBytes).toBe(3 * MiB + 512);
    expect(r.checks.map((c) => [c.id, c.status])).toEqual([
      ["block-tiling", "pass"],
      ["active-total", "pass"],
      ["reserved-counter", "skipped"],
      ["allocated-counter", "skipped"],
      ["snapshot-vs-peak", "skipped"],
      ["trace-replay", "skipped"],
    ]);
    // No trace and no sidecar: no peak is known.
    expect(r.peak).toBeNull();
    expect(r.snapshotVsPeakGapBytes).toBeNull();
  });

  it("blocks that do not add up to allocated_size: a reconciliation entry, and active-total fails", () => {
    const bad = buildModel([
      { blocks: [{ size: 4 * MiB, frames: S.adamInitGroup.frames }], allocatedSizeBytes: 5 * MiB },
    ]);
    const rb = buildReport(bad);
    expect(rb.reconciliationBytes).toBe(MiB);
    expect(sumCats(rb.categories) + rb.reconciliationBytes).toBe(rb.totals.allocatedBytes);
    expect(rb.checks.find((c) => c.id === "active-total")?.status).toBe("fail");
  });

  it("top call sites carry site, category, bytes, blocks", () => {
    expect(r.topCallSites[0]).toMatchObject({
      category: "optimizer_state",
      bytes: 16 * MiB,
      blocks: 1,
      rule: "optimizer",
    });
    expect(r.topCallSites[0].site).toBe(
      "/oscar/home/jsolt/FourierNN/counterfactuals.py:127:generate_counterfactuals",
    );
  });

  it("a peak given from elsewhere feeds snapshot-vs-peak when no sidecar is given", () => {
    const rp = buildReport(model, { peak: { bytes: 16 * MiB, source: "replayed device_traces", device: 0 } });
    expect(rp.checks.find((c) => c.id === "snapshot-vs-peak")?.status).toBe("pass");
    const alias = buildReport(model, { peakAllocatedBytes: 32 * MiB, peakSource: "replay" });
    expect(alias.checks.find((c) => c.id === "snapshot-vs-peak")?.status).toBe("fail");
    expect(alias.checks.find((c) => c.id === "snapshot-vs-peak")?.detail).toContain("replay");
  });

  it("the JSON has the documented shape and the text shows PASS/SKIP with numbers", () => {
    expect(Object.keys(r).slice(0, 9)).toEqual([
      "totals",
      "devices",
      "categories",
      "inferredBytes",
      "unknownBytesByReason",
      "workspaceBytes",
      "checks",
      "topCallSites",
      "compare",
    ]);
    expect(r.compare).toBeNull();
    // Library memory: beside the own-code line, the library function it called and the innermost
    // meaningful library frame (vLLM's KV cache allocation), both read from the planted stack.
    const kv = r.topCallSites.find((c) => c.category === "kv_cache");
    const frames = S.vllmKvCache.frames;
    const inner = frames.find(([, , name]) => name === "_allocate_kv_cache");
    expect(inner).toBeDefined();
    expect(kv?.via).toBe("own-code");
    expect(kv?.libraryInnermost).toContain(`cache_engine.py:${inner?.[1]} _allocate_kv_cache`);
    expect(kv?.library).toMatch(/^vllm\//);
    const text = renderReportText(r);
    expect(text).toMatch(/PASS block-tiling/);
    expect(text).toMatch(/SKIP reserved-counter/);
    expect(text).toContain("16.00 MiB");
    expect(JSON.parse(JSON.stringify(r))).toEqual(r);
  });

  it("a sidecar with num_alloc_retries adds a note", () => {
    const rc = buildReport(model, {
      counters: parseCounters(
        JSON.stringify({ memory_allocated: 16 * MiB, memory_stats: { num_alloc_retries: 3 } }),
      ),
    });
    expect(rc.notes.join("\n")).toMatch(/num_alloc_retries = 3/);
  });
});

// ---- CLI on planted files -------------------------------------------------------------------------------

const dir = mkdtempSync(join(tmpdir(), "peakscope-report-"));

/** Writes a snapshot pickle with Python: one segment of `blocks`, optional wrong allocated_size. */
function plant(
  name: string,
  blocks: { size: number; state: string; frames: unknown }[],
  allocatedDelta = 0,
): string {
  const path = join(dir, name);
  const spec = JSON.stringify({ blocks, allocatedDelta });
  python(
    [
      "-c",
      `import json, pickle, sys
spec = json.loads(sys.stdin.read())
addr = 0x7f0000000000
blocks, a = [], addr
for b in spec["blocks"]:
    blocks.append({"address": a, "size": b["size"], "requested_size": b["size"], "state": b["state"],
                   "frames": [{"filename": f[0], "line": f[1], "name": f[2]} for f in b["frames"]]})
    a += b["size"]
total = sum(b["size"] for b in blocks)
alloc = sum(b["size"] for b in blocks if b["state"] == "active_allocated")
seg = {"device": 0, "address": addr, "total_size": total, "allocated_size": alloc + spec["allocatedDelta"],
       "active_size": alloc, "requested_size": alloc, "stream": 0, "segment_type": "large",
       "segment_pool_id": (0, 0), "is_expandable": False, "frames": [], "blocks": blocks}
pickle.dump({"segments": [seg], "device_traces": [[]]}, open(${JSON.stringify(path)}, "wb"))`,
    ],
    spec,
  );
  return path;
}

async function run(args: string[]) {
  let out = "";
  let err = "";
  const code = await reportCommand(args, { stdout: (s) => (out += s), stderr: (s) => (err += s) });
  return { code, out, err };
}

describe("peakscope report CLI", () => {
  const blocks = [
    { size: 8 * MiB, state: "active_allocated", frames: S.moduleCudaNative.frames },
    { size: 2 * MiB, state: "active_allocated", frames: S.windowsPythonOnlyForward.frames },
    { size: 2 * MiB, state: "inactive", frames: [] },
  ];
  const good = plant("good.pickle", blocks);
  const bad = plant("bad.pickle", blocks, 512);

  it("exit 0 when every check passes or is skipped", async () => {
    const r = await run([good]);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/PASS block-tiling/);
    expect(r.err).toBe("");
  });

  it("exit 2 when a check fails (allocated_size does not match its blocks)", async () => {
    const r = await run([bad, "--json"]);
    expect(r.code).toBe(2);
    const j = JSON.parse(r.out);
    expect(j.checks.find((c: { id: string }) => c.id === "active-total").status).toBe("fail");
    expect(j.reconciliationBytes).toBe(512);
  });

  it("picks up FILE.counters.json beside the file; a wrong counter fails with exit 2", async () => {
    const withSidecar = plant("sidecar.pickle", blocks);
    writeFileSync(
      `${withSidecar}.counters.json`,
      JSON.stringify({
        memory_allocated: 10 * MiB,
        memory_reserved: 12 * MiB,
        max_memory_allocated: 10 * MiB,
        device: 0,
      }),
    );
    const r = await run([withSidecar, "--json"]);
    expect(r.code).toBe(0);
    const j = JSON.parse(r.out);
    expect(j.checks.map((c: { id: string; status: string }) => [c.id, c.status])).toEqual([
      ["block-tiling", "pass"],
      ["active-total", "pass"],
      ["reserved-counter", "pass"],
      ["allocated-counter", "pass"],
      ["snapshot-vs-peak", "pass"],
      ["trace-replay", "skipped"],
    ]);
    // The peak comes from the sidecar (this planted file has no trace).
    expect(j.peak).toMatchObject({ source: "counters", allocatedBytes: 10 * MiB });
    const wrong = join(dir, "wrong.counters.json");
    writeFileSync(wrong, JSON.stringify({ memory_allocated: 11 * MiB, memory_reserved: 12 * MiB }));
    const r2 = await run([withSidecar, "--counters", wrong]);
    expect(r2.code).toBe(2);
    expect(r2.out).toMatch(/FAIL allocated-counter .*10\.00 MiB.*11\.00 MiB/);
  });

  it("--compare prints the category deltas and the verdict", async () => {
    const grown = plant("grown.pickle", [
      ...blocks,
      { size: 10 * MiB, state: "active_allocated", frames: S.linuxSameForward.frames },
    ]);
    const r = await run([good, "--compare", grown, "--json"]);
    expect(r.code).toBe(0);
    const j = JSON.parse(r.out);
    expect(j.compare.categories.activations).toBe(10 * MiB);
    expect(j.compare.verdict).toBe("growth +10.00 MiB, all in activations: model.py:39 forward");
    expect(j.compare.callSites[0]).toMatchObject({
      site: "cs336_basics/model.py:39:forward",
      deltaBytes: 10 * MiB,
    });
  });

  it("exit 1 on unreadable input or bad usage, with a message on stderr", async () => {
    const garbage = join(dir, "garbage.pickle");
    writeFileSync(garbage, "this is not a snapshot\n");
    const badSidecar = join(dir, "bad.counters.json");
    writeFileSync(badSidecar, "{not json");
    for (const args of [
      [join(dir, "missing.pickle")],
      [garbage],
      [good, "--counters", badSidecar],
      [good, "--counters", join(dir, "missing.counters.json")],
      [],
      [good, "--frobnicate"],
      [good, "--counters-other", badSidecar],
      [good, "--compare"],
    ]) {
      const r = await run(args);
      expect(r.code, args.join(" ")).toBe(1);
      expect(r.err.length, args.join(" ")).toBeGreaterThan(0);
      expect(r.out).toBe("");
    }
  });
});
