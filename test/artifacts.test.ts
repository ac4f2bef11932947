// Profiler traces, export_memory_timeline files and MemoryViz pages: the peaks equal Python's reading of
// the same files (test/tools/py_artifacts.py, standard library), the generated traces' call sites name
// the op and the own-code line the generator's bookkeeping says, categories sum to allocated, and bad
// inputs give one clear message.
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { gzipSync } from "node:zlib";
import { beforeAll, describe, expect, it } from "vitest";
import { attribute } from "../src/core/attribution";
import { bytesByteSource } from "../src/core/formats/byte-source";
import { SnapshotReadError } from "../src/core/formats/errors";
import { readSnapshot } from "../src/core/formats/read";
import { stackFrames } from "../src/core/model/builder";
import { Action } from "../src/core/model/types";
import { rankOverview, summaryFromReport } from "../src/core/ranks";
import { prepareReplay } from "../src/core/replay";
import { buildReport } from "../src/core/report";
import { renderReportText } from "../src/core/report/text";
import { readPath } from "./helpers/model";
import { python, REPO } from "./helpers/python";

const DIR = resolve(REPO, "../shared/fixtures/profiler");
const HAVE = existsSync(DIR);
const F = {
  cpu: join(DIR, "AdamM1909__unsloth_puzzels__trace.json"),
  cuda: join(DIR, "harryjmoss__particle_transformer__gpu_working_chrome_trace.json"),
  old: join(
    DIR,
    "pytorch__kineto__tb_plugin_samples_resnet50_num_workers_0_worker0.1623143089861.pt.trace.json.gz",
  ),
  raw: join(DIR, "tonghuikang__optimizer-memory-profiles__profiling_modal_gpu_adam_profile.raw.json.gz"),
  html: join(DIR, "tonghuikang__optimizer-memory-profiles__snapshot.html"),
};

function pyRead(paths: string[]): Record<string, Record<string, unknown>> {
  return JSON.parse(python(["test/tools/py_artifacts.py", ...paths]));
}

const sumValues = (r: Record<string, number>) => Object.values(r).reduce((a, b) => a + b, 0);

