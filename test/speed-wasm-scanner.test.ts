// The WebAssembly trace scanner (src/core/wasm, src/core/model/wasm-scanner.ts) must give the model the
// JavaScript scanner and the generic unpickler give, on every real and generated file and at any chunk
// size; it must really take the entries (else the speed is gone); a run of entries must come apart right
// when something other than APPENDS closes it; and an instance reused for the next file must not leak
// what the last one left in its memory. The committed module must be built from the source as it is.
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { bytesByteSource } from "../src/core/formats/byte-source";
import { readSnapshot } from "../src/core/formats/read";
import { SnapshotAssembler } from "../src/core/model/assemble";
import { RowFlags } from "../src/core/model/builder";
import { Action, type IdColumn, idAt, type SnapshotModel } from "../src/core/model/types";
import { wasmScannerAvailable } from "../src/core/model/wasm-scanner";
import { Unpickler } from "../src/core/pickle/unpickler";
import {
  TRACE_SCAN_SHARED_WASM_BASE64,
  TRACE_SCAN_SOURCE_SHA256,
  TRACE_SCAN_WASM_BASE64,
} from "../src/core/wasm/trace-scan.wasm";
import { fingerprint } from "./helpers/model";
import { HAVE_REAL, python, pythonBytes, pythonPickleJson, REAL_DIR, REPO } from "./helpers/python";

type Path = "generic" | "js" | "wasm" | "shared";

/**
 * Reads a plain pickle as read.ts does, through one path; says how many entries each scanner took. The
 * chunks are views of `bytes`, or with `copyChunks` each in its own buffer (as a reader hands them over).
 */
function read(bytes: Uint8Array, path: Path, chunkBytes: number, copyChunks = false) {
  const assembler = new SnapshotAssembler({
    wasm: path === "wasm" || path === "shared",
    sharedMemory: path === "shared",
  });
  const u = new Unpickler({
    hooks: assembler.hooks,
    scanner: path === "generic" ? undefined : assembler.scanner,
    totalBytes: bytes.length,
  });
  assembler.attachMemo(u.memo);
  for (let at = 0; at < bytes.length; at += chunkBytes) {
    const chunk = bytes.subarray(at, at + chunkBytes);
    u.feed(copyChunks ? chunk.slice() : chunk);
  }
  const model = assembler.finish(u.finish(), {
    fileName: "t.pickle",
    byteLength: bytes.length,
    format: "pickle",
    pickleProtocol: u.protocol,
    notes: [],
  });
  return {
    model,
    wasm: assembler.scanner.wasmEntries,
    js: assembler.scanner.fallback.entries,
    segments: assembler.scanner.wasmSegments,
    scanner: assembler.scanner,
  };
}

const entries = (m: SnapshotModel) => m.traces.reduce((n, t) => n + t.length, 0);

/** A snapshot of `n` alloc/free pairs with a few stacks, as torch writes it (protocol 4), from Python. */
function generated(n: number, wrap = "list"): Uint8Array {
  const code = [
    "import pickle, sys",
    "frames = [{'filename': f'f{i}.py', 'line': i, 'name': f'fn{i}'} for i in range(40)]",
    "stacks = [[frames[j] for j in range(k, k + 12)] for k in range(0, 24, 3)]",
    "tr = []",
    `for i in range(${n}):`,
    "    s = stacks[i % len(stacks)]",
    "    tr.append({'action': 'alloc', 'addr': 0x7f0000000000 + i * 512, 'size': 512 + i % 7, 'stream': 0,",
    "               'time_us': 1700000000000000 + i, 'compile_context': 'N/A', 'frames': s})",
    "    tr.append({'action': 'free_requested', 'addr': 0x7f0000000000 + i * 512, 'size': 512 + i % 7,",
    "               'stream': 0, 'time_us': 1700000000000000 + i, 'compile_context': 'N/A', 'frames': s})",
    `traces = [tuple(tr)] if '${wrap}' == 'tuple' else [tr]`,
    "sys.stdout.buffer.write(pickle.dumps({'segments': [], 'device_traces': traces}, protocol=4))",
  ].join("\n");
  return new Uint8Array(pythonBytes(code));
}

