// What PyTorch 2.10–2.14 adds to a snapshot (issue 24), against the generator's truth
// (`test/gen/generate.py newest`, memgen/newest.py): the newer recording options' file shapes, the memory
// outside the allocator at an OOM, pinned host memory, forward stacks and tags. Expected numbers come
// from the generator's own simulation, never from the code under test.

import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { reportCommand } from "../src/cli/report";
import { runTree } from "../src/cli/tree";
import { SnapshotAssembler } from "../src/core/model/assemble";
import { Unpickler } from "../src/core/pickle/unpickler";
import type { ReportJson } from "../src/core/report";
import { fingerprint } from "./helpers/model";
import { growReal, HAVE_REAL, python, REPO } from "./helpers/python";

const dir = mkdtempSync(join(tmpdir(), "peakscope-newest-"));
python([join(REPO, "test/gen/generate.py"), "newest", dir]);
const SHAPES = ["skip-actions", "no-traces", "no-frames-key", "empty-device"] as const;

const truthOf = (name: string): any =>
  JSON.parse(readFileSync(join(dir, `${name}.pickle.truth.json`), "utf8"));

async function cli(
  run: typeof reportCommand,
  args: string[],
): Promise<{ code: number; out: string; err: string }> {
  let out = "";
  let err = "";
  const code = await run(args, { stdout: (s) => (out += s), stderr: (s) => (err += s) });
  return { code, out, err };
}

async function reportJson(name: string, extra: string[] = []): Promise<ReportJson> {
  const r = await cli(reportCommand, [join(dir, `${name}.pickle`), "--json", ...extra]);
  expect(r.err).toBe("");
  return JSON.parse(r.out) as ReportJson;
}

/** Reads a pickle through one path (generic unpickler, JavaScript scanner, WebAssembly scanner). */
function readVia(bytes: Uint8Array, path: "generic" | "js" | "wasm", chunkBytes: number) {
  const assembler = new SnapshotAssembler({ wasm: path === "wasm" });
  const u = new Unpickler({
    hooks: assembler.hooks,
    scanner: path === "generic" ? undefined : assembler.scanner,
    totalBytes: bytes.length,
  });
  assembler.attachMemo(u.memo);
  for (let at = 0; at < bytes.length; at += chunkBytes) u.feed(bytes.subarray(at, at + chunkBytes));
  return assembler.finish(u.finish(), {
    fileName: "t.pickle",
    byteLength: bytes.length,
    format: "pickle",
    pickleProtocol: u.protocol,
    notes: [],
  });
}

describe("newer files' shapes (skip_actions, include_traces=False, no frames key, an empty device)", () => {
  for (const shape of SHAPES) {
    it(`${shape}: read, replayed and checked without false alarms`, async () => {
      const truth = truthOf(shape);
      const r = await reportJson(shape);
      expect(r.totals.allocatedBytes).toBe(truth.snapshot.allocatedBytes);
      expect(r.totals.reservedBytes).toBe(truth.snapshot.reservedBytes);
      for (const c of r.checks) {
        if (c.id === "snapshot-vs-peak") {
          // the truth: the dump is 24 MiB below the run's peak, so this check must say so
          expect(truth.maxMemoryAllocated - truth.snapshot.allocatedBytes).toBeGreaterThan(
            0.02 * truth.maxMemoryAllocated,
          );
          expect(c.status).toBe("fail");
        } else
          expect([c.id, c.status]).toEqual([
            c.id,
            shape === "no-traces" && c.id === "trace-replay" ? "skipped" : "pass",
          ]);
      }
      if (shape !== "no-traces") {
        expect(r.peak?.allocatedBytes).toBe(truth.peak.allocatedBytes);
        for (const [k, v] of Object.entries(truth.peak.categories))
          expect([k, r.peak?.categories[k] ?? 0]).toEqual([k, v]);
      }
    });
  }

  it("says what the file lacks", async () => {
    const skip = await reportJson("skip-actions");
    expect(skip.notes.join("\n")).toMatch(
      /no free_requested \/ segment_alloc \/ segment_free entries .*skip_actions/,
    );
    const none = await reportJson("no-traces");
    expect(none.notes.join("\n")).toMatch(/no trace entries .*include_traces=False/);
    const plain = await reportJson("no-frames-key");
    expect(plain.notes.join("\n")).not.toMatch(/skip_actions|include_traces/);
  });

  it("a device listed in device_traces with no segments: an empty tree, zero rows, exit 0", async () => {
    const f = join(dir, "empty-device.pickle");
    const text = await cli(runTree, [f, "--device", "0"]);
    expect(text.code).toBe(0);
    expect(text.out).toMatch(/0 B, rounded block bytes\) in 0 blocks/);
    const json = await cli(runTree, [f, "--device", "0", "--json"]);
    expect(json.code).toBe(0);
    const tree = JSON.parse(json.out);
    expect([tree.totalBytes, tree.root.children.length]).toEqual([0, 0]);
    const csv = await cli(runTree, [f, "--device", "0", "--csv"]);
    expect(csv.out.trim().split("\n")).toHaveLength(2); // the header and the root
    const peak = await cli(runTree, [f, "--device", "0", "--at", "peak"]);
    expect(peak.code).toBe(0);
    // the device that holds the run still has its whole tree
    const one = await cli(runTree, [f, "--device", "1", "--json"]);
    expect(JSON.parse(one.out).totalBytes).toBe(truthOf("empty-device").snapshot.allocatedBytes);
    // a device that is not listed anywhere is still an error
    expect((await cli(runTree, [f, "--device", "5"])).code).toBe(1);
  });

  it("the generic unpickler and both scanners read every newest file identically", () => {
    for (const name of ["full", ...SHAPES]) {
      const bytes = new Uint8Array(readFileSync(join(dir, `${name}.pickle`)));
      for (const chunk of [bytes.length, 4096, 777]) {
        const generic = fingerprint(readVia(bytes, "generic", chunk));
        expect(fingerprint(readVia(bytes, "js", chunk))).toEqual(generic);
        expect(fingerprint(readVia(bytes, "wasm", chunk))).toEqual(generic);
      }
    }
  });
});

