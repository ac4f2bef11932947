// The trace-entry fast path (src/core/model/trace-scanner.ts) parses entries straight from the bytes;
// the generic unpickler path is the reference. Both must give the same model on every real file and
// every generated pickle, at any chunk size (chunk ends make the scanner fall back mid-entry), and a
// memo slot overwritten by PUT must not leave the scanner's caches stale (Python's unpickler says what
// the file holds).
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { SnapshotAssembler } from "../src/core/model/assemble";
import { stackFrames } from "../src/core/model/builder";
import type { SnapshotModel } from "../src/core/model/types";
import { Unpickler } from "../src/core/pickle/unpickler";
import { fingerprint } from "./helpers/model";
import { HAVE_REAL, python, pythonPickleJson, REAL_DIR } from "./helpers/python";

/** Reads a plain pickle as read.ts does, with or without the scanner; reports how many entries it took. */
function read(
  bytes: Uint8Array,
  scan: boolean,
  chunkBytes: number,
): { model: SnapshotModel; scanned: number } {
  const assembler = new SnapshotAssembler();
  const u = new Unpickler({
    hooks: assembler.hooks,
    scanner: scan ? assembler.scanner : undefined,
    totalBytes: bytes.length,
  });
  assembler.attachMemo(u.memo);
  for (let at = 0; at < bytes.length; at += chunkBytes) u.feed(bytes.subarray(at, at + chunkBytes));
  const model = assembler.finish(u.finish(), {
    fileName: "t.pickle",
    byteLength: bytes.length,
    format: "pickle",
    pickleProtocol: u.protocol,
    notes: [],
  });
  return { model, scanned: assembler.scanner.entries };
}

function entries(m: SnapshotModel): number {
  return m.traces.reduce((n, t) => n + t.length, 0);
}

const realFiles = HAVE_REAL
  ? readdirSync(REAL_DIR)
      .filter((f) => !f.endsWith(".md"))
      .sort()
  : [];

if (!HAVE_REAL) console.warn(`trace scanner real-file tests skipped: ${REAL_DIR} is absent`);

describe.skipIf(!HAVE_REAL)("trace scanner on real files", () => {
  for (const file of realFiles) {
    it(`${file}: the fast path gives the generic path's model`, () => {
      const bytes = new Uint8Array(readFileSync(join(REAL_DIR, file)));
      const generic = read(bytes, false, bytes.length);
      expect(generic.scanned).toBe(0);
      const reference = fingerprint(generic.model);
      const fast = read(bytes, true, bytes.length);
      expect(fingerprint(fast.model)).toEqual(reference);
      // the fast path really ran: every entry but the few whose shape it leaves alone
      expect(fast.scanned).toBeGreaterThanOrEqual(Math.floor(entries(generic.model) * 0.9));
      // chunk ends land inside entries: the scanner backs out and the generic path finishes them
      const chunked = read(bytes, true, 4099);
      expect(fingerprint(chunked.model)).toEqual(reference);
    });
  }
});

describe("trace scanner on generated files", () => {
  const dir = mkdtempSync(join(tmpdir(), "peakscope-scan-"));
  let files: string[] = [];
  beforeAll(() => {
    python(["test/gen/generate.py", "variants", join(dir, "variants")]);
    python(["test/gen/generate.py", "memo-overwrite", join(dir, "overwrite.pickle")]);
    const manifest = JSON.parse(readFileSync(join(dir, "variants/manifest.json"), "utf8")).files as {
      file: string;
      format: string;
    }[];
    files = manifest.filter((f) => f.format === "pickle").map((f) => join(dir, "variants", f.file));
  });

  it("every generated pickle reads the same through both paths, whole and in 1 KiB chunks", () => {
    expect(files.length).toBeGreaterThanOrEqual(10);
    let scanned = 0;
    for (const path of files) {
      const bytes = new Uint8Array(readFileSync(path));
      const reference = fingerprint(read(bytes, false, bytes.length).model);
      const fast = read(bytes, true, bytes.length);
      scanned += fast.scanned;
      expect(fingerprint(fast.model), path).toEqual(reference);
      expect(fingerprint(read(bytes, true, 1024).model), path).toEqual(reference);
    }
    expect(scanned).toBeGreaterThan(0);
  });

  it("a frame slot overwritten by PUT is read as Python reads it", () => {
    const path = join(dir, "overwrite.pickle");
    const expected = pythonPickleJson<string[][]>(
      path,
      "[[f['name'] for f in e['frames']] for e in d['device_traces'][0]]",
    );
    expect(expected.length).toBe(4);
    // the last entry repeats an earlier entry's bytes, but its first frame slot now holds another frame
    expect(expected[3]).not.toEqual(expected[1]);
    const bytes = new Uint8Array(readFileSync(path));
    expect(read(bytes, true, bytes.length).scanned).toBe(4);
    for (const chunk of [bytes.length, 13]) {
      const { model } = read(bytes, true, chunk);
      const names = Array.from({ length: model.traces[0].length }, (_, i) =>
        stackFrames(model, model.traces[0].stack[i]).map((f) => f.name),
      );
      expect(names).toEqual(expected);
    }
  });
});