/**
 * A snapshot whose segments take every shape torch writes them in, and some it does not, from Python:
 * 1,500 segments (two APPENDS batches), blocks as a MARK batch, a lone APPEND or none, optional keys left
 * out, frame dicts written out in full the first time and referenced after, pool ids shared (one tuple
 * object, a memo reference) or not, bools, a float, the segment dicts' keys in the order `keyOrder` says.
 * A few segments the module must leave to JavaScript: a key it does not know, a pool id that is a list,
 * an address past 2^53. The trace's entries carry frame dicts written out in full too. Prints the pickle;
 * `expectWasm` is Python's count of the segments without those odd parts.
 */
function segmentShapes(keyOrder: "torch" | "reversed" = "torch"): { bytes: Uint8Array; expectWasm: number } {
  const code = [
    "import pickle, sys, json",
    "frames = [{'filename': f'/src/m{i}.py', 'line': i, 'name': f'fn{i}'} for i in range(30)]",
    "pools = [(0, 0), (1, 7)]",
    "segs = []",
    "odd = 0",
    "for i in range(1500):",
    "    nb = 1 if i % 5 == 0 else (0 if i % 11 == 0 else 3)",
    "    blocks = []",
    "    for b in range(nb):",
    "        blk = {'address': 0x7f0000000000 + i * 0x200000 + b * 512, 'size': 512 * (b + 1),",
    "               'requested_size': 500 * (b + 1), 'state': 'active_allocated' if b % 2 == 0 else 'inactive',",
    "               'frames': [frames[(i + b + k) % 30] for k in range(4)]}",
    "        if (i + b) % 7 == 0: del blk['requested_size']",
    "        if (i + b) % 13 == 0: del blk['frames']",
    "        if (i + b) % 17 == 0: del blk['address']",
    "        blocks.append(blk)",
    "    seg = {'device': i % 2, 'address': 0x7f0000000000 + i * 0x200000, 'total_size': 2097152,",
    "           'allocated_size': 512 * nb, 'active_size': 512 * nb, 'requested_size': 500 * nb,",
    "           'stream': 0 if i % 3 else 94000000000000 + i, 'segment_type': 'large' if i % 2 else 'small',",
    "           'segment_pool_id': pools[i % 2] if i % 4 else (i, 0), 'is_expandable': i % 9 == 0,",
    "           'frames': [], 'blocks': blocks}",
    "    if i % 10 == 3: del seg['requested_size']",
    "    if i == 401: seg['total_size'] = 3.5",
    "    plain = True",
    "    if i % 50 == 7: seg['extra_key'] = 1; plain = False",
    "    if i % 61 == 5: seg['segment_pool_id'] = [0, 0]; plain = False",
    "    if i == 400: seg['address'] = 2 ** 60; plain = False",
    `    if '${keyOrder}' == 'reversed': seg = dict(reversed(list(seg.items())))`,
    "    odd += not plain",
    "    segs.append(seg)",
    "trace = [{'action': 'alloc', 'addr': 0x7e0000000000 + j * 512, 'size': 512, 'stream': 0,",
    "          'time_us': 1700000000000000 + j,",
    "          'frames': [frames[j % 30], {'filename': f'/new/n{j}.py', 'line': j, 'name': 'fresh'}]}",
    "         for j in range(50)]",
    "sys.stderr.write(json.dumps(len(segs) - odd))",
    "settings = {'expandable_segments': False, 'max_split_size': -1, 'note': 'x' * 64}",
    "snapshot = {'segments': segs, 'device_traces': [trace, []], 'allocator_settings': settings}",
    "sys.stdout.buffer.write(pickle.dumps(snapshot, protocol=4))",
  ].join("\n");
  const out = spawnSync("python3", ["-c", code], { maxBuffer: 1 << 28 });
  if (out.status !== 0) throw new Error(String(out.stderr));
  return { bytes: new Uint8Array(out.stdout), expectWasm: JSON.parse(String(out.stderr)) };
}

// Skipped only where the platform has no WebAssembly at all — a fact about the runtime, checked here, not
// by the code under test (whose wasmScannerAvailable() would also say false for a broken module). Node 20
// has it, so under `npm test` this always runs, and a module that does not compile fails it.
const HAVE_WEBASSEMBLY = typeof WebAssembly !== "undefined";
if (!HAVE_WEBASSEMBLY) console.log("speed-wasm-scanner: skipped — this runtime has no WebAssembly");

