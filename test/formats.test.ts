// One real snapshot re-encoded by Python every way a reader meets it (protocols 0–5, gzip, zip, JSON,
// the bare segment list) gives the same model; unreadable inputs give messages a user can act on.
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { main } from "../src/cli/main";
import { SnapshotReadError } from "../src/core/formats/errors";
import { summarize } from "../src/core/model/summary";
import { fingerprint, readBytes, readPath } from "./helpers/model";
import { HAVE_REAL, python, REAL_DIR } from "./helpers/python";

const SOURCE = join(REAL_DIR, "JasperSolt__EoR_NN__snapshot.pickle");
const REENCODE = `
import gzip, io, json, pickle, sys, zipfile
class Restricted(pickle.Unpickler):
    def find_class(self, m, n): raise pickle.UnpicklingError("global " + m + "." + n)
src, out = sys.argv[1], sys.argv[2]
snap = Restricted(open(src, "rb")).load()
for p in range(6):
    with open(f"{out}/proto{p}.pickle", "wb") as f: pickle.dump(snap, f, protocol=p)
raw = pickle.dumps(snap, protocol=4)
with gzip.open(f"{out}/snap.pickle.gz", "wb") as f: f.write(raw)
with zipfile.ZipFile(f"{out}/deflated.zip", "w", zipfile.ZIP_DEFLATED) as z: z.writestr("dump/snap.pickle", raw)
with zipfile.ZipFile(f"{out}/stored.zip", "w", zipfile.ZIP_STORED) as z: z.writestr("snap.pickle", raw)
with open(f"{out}/snap.json", "w") as f: json.dump(snap, f)
with open(f"{out}/segments.pickle", "wb") as f: pickle.dump(snap["segments"], f, protocol=4)
with zipfile.ZipFile(f"{out}/checkpoint.zip", "w") as z: z.writestr("archive/data.pkl", b"x")
with open(f"{out}/counters.json", "w") as f: json.dump({"memory_allocated": 1, "max_memory_allocated": 2}, f)
`;

if (!HAVE_REAL) console.warn(`formats tests on the real files skipped: ${REAL_DIR} is absent`);

describe.skipIf(!HAVE_REAL)("formats: one snapshot, every encoding", () => {
  let dir = "";
  let reference: unknown;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "peakscope-formats-"));
    python(["-c", REENCODE, SOURCE, dir]);
    reference = fingerprint(await readPath(SOURCE));
  });

  for (const p of [0, 1, 2, 3, 4, 5]) {
    it(`pickle protocol ${p}`, async () => {
      const m = await readPath(join(dir, `proto${p}.pickle`));
      expect(m.source.format).toBe("pickle");
      expect(m.source.pickleProtocol).toBe(p >= 2 ? p : null);
      expect(fingerprint(m)).toEqual(reference);
    });
  }

  it("gzip'd pickle, read in small slices", async () => {
    const m = await readPath(join(dir, "snap.pickle.gz"), { chunkBytes: 4096 });
    expect(m.source.format).toBe("pickle+gzip");
    expect(fingerprint(m)).toEqual(reference);
  });

  it("zip, deflated and stored", async () => {
    for (const f of ["deflated.zip", "stored.zip"]) {
      const m = await readPath(join(dir, f), { chunkBytes: 10_000 });
      expect(m.source.format).toBe("zip");
      expect(fingerprint(m)).toEqual(reference);
    }
  });

  it("JSON (json.dump of the same dict)", async () => {
    const m = await readPath(join(dir, "snap.json"));
    expect(m.source.format).toBe("json");
    expect(fingerprint(m)).toEqual(reference);
  });

  it("the bare list of segments", async () => {
    const m = await readPath(join(dir, "segments.pickle"));
    expect(m.source.format).toBe("segment-list");
    expect(m.layout).toBe("segment-list");
    expect(m.traces.length).toBe(0);
    expect((fingerprint(m) as { blocks: unknown }).blocks).toEqual((reference as { blocks: unknown }).blocks);
  });

  it("a torch.save checkpoint and a counters sidecar are named for what they are", async () => {
    await expect(readPath(join(dir, "checkpoint.zip"))).rejects.toThrow(/torch\.save\(\) checkpoint/);
    await expect(readPath(join(dir, "counters.json"))).rejects.toThrow(/counters sidecar/);
  });

  it("truncated at many offsets: 'truncated at byte N', never a hang", async () => {
    const bytes = new Uint8Array(readFileSync(SOURCE));
    for (const n of [1, 2, 10, 1000, 50_000, bytes.length >> 1, bytes.length - 1]) {
      const err = await readBytes(bytes.subarray(0, n), "cut.pickle").catch((e) => e);
      expect(err).toBeInstanceOf(SnapshotReadError);
      expect(err.code).toBe("truncated");
      expect(err.message).toMatch(/cut\.pickle is truncated: .*byte \d+/);
      expect(err.offset).toBeLessThanOrEqual(n);
    }
  });

  it("a truncated gzip says the compressed data is damaged", async () => {
    const gz = new Uint8Array(readFileSync(join(dir, "snap.pickle.gz")));
    const err = await readBytes(gz.subarray(0, gz.length >> 1), "cut.pickle.gz").catch((e) => e);
    expect(err).toBeInstanceOf(SnapshotReadError);
    expect(err.message).toMatch(/cut\.pickle\.gz/);
    expect(err.message).toMatch(/truncated|cut short|damaged/);
  });
});