describe.skipIf(!HAVE_REAL)("pool_id on every trace entry (torch ≥ 2.10)", () => {
  it("a real training trace with a new pool tuple in each entry: the WebAssembly scanner reads it, as the generic path does", () => {
    // torch writes each entry's pool_id as a new tuple (py::make_tuple): two ints, TUPLE2, MEMOIZE each
    // time; every 7th entry here in a private pool, as a CUDA graph's allocations are
    const grown = join(dir, "grown.pickle");
    growReal("Wedsonlin__assignment2-systems__medium_256_training_memory_snapshot.pickle", 6, grown);
    const pooled = join(dir, "grown-pool.pickle");
    const { entries } = JSON.parse(
      python(["test/gen/generate.py", "pool-ids", grown, pooled, "--private-every", "7"]),
    );
    const bytes = new Uint8Array(readFileSync(pooled));
    for (const chunk of [bytes.length, 1 << 20]) {
      const generic = readVia(bytes, "generic", chunk);
      expect(generic.traces[0].length).toBe(entries);
      expect(fingerprint(readVia(bytes, "js", chunk))).toEqual(fingerprint(generic));
      const wasm = readVia(bytes, "wasm", chunk);
      expect(fingerprint(wasm)).toEqual(fingerprint(generic));
      // the scanner's fast path, not the generic path entry by entry: a few entries at the start and
      // at each chunk's end are left to JavaScript
      expect(wasm.source.traceEntriesByWasm).toBeGreaterThan(entries * 0.99);
    }
  });
});