describe.skipIf(!HAVE)("artifacts: the real files", () => {
  let py: Record<string, Record<string, unknown>> = {};
  beforeAll(() => {
    py = pyRead(Object.values(F));
  });

  for (const key of ["cpu", "cuda", "old"] as const) {
    it(`profiler trace ${key}: each device's peak equals Python's`, async () => {
      const model = await readPath(F[key]);
      const report = buildReport(model);
      expect(report.source.kind).toBe("profiler-trace");
      const expected = py[F[key]].devices as Record<string, { peakAllocatedBytes: number }>;
      const got: Record<string, number | null> = {};
      for (const d of report.timeline.devices) got[`${d.deviceType}:${d.device}`] = d.peakAllocatedBytes;
      expect(got).toEqual(
        Object.fromEntries(Object.entries(expected).map(([k, v]) => [k, v.peakAllocatedBytes])),
      );
      // CUDA first, CPU apart (after)
      const types = report.timeline.devices.map((d) => d.deviceType);
      expect(types.indexOf("cpu")).toBe(types.length - 1);
      // the peak's categories add up to it
      expect(report.peak).not.toBeNull();
      expect(sumValues(report.peak?.categories ?? {})).toBe(report.peak?.allocatedBytes);
      // no segments: said, and the checks that need them skipped (no false alarm)
      expect(report.source.lacks.join(" ")).toMatch(/No segments/);
      for (const c of report.checks) expect(c.status).not.toBe("fail");
    });
  }

  it("each device's reserved line follows Total Reserved: its highest and last values are Python's", async () => {
    const paths = [F.cpu, F.cuda, F.old];
    // Python: per file and device ("cuda:0"), the highest and the last Total Reserved of its memory events
    const want = JSON.parse(
      python([
        "-c",
        `import gzip, json, sys
out = {}
for f in sys.argv[1:]:
    t = json.load(gzip.open(f) if f.endswith(".gz") else open(f))
    ev = t["traceEvents"] if isinstance(t, dict) else t
    by = {}
    for e in ev:
        a = e.get("args") or {}
        if e.get("name") in ("[memory]", "[OutOfMemory]") and "Total Reserved" in a:
            key = ("cuda" if a["Device Type"] == 1 else "cpu" if a["Device Type"] == 0 else str(a["Device Type"])) + ":" + str(a.get("Device Id", -1))
            by.setdefault(key, []).append((e["ts"], a["Total Reserved"]))
    out[f] = {k: [max(r for _, r in v), sorted(v, key=lambda x: x[0])[-1][1]] for k, v in by.items()}
print(json.dumps(out))`,
        ...paths,
      ]),
    ) as Record<string, Record<string, [number, number]>>;
    let devicesWithReserved = 0;
    for (const path of paths) {
      const model = await readPath(path);
      for (let d = 0; d < model.traces.length; d++) {
        if (model.traces[d].length === 0) continue;
        const dev = model.source.devices?.[d];
        const key = `${dev?.deviceType}:${dev?.deviceId}`;
        const r = prepareReplay(model, d, { categoryCount: 1 });
        let highest = 0;
        for (let i = 0; i < r.length; i++) highest = Math.max(highest, r.reserved[i]);
        const [pyMax, pyLast] = want[path][key] ?? [0, 0]; // no Total Reserved: no line
        expect([highest, r.reserved[r.length - 1]], `${path} ${key}`).toEqual([pyMax, pyLast]);
        if (pyMax > 0) devicesWithReserved++;
      }
    }
    expect(devicesWithReserved).toBeGreaterThan(0);
  });

  it("the old trace says its peak is the window's (no Total Allocated, no Addr)", async () => {
    const report = buildReport(await readPath(F.old));
    expect(report.source.lacks.join(" ")).toMatch(/No Total Allocated.*window/);
    expect(report.source.lacks.join(" ")).toMatch(/No addresses/);
  });

  it("raw memory timeline: the peak and what it held equal Python's, in our categories", async () => {
    const report = buildReport(await readPath(F.raw));
    const expected = py[F.raw] as { peakAllocatedBytes: number; categories: Record<string, number> };
    expect(report.source.kind).toBe("memory-timeline");
    expect(report.peak?.allocatedBytes).toBe(expected.peakAllocatedBytes);
    const c = expected.categories;
    const cats = report.peak?.categories ?? {};
    expect(cats.parameters).toBe(c.parameter);
    expect(cats.optimizer_state).toBe(c.optimizer_state);
    expect(cats.input).toBe(c.input);
    expect(cats.activations).toBe(c.activation);
    expect(cats.gradients).toBe(c.gradient);
    expect(cats.temporary).toBe(c.temporary + c.autograd_detail);
    expect(cats.unknown).toBe(c.unknown);
    expect(sumValues(cats)).toBe(report.peak?.allocatedBytes);
  });

  it("MemoryViz page: opens as the snapshot it holds, and says it came from a page", async () => {
    const model = await readPath(F.html);
    const expected = py[F.html] as { pickleBytes: number };
    const report = buildReport(model);
    expect(report.source.kind).toBe("memoryviz-html");
    expect(model.segments.length).toBeGreaterThan(0);
    expect(model.source.notes[0]).toContain(`(${expected.pickleBytes} bytes)`);
    expect(model.source.notes.join(" ")).not.toMatch(/after the pickle's STOP/); // the NUL padding was stripped
  });
});

describe("artifacts: the generator's known run", () => {
  const dir = mkdtempSync(join(tmpdir(), "peakscope-artifacts-"));
  type Truth = {
    rank: number;
    peakAllocatedBytes: number;
    baselineBytes: number;
    peakCategoriesInTrace: Record<string, number>;
    allocations: { bytes: number; op: string; ownFile: string; ownLine: number; category: string }[];
  };
  const gen = (name: string, args: string[]): Truth =>
    JSON.parse(python(["test/gen/generate.py", "profiler", ...args, join(dir, name)]));

  for (const [name, args] of [
    ["rank0-stack.json", ["--rank", "0"]],
    ["rank1-nostack.json.gz", ["--rank", "1", "--no-stack"]],
  ] as const) {
    it(`${name}: peak, rank, categories and every allocation's op and own-code line`, async () => {
      const truth = gen(name, [...args]);
      const withStack = !(args as readonly string[]).includes("--no-stack");
      const model = await readPath(join(dir, name));
      const report = buildReport(model);
      expect(report.source.rank).toBe(truth.rank);
      expect(report.peak?.allocatedBytes).toBe(truth.peakAllocatedBytes);
      // what the spans show, as the generator made it; the parameters made before profiling are unknown
      const cats = report.peak?.categories ?? {};
      for (const [cat, bytes] of Object.entries(truth.peakCategoriesInTrace)) expect(cats[cat]).toBe(bytes);
      expect(cats.unknown).toBe(truth.baselineBytes);
      expect(sumValues(cats)).toBe(report.peak?.allocatedBytes);
      expect(report.peak?.inferredBytes).toEqual(truth.peakCategoriesInTrace);

      // every allocation, in order: its op is the innermost frame; with_stack: the site is the own line
      const a = attribute(model);
      const t = model.traces[0];
      const allocs: number[] = [];
      for (let i = 0; i < t.length; i++) if (t.action[i] === Action.alloc && t.stack[i] !== 0) allocs.push(i);
      expect(allocs.length).toBe(truth.allocations.length);
      allocs.forEach((i, k) => {
        const want = truth.allocations[k];
        expect(t.sizeBytes[i]).toBe(want.bytes);
        expect(stackFrames(model, t.stack[i])[0].name).toBe(want.op);
        const site = a.sites[a.traceSite[0][i]];
        if (withStack) {
          expect(site.via).toBe("own-code");
          expect([site.filename, site.line]).toEqual([want.ownFile, want.ownLine]);
        } else expect(site.name).toBe(want.op);
      });
    });
  }

  it("two ranks: the rank overview takes the rank from distributedInfo, with each rank's peak", async () => {
    // names that say no rank: the ranks come from the traces themselves
    const t1 = gen("x.json", ["--rank", "1"]);
    const t0 = gen("y.json", ["--rank", "0", "--no-stack"]);
    const summaries = [];
    for (const f of ["x.json", "y.json"]) {
      const report = buildReport(await readPath(join(dir, f)));
      summaries.push(summaryFromReport(report, join(dir, f)));
    }
    const o = rankOverview(summaries);
    const byRank = Object.fromEntries(o.ranks.map((r) => [r.rank, r.peakBytes]));
    expect(byRank).toEqual({ 0: t0.peakAllocatedBytes, 1: t1.peakAllocatedBytes });
  });

  it("raw timeline of the known run: the peak and categories equal the generator's", async () => {
    const truth = gen("raw.json.gz", ["--raw"]);
    const report = buildReport(await readPath(join(dir, "raw.json.gz")));
    expect(report.peak?.allocatedBytes).toBe(truth.peakAllocatedBytes);
    const cats = report.peak?.categories ?? {};
    for (const [cat, bytes] of Object.entries(truth.peakCategoriesInTrace)) expect(cats[cat]).toBe(bytes);
    expect(cats.parameters).toBe(truth.baselineBytes);
  });
});

describe("artifacts: bad input", () => {
  const read = (text: string | Uint8Array, name = "bad.json") =>
    readSnapshot(bytesByteSource(typeof text === "string" ? new TextEncoder().encode(text) : text, name), {
      chunkBytes: 64, // small slices: events cut across them
    });
  const fails = async (p: Promise<unknown>, re: RegExp) => {
    const e = await p.then(
      () => null,
      (err) => err,
    );
    expect(e).toBeInstanceOf(SnapshotReadError);
    expect((e as Error).message).toMatch(re);
  };
  const mem = (bytes: number | string) =>
    `{"ph":"i","name":"[memory]","pid":1,"tid":1,"ts":1,"args":{"Device Type":1,"Device Id":0,"Bytes":${bytes}}}`;

  it("an [OutOfMemory] event is an OOM marker at its place, with the request; the text report says there are no totals", async () => {
    // three allocations of 1, 2 and 4 MiB, a free of the 2 MiB one, then the failed 8 MiB request
    const ev = (name: string, ts: number, bytes: number, addr: number, total: number) =>
      `{"ph":"i","name":"${name}","pid":1,"tid":1,"ts":${ts},"args":{"Device Type":1,"Device Id":0,"Addr":${addr},"Bytes":${bytes},"Total Allocated":${total},"Total Reserved":${32 << 20}}}`;
    const MiB = 1 << 20;
    const events = [
      ev("[memory]", 10, MiB, 0x10000, MiB),
      ev("[memory]", 20, 2 * MiB, 0x20000, 3 * MiB),
      ev("[memory]", 30, 4 * MiB, 0x40000, 7 * MiB),
      ev("[memory]", 40, -2 * MiB, 0x20000, 5 * MiB),
      ev("[OutOfMemory]", 50, 8 * MiB, 0, 5 * MiB),
    ];
    const model = await read(`{"schemaVersion":1,"traceEvents":[${events.join(",")}]}`, "oom.json");
    const r = buildReport(model);
    expect(r.timeline.markers.oom).toBe(1);
    expect(r.timeline.oom).toHaveLength(1);
    expect(r.timeline.oom[0].requestBytes).toBe(8 * MiB);
    // the OOM comes after the four memory events: the peak (7 MiB, after the third) is before it
    expect(r.timeline.oom[0].eventIndex).toBeGreaterThan(r.peak?.eventIndex ?? Number.POSITIVE_INFINITY);
    expect(r.peak?.allocatedBytes).toBe(7 * MiB);
    const text = renderReportText(r);
    expect(text).toContain("totals: none");
    expect(text).not.toMatch(/^ {2}reserved +0\.00 MiB/m);
    expect(text).toMatch(/markers: 0 snapshot, 1 oom/);
  });
  it("a trace without memory events says how to record one", async () => {
    await fails(
      read('{"schemaVersion":1,"traceEvents":[{"ph":"X","name":"aten::mm","pid":1,"tid":1,"ts":1,"dur":2}]}'),
      /without profile_memory=True.*profile_memory=True/,
    );
  });
  it("bad JSON inside an event: what and where", async () => {
    const before = `{"schemaVersion":1,"traceEvents":[${mem(512)},`;
    // the byte offset of the bad event (all ASCII: the string's length is its byte count)
    await fails(read(`${before}{"ph":"X","name":[memory]}]}`), new RegExp(`at byte ${before.length} `));
  });
  it("a trace cut short", async () => {
    await fails(read(`{"schemaVersion":1,"traceEvents":[${mem(512)},${mem(-512)}`), /cut short|ends at byte/);
  });
  it("huge numbers", async () => {
    await fails(read(`{"schemaVersion":1,"traceEvents":[${mem("1e300")}]}`), /Bytes = 1e\+300.*2\^53/);
  });
  it("100k-deep nesting is refused at once", async () => {
    const head = `{"schemaVersion":1,"traceEvents":[{"args":`;
    const deep = `${head}${"[".repeat(100_000)}${"]".repeat(100_000)}}]}`;
    // the event's { is level 1: the 64th [ is level 65, refused where it stands
    await fails(read(deep), new RegExp(`nested more than 64 levels deep at byte ${head.length + 63}\\.`));
  });
  it("an HTML page without a snapshot", async () => {
    await fails(
      read("<!doctype html><html><body><img src='x.png'></body></html>", "t.html"),
      /without a memory snapshot.*raw\.json\.gz/,
    );
  });
  it("a gzip'd trace reads like the plain one", async () => {
    const text = `{"schemaVersion":1,"traceEvents":[${mem(1024)},${mem(-1024)},${mem(2048)}]}`;
    const m = await read(gzipSync(Buffer.from(text)), "t.json.gz");
    expect(m.source.kind).toBe("profiler-trace");
    expect(buildReport(m).peak?.allocatedBytes).toBe(2048);
  });
  it("a snapshot converted to JSON is still a snapshot", async () => {
    const dir = mkdtempSync(join(tmpdir(), "peakscope-artifacts-json-"));
    writeFileSync(join(dir, "s.json"), JSON.stringify({ segments: [], device_traces: [[]] }));
    const m = await readPath(join(dir, "s.json"));
    expect(m.source.kind ?? "snapshot").toBe("snapshot");
  });
});
