// The load preview (a first picture while a file is still being read) against Python's running sum of
// the same trace entries: alloc +size, free_completed −size, in file order.
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { expect, it } from "vitest";
import type { LoadPreview } from "../src/core/model/preview";
import { readPath } from "./helpers/model";
import { python } from "./helpers/python";

const RUNNING = `
import json, pickle, sys
d = pickle.load(open(sys.argv[1], "rb"))
run, lo, hi, out = 0, 0, 0, []
for t in d["device_traces"]:
    for e in t:
        if e["action"] == "alloc": run += e["size"]
        elif e["action"] == "free_completed": run -= e["size"]
        lo = min(lo, run); out.append(run)
print(json.dumps(out))
`;

it("previews arrive while parsing and their peak equals Python's running sum over the entries read", async () => {
  const file = join(mkdtempSync(join(tmpdir(), "peakscope-preview-")), "big.pickle");
  python(["test/gen/generate.py", "big", "--target-mb", "3", file]);
  const running: number[] = JSON.parse(python(["-c", RUNNING, file]));
  const previews: LoadPreview[] = [];
  const model = await readPath(file, {
    chunkBytes: 64 * 1024,
    onPreview: (p) => previews.push(p),
    previewEveryMs: 0,
  });
  expect(previews.length).toBeGreaterThan(5);
  for (let i = 1; i < previews.length; i++)
    expect(previews[i].entries).toBeGreaterThanOrEqual(previews[i - 1].entries);
  expect(previews.at(-1)?.entries).toBeLessThanOrEqual(model.traces[0].length);
  for (const p of previews.filter((q, i) => i % 7 === 0 && q.entries > 0)) {
    const seen = running.slice(0, p.entries);
    const lowest = Math.min(0, ...seen);
    expect(p.baselineBytes).toBe(lowest);
    expect(Math.max(...p.allocatedBytes)).toBe(Math.max(...seen) - lowest);
    expect(Math.min(...p.allocatedBytes)).toBeGreaterThanOrEqual(0);
  }
});
