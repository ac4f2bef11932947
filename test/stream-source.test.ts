// Reading while downloading: core streamByteSource (a file parsed as its bytes arrive) and the worker's
// Engine.openUrl (`#src=`) against a local HTTP server. Expected values: the same file read from memory
// (fingerprints), Python's unpickler (py_inspect), and the server's own answers.

import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { resolve } from "node:path";
import { gzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readSnapshot } from "../src/core/formats/read";
import { streamByteSource } from "../src/core/formats/stream-source";
import { Engine } from "../workers/engine";
import { fingerprint, readBytes } from "./helpers/model";
import { HAVE_REAL, python, REAL_DIR, REPO } from "./helpers/python";

const FILE = "kkaitlyn111__cs336-a2-systems__memory_ctx128_fullstep.pickle";
const GZ = "ZidongLiu__DeComFL__memory.pickle";

/** Yields `bytes` in chunks of pseudo-random sizes, each after a macrotask (as a network does). */
async function* dribble(bytes: Uint8Array, seed: number, maxChunk: number, failAt = -1) {
  let x = seed;
  for (let at = 0; at < bytes.length; ) {
    x = (x * 1103515245 + 12345) % 2 ** 31;
    const n = 1 + (x % maxChunk);
    if (failAt >= 0 && at + n > failAt) throw new Error("connection reset");
    yield bytes.slice(at, Math.min(bytes.length, at + n));
    at += n;
    if (x % 8 === 0) await new Promise((r) => setImmediate(r));
  }
}

function inspect(path: string): { traceEntries: number; totals: { allocatedBytes: number } } {
  return JSON.parse(python([resolve(REPO, "test/tools/py_inspect.py"), path]));
}

describe.skipIf(!HAVE_REAL)("reading while the bytes arrive (streamByteSource)", () => {
  const bytes = () => new Uint8Array(readFileSync(resolve(REAL_DIR, FILE)));

  it("gives the same model as the whole file, for chunk sizes small and large", async () => {
    const b = bytes();
    const whole = fingerprint(await readBytes(b, FILE));
    for (const [seed, maxChunk] of [
      [1, 97],
      [2, 4096],
      [3, 300_000],
    ]) {
      const src = streamByteSource(dribble(b, seed, maxChunk), FILE, b.length);
      // slices far smaller than the default, read ahead: many reads wait for bytes not yet in
      const model = await readSnapshot(src, { chunkBytes: 64 << 10, maxChunkBytes: 256 << 10, readAhead: 2 });
      expect(fingerprint(model)).toEqual(whole);
      expect(src.receivedBytes).toBe(b.length);
    }
  });

  it("flow control: a sender that waits for what was let go never gets more than its window ahead", async () => {
    const b = bytes();
    const windowBytes = 1 << 20; // > the reads out at once: three 256 KiB slices
    let credit = windowBytes;
    let wake: (() => void) | null = null;
    let aheadMax = 0;
    async function* sender() {
      for await (const c of dribble(b, 7, 200_000)) {
        while (credit <= 0) await new Promise<void>((r) => (wake = r));
        credit -= c.length;
        aheadMax = Math.max(aheadMax, windowBytes - credit);
        yield c;
      }
    }
    const src = streamByteSource(sender(), FILE, b.length, undefined, (letGo) => {
      credit += letGo;
      wake?.();
      wake = null;
    });
    const model = await readSnapshot(src, { chunkBytes: 64 << 10, maxChunkBytes: 256 << 10, readAhead: 2 });
    expect(fingerprint(model)).toEqual(fingerprint(await readBytes(b, FILE)));
    expect(aheadMax).toBeLessThan(windowBytes + 200_000);
    expect(aheadMax).toBeGreaterThan(256 << 10);
  });

  it("lets go of what was read: a read behind it fails and says why", async () => {
    const b = bytes();
    const src = streamByteSource(dribble(b, 4, 50_000), FILE, b.length);
    await src.read(0, 64);
    await src.read(0, 1 << 20);
    const later = await src.read(2 << 20, 1 << 20);
    expect(later).toEqual(b.subarray(2 << 20, 3 << 20));
    await expect(src.read(0, 10)).rejects.toThrow(/moved past it/);
  });

  it("a stream that breaks fails the read waiting on it with its error; one cut short reads as truncated", async () => {
    const b = bytes();
    const broken = streamByteSource(dribble(b, 5, 60_000, 1_500_000), FILE, b.length);
    await expect(readSnapshot(broken, { chunkBytes: 1 << 20 })).rejects.toThrow(/connection reset/);
    const short = b.subarray(0, 1_000_000);
    const cut = streamByteSource(dribble(short, 6, 60_000), FILE, b.length);
    await expect(readSnapshot(cut, { chunkBytes: 1 << 20 })).rejects.toThrow(/truncated/);
  });
});

