// The page's attribution on a second thread (workers/attribution-helper.ts): the model and pass 1 as the
// helper gets them (through a structured clone, as postMessage hands them over: shared memory shared, the
// rest copied), attributed there, and the replays started before the attribution came and finished after
// (replay/prepare.ts startReplay, finishReplay), give exactly what the attribution and replays made one
// after the other on one thread give. Those are checked against Python elsewhere (replay-real.test.ts);
// here Python's entry and alloc counts anchor each replay.

import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { startNodeAttributionHelper } from "../src/cli/attribution-helper";
import { readSnapshotFile } from "../src/cli/read-file";
import {
  type AttributionHelper,
  helperClient,
  helperRequest,
  modelOf,
  startOptions,
  transferablesOf,
} from "../src/core/attribution/handoff";
import {
  type AttributionData,
  attribute,
  attributeData,
  withUnknownReasons,
} from "../src/core/attribution/index";
import { finishReplay, prepareReplay, startReplay } from "../src/core/replay/prepare";
import { replayOptionsFor } from "../src/core/replay/report";
import { Origin, type Replay } from "../src/core/replay/types";
import { attributedReplays } from "../src/core/report/index";
import { replayInputs } from "../workers/report-adapter";
import { growReal, HAVE_REAL, python, REAL_DIR } from "./helpers/python";
import { pythonTraceEntries, reportJson } from "./helpers/report-json";
import { withSharedColumns } from "./helpers/shared-columns";

if (!HAVE_REAL) console.log(`attribution-helper: ${REAL_DIR} is absent; its tests skipped`);

const TRAINING = "Wedsonlin__assignment2-systems__medium_256_training_memory_snapshot.pickle";
const tmp = mkdtempSync(join(tmpdir(), "peakscope-helper-"));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** What a replay says, as the tests compare it. */
function facts(r: Replay) {
  const A = r.allocations;
  return {
    length: r.length,
    allocated: Array.from(r.allocated),
    peakEvent: r.peakEvent,
    peakAllocatedBytes: r.peakAllocatedBytes,
    initial: { ...r.initial, byCategory: Array.from(r.initial.byCategory) },
    categoriesAtPeak: r.peakEvent === null ? null : Array.from(r.categoriesAt(r.peakEvent)),
    category: Array.from(A.category),
    site: Array.from(A.site),
    ownStack: Array.from(A.ownStack),
    sizeBytes: Array.from(A.sizeBytes),
    check: r.check,
    end: r.end,
    anomalies: r.anomalies,
  };
}

/** The attribution and replays one after the other on one thread, as without a helper. */
async function serial(file: string) {
  const model = await readSnapshotFile(file);
  const a = attribute(model);
  const inputs = replayInputs(a);
  const replays = new Map<number, Replay>();
  for (let d = 0; d < model.traces.length; d++)
    if (model.traces[d].length > 0) replays.set(d, prepareReplay(model, d, replayOptionsFor(inputs, d)));
  return { model, a, replays };
}

/** The same with the helper's path: request, clone, attribute there; replays started meanwhile. */
async function helped(file: string) {
  const model = withSharedColumns(await readSnapshotFile(file));
  const req = helperRequest(model);
  if (!req) return null;
  const started = new Map<number, ReturnType<typeof startReplay>>();
  const opts = startOptions(model);
  for (let d = 0; d < model.traces.length; d++)
    if (model.traces[d].length > 0) started.set(d, startReplay(model, d, opts));
  const sent = structuredClone(req);
  const data: AttributionData = structuredClone(attributeData(modelOf(sent)));
  const a = withUnknownReasons(model, data);
  const inputs = replayInputs(a);
  const replays = new Map<number, Replay>();
  for (const [d, s] of started) replays.set(d, finishReplay(s, replayOptionsFor(inputs, d)));
  return { model, a, replays, req, data };
}

const PY_COUNTS = `
import pickle, sys, os, json
out = {}
for f in sorted(os.listdir(sys.argv[1])):
    if f.endswith('.md'): continue
    path = os.path.join(sys.argv[1], f)
    raw = open(path, 'rb').read()
    d = pickle.loads(raw) if raw[:1] == b'\\x80' else json.loads(raw)
    tr = d.get('device_traces', []) if isinstance(d, dict) else []
    out[f] = [[len(t), sum(1 for e in t if e.get('action') == 'alloc')] for t in tr]
print(json.dumps(out))
`;

