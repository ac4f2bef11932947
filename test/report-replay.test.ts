// `peakscope report` with the replay section, end to end on the generator's known run: the peak, its
// composition, the trace-replay check and `--at EVENT`, against the generator's own ground truth.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { main } from "../src/cli/main";
import { python } from "./helpers/python";

const dir = mkdtempSync(join(tmpdir(), "peakscope-report-replay-"));
const mid = join(dir, "mid.pickle");
const truncated = join(dir, "truncated.pickle");
let truth: {
  peak: { allocatedBytes: number; eventIndex: number; categories: Record<string, number> };
  traceEntries: number;
  snapshot: { allocatedBytes: number };
};

async function run(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(["report", ...args], { stdout: (s) => out.push(s), stderr: (s) => err.push(s) });
  return { code, out: out.join(""), err: err.join("") };
}

beforeAll(() => {
  python(["test/gen/generate.py", "known", "--moment", "mid_backward", mid]);
  python(["test/gen/generate.py", "known", "--moment", "step3", "--truncate-trace", "60", truncated]);
  truth = JSON.parse(readFileSync(`${mid}.truth.json`, "utf8"));
});

describe("report: the peak from the replayed trace", () => {
  it("the peak, its event and its composition equal the generator's truth", async () => {
    const r = await run([mid, "--json"]);
    const j = JSON.parse(r.out);
    expect(j.peak.source).toBe("trace");
    expect(j.peak.allocatedBytes).toBe(truth.peak.allocatedBytes);
    expect(j.peak.eventIndex).toBe(truth.peak.eventIndex);
    expect(j.peak.timeUs).toEqual(expect.any(Number));
    expect(j.peak.categories).toEqual(truth.peak.categories);
    const sites = j.peak.topCallSites.reduce((n: number, s: { bytes: number }) => n + s.bytes, 0);
    expect(sites).toBe(truth.peak.allocatedBytes);
    expect(j.snapshotVsPeakGapBytes).toBe(truth.peak.allocatedBytes - truth.snapshot.allocatedBytes);
    expect(j.timeline.events).toBe(truth.traceEntries);
    expect(j.timeline.hasTime).toBe(true);
    expect(j.checks.find((c: { id: string }) => c.id === "trace-replay").status).toBe("pass");
    // The sidecar beside the file has max_memory_allocated: the check uses it, and it fails (11% gap).
    expect(r.code).toBe(2);
    expect(j.checks.find((c: { id: string }) => c.id === "snapshot-vs-peak").detail).toContain(
      "max_memory_allocated",
    );
  });

  it("without a sidecar, snapshot-vs-peak uses the replayed peak and says so", async () => {
    rmSync(`${mid}.counters.json`, { force: true });
    const r = await run([mid, "--json"]);
    const check = JSON.parse(r.out).checks.find((c: { id: string }) => c.id === "snapshot-vs-peak");
    expect(check.status).toBe("fail");
    expect(check.detail).toContain("replayed trace");
    expect(r.code).toBe(2);
  });

  it("--at EVENT gives the state at that event: at the peak, the peak's composition", async () => {
    const r = await run([mid, "--at", String(truth.peak.eventIndex), "--json"]);
    expect(r.code).toBe(0);
    const s = JSON.parse(r.out);
    expect(s.eventIndex).toBe(truth.peak.eventIndex);
    expect(s.allocatedBytes).toBe(truth.peak.allocatedBytes);
    expect(s.categories).toEqual(truth.peak.categories);
    const bad = await run([mid, "--at", "100000"]);
    expect(bad.code).toBe(1);
    expect(bad.err).toMatch(/past the end of device 0's trace/);
  });

  it("a ring-buffer-truncated trace still replays to the snapshot's state", async () => {
    const j = JSON.parse((await run([truncated, "--json"])).out);
    expect(j.timeline.events).toBe(60);
    expect(j.checks.find((c: { id: string }) => c.id === "trace-replay").status).toBe("pass");
  });
});