describe.skipIf(!HAVE_WEBASSEMBLY)("WebAssembly trace scanner", () => {
  it("the committed module is valid WebAssembly, compiles in Node, and the reader uses it", async () => {
    const bytes = new Uint8Array(Buffer.from(TRACE_SCAN_WASM_BASE64, "base64"));
    expect([...bytes.subarray(0, 4)]).toEqual([0x00, 0x61, 0x73, 0x6d]); // "\0asm"
    expect(WebAssembly.validate(bytes)).toBe(true);
    const module = await WebAssembly.compile(bytes);
    const exports = WebAssembly.Module.exports(module).map((e) => e.name);
    for (const name of ["memory", "init", "scan", "reset", "rows", "position"])
      expect(exports).toContain(name);
    expect(wasmScannerAvailable()).toBe(true);
  });

  it("its shared-memory build reads as the others do, and hands its strings to TextDecoder as a browser takes them", () => {
    // A big file read with a warmer thread gets the module built with a shared memory (its memo is
    // faulted in by the warmer). Chromium's TextDecoder refuses a view of shared memory; Node's takes one,
    // so it is made to refuse here too. Per-entry strs the scanner decodes: non-ASCII ones, and longer
    // than the 64 bytes decoded by hand.
    const code = [
      "import pickle, sys",
      "f = [{'filename': 'a.py', 'line': 1, 'name': 'f'}]",
      "ctx = ['größe ' + str(k) for k in range(5)] + ['x' * 100 + str(k) for k in range(3)]",
      "tr = [{'action': 'alloc', 'addr': 0x7f0000000000 + 512 * i, 'size': 512, 'stream': 0,",
      "       'time_us': 1700000000000000 + i, 'compile_context': str(ctx[i % 8]), 'frames': f} for i in range(3000)]",
      "sys.stdout.buffer.write(pickle.dumps({'segments': [], 'device_traces': [tr]}, protocol=4))",
    ].join("\n");
    const bytes = new Uint8Array(pythonBytes(code));
    const shared = new WebAssembly.Module(Buffer.from(TRACE_SCAN_SHARED_WASM_BASE64, "base64"));
    expect(WebAssembly.Module.exports(shared).map((e) => e.name)).toContain("memory");
    const decode = TextDecoder.prototype.decode;
    TextDecoder.prototype.decode = function (this: TextDecoder, input?: AllowSharedBufferSource) {
      if (input && ArrayBuffer.isView(input) && input.buffer instanceof SharedArrayBuffer)
        throw new TypeError("The provided ArrayBufferView value must not be shared.");
      return decode.call(this, input);
    };
    let w: ReturnType<typeof read>;
    try {
      w = read(bytes, "shared", 65_536);
    } finally {
      TextDecoder.prototype.decode = decode;
    }
    expect(w.wasm).toBeGreaterThan(2900);
    expect(fingerprint(w.model)).toEqual(fingerprint(read(bytes, "generic", bytes.length).model));
    // every entry's compile_context as Python reads it
    const path = join(mkdtempSync(join(tmpdir(), "peakscope-wasm-")), "ctx.pickle");
    writeFileSync(path, bytes);
    const contexts = pythonPickleJson<string[]>(
      path,
      "[e['compile_context'] for e in d['device_traces'][0]]",
    );
    const t = w.model.traces[0];
    expect(Array.from({ length: t.length }, (_, i) => w.model.strings[idAt(t.compileContext, i)])).toEqual(
      contexts,
    );
    // its memory is shared, and offered to the warmer as a column; the plain build's is not
    const column = w.scanner.memoColumn(2 * entries(w.model));
    expect(column?.buffer).toBeInstanceOf(SharedArrayBuffer);
    expect(read(bytes, "wasm", 65_536).scanner.memoColumn(2 * entries(w.model))).toBeNull();
  });

  it("its shared-memory build copies the bytes it scans with source and destination alike mod 8, and reads as the others do at any byte offset", () => {
    // V8 copies into shared memory a byte at a time where source and destination differ mod 8 (several
    // times slower): the scanner starts each window up to 7 bytes early to keep them alike.
    const bytes = generated(6000);
    const reference = fingerprint(read(bytes, "generic", bytes.length).model);
    const set = Uint8Array.prototype.set;
    const skews: number[] = [];
    Uint8Array.prototype.set = function (this: Uint8Array, src: ArrayLike<number>, offset = 0) {
      if (this.buffer instanceof SharedArrayBuffer && ArrayBuffer.isView(src) && src.byteLength > 4096)
        skews.push((src.byteOffset - (this.byteOffset + offset)) & 7);
      return set.call(this, src, offset);
    };
    try {
      // slices as a reader hands them over (each its own buffer), cut at odd places
      for (const chunk of [65_537, 100_003]) {
        skews.length = 0;
        const w = read(bytes, "shared", chunk, true);
        expect(fingerprint(w.model), `chunks of ${chunk}`).toEqual(reference);
        expect(skews.length, `chunks of ${chunk}`).toBeGreaterThan(bytes.length / chunk);
        expect(
          skews.filter((k) => k !== 0),
          `chunks of ${chunk}`,
        ).toEqual([]);
      }
    } finally {
      Uint8Array.prototype.set = set;
    }
    // and views of one buffer at every offset mod 8
    for (const chunk of [65_537, 4099, 8 * 4096 + 3]) {
      expect(fingerprint(read(bytes, "shared", chunk).model), `views of ${chunk}`).toEqual(reference);
    }
  });

  it("is built from its source as committed (run node scripts/build-wasm.mjs after editing it)", () => {
    const source = readFileSync(join(REPO, "src/core/wasm/assembly/trace-scan.ts"));
    expect(createHash("sha256").update(source).digest("hex")).toBe(TRACE_SCAN_SOURCE_SHA256);
  });

  it("takes the entries of a big list (batches of 1000, runs past its row buffer) and reads them as the other paths do", () => {
    const bytes = generated(6000);
    const reference = fingerprint(read(bytes, "generic", bytes.length).model);
    const js = read(bytes, "js", bytes.length);
    expect(js.wasm).toBe(0);
    expect(fingerprint(js.model)).toEqual(reference);
    const whole = read(bytes, "wasm", bytes.length);
    expect(whole.wasm).toBeGreaterThan(entries(whole.model) * 0.99);
    for (const chunk of [bytes.length, 65_536, 1024, 7]) {
      const w = read(bytes, "wasm", chunk);
      expect(fingerprint(w.model), `chunks of ${chunk}`).toEqual(reference);
    }
  });

  it("leaves an entry with a 7-byte int past 2^53 to JavaScript and reads the rest as the generic path", () => {
    // time_us takes 7 bytes (LONG1) in every real entry: the scanner reads those itself, and gives an
    // entry whose 7-byte int is past 2^53 (not a JavaScript integer) to the JavaScript path
    const code = [
      "import pickle, sys",
      "f = [{'filename': 'a.py', 'line': 1, 'name': 'f'}]",
      "tr = [{'action': 'alloc', 'addr': (2**54 + 512 * i) if i % 97 == 5 else 0x7f0000000000 + 512 * i,",
      "       'size': 512, 'stream': 0, 'time_us': 1700000000000000 + i, 'frames': f} for i in range(3000)]",
      "sys.stdout.buffer.write(pickle.dumps({'segments': [], 'device_traces': [tr]}, protocol=4))",
    ].join("\n");
    const bytes = new Uint8Array(pythonBytes(code));
    const reference = read(bytes, "generic", bytes.length);
    const w = read(bytes, "wasm", bytes.length);
    expect(entries(w.model)).toBe(3000);
    // every entry but the 31 at i % 97 == 5 (and the odd one the scanner leaves for other reasons)
    expect(w.wasm).toBeGreaterThan(2900);
    expect(w.wasm).toBeLessThanOrEqual(3000 - 31);
    expect(fingerprint(w.model)).toEqual(fingerprint(reference.model));
  });

  it("its row flags agree with RowFlags and Action.oom, and a column they leave out reads as Python wrote it", () => {
    // The scanner tells pushRows which columns of a batch hold more than the common case (RowFlags), so
    // that the rest are not read row by row. CPython closes a list's batch every 1000 items, and so does a
    // scan(): here each batch of 1000 entries holds its own case.
    const module = new WebAssembly.Module(Buffer.from(TRACE_SCAN_WASM_BASE64, "base64"));
    const stub = Object.fromEntries(
      WebAssembly.Module.imports(module).map((i) => [i.name, () => 0]),
    ) as Record<string, () => number>;
    const x = new WebAssembly.Instance(module, { "trace-scan": stub }).exports as Record<
      string,
      WebAssembly.Global
    >;
    expect(x.ACTION_OOM.value).toBe(Action.oom);
    for (const [name, flag] of [
      ["F_STREAM_RAW", RowFlags.streamRaw],
      ["F_STREAM", RowFlags.stream],
      ["F_DEVICE_FREE", RowFlags.deviceFree],
      ["F_COMPILE_CONTEXT", RowFlags.compileContext],
      ["F_USER_METADATA", RowFlags.userMetadata],
      ["F_CATEGORY", RowFlags.category],
    ] as const)
      expect(x[name].value, name).toBe(flag);
    const code = [
      "import pickle, sys",
      "f = [{'filename': 'a.py', 'line': 1, 'name': 'f'}]",
      "tr = []",
      "for i in range(5000):",
      "    b = i // 1000",
      "    e = {'action': 'alloc' if i % 2 == 0 else 'free_completed', 'addr': 0x7f0000000000 + 512 * (i // 2),",
      "         'size': 512, 'stream': 7 if i == 1503 else 0, 'time_us': 1700000000000000 + i, 'frames': f}",
      // batch 0 one context; batch 1 another, the same all through (not the first entry's); batch 2 both
      "    e['compile_context'] = 'A' if b == 0 or (b == 2 and i % 3) else 'B'",
      "    if b == 3: e['user_metadata'] = 'u%d' % (i % 5)",
      "    if b >= 1: e['category'] = 'c'",
      "    tr.append(e)",
      // an oom entry with device_free in batch 3, one without in batch 4
      "tr[3500] = {'action': 'oom', 'size': 4096, 'stream': 0, 'time_us': 1700000000003500, 'device_free': 1024, 'frames': f}",
      "tr[4500] = {'action': 'oom', 'size': 4096, 'stream': 0, 'time_us': 1700000000004500, 'frames': f}",
      "sys.stdout.buffer.write(pickle.dumps({'segments': [], 'device_traces': [tr]}, protocol=4))",
    ].join("\n");
    const bytes = new Uint8Array(pythonBytes(code));
    const w = read(bytes, "wasm", bytes.length);
    expect(w.wasm).toBeGreaterThan(4900);
    const t = w.model.traces[0];
    expect(t.length).toBe(5000);
    const str = (c: IdColumn, i: number) => {
      const id = idAt(c, i);
      return id < 0 ? null : w.model.strings[id];
    };
    for (let i = 0; i < 5000; i++) {
      const b = Math.floor(i / 1000);
      const want = {
        stream: i === 1503 ? 7 : 0,
        free: i === 3500 ? 1024 : i === 4500 ? Number.NaN : 0,
        context: i === 3500 || i === 4500 ? null : b === 0 || (b === 2 && i % 3 !== 0) ? "A" : "B",
        metadata: b === 3 && i !== 3500 ? `u${i % 5}` : null,
        category: b >= 1 && i !== 3500 && i !== 4500 ? "c" : null,
      };
      const got = {
        stream: t.streamRaw[i],
        free: t.deviceFreeBytes[i],
        context: str(t.compileContext, i),
        metadata: str(t.userMetadata, i),
        category: str(t.category, i),
      };
      expect(got, `entry ${i}`).toEqual(want);
      expect(t.stream[i] !== 0, `entry ${i}'s stream number`).toBe(i === 1503);
    }
    expect(fingerprint(w.model)).toEqual(fingerprint(read(bytes, "generic", bytes.length).model));
  });

  it("gives entries in a tuple (a run closed by TUPLE, not APPENDS) one by one", () => {
    const bytes = generated(50, "tuple");
    const reference = fingerprint(read(bytes, "generic", bytes.length).model);
    const w = read(bytes, "wasm", bytes.length);
    expect(w.wasm).toBeGreaterThan(0);
    expect(entries(w.model)).toBe(100);
    expect(fingerprint(w.model)).toEqual(reference);
  });

  it("an instance reused for the next file keeps nothing of the last one's memo", async () => {
    await readSnapshot(bytesByteSource(generated(2000)));
    // EMPTY_DICT (the scanner moves the memo into its memory), a str PUT into slot 7, then GET 5:
    // slots 1–6 were skipped over and must read as never stored
    const bytes = new Uint8Array([
      0x80, 0x04, 0x7d, 0x71, 0x00, 0x28, 0x8c, 0x01, 0x61, 0x71, 0x07, 0x68, 0x05, 0x75, 0x2e,
    ]);
    await expect(readSnapshot(bytesByteSource(bytes, "t.pickle"))).rejects.toThrow(/never stored/);
  });

  describe("segments", () => {
    it("reads every shape of segment torch writes as the generic path does, whole and in small chunks, and leaves the odd ones to JavaScript", () => {
      const { bytes, expectWasm } = segmentShapes();
      const reference = fingerprint(read(bytes, "generic", bytes.length).model);
      for (const chunk of [bytes.length, 4099, 1024]) {
        const w = read(bytes, "wasm", chunk);
        expect(fingerprint(w.model), `chunks of ${chunk}`).toEqual(reference);
        // whole, every segment without an odd part is the module's (in chunks some meet a chunk's end)
        if (chunk === bytes.length) {
          expect(w.segments).toBe(expectWasm);
          // the trace's 50 entries too, frame dicts written out in full and all (the settings after them
          // keep the last one from the bytes' end, which the module leaves to JavaScript)
          expect(w.wasm).toBe(50);
        } else expect(w.segments).toBeGreaterThan(expectWasm / 2);
      }
      expect(expectWasm).toBeGreaterThan(1300);
      expect(expectWasm).toBeLessThan(1500);
    });

    it("an instance reused for the next file knows nothing of the last one's keys", () => {
      // the same segments with their keys in the other order: the strs the module meets first in the
      // second file get the codes the first file's first strs had
      read(segmentShapes("torch").bytes, "wasm", 1 << 30);
      const { bytes, expectWasm } = segmentShapes("reversed");
      const w = read(bytes, "wasm", bytes.length);
      expect(w.segments).toBe(expectWasm);
      expect(fingerprint(w.model)).toEqual(fingerprint(read(bytes, "generic", bytes.length).model));
    });
  });

  describe("on generated variants", () => {
    const dir = mkdtempSync(join(tmpdir(), "peakscope-wasm-"));
    let files: string[] = [];
    beforeAll(() => {
      python(["test/gen/generate.py", "variants", join(dir, "variants")]);
      python(["test/gen/generate.py", "memo-overwrite", join(dir, "overwrite.pickle")]);
      python(["test/gen/generate.py", "key-overwrite", join(dir, "key-overwrite.pickle")]);
      const manifest = JSON.parse(readFileSync(join(dir, "variants/manifest.json"), "utf8")).files as {
        file: string;
        format: string;
      }[];
      files = [
        ...manifest.filter((f) => f.format === "pickle").map((f) => join(dir, "variants", f.file)),
        join(dir, "overwrite.pickle"),
        join(dir, "key-overwrite.pickle"),
      ];
    });

    it("a key's memo slot overwritten by PUT is read as Python reads it (the per-slot key cache)", () => {
      const path = join(dir, "key-overwrite.pickle");
      const expected = pythonPickleJson<[number, number | null][]>(
        path,
        // an entry without device_free reads 0, an oom entry without one NaN (TraceTable.deviceFreeBytes)
        "[[e.get('size', 0), e.get('device_free', None if e['action'] == 'oom' else 0)] for e in d['device_traces'][0]]",
      );
      expect(expected.length).toBe(10);
      // the later entries repeat the earlier ones' bytes, but the slot of "size" now holds "device_free"
      expect(expected[9]).not.toEqual(expected[4]);
      const bytes = new Uint8Array(readFileSync(path));
      const w = read(bytes, "wasm", bytes.length);
      expect(w.wasm).toBeGreaterThanOrEqual(5); // the WebAssembly scanner read the entries after the PUT
      const t = w.model.traces[0];
      const got = Array.from({ length: t.length }, (_, i) => [
        t.sizeBytes[i],
        Number.isNaN(t.deviceFreeBytes[i]) ? null : t.deviceFreeBytes[i],
      ]);
      expect(got).toEqual(expected);
    });

    it("every one reads the same through all three paths, whole and in 1 KiB chunks", () => {
      expect(files.length).toBeGreaterThanOrEqual(10);
      let wasm = 0;
      for (const path of files) {
        const bytes = new Uint8Array(readFileSync(path));
        const reference = fingerprint(read(bytes, "generic", bytes.length).model);
        const w = read(bytes, "wasm", bytes.length);
        wasm += w.wasm;
        expect(fingerprint(w.model), path).toEqual(reference);
        expect(fingerprint(read(bytes, "wasm", 1024).model), path).toEqual(reference);
      }
      expect(wasm).toBeGreaterThan(0);
    });
  });

  describe.skipIf(!HAVE_REAL)("on real files", () => {
    const real = HAVE_REAL
      ? readdirSync(REAL_DIR).filter((f) => !f.endsWith(".md") && !f.endsWith(".json"))
      : [];
    // Trace entries per file, counted by Python (chooses, before any test runs, the files big enough for
    // the WebAssembly scanner to take them: it works in batches, and leaves a small trace's to JavaScript).
    const pyEntries: Record<string, number> = HAVE_REAL
      ? JSON.parse(
          python([
            "-c",
            "import json,os,pickle,sys\nd=sys.argv[1]\nout={}\nfor f in sys.argv[2:]:\n" +
              "    s=pickle.load(open(os.path.join(d,f),'rb'))\n" +
              "    out[f]=0 if isinstance(s,list) else sum(len(t) for t in s.get('device_traces') or [])\n" +
              "print(json.dumps(out))",
            REAL_DIR,
            ...real,
          ]),
        )
      : {};
    // torch shares frame dicts between entries; a file that writes each entry's frames out anew
    // (mosaic's test fixture) is left to the JavaScript scanner.
    const big = real.filter((f) => pyEntries[f] > 1000 && !f.startsWith("facebookresearch__mosaic"));
    // Segments per file, and whether each segment has only what the module reads (torch ≥ 2.1's keys, a
    // tuple as pool id, no torch 2.0 history), by Python
    const pySegments: Record<string, [number, boolean]> = HAVE_REAL
      ? JSON.parse(
          python([
            "-c",
            "import json,os,pickle,sys\nd=sys.argv[1]\nout={}\n" +
              "SEG={'device','address','total_size','allocated_size','active_size','requested_size','stream'," +
              "'segment_type','segment_pool_id','is_expandable','frames','blocks'}\n" +
              "BLK={'address','size','requested_size','state','frames'}\n" +
              "for f in sys.argv[2:]:\n" +
              "    s=pickle.load(open(os.path.join(d,f),'rb'))\n" +
              "    segs=[] if isinstance(s,list) else s.get('segments') or []\n" +
              "    plain=all(set(g)<=SEG and isinstance(g.get('segment_pool_id',()),tuple) and " +
              "all(set(b)<=BLK for b in g.get('blocks',[])) for g in segs)\n" +
              "    out[f]=[len(segs),plain]\n" +
              "print(json.dumps(out))",
            REAL_DIR,
            ...real,
          ]),
        )
      : {};
    it("the WebAssembly scanner reads the segments of every real file whose segments are torch's as of 2.1", () => {
      const plain = real.filter((f) => pySegments[f][1] && pySegments[f][0] > 0);
      expect(plain.length).toBeGreaterThanOrEqual(10);
      for (const file of plain) {
        const w = read(new Uint8Array(readFileSync(join(REAL_DIR, file))), "wasm", 1 << 30);
        expect(w.segments, file).toBe(pySegments[file][0]);
      }
    });
    it("the WebAssembly scanner takes ≥ 90 % of the entries of every big real trace", () => {
      expect(big.length).toBeGreaterThanOrEqual(5);
      for (const file of big) {
        const w = read(new Uint8Array(readFileSync(join(REAL_DIR, file))), "wasm", 1 << 30);
        expect(w.wasm, file).toBeGreaterThanOrEqual(Math.floor(pyEntries[file] * 0.9));
      }
    });
    for (const file of real) {
      it(`${file}: the WebAssembly path gives the JavaScript path's model`, () => {
        const bytes = new Uint8Array(readFileSync(join(REAL_DIR, file)));
        // Every real file is a plain pickle (PROTO first; Python's py_inspect says so too): read() feeds the
        // unpickler directly, so a compressed file added to the corpus must fail here, not pass unread.
        expect(bytes[0], `${file} starts with PROTO`).toBe(0x80);
        const js = read(bytes, "js", bytes.length);
        const w = read(bytes, "wasm", bytes.length);
        expect(fingerprint(w.model)).toEqual(fingerprint(js.model));
        // Python's count of the file's trace entries; one of the scanners takes ≥ 90 % of them.
        expect(entries(js.model)).toBe(pyEntries[file]);
        expect(w.wasm + w.js).toBeGreaterThanOrEqual(Math.floor(pyEntries[file] * 0.9));
        expect(fingerprint(read(bytes, "wasm", 4099).model)).toEqual(fingerprint(js.model));
      });
    }
  });
});
