// TraceTable.defaultStreamOnly lets a pass over the entries skip the stream column (zeros never written,
// whose pages a read would fault in for nothing). It must never be claimed of a trace that has an entry
// on another stream: Python reads every real file's entries (an independent reading), and the allocations
// the replay gives a stream must have the stream of the entry that made them.

import { readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readSnapshotFile } from "../src/cli/read-file";
import { attribute } from "../src/core/attribution";
import { prepareReplay } from "../src/core/replay";
import { Origin } from "../src/core/replay/types";
import { HAVE_REAL, python, REAL_DIR } from "./helpers/python";

// file → per device: [entries, entries whose stream is not 0 (absent counts as 0)]
const PY = `
import json, os, pickle, sys
d = sys.argv[1]
out = {}
for fn in sorted(os.listdir(d)):
    if fn.endswith('.md'): continue
    snap = pickle.load(open(os.path.join(d, fn), 'rb'))
    if not isinstance(snap, dict): continue
    out[fn] = [[len(tr), sum(1 for e in tr if e.get('stream', 0) != 0)] for tr in snap.get('device_traces', [])]
print(json.dumps(out))
`;

describe.runIf(HAVE_REAL)("default stream only", () => {
  const expected = HAVE_REAL ? (JSON.parse(python(["-c", PY, REAL_DIR])) as Record<string, number[][]>) : {};

  it("is said of a trace only when Python finds no entry on another stream; said of some", async () => {
    let said = 0;
    let notSaid = 0;
    for (const fn of readdirSync(REAL_DIR).filter((f) => !f.endsWith(".md"))) {
      if (!(fn in expected)) continue;
      const model = await readSnapshotFile(join(REAL_DIR, fn));
      for (const [device, [entries, otherStream]] of expected[fn].entries()) {
        const t = model.traces[device];
        expect(t.length, `${fn} device ${device}`).toBe(entries);
        if (t.defaultStreamOnly) {
          expect(otherStream, `${fn} device ${device}: entries on another stream`).toBe(0);
          said++;
        } else if (otherStream > 0) notSaid++;
      }
    }
    // both kinds are in the corpus: the flag is set where it may be, and withheld where it must be
    expect(said).toBeGreaterThan(0);
    expect(notSaid).toBeGreaterThan(0);
  });

  it("the replay gives each allocation made in the trace its alloc entry's stream, as Python reads it", async () => {
    let checked = 0;
    for (const fn of Object.keys(expected)) {
      const devices = expected[fn];
      const device = devices.findIndex(([n, other]) => n > 0 && other > 0);
      if (device < 0) continue;
      const model = await readSnapshotFile(join(REAL_DIR, fn));
      const attribution = attribute(model);
      const r = prepareReplay(model, device, {
        categoryCount: attribution.categoryNames.length,
        traceCategory: attribution.traceCategory[device],
        traceSite: attribution.traceSite[device],
      });
      // Python: the raw stream of each entry; the model numbers streams for display, so compare
      // "on the default stream or not", which both keep
      const raw = JSON.parse(
        python([
          "-c",
          "import json,pickle,sys; d=pickle.load(open(sys.argv[1],'rb')); print(json.dumps([e.get('stream',0) for e in d['device_traces'][int(sys.argv[2])]]))",
          join(REAL_DIR, fn),
          String(device),
        ]),
      ) as number[];
      const A = r.allocations;
      for (let k = 0; k < A.length; k++) {
        if (A.origin[k] !== Origin.trace) continue;
        expect(A.stream[k] !== 0, `${fn} allocation ${k}`).toBe(raw[A.allocEvent[k]] !== 0);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(0);
  });
});
