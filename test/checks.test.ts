// The five checks and the counters sidecar parser, on planted models (expected numbers by arithmetic here).

import { describe, expect, it } from "vitest";
import { anyFailed, infoFailures, realFailures, runChecks } from "../src/core/checks";
import { CountersParseError, parseCounters } from "../src/core/report/counters";
import { buildModel, MiB } from "./report-fixtures";

const byId = (checks: ReturnType<typeof runChecks>) => Object.fromEntries(checks.map((c) => [c.id, c]));

const counters = (o: Record<string, unknown>) => parseCounters(JSON.stringify(o));

describe("block-tiling", () => {
  it("passes when every segment's blocks add up to total_size, with both numbers", () => {
    const m = buildModel([
      { blocks: [{ size: 2 * MiB }, { size: 1 * MiB, state: "inactive" }] },
      { blocks: [{ size: 512 }, { size: 1536, state: "inactive" }] },
    ]);
    const c = byId(runChecks(m))["block-tiling"];
    expect(c.status).toBe("pass");
    expect(c.actualBytes).toBe(3 * MiB + 2048);
    expect(c.expectedBytes).toBe(3 * MiB + 2048);
  });
  it("fails and names the segments that do not tile", () => {
    const m = buildModel([
      { address: 0x7f0000200000, blocks: [{ size: MiB }] },
      { address: 0x7f0000400000, blocks: [{ size: MiB }], totalSizeBytes: 2 * MiB },
    ]);
    const c = byId(runChecks(m))["block-tiling"];
    expect(c.status).toBe("fail");
    expect(c.severity).toBe("error");
    expect(realFailures(runChecks(m)).map((x) => x.id)).toEqual(["block-tiling"]);
    expect(c.failingSegments).toEqual([
      { device: 0, address: 0x7f0000400000, totalSizeBytes: 2 * MiB, blockSumBytes: MiB },
    ]);
    expect(c.detail).toContain("0x7f0000400000");
    expect(c.detail).toContain("1,048,576 B vs total_size 2,097,152 B");
  });
  it("an empty snapshot tiles trivially", () => {
    expect(byId(runChecks(buildModel([])))["block-tiling"].status).toBe("pass");
  });
});

describe("active-total", () => {
  it("counts pending-free blocks as active but not allocated", () => {
    const m = buildModel([
      {
        blocks: [
          { size: 4 * MiB },
          { size: MiB, state: "active_pending_free" },
          { size: MiB, state: "inactive" },
        ],
      },
    ]);
    const c = byId(runChecks(m))["active-total"];
    expect(c.status).toBe("pass");
    expect(c.numbers).toEqual({
      blockActiveBytes: 5 * MiB,
      activeBytes: 5 * MiB,
      blockAllocatedBytes: 4 * MiB,
      allocatedBytes: 4 * MiB,
    });
  });
  it("fails when the allocated blocks do not add up to Σ allocated_size", () => {
    const m = buildModel([
      { blocks: [{ size: 4 * MiB }], allocatedSizeBytes: 5 * MiB, activeSizeBytes: 4 * MiB },
    ]);
    const c = byId(runChecks(m))["active-total"];
    expect(c.status).toBe("fail");
    expect(c.detail).toContain("difference 1,048,576 B");
  });
});

