// python/peakscope_hook.py against a fake torch (test/capture/fake): the fake records every call the hook
// makes and writes small real snapshots with Python's pickle. Expected values come from the fake's own
// bookkeeping (what it handed out), Python's unpickler (what is in the file) and the file system (modes,
// names); peakscope's reader then checks the dump against its sidecar.

import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { readSnapshotFile } from "../src/cli/read-file";
import { buildReport } from "../src/core/report";
import { parseCounters } from "../src/core/report/counters";
import { pythonPickleJson, REPO } from "./helpers/python";

const FAKE = resolve(REPO, "test/capture/fake");
const FAKE_NPU = resolve(REPO, "test/capture/fake_npu");
const SIDECAR_KEYS = [
  "memory_allocated",
  "memory_reserved",
  "max_memory_allocated",
  "max_memory_reserved",
  "memory_stats",
  "device",
  "tag",
  "time",
];

interface CaseRecord {
  paths: string[];
  calls: [string, unknown[], Record<string, unknown>][];
  warnings: { category: string; message: string; file: string }[];
  snapshots: unknown[];
  expected?: Record<string, any>;
  [k: string]: any;
}

/** Runs one scenario of test/capture/cases.py in a fresh Python process; returns the fake's record. */
function runCase(
  name: string,
  opts: { env?: Record<string, string>; npu?: boolean; dir?: string; umask?: string } = {},
): { rec: CaseRecord; dir: string } {
  const dir = opts.dir ?? mkdtempSync(join(tmpdir(), `peakscope-hook-${name}-`));
  const env: Record<string, string> = { ...(process.env as Record<string, string>) };
  for (const k of ["RANK", "WORLD_SIZE", "LOCAL_RANK", "PEAKSCOPE_DIR", "PEAKSCOPE_STEPS"]) delete env[k];
  Object.assign(env, {
    PYTHONPATH: opts.npu ? `${FAKE}:${FAKE_NPU}` : FAKE,
    PYTHONDONTWRITEBYTECODE: "1",
    ...(opts.npu ? { FAKE_TORCH: "nocuda" } : {}),
    ...opts.env,
  });
  const cmd = ["python3", resolve(REPO, "test/capture/cases.py"), name, dir];
  const out = opts.umask
    ? execFileSync("sh", ["-c", `umask ${opts.umask} && exec "$@"`, "sh", ...cmd], {
        env,
        encoding: "utf8",
        cwd: REPO,
      })
    : execFileSync(cmd[0], cmd.slice(1), { env, encoding: "utf8", cwd: REPO });
  return { rec: JSON.parse(out) as CaseRecord, dir };
}

/** What Python's own unpickler finds in the file, as JSON (tuples become lists, as in the fake's record). */
function unpickle(path: string): unknown {
  return pythonPickleJson(path, "d");
}

const jsonRound = (v: unknown) => JSON.parse(JSON.stringify(v));
const mode = (path: string) => statSync(path).mode & 0o777;
const sidecar = (path: string) => JSON.parse(readFileSync(`${path}.counters.json`, "utf8"));
const callsNamed = (rec: CaseRecord, name: string) => rec.calls.filter((c) => c[0] === name);

/** Only the dumps and their sidecars are left in the folder (no temporary files). */
function expectOnlyDumps(dir: string, paths: string[]) {
  const want = paths.flatMap((p) => [basename(p), `${basename(p)}.counters.json`]).sort();
  expect(readdirSync(dir).sort()).toEqual(want);
}

/** peakscope reads the dump; with its sidecar every check passes and the totals are the fake's counters. */
async function expectPeakscopeAgrees(path: string, expected: Record<string, any>, device = 0) {
  // trace-replay passes where Python's unpickler finds trace entries, and is skipped where there are none
  const traced = (unpickle(path) as any).device_traces.some((t: unknown[]) => t.length > 0);
  const model = await readSnapshotFile(path);
  const counters = parseCounters(readFileSync(`${path}.counters.json`, "utf8"), "sidecar");
  const r = buildReport(model, { counters });
  const dev = r.devices.find((d) => d.device === device);
  expect(dev?.allocatedBytes ?? 0).toBe(expected.memory_allocated);
  expect(dev?.reservedBytes ?? 0).toBe(expected.memory_reserved);
  const status = (id: string) => r.checks.find((c) => c.id === id)?.status;
  for (const id of ["block-tiling", "active-total", "reserved-counter", "allocated-counter"])
    expect(status(id), `${id}: ${JSON.stringify(r.checks)}`).toBe("pass");
  expect(status("trace-replay")).toBe(traced ? "pass" : "skipped");
  // snapshot-vs-peak measures against the sidecar's max_memory_allocated: the fake's own peak
  const peakCheck = r.checks.find((c) => c.id === "snapshot-vs-peak")!;
  expect(peakCheck.expectedBytes).toBe(expected.max_memory_allocated);
  const gap = expected.max_memory_allocated - expected.memory_allocated;
  expect(peakCheck.status).toBe(gap > 0.02 * expected.max_memory_allocated ? "fail" : "pass");
  return r;
}