describe("memory outside the caching allocator at an OOM", () => {
  it("timeline.oom[] gains deviceFreeBytes, requestBytes and outsideAllocatorBytes (total from the sidecar)", async () => {
    const t = truthOf("full").newest.oom;
    const r = await reportJson("full");
    expect(r.timeline.oom).toHaveLength(1);
    const o = r.timeline.oom[0];
    expect(o.deviceFreeBytes).toBe(t.deviceFreeBytes);
    expect(o.requestBytes).toBe(t.requestBytes);
    expect(o.outsideAllocatorBytes).toBe(t.outsideAllocatorBytes);
    expect(o.message).toMatch(/held outside PyTorch's caching allocator/);
  });

  it("null without the device total; --device-total gives it", async () => {
    const t = truthOf("full").newest.oom;
    const empty = join(dir, "no-total.counters.json");
    const { writeFileSync } = await import("node:fs");
    const c = JSON.parse(readFileSync(join(dir, "full.pickle.counters.json"), "utf8"));
    delete c.device_total_bytes;
    writeFileSync(empty, JSON.stringify(c));
    const without = await reportJson("full", ["--counters", empty]);
    expect(without.timeline.oom[0].outsideAllocatorBytes).toBeNull();
    expect(without.timeline.oom[0].message).toMatch(/total is unknown/);
    const given = await reportJson("full", [
      "--counters",
      empty,
      "--device-total",
      String(t.deviceTotalBytes),
    ]);
    expect(given.timeline.oom[0].outsideAllocatorBytes).toBe(t.outsideAllocatorBytes);
  });

  it("whatif's fit uses it: the capacity is the total less what was held outside", async () => {
    const { runWhatIf } = await import("../src/cli/whatif");
    const t = truthOf("full").newest.oom;
    const r = await cli(runWhatIf, [join(dir, "full.pickle"), "--json"]);
    const j = JSON.parse(r.out);
    expect(j.capacity.bytes).toBe(t.deviceTotalBytes - t.outsideAllocatorBytes);
    expect(j.fits).toBe(false); // 80 GiB asked for on an 80 GiB device
  });
});

describe("pinned host memory (host_segments / host_traces)", () => {
  it("report --json's host equals the generator's host simulation exactly", async () => {
    const t = truthOf("full").newest.host;
    const r = await reportJson("full");
    expect(r.host).not.toBeNull();
    const h = r.host as NonNullable<ReportJson["host"]>;
    expect({
      segments: h.segments,
      reservedBytes: h.reservedBytes,
      allocatedBytes: h.allocatedBytes,
      peakAllocatedBytes: h.peakAllocatedBytes,
      traceEntries: h.traceEntries,
    }).toEqual({
      segments: t.segments,
      reservedBytes: t.reservedBytes,
      allocatedBytes: t.allocatedBytes,
      peakAllocatedBytes: t.peakAllocatedBytes,
      traceEntries: t.traceEntries,
    });
    // its own lane: the device totals are the known run's, untouched
    expect(r.totals.allocatedBytes).toBe(truthOf("full").snapshot.allocatedBytes);
    expect(r.totals.reservedBytes).toBe(truthOf("full").snapshot.reservedBytes);
  });

  it("null when the file has none; the text and HTML reports show it", async () => {
    expect((await reportJson("skip-actions")).host).toBeNull();
    const t = truthOf("full").newest.host;
    const text = await cli(reportCommand, [join(dir, "full.pickle")]);
    expect(text.out).toMatch(
      new RegExp(
        `host \\(pinned\\) memory: ${t.segments} pinned blocks, ${t.traceEntries} host trace entries`,
      ),
    );
    const html = join(dir, "full.html");
    await cli(reportCommand, [join(dir, "full.pickle"), "--html", html]);
    const page = readFileSync(html, "utf8");
    expect(page).toContain(`data-testid="host-peak" data-value="${t.peakAllocatedBytes}"`);
    expect(page).toContain(`data-testid="host-reserved" data-value="${t.reservedBytes}"`);
  });
});

describe("forward stacks and tags", () => {
  it("forwardSite bytes at the peak per forward line equal the truth (report --json peak.topCallSites)", async () => {
    const t = truthOf("full");
    const r = await reportJson("full");
    expect(r.peak?.eventIndex).toBe(t.peak.eventIndex);
    const byForward: Record<string, number> = {};
    for (const s of r.peak?.topCallSites ?? [])
      if (s.forwardSite) byForward[s.forwardSite] = (byForward[s.forwardSite] ?? 0) + s.bytes;
    expect(byForward).toEqual(t.newest.forwardSitesAtPeak);
    // files without forward stacks carry no forwardSite at all
    const plain = await reportJson("skip-actions");
    expect(plain.peak?.topCallSites.some((s) => "forwardSite" in s)).toBe(false);
    expect(plain.topCallSites.some((s) => "forwardSite" in s)).toBe(false);
  });

  it("tree --by forward at the peak: one child per forward line with the truth's bytes", async () => {
    const t = truthOf("full").newest.forwardSitesAtPeak as Record<string, number>;
    const r = await cli(runTree, [join(dir, "full.pickle"), "--by", "forward", "--at", "peak", "--json"]);
    expect(r.code).toBe(0);
    const tree = JSON.parse(r.out);
    const want = Object.fromEntries(
      Object.entries(t).map(([site, bytes]) => {
        const [file, line, fn] = site.split(":");
        return [`${file.split("/").at(-1)}:${line} ${fn}`, bytes];
      }),
    );
    const got = Object.fromEntries(
      tree.root.children
        .filter((c: { name: string }) => c.name !== "(no forward stack)")
        .map((c: { name: string; bytes: number }) => [c.name, c.bytes]),
    );
    expect(got).toEqual(want);
    expect(tree.totalBytes).toBe(truthOf("full").peak.allocatedBytes);
  });

  for (const key of ["phase", "step"]) {
    it(`tree --by metadata:${key}: children equal the truth per value`, async () => {
      const t = truthOf("full").newest.metadataAtSnapshot[key] as Record<string, number>;
      const r = await cli(runTree, [join(dir, "full.pickle"), "--by", `metadata:${key}`, "--json"]);
      expect(r.code).toBe(0);
      const tree = JSON.parse(r.out);
      const got = Object.fromEntries(
        tree.root.children.map((c: { name: string; bytes: number }) => [c.name, c.bytes]),
      );
      expect(got).toEqual(t);
    });
  }

  it("--search matches metadata values in the grouped tree", async () => {
    const t = truthOf("full").newest.metadataAtSnapshot.phase as Record<string, number>;
    const r = await cli(runTree, [join(dir, "full.pickle"), "--by", "metadata:phase", "--search", "opt"]);
    expect(r.out).toMatch(new RegExp(`search "opt": ${(t.opt / 2 ** 20).toFixed(2)} MiB`));
  });
});
