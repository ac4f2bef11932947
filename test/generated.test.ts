// The generator's variant and hostile sets (test/gen/generate.py, Python's pickle module): every variant
// reads to the counts its manifest states, protocols 0–5 give identical models, hostile files fail clearly.
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { SnapshotReadError } from "../src/core/formats/errors";
import { summarize } from "../src/core/model/summary";
import { BlockState } from "../src/core/model/types";
import { fingerprint, readPath } from "./helpers/model";
import { python } from "./helpers/python";

interface ManifestFile {
  file: string;
  what: string;
  format: string;
  pickleProtocol: number | null;
  segments: number;
  blocks: number;
  traceEntries: number;
  actions: Record<string, number>;
  devices: {
    device: number;
    segments: number;
    blocks: number;
    traceEntries: number;
    reservedBytes: number;
    allocatedBytes: number;
    activeBytes: number;
    blockStates: Record<string, number>;
    liveBlockBytes: number;
  }[];
}

const dir = mkdtempSync(join(tmpdir(), "peakscope-gen-"));
let variants: ManifestFile[] = [];
let hostile: { file: string; expect: string; what: string; xss?: string }[] = [];

beforeAll(() => {
  python(["test/gen/generate.py", "variants", join(dir, "variants")]);
  python(["test/gen/generate.py", "hostile", join(dir, "hostile")]);
  variants = JSON.parse(readFileSync(join(dir, "variants/manifest.json"), "utf8")).files;
  hostile = JSON.parse(readFileSync(join(dir, "hostile/manifest.json"), "utf8")).files;
});