describe("peakscope_hook.dump", () => {
  const { rec, dir } = runCase("basic");
  const [path] = rec.paths;

  it("start() records history with the given ring buffer and python stacks", () => {
    expect(rec.start).toBe("cuda");
    const calls = callsNamed(rec, "cuda.memory._record_memory_history");
    expect(calls).toHaveLength(1);
    expect(calls[0][2]).toEqual({
      enabled: "all",
      context: "all",
      stacks: "python",
      max_entries: 1000,
      device: null,
    });
    expect(rec.warnings).toEqual([]); // nothing was allocated before start()
  });

  it("writes the snapshot and <path>.counters.json, both mode 0600, named by rank and tag", () => {
    expect(basename(path)).toBe("peakscope-rank0-step2.pickle");
    expect(mode(path)).toBe(0o600);
    expect(mode(`${path}.counters.json`)).toBe(0o600);
    expectOnlyDumps(dir, rec.paths);
  });

  it("mode 0600 whatever the umask (000 would give 0666 to a plain open, 277 would give 0400)", () => {
    for (const umask of ["000", "277"]) {
      const r = runCase("basic", { umask });
      expect(mode(r.rec.paths[0]), umask).toBe(0o600);
      expect(mode(`${r.rec.paths[0]}.counters.json`), umask).toBe(0o600);
    }
  });

  it("the file is what the fake's _snapshot() returned (read back by Python's unpickler)", () => {
    expect(callsNamed(rec, "cuda.memory._snapshot")).toHaveLength(1);
    expect(unpickle(path)).toEqual(jsonRound(rec.snapshots[0]));
  });

  it("the sidecar holds the counters, the whole memory_stats(), device, tag and time", () => {
    const s = sidecar(path);
    for (const k of SIDECAR_KEYS) expect(s, k).toHaveProperty(k);
    const e = rec.expected!;
    expect(s.memory_allocated).toBe(e.memory_allocated);
    expect(s.memory_reserved).toBe(e.memory_reserved);
    expect(s.max_memory_allocated).toBe(e.max_memory_allocated);
    expect(s.max_memory_reserved).toBe(e.max_memory_reserved);
    expect(s.memory_stats).toEqual(e.memory_stats);
    expect(s.device).toBe(0);
    expect(s.tag).toBe("step2");
    expect(Number.isNaN(Date.parse(s.time))).toBe(false);
    // not distributed: no rank / world_size
    expect(s).not.toHaveProperty("rank");
    expect(s).not.toHaveProperty("world_size");
    // the counters come from the fake's functions, on the dumped device
    expect(callsNamed(rec, "cuda.memory_stats").map((c) => c[1])).toEqual([[0]]);
  });

  it("peakscope reads it, and every check passes against the sidecar", async () => {
    const r = await expectPeakscopeAgrees(path, rec.expected!);
    // allocated blocks are the live tensors the scenario kept
    expect(r.totals.allocatedBytes).toBe(rec.alive.reduce((a: number, b: number) => a + b, 0));
    expect(r.checks.find((c) => c.id === "trace-replay")?.status).toBe("pass");
  });
});

describe("peakscope_hook.start after memory was allocated", () => {
  const { rec } = runCase("late");

  it("warns once (two start() calls) with how much had no stack", () => {
    const late = rec.warnings.filter((w) => w.message.includes("already allocated"));
    expect(late).toHaveLength(1);
    expect(late[0].category).toBe("PeakscopeWarning");
    // points at the caller of start(), not at the hook
    expect(late[0].file).toBe("cases.py");
    const mib = (rec.allocated_before / 2 ** 20).toFixed(2);
    expect(late[0].message).toContain(`${mib} MiB`);
    expect(late[0].message).toContain(`${rec.allocated_before.toLocaleString("en-US")} B`);
    expect(late[0].message).toContain("before the model is built");
    expect(callsNamed(rec, "cuda.memory._record_memory_history")).toHaveLength(2);
    expect(callsNamed(rec, "cuda.memory._record_memory_history")[0][2].stacks).toBe("all");
  });

  it("the sidecar says how much was allocated when recording started; peakscope names it before-recording", async () => {
    const [path] = rec.paths;
    expect(sidecar(path).recording.allocated_at_start).toBe(rec.allocated_before);
    const r = await expectPeakscopeAgrees(path, rec.expected!);
    expect(r.unknownBytesByReason["before-recording"]).toBe(rec.weights_bytes);
  });
});

