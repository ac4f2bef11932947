// Every real snapshot in ../shared/fixtures/real opens, and what we read equals what Python's own
// (restricted) unpickler sees in the same file: test/tools/py_inspect.py is the independent source.
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { summarize } from "../src/core/model/summary";
import { fingerprint, readPath } from "./helpers/model";
import { HAVE_REAL, python, REAL_DIR } from "./helpers/python";

const files = HAVE_REAL
  ? readdirSync(REAL_DIR)
      .filter((f) => !f.endsWith(".md"))
      .sort()
  : [];
if (!HAVE_REAL) console.warn(`corpus tests skipped: ${REAL_DIR} is absent`);

describe.skipIf(!HAVE_REAL)("real-file corpus", () => {
  it("has the 18 files SOURCES.md lists", () => {
    expect(files.length).toBe(18);
  });

  for (const file of files) {
    it(`${file}: counts and totals equal Python's`, async () => {
      const path = join(REAL_DIR, file);
      const py = JSON.parse(python(["test/tools/py_inspect.py", path]));
      const s = summarize(await readPath(path));
      expect(s.format).toBe(py.format);
      expect(s.pickleProtocol).toBe(py.pickleProtocol);
      expect(s.segments).toBe(py.segments);
      expect(s.blocks).toBe(py.blocks);
      expect(s.traceEntries).toBe(py.traceEntries);
      expect(s.actions).toEqual(py.actions);
      expect(
        s.devices.map((d) => ({
          device: d.device,
          segments: d.segments,
          blocks: d.blocks,
          traceEntries: d.traceEntries,
          actions: d.actions,
          reservedBytes: d.reservedBytes,
          allocatedBytes: d.allocatedBytes,
          activeBytes: d.activeBytes,
          requestedBytes: d.requestedBytes,
        })),
      ).toEqual(py.devices);
    });
  }

  for (const file of files.filter(
    (f) => !f.startsWith("kkaitlyn") && !f.startsWith("Wedsonlin__assignment2-systems__medium_256_training"),
  )) {
    it(`${file}: 7-byte chunks give the same model as one chunk`, async () => {
      const path = join(REAL_DIR, file);
      const whole = await readPath(path, { chunkBytes: 1 << 30 });
      const tiny = await readPath(path, { chunkBytes: 7 });
      expect(fingerprint(tiny)).toEqual(fingerprint(whole));
    });
  }
});