describe("unusual shapes", () => {
  it("a device trace written as a tuple keeps every entry, in order", async () => {
    const code = `
import base64, pickle
e = [{"action": a, "addr": 4096, "size": 512, "stream": 0, "frames": []} for a in ("alloc", "free_requested", "free_completed")]
print(base64.b64encode(pickle.dumps({"segments": [], "device_traces": [tuple(e)]}, protocol=4)).decode())`;
    const bytes = new Uint8Array(Buffer.from(python(["-c", code]).trim(), "base64"));
    const m = await readBytes(bytes, "tuple.pickle");
    expect(Array.from(m.traces[0].action, (a) => m.actionNames[a])).toEqual([
      "alloc",
      "free_requested",
      "free_completed",
    ]);
  });
});

describe("unreadable input", () => {
  it("an empty file", async () => {
    const err = await readBytes(new Uint8Array(0), "empty.pickle").catch((e) => e);
    expect(err.code).toBe("empty");
    expect(err.message).toContain("empty.pickle is empty (0 bytes)");
  });

  it("a foreign file says what was found instead", async () => {
    const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13]);
    await expect(readBytes(png, "x.pickle")).rejects.toThrow(/not a memory snapshot: it holds a PNG image/);
    const text = new TextEncoder().encode("hello world, this is text");
    await expect(readBytes(text, "x.pickle")).rejects.toThrow(/it holds text starting "hello world,"/);
  });

  it("a valid pickle of something else", async () => {
    const bytes = new Uint8Array(
      Buffer.from(
        python([
          "-c",
          "import pickle,base64;print(base64.b64encode(pickle.dumps({'hello': 1})).decode())",
        ]).trim(),
        "base64",
      ),
    );
    await expect(readBytes(bytes, "x.pickle")).rejects.toThrow(
      /Not a memory snapshot: the file holds a dict with keys "hello"/,
    );
  });

  it("the CLI: unreadable input prints the message and exits 1; permission denied says chmod 600", async () => {
    const out: string[] = [];
    const io = { stdout: (s: string) => out.push(s), stderr: (s: string) => out.push(s) };
    expect(await main(["inspect", "/nonexistent/snap.pickle"], io)).toBe(1);
    expect(out.join("")).toContain("no such file");
    const { permissionDenied } = await import("../src/core/formats/errors");
    expect(permissionDenied("dump.pickle").message).toContain("chmod 600 dump.pickle");
  });

  it.skipIf(!HAVE_REAL)("the CLI's --json output matches the summary", async () => {
    const out: string[] = [];
    const io = { stdout: (s: string) => out.push(s), stderr: (s: string) => out.push(s) };
    expect(await main(["inspect", SOURCE, "--json"], io)).toBe(0);
    const json = JSON.parse(out.join(""));
    const s = summarize(await readPath(SOURCE));
    expect(json.segments).toBe(s.segments);
    expect(json.devices[0].allocatedBytes).toBe(s.devices[0].allocatedBytes);
  });
});