describe("many ranks", () => {
  const dir = mkdtempSync(join(tmpdir(), "peakscope-hook-ranks-"));
  const runs = [0, 1].map(
    (rank) => runCase("rank", { dir, env: { CASE_RANK: String(rank), CASE_WORLD: "2" } }).rec,
  );

  it("file names carry the rank and the tag; the same tag twice gets a new name; nothing is replaced", () => {
    const all = runs.flatMap((r) => r.paths);
    expect(new Set(all).size).toBe(4);
    expect(all.map((p) => basename(p))).toEqual([
      "peakscope-rank0-step3.pickle",
      "peakscope-rank0-step3-2.pickle",
      "peakscope-rank1-step3.pickle",
      "peakscope-rank1-step3-2.pickle",
    ]);
    expectOnlyDumps(dir, all);
    // each file is still the snapshot its own process took
    runs.forEach((r) => {
      r.paths.forEach((p, i) => {
        expect(unpickle(p)).toEqual(jsonRound(r.snapshots[i]));
      });
    });
  });

  it("sidecars carry rank and world_size (from torch.distributed) and the rank's device", async () => {
    for (const [rank, r] of runs.entries()) {
      for (const p of r.paths) {
        const s = sidecar(p);
        expect([s.rank, s.world_size, s.device]).toEqual([rank, 2, r.device]);
        expect(mode(p)).toBe(0o600);
        await expectPeakscopeAgrees(p, r.expected!, r.device);
      }
    }
  });

  it("falls back to torchrun's RANK / WORLD_SIZE before init_process_group", () => {
    const { rec } = runCase("basic", { env: { RANK: "7", WORLD_SIZE: "16" } });
    expect(basename(rec.paths[0])).toBe("peakscope-rank7-step2.pickle");
    expect([sidecar(rec.paths[0]).rank, sidecar(rec.paths[0]).world_size]).toEqual([7, 16]);
  });
});

describe("peakscope_hook.dump_on_oom", () => {
  const { rec, dir } = runCase("oom");

  it("attaches one observer, and dumps once, inside the failing allocation", () => {
    expect(callsNamed(rec, "_C._cuda_attach_out_of_memory_observer")).toHaveLength(1);
    expect(rec.raised).toContain("out of memory"); // the program still sees its OOM
    expect(rec.paths.map((p) => basename(p))).toEqual(["peakscope-rank0-oom.pickle"]);
    expectOnlyDumps(dir, rec.paths);
    expect(mode(rec.paths[0])).toBe(0o600);
  });

  it("the sidecar says what was asked for; the snapshot holds the oom entry", async () => {
    const s = sidecar(rec.paths[0]);
    expect(s.oom).toEqual({
      device: 0,
      requested_bytes: 64 << 20,
      device_allocated_bytes: rec.expected!.memory_allocated,
      device_free_bytes: 3 << 20,
    });
    expect(s.memory_stats.num_ooms).toBe(1);
    const snap = unpickle(rec.paths[0]) as any;
    expect(snap).toEqual(jsonRound(rec.snapshots[0]));
    expect(snap.device_traces[0].at(-1)).toMatchObject({ action: "oom", size: 64 << 20 });
    const r = await expectPeakscopeAgrees(rec.paths[0], rec.expected!);
    expect(r.timeline.markers.oom).toBe(1);
  });
});

describe("peakscope_hook.dump_in_backward", () => {
  const { rec, dir } = runCase("backward");

  it("dumps once from the gradient hook, with the activations alive", async () => {
    expect(rec.handle).toBe("_Handle");
    expect(callsNamed(rec, "Tensor.register_hook")).toHaveLength(1);
    expect(rec.paths.map((p) => basename(p))).toEqual(["peakscope-rank0-mid_backward.pickle"]);
    expectOnlyDumps(dir, rec.paths);
    const snap = unpickle(rec.paths[0]) as any;
    expect(snap).toEqual(jsonRound(rec.snapshots[0]));
    const live = snap.segments
      .flatMap((s: any) => s.blocks)
      .filter((b: any) => b.state === "active_allocated")
      .map((b: any) => b.address);
    for (const a of rec.activations) expect(live).toContain(a);
    await expectPeakscopeAgrees(rec.paths[0], rec.expected!);
  });

  it("refuses a tensor that does not require grad", () => {
    expect(rec.no_grad_error).toContain("does not require grad");
  });
});