describe.skipIf(!HAVE_REAL)("the attribution on a helper thread", () => {
  const files = HAVE_REAL ? readdirSync(REAL_DIR).filter((f) => !f.endsWith(".md")) : [];
  const counts: Record<string, [number, number][]> = HAVE_REAL
    ? JSON.parse(python(["-c", PY_COUNTS, REAL_DIR]))
    : {};

  it("the real fixtures are there, and Python counted their entries", () => {
    expect(files.length).toBe(18);
    expect(Object.keys(counts).length).toBe(18);
  });

  for (const file of files) {
    it(`${file}: the same attribution and replays as on one thread`, async () => {
      const path = join(REAL_DIR, file);
      const one = await serial(path);
      const two = await helped(path);
      if (two === null) {
        // only a trace with what few files have (torch_npu workspace entries, profiler categories)
        const rare = one.model.traces.some(
          (t) => t.length > 0 && (t.isWorkspace.indexOf(1) >= 0 || t.category.varies || t.category.base >= 0),
        );
        expect(rare, "the helper refused a file without workspace entries or profiler categories").toBe(true);
        return;
      }
      const { unknownReasonOfBlock: f1, ...d1 } = one.a;
      const { unknownReasonOfBlock: f2, ...d2 } = two.a;
      expect(d2).toEqual(d1);
      for (let b = 0; b < one.model.blocks.length; b++) expect(f2(b)).toBe(f1(b));
      expect([...two.replays.keys()]).toEqual([...one.replays.keys()]);
      for (const [d, r] of one.replays) {
        const r2 = two.replays.get(d) as Replay;
        expect(facts(r2), `device ${d}`).toEqual(facts(r));
        // Python's counts: the entries replayed, an allocation per alloc entry
        const [entries, allocs] = counts[file][d];
        expect(r2.length).toBe(entries);
        let fromTrace = 0;
        for (let k = 0; k < r2.allocations.length; k++)
          if (r2.allocations.origin[k] === Origin.trace) fromTrace++;
        expect(fromTrace).toBe(allocs);
      }
      // the trace columns went over shared (not copied), the pairing's too; the answer comes back by transfer
      for (const t of two.req.traces)
        if (t.length > 0) expect(t.addr.buffer).toBeInstanceOf(SharedArrayBuffer);
      for (const p of two.req.pairings)
        if (p) expect(p.eventAllocation.buffer).toBeInstanceOf(SharedArrayBuffer);
      const moved = transferablesOf(two.data);
      for (const b of moved) expect(b).toBeInstanceOf(ArrayBuffer);
    });
  }

  it("a real file grown to a few MB (its steps repeated with fresh addresses): the same as on one thread", async () => {
    const out = join(tmp, "grown.pickle");
    growReal(TRAINING, 6, out);
    const one = await serial(out);
    const two = await helped(out);
    expect(two).not.toBeNull();
    if (!two) return;
    const { unknownReasonOfBlock: _1, ...d1 } = one.a;
    const { unknownReasonOfBlock: _2, ...d2 } = two.a;
    expect(d2).toEqual(d1);
    for (const [d, r] of one.replays) expect(facts(two.replays.get(d) as Replay)).toEqual(facts(r));
    expect(one.model.traces[0].length).toBeGreaterThan(20_000);
  });

  it("a model whose trace columns are not in shared memory is attributed where it is (no request)", async () => {
    const model = await readSnapshotFile(join(REAL_DIR, files[0]));
    if (model.traces.every((t) => t.length === 0)) withSharedColumns(model);
    expect(model.traces.some((t) => t.length > 0 && !(t.addr.buffer instanceof SharedArrayBuffer))).toBe(
      model.traces.some((t) => t.length > 0),
    );
    if (model.traces.some((t) => t.length > 0)) expect(helperRequest(model)).toBeNull();
  });
});

/** `report --json`'s output without `tool`, and its exit code. */

describe.skipIf(!HAVE_REAL)(
  "the CLI's attribution on a worker thread (src/cli/attribution-helper.ts)",
  () => {
    it("report --json gives the same JSON with the attribution made on a real worker thread", async () => {
      const out = join(tmp, "grown-cli.pickle");
      growReal(TRAINING, 6, out);
      const alone = await reportJson(out, { readSnapshot: (p) => readSnapshotFile(p) });
      const thread = startNodeAttributionHelper();
      expect(thread).not.toBeNull();
      if (!thread) return;
      await thread.up;
      const outcomes: string[] = [];
      const spy: AttributionHelper = {
        attribute(model) {
          const p = thread.attribute(model);
          outcomes.push(p ? "sent" : "refused");
          p?.then(
            () => outcomes.push("answered"),
            (e) => outcomes.push(`failed: ${e}`),
          );
          return p;
        },
        paired: () => thread.paired(),
        streamColumns: (start) => thread.streamColumns(start),
        streamRows: (rows) => thread.streamRows(rows),
        streamStop: () => thread.streamStop(),
        close: () => thread.close(),
      };
      const helped = await reportJson(out, {
        // (the trace columns in shared memory, as a read of a file of ≥ 128 MB has them)
        readSnapshot: async (p) => withSharedColumns(await readSnapshotFile(p)),
        attributionHelper: () => spy,
      });
      expect(outcomes).toEqual(["sent", "answered"]);
      expect(helped.code).toBe(alone.code);
      expect(helped.json).toEqual(alone.json);
      // Python's count of the trace's entries; the categories at the peak add up to its total
      const entries = pythonTraceEntries(out);
      expect(helped.json.timeline.events).toBe(entries);
      const peak = helped.json.peak as { allocatedBytes: number; categories: Record<string, number> };
      expect(Object.values(peak.categories).reduce((a, b) => a + b, 0)).toBe(peak.allocatedBytes);
    });

    it("a helper that fails while it attributes: the report is made on one thread, the same", async () => {
      const out = join(tmp, "grown-fail.pickle");
      growReal(TRAINING, 3, out);
      const model = withSharedColumns(await readSnapshotFile(out));
      let sent = 0;
      const client = helperClient(
        () => {
          sent++;
          // the thread dies with the request in flight
          queueMicrotask(() => client.failed("the helper ran out of memory"));
        },
        () => {},
      );
      expect(client.attribute(model)).toBeNull(); // not up yet: not used
      client.received({ up: true });
      const got = await attributedReplays(model, client);
      expect(sent).toBe(1);
      expect(got.attributedBy).toBe("here");
      const one = await serial(out);
      const { unknownReasonOfBlock: _1, ...d1 } = one.a;
      const { unknownReasonOfBlock: _2, ...d2 } = got.attribution;
      expect(d2).toEqual(d1);
      for (const [d, r] of one.replays) expect(facts(got.replays.get(d) as Replay)).toEqual(facts(r));
      expect(client.attribute(model)).toBeNull(); // failed: not used again
    });
  },
);