describe("counter checks", () => {
  const m = buildModel([
    { device: 0, blocks: [{ size: 6 * MiB }, { size: 2 * MiB, state: "inactive" }] },
    { device: 1, blocks: [{ size: 3 * MiB }, { size: MiB, state: "inactive" }] },
  ]);
  it("skip without a sidecar, and say so", () => {
    const c = byId(runChecks(m));
    for (const id of ["reserved-counter", "allocated-counter", "snapshot-vs-peak"]) {
      expect(c[id].status).toBe("skipped");
      expect(c[id].detail).toMatch(/counters sidecar/);
    }
  });
  it("compare the sidecar's device (default: the first device with segments) exactly", () => {
    const c = byId(
      runChecks(m, {
        counters: counters({
          memory_allocated: 6 * MiB,
          memory_reserved: 8 * MiB,
          max_memory_allocated: 6 * MiB,
        }),
      }),
    );
    expect(c["reserved-counter"].status).toBe("pass");
    expect(c["allocated-counter"].status).toBe("pass");
    expect(c["snapshot-vs-peak"].status).toBe("pass");
    const d1 = byId(
      runChecks(m, {
        counters: counters({ device: "cuda:1", memory_allocated: 3 * MiB, memory_reserved: 4 * MiB + 512 }),
      }),
    );
    expect(d1["allocated-counter"].status).toBe("pass");
    expect(d1["reserved-counter"].status).toBe("fail");
    expect(d1["reserved-counter"].actualBytes).toBe(4 * MiB);
    expect(d1["reserved-counter"].expectedBytes).toBe(4 * MiB + 512);
    expect(d1["reserved-counter"].detail).toContain("difference 512 B");
  });
  it("snapshot-vs-peak: within 2% passes, beyond fails (seed numbers: 100.01 MiB vs 130.01 MiB)", () => {
    const snap = 6 * MiB;
    const ok = byId(runChecks(m, { counters: counters({ max_memory_allocated: Math.floor(snap / 0.981) }) }));
    expect(ok["snapshot-vs-peak"].status).toBe("pass");
    const seed = buildModel([{ blocks: [{ size: Math.round((100.01 * MiB) / 512) * 512 }] }]);
    const bad = byId(
      runChecks(seed, { counters: counters({ max_memory_allocated: Math.round(130.01 * MiB) }) }),
    );
    expect(bad["snapshot-vs-peak"].status).toBe("fail");
    expect(bad["snapshot-vs-peak"].detail).toMatch(/gap 30\.00 MiB \(23\.0[0-9]%\)/);
    // a dump away from the peak is information, not a failure: severity info, not among the real failures,
    // while anyFailed (the CLI's exit code 2) still counts it
    expect(bad["snapshot-vs-peak"].severity).toBe("info");
    const all = runChecks(seed, { counters: counters({ max_memory_allocated: Math.round(130.01 * MiB) }) });
    expect(realFailures(all)).toEqual([]);
    expect(infoFailures(all).map((c) => c.id)).toEqual(["snapshot-vs-peak"]);
    expect(anyFailed(all)).toBe(true);
  });
  it("snapshot-vs-peak takes a replayed peak when there is no sidecar, and names its source", () => {
    const c = byId(runChecks(m, { peak: { bytes: 10 * MiB, source: "replayed device_traces" } }))[
      "snapshot-vs-peak"
    ];
    expect(c.status).toBe("fail");
    expect(c.expectedBytes).toBe(10 * MiB);
    expect(c.detail).toContain("replayed device_traces");
  });
});

describe("parseCounters", () => {
  it("reads the sidecar keys", () => {
    const c = parseCounters(
      JSON.stringify({
        memory_allocated: 104868352,
        memory_reserved: 119537664,
        max_memory_allocated: 136325120,
        max_memory_reserved: 140509184,
        memory_stats: { "allocated_bytes.all.current": 104868352, num_alloc_retries: 0, note: "x" },
        device: 0,
        tag: "step2",
        device_total_bytes: 85_899_345_920,
      }),
    );
    expect(c).toEqual({
      memoryAllocatedBytes: 104868352,
      memoryReservedBytes: 119537664,
      maxMemoryAllocatedBytes: 136325120,
      maxMemoryReservedBytes: 140509184,
      device: 0,
      tag: "step2",
      deviceTotalBytes: 85_899_345_920,
      memoryStats: { "allocated_bytes.all.current": 104868352, num_alloc_retries: 0 },
    });
  });
  it("falls back to memory_stats() keys", () => {
    const c = parseCounters(
      JSON.stringify({
        memory_stats: {
          "allocated_bytes.all.current": 5,
          "reserved_bytes.all.current": 7,
          "allocated_bytes.all.peak": 9,
        },
      }),
    );
    expect([c.memoryAllocatedBytes, c.memoryReservedBytes, c.maxMemoryAllocatedBytes, c.device]).toEqual([
      5,
      7,
      9,
      null,
    ]);
  });
  it("says clearly when the text is not such JSON", () => {
    expect(() => parseCounters("not json")).toThrow(CountersParseError);
    expect(() => parseCounters("not json")).toThrow(/not JSON/);
    expect(() => parseCounters("[1,2]")).toThrow(/expected a JSON object/);
    expect(() => parseCounters('{"segments": []}')).toThrow(/none of memory_allocated/);
    expect(() => parseCounters('{"memory_allocated": "lots"}')).toThrow(/byte count/);
    expect(() => parseCounters('{"memory_allocated": 1, "device": "gpu zero"}')).toThrow(/device/);
  });
});