describe.skipIf(!HAVE_REAL)("Engine.openUrl (#src=) against a local server", () => {
  let server: Server;
  let base = "";
  // The stalling route: the first 256 KiB, then nothing until the client goes away. `stalled` resolves
  // once those bytes are written, `closed` when the client closed the connection.
  let stalled: () => void = () => {};
  let closed: () => void = () => {};
  const page = { origin: "http://peakscope.test", protocol: "http:" };
  beforeAll(async () => {
    const plain = readFileSync(resolve(REAL_DIR, FILE));
    const other = readFileSync(resolve(REAL_DIR, GZ));
    server = createServer((req, res) => {
      const cors = { "Access-Control-Allow-Origin": "*" };
      if (req.url === `/plain/${FILE}`) {
        res.writeHead(200, { ...cors, "Content-Length": plain.length });
        // in pieces, with pauses: the engine parses what came while the rest is on its way
        let at = 0;
        const next = () => {
          if (at >= plain.length) return res.end();
          res.write(plain.subarray(at, at + 256 * 1024));
          at += 256 * 1024;
          setTimeout(next, 2);
        };
        next();
      } else if (req.url === `/stall/${FILE}`) {
        res.writeHead(200, { ...cors, "Content-Length": plain.length });
        res.on("close", () => closed());
        res.write(plain.subarray(0, 256 * 1024), () => stalled());
      } else if (req.url === `/chunked/${GZ}`) {
        res.writeHead(200, cors); // no Content-Length: gathered whole, then read
        res.end(other);
      } else if (req.url === `/gzip/${GZ}`) {
        // Content-Length is the compressed size: the body as read is longer
        const z = gzipSync(other);
        res.writeHead(200, { ...cors, "Content-Encoding": "gzip", "Content-Length": z.length });
        res.end(z);
      } else {
        res.writeHead(404, { ...cors, "Content-Type": "text/plain" });
        res.end("not here");
      }
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    const addr = server.address();
    base = `http://127.0.0.1:${typeof addr === "object" && addr ? addr.port : 0}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it("reads a file while it downloads: its summary is Python's, progress says downloading first", async () => {
    const e = new Engine();
    const phases: string[] = [];
    const r = await e.openUrl(`${base}/plain/${FILE}`, FILE, page, (p) => {
      if (phases.at(-1) !== p.phase) phases.push(p.phase);
    });
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    const py = inspect(resolve(REAL_DIR, FILE));
    expect(r.summary.traceEntries).toBe(py.traceEntries);
    expect(r.summary.totals.allocatedBytes).toBe(py.totals.allocatedBytes);
    expect(r.summary.byteLength).toBe(readFileSync(resolve(REAL_DIR, FILE)).length);
    expect(phases[0]).toBe("downloading");
    expect(phases).toContain("attributing");
    // the model equals the one read from the file on disk
    const disk = await readBytes(new Uint8Array(readFileSync(resolve(REAL_DIR, FILE))), FILE);
    expect(fingerprint(e.model as NonNullable<typeof e.model>)).toEqual(fingerprint(disk));
  });

  it("no Content-Length, or a compressed transfer: the body is read whole, with the same result", async () => {
    const py = inspect(resolve(REAL_DIR, GZ));
    for (const route of ["chunked", "gzip"]) {
      const e = new Engine();
      const r = await e.openUrl(`${base}/${route}/${GZ}`, GZ, page);
      expect(r, route).toMatchObject({ ok: true, summary: { traceEntries: py.traceEntries } });
    }
  });

  it("a missing file and an unreachable server say what happened", async () => {
    const e = new Engine();
    const missing = await e.openUrl(`${base}/missing.pickle`, "missing.pickle", page);
    expect(missing).toMatchObject({
      ok: false,
      cancelled: false,
      message: expect.stringContaining("HTTP 404"),
    });
    const gone = await e.openUrl("http://127.0.0.1:9/x.pickle", "x.pickle", page);
    expect(gone).toMatchObject({
      ok: false,
      message: expect.stringContaining("Access-Control-Allow-Origin (CORS) for http://peakscope.test"),
    });
  });

  it("Cancel stops the download", async () => {
    // Deterministic: the server sends the first 256 KiB and then nothing, so the download cannot end
    // before Cancel; Cancel comes once those bytes are out, and the server sees the connection close.
    const e = new Engine();
    const out = new Promise<void>((r) => (stalled = r));
    const gone = new Promise<void>((r) => (closed = r));
    const p = e.openUrl(`${base}/stall/${FILE}`, FILE, page);
    await out;
    e.cancel();
    const r = await p;
    expect(r).toMatchObject({ ok: false, cancelled: true });
    expect(e.model).toBeNull();
    await gone; // the request was really aborted (else this waits until the test times out)
  });
});