describe("generated variants", () => {
  it("every variant reads to the counts and totals in the generator's manifest", async () => {
    expect(variants.length).toBeGreaterThanOrEqual(19);
    for (const v of variants) {
      const m = await readPath(join(dir, "variants", v.file));
      const s = summarize(m);
      const label = `${v.file} (${v.what})`;
      expect(s.format, label).toBe(v.format);
      expect(s.pickleProtocol, label).toBe(v.pickleProtocol);
      expect([s.segments, s.blocks, s.traceEntries], label).toEqual([v.segments, v.blocks, v.traceEntries]);
      expect(s.actions, label).toEqual(v.actions);
      for (const d of v.devices) {
        const ours = s.devices.find((x) => x.device === d.device);
        expect(ours, label).toBeDefined();
        expect([ours?.reservedBytes, ours?.allocatedBytes, ours?.activeBytes], label).toEqual([
          d.reservedBytes,
          d.allocatedBytes,
          d.activeBytes,
        ]);
        // Block states and live bytes, from the block columns.
        const states: Record<string, number> = {};
        let live = 0;
        for (let b = 0; b < m.blocks.length; b++) {
          if (m.segments.device[m.blocks.segment[b]] !== d.device) continue;
          const st = m.blocks.state[b];
          const name =
            st === BlockState.active_allocated
              ? "active_allocated"
              : st === BlockState.active_pending_free
                ? "active_pending_free"
                : st === BlockState.inactive
                  ? "inactive"
                  : "unknown";
          states[name] = (states[name] ?? 0) + 1;
          if (st === BlockState.active_allocated) live += m.blocks.sizeBytes[b];
        }
        // The docstring's spelling active_awaiting_free reads as active_pending_free.
        const expected = Object.fromEntries(
          Object.entries(d.blockStates).map(([k, n]) => [
            k === "active_awaiting_free" ? "active_pending_free" : k,
            n,
          ]),
        );
        expect(states, label).toEqual(expected);
        expect(live, label).toBe(d.liveBlockBytes);
      }
    }
  });

  it("protocols 0–5, gzip, zip and JSON of the same content give identical models", async () => {
    const reference = fingerprint(await readPath(join(dir, "variants/proto4.pickle")));
    for (const f of [
      "proto0.pickle",
      "proto1.pickle",
      "proto2.pickle",
      "proto3.pickle",
      "proto5.pickle",
      "gzip.pickle.gz",
      "zip.zip",
      "json.json",
      "trailing-bytes.pickle",
    ]) {
      expect(fingerprint(await readPath(join(dir, "variants", f), { chunkBytes: 7 })), f).toEqual(reference);
    }
  });

  it("trailing bytes after STOP are ignored and reported", async () => {
    const m = await readPath(join(dir, "variants/trailing-bytes.pickle"));
    expect(m.source.notes.join(" ")).toMatch(/\d+ bytes after the pickle's STOP were ignored/);
  });

  it("torch 2.0 history blocks: addresses computed from the segment, stacks from history[0]", async () => {
    const m = await readPath(join(dir, "variants/torch20-history.pickle"));
    expect(m.legacyHistory).toBe(true);
    for (let s = 0; s < m.segments.length; s++) {
      let addr = m.segments.address[s];
      for (let b = m.segments.firstBlock[s]; b < m.segments.firstBlock[s] + m.segments.blockCount[s]; b++) {
        expect(m.blocks.addressComputed[b]).toBe(1);
        expect(m.blocks.address[b]).toBe(addr);
        addr += m.blocks.sizeBytes[b];
      }
    }
    const withStack = Array.from(m.blocks.stack).filter((s) => s !== 0).length;
    expect(withStack).toBeGreaterThan(0);
  });

  it("torch_npu: the prepended workspace entries are marked, file order kept", async () => {
    const m = await readPath(join(dir, "variants/npu.pickle"));
    const t = m.traces[0];
    const names = Array.from(t.action.subarray(0, 4), (a) => m.actionNames[a]);
    expect(names.slice(0, 3)).toEqual(["workspace_snapshot", "segment_alloc", "alloc"]);
    expect(Array.from(t.isWorkspace.subarray(0, 4))).toEqual([1, 1, 1, 0]);
    expect(Array.from(t.isWorkspace).reduce((a, b) => a + b, 0)).toBe(3);
    expect(Number.isNaN(t.timeUs[5])).toBe(true);
  });

  it("unknown actions are kept and counted; oom keeps device_free; private pools and expandable segments", async () => {
    const unknown = await readPath(join(dir, "variants/unknown-action.pickle"));
    const extra = unknown.actionNames.slice(11);
    expect(extra.length).toBeGreaterThan(0);
    const oom = await readPath(join(dir, "variants/oom.pickle"));
    const t = oom.traces[0];
    const i = Array.from(t.action).indexOf(8);
    expect(i).toBeGreaterThanOrEqual(0);
    expect(t.deviceFreeBytes[i]).toBeGreaterThan(0);
    expect(Number.isNaN(t.addr[i])).toBe(true);
    const pools = await readPath(join(dir, "variants/private-pools.pickle"));
    expect(Array.from(pools.segments.poolId1).some((p) => p > 0)).toBe(true);
    const exp = await readPath(join(dir, "variants/expandable.pickle"));
    expect(Array.from(exp.segments.isExpandable).some((x) => x === 1)).toBe(true);
    const multi = await readPath(join(dir, "variants/multi-device.pickle"));
    expect(multi.streams.some((s) => s > 2 ** 40)).toBe(true);
  });
});

describe("generated hostile files", () => {
  // A hang ends at vitest's test timeout; the test asserts no timing (bench/ prints times).
  it("each ends in its error (or a correct reading)", async () => {
    expect(hostile.length).toBeGreaterThanOrEqual(10);
    for (const h of hostile) {
      const result = await readPath(join(dir, "hostile", h.file)).catch((e) => e);
      const label = `${h.file} (${h.what})`;
      if (h.expect === "load") expect(result, label).not.toBeInstanceOf(Error);
      else if (h.expect === "refuse") {
        expect(result, label).toBeInstanceOf(SnapshotReadError);
        expect((result as Error).message, label).toContain(h.file);
      } else expect(result instanceof SnapshotReadError || !(result instanceof Error), label).toBe(true);
    }
  });

  it("GLOBAL/REDUCE and STACK_GLOBAL are refused by name and offset", async () => {
    for (const f of ["global.pickle", "stack-global.pickle", "build.pickle"]) {
      const e = await readPath(join(dir, "hostile", f)).catch((x) => x);
      expect(e.code).toBe("unsafe");
      expect(e.message).toMatch(/opcode (GLOBAL|STACK_GLOBAL) at byte \d+/);
    }
  });

  it("strings that look like HTML are kept verbatim as text", async () => {
    const x = hostile.find((h) => h.file === "xss.pickle");
    const m = await readPath(join(dir, "hostile/xss.pickle"));
    expect(m.strings.some((s) => s.includes(x?.xss ?? "<img"))).toBe(true);
  });
});