describe("PEAKSCOPE_STEPS and step()", () => {
  const { rec, dir } = runCase("steps");

  it("dumps after the steps named (2,4-5), in PEAKSCOPE_DIR, and returns their paths", () => {
    expect(rec.paths.map((p) => basename(p))).toEqual([
      "peakscope-rank0-step2.pickle",
      "peakscope-rank0-step4.pickle",
      "peakscope-rank0-step5.pickle",
    ]);
    expect(rec.returned).toEqual([null, rec.paths[0], null, rec.paths[1], rec.paths[2], null]);
    expectOnlyDumps(dir, rec.paths);
  });

  it("each dump holds that step's counters", async () => {
    for (const p of rec.paths) {
      const n = Number(/step(\d+)\.pickle$/.exec(p)![1]);
      const s = sidecar(p);
      expect(s.step).toBe(n);
      expect(s.tag).toBe(`step${n}`);
      expect(s.memory_allocated).toBe(rec.expected_by_step[n].memory_allocated);
      await expectPeakscopeAgrees(p, rec.expected_by_step[n]);
    }
  });
});

describe("torch_npu", () => {
  const { rec, dir } = runCase("npu", { npu: true });

  it("uses torch_npu.npu.memory and torch_npu's OOM observer, never torch.cuda's", () => {
    expect(rec.start).toBe("npu");
    expect(callsNamed(rec, "npu.memory._record_memory_history")[0][2]).toMatchObject({
      enabled: "all",
      stacks: "python",
      max_entries: 500,
    });
    expect(callsNamed(rec, "_C._npu_attach_out_of_memory_observer")).toHaveLength(1);
    expect(rec.calls.filter((c) => c[0].startsWith("cuda.memory"))).toEqual([]);
    expect(callsNamed(rec, "npu.memory_stats")).toHaveLength(1);
  });

  it("torch_npu writes its dump mode 0200; the hook leaves it 0600 and readable", async () => {
    expect(callsNamed(rec, "npu.memory._dump_snapshot")).toHaveLength(1);
    const [path] = rec.paths;
    expect(mode(path)).toBe(0o600);
    expect(mode(`${path}.counters.json`)).toBe(0o600);
    expectOnlyDumps(dir, rec.paths);
    expect(unpickle(path)).toEqual(jsonRound(rec.snapshots[0]));
    expect(sidecar(path).backend).toBe("npu");
    await expectPeakscopeAgrees(path, rec.expected!);
  });
});

describe("older torch and misuse", () => {
  it("torch 2.0's _record_memory_history signature (trace_alloc_max_entries)", () => {
    const { rec } = runCase("legacy", { env: { FAKE_TORCH: "legacy" } });
    const calls = callsNamed(rec, "cuda.memory._record_memory_history");
    expect(calls).toEqual([
      [
        "cuda.memory._record_memory_history",
        [true],
        { record_context: true, trace_alloc_max_entries: 777, trace_alloc_record_context: true },
      ],
    ]);
    expect(mode(rec.paths[0])).toBe(0o600);
  });

  it("a full ring buffer is reported once, and the sidecar counts the trace entries", () => {
    const { rec } = runCase("ring");
    const full = rec.warnings.filter((w) => w.message.includes("ring buffer is full"));
    expect(full).toHaveLength(1);
    expect(full[0].message).toContain("max_entries=8");
    const snap = unpickle(rec.paths[0]) as any;
    expect(sidecar(rec.paths[0]).trace_entries).toEqual(snap.device_traces.map((t: unknown[]) => t.length));
    expect(snap.device_traces[0]).toHaveLength(8);
  });

  it("a dump without recording says once that it has no trace, and is still a full snapshot", async () => {
    const { rec } = runCase("no_recording");
    const said = rec.warnings.filter((w) => w.message.includes("not being recorded"));
    expect(said).toHaveLength(1);
    expect(callsNamed(rec, "cuda.memory._record_memory_history")).toEqual([]);
    const snap = unpickle(rec.paths[1]) as any;
    expect(snap.device_traces.every((t: unknown[]) => t.length === 0)).toBe(true);
    const r = await expectPeakscopeAgrees(rec.paths[1], rec.expected!);
    expect(r.unknownBytesByReason["no-stacks-recorded"]).toBe(rec.expected!.memory_allocated);
  });

  it("no CUDA and no torch_npu: start() says there is no device", () => {
    const { rec } = runCase("no_device", { env: { FAKE_TORCH: "nocuda" } });
    expect(rec.error).toContain("no CUDA device");
    expect(rec.calls.filter((c) => c[0].includes("_record_memory_history"))).toEqual([]);
  });

  it("bad arguments and a bad PEAKSCOPE_STEPS say what is expected", () => {
    const { rec } = runCase("bad_args");
    expect(rec.errors).toHaveLength(4);
    expect(rec.errors[0]).toContain('"python" or "all"');
    expect(rec.errors[1]).toContain("max_entries");
    expect(rec.errors[2]).toContain("max_entries");
    expect(rec.errors[3]).toContain("PEAKSCOPE_STEPS");
    expect(rec.calls.filter((c) => c[0].includes("_record_memory_history"))).toEqual([]);
  });
});
