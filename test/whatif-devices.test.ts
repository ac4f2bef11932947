// What-if for the user's setup (issue 21 item 4): GPUs available, the ranking, bf16 weights with what
// follows them, custom labels, capacities typed in GB. Expected values: the known run's simulation
// bookkeeping (memgen/knownrun.py, through Python), plain computations written here, and the documented
// order of costs written out here (not read from the code).

import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { readSnapshotFile } from "../src/cli/read-file";
import { runWhatIf } from "../src/cli/whatif";
import { parseCapacity } from "../src/core/units";
import { type Suggestion, suggest, type WhatIfContext, whatIfContext } from "../src/core/whatif";
import { parseLink, writeLink } from "../src/ui/state/link";
import { describeSpecs, namedSuggestion } from "../src/ui/views/whatif/specs";
import { python, REPO } from "./helpers/python";

const GEN = join(REPO, "test/gen/generate.py");
const dir = mkdtempSync(join(tmpdir(), "peakscope-whatif-devices-"));
const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

/** Devices a suggestion needs, read from its words: "ZeRO-k over N ranks" needs N, anything else 1. */
const devicesFromWords = (s: Suggestion) => {
  const m = /over (\d+) ranks/.exec(s.action);
  return m ? Number(m[1]) : 1;
};

/** The documented order of costs (src/core/whatif/README.md "Ranking"), written out here. */
const CHEAPEST_FIRST = ["free-gradients", "foreach", "batch", "checkpoint", "mixed-precision", "zero"];

let big: WhatIfContext | null = null;
async function bigContext(): Promise<WhatIfContext> {
  if (big) return big;
  // The generator's GPT-like training loop: 12 blocks, AdamW; its peak is at the end of the forward,
  // mostly activations (activation-bound).
  const file = join(dir, "big.pickle");
  python([GEN, "big", "--target-mb", "3", file]);
  big = whatIfContext(await readSnapshotFile(file));
  return big;
}

describe("the ranking for the GPUs at hand", () => {
  it("one GPU: every one-GPU change ranks before every change that needs more, checkpointing first", async () => {
    const ctx = await bigContext();
    const list = suggest(ctx, { devices: 1 });
    const act = list.find((s) => s.kind === "checkpoint");
    const atPeak = act ? ctx.replay.peakAllocatedBytes : 0;
    // activation-bound: activations are most of the baseline peak
    const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
    const zeroCats = list.find((s) => s.id === "free-gradients")?.categoriesAtPeak ?? {};
    expect(zeroCats.activations * 2).toBeGreaterThan(sum(Object.values(zeroCats)));
    expect(atPeak).toBeGreaterThan(0);
    for (const s of list) expect(s.devices, s.id).toBe(devicesFromWords(s));
    const firstMulti = list.findIndex((s) => s.devices > 1);
    expect(firstMulti).toBeGreaterThan(0);
    expect(list.slice(firstMulti).every((s) => s.devices > 1)).toBe(true);
    // within the one-GPU group (no capacity): by saving, the largest first
    const one = list.slice(0, firstMulti);
    const bySaving = [...one].sort((a, b) => b.savedBytes - a.savedBytes);
    expect(one.map((s) => s.savedBytes)).toEqual(bySaving.map((s) => s.savedBytes));
    expect(list[0].kind).toBe("checkpoint");
    // Some ZeRO change saves more than some one-GPU change, and still ranks after it for a one-GPU user.
    const zero = list.filter((s) => s.kind === "zero");
    const bestZero = zero.reduce((a, b) => (b.savedBytes > a.savedBytes ? b : a));
    const beaten = one.find((s) => s.savedBytes < bestZero.savedBytes && s.savedBytes > 0);
    expect(beaten).toBeDefined();
    expect(list.indexOf(beaten as Suggestion)).toBeLessThan(list.indexOf(bestZero));
  });

  it("eight GPUs: ZeRO over up to 8 ranks is on the devices at hand and ranks by its saving", async () => {
    const ctx = await bigContext();
    const list = suggest(ctx, { devices: 8 });
    expect(list.every((s) => s.devices <= 8)).toBe(true);
    const saved = list.map((s) => s.savedBytes);
    expect(saved).toEqual([...saved].sort((a, b) => b - a));
    const four = suggest(ctx, { devices: 4 });
    const firstOver = four.findIndex((s) => s.devices > 4);
    expect(four.slice(firstOver).map((s) => s.devices)).toEqual(four.slice(firstOver).map(() => 8));
  });

  it("with a capacity: what fits comes first, cheapest change first; the same figures either way", async () => {
    const ctx = await bigContext();
    const free = suggest(ctx, { devices: 1 });
    // a capacity between the best and the worst one-GPU new peak, so some fit and some do not
    const onePeaks = free.filter((s) => s.devices === 1).map((s) => s.peakBytes);
    const capBytes = Math.floor((Math.min(...onePeaks) + ctx.replay.peakAllocatedBytes) / 2);
    const list = suggest(ctx, {
      devices: 1,
      capacity: { bytes: capBytes, source: "option", detail: "test" },
    });
    for (const s of list) expect(s.fits, s.id).toBe(s.peakBytes <= capBytes);
    const oneFit = list.filter((s) => s.devices === 1 && s.fits);
    expect(oneFit.length).toBeGreaterThan(0);
    expect(list.slice(0, oneFit.length)).toEqual(oneFit);
    const rank = (s: Suggestion) => CHEAPEST_FIRST.indexOf(s.kind);
    for (let i = 1; i < oneFit.length; i++) {
      expect(rank(oneFit[i - 1])).toBeLessThanOrEqual(rank(oneFit[i]));
      if (rank(oneFit[i - 1]) === rank(oneFit[i]))
        expect(oneFit[i - 1].savedBytes).toBeGreaterThanOrEqual(oneFit[i].savedBytes);
    }
    // the same suggestions with the same figures, only ordered differently
    const key = (s: Suggestion) => `${s.id} ${s.peakBytes} ${s.peakEvent}`;
    expect(list.map(key).sort()).toEqual(free.map(key).sort());
  });
});

const SERIES_PY = `
import json, sys
sys.dont_write_bytecode = True
sys.path.insert(0, "test/gen")
from memgen import knownrun
run = knownrun.simulate(layout="cuda-all", moment="step3")
print(json.dumps([[s[0], s[2]] for s in run.series]))
`;

describe("bf16 weights count what follows them", () => {
  it("parameters, their gradients and the optimizer's state at half their bytes (known run)", async () => {
    const file = join(dir, "known.pickle");
    python([GEN, "known", "--moment", "step3", file]);
    const series = JSON.parse(python(["-c", SERIES_PY])) as [number, Record<string, number>][];
    const ctx = whatIfContext(await readSnapshotFile(file));
    const mp = suggest(ctx).find((s) => s.kind === "mixed-precision");
    expect(mp).toBeDefined();
    const halved = ["parameters", "gradients", "optimizer_state"];
    const curve = series.map(([alloc, cats]) => alloc - halved.reduce((a, c) => a + (cats[c] ?? 0) / 2, 0));
    let p = 0;
    for (let i = 1; i < curve.length; i++) if (curve[i] > curve[p]) p = i;
    expect(mp?.peakBytes).toBe(curve[p]);
    expect(mp?.peakEvent).toBe(p);
    for (const c of halved) expect(mp?.categoriesAtPeak[c], c).toBe(series[p][1][c] / 2);
    expect(mp?.specs).toEqual([
      "--scale category:parameters=1/2",
      "--scale category:gradients=1/2",
      "--scale category:optimizer_state=1/2",
    ]);
    expect(mp?.assumption).toContain("gradients");
    expect(mp?.devices).toBe(1);
  });
});

describe("labels, capacities in GB, the link", () => {
  it("a custom what-if keeps its own name; a link's suggestion id names it", () => {
    const specs = ["--scale category:optimizer_state=1/2"];
    const label = describeSpecs(specs);
    expect(label).toContain("optimizer_state");
    expect(label).not.toMatch(/ZeRO/);
    const zero1 = { id: "zero1x2", specs: [...specs], action: "ZeRO-1 over 2 ranks: …" };
    expect(namedSuggestion({ id: null, specs }, [zero1])).toBeNull();
    expect(namedSuggestion({ id: null, linkId: null, specs }, [zero1])).toBeNull();
    expect(namedSuggestion({ id: null, linkId: "zero1x2", specs }, [zero1])).toBe(zero1);
    // a link naming a suggestion whose options changed: not that suggestion
    expect(
      namedSuggestion({ id: null, linkId: "zero1x2", specs: ["--remove category:gradients"] }, [zero1]),
    ).toBeNull();
  });

  it("GB typed for a GPU means GiB, and says so", () => {
    expect(parseCapacity("40 GB")?.bytes).toBe(40 * 1024 ** 3);
    expect(parseCapacity("40 GB")?.note).toMatch(/40 GiB/);
    expect(parseCapacity("80GiB")).toEqual({ bytes: 80 * 1024 ** 3, note: null });
    expect(parseCapacity("1.5 tb")?.bytes).toBe(1.5 * 1024 ** 4);
    expect(parseCapacity("512 MB")?.bytes).toBe(512 * 1024 ** 2);
    expect(parseCapacity("85,899,345,920")).toEqual({ bytes: 85_899_345_920, note: null });
    expect(parseCapacity("lots")).toBeNull();
    expect(parseCapacity("40 XB")).toBeNull();
  });

  it("the link keeps GPUs available and the suggestion id beside the old parameters", () => {
    const state = {
      a: {
        src: "demo.pickle",
        device: 0,
        whatif: "--scale category:optimizer_state=1/2",
        whatifid: "zero1x2",
        devices: 4,
      },
      b: null,
    };
    const back = parseLink(writeLink(state));
    expect(back.notices).toEqual([]);
    expect(back.state.a).toEqual(state.a);
    // an old link (no devices, no whatifid) reads as before
    const old = parseLink("#v=1&src=demo.pickle&whatif=--remove%20category:gradients");
    expect(old.notices).toEqual([]);
    expect(old.state.a).toEqual({ src: "demo.pickle", whatif: "--remove category:gradients" });
    expect(parseLink("#v=1&devices=0").notices).toEqual(["devices=0 (not a whole number ≥ 1)"]);
  });
});

describe("peakscope whatif --devices", () => {
  const run = async (args: string[]) => {
    let out = "";
    let err = "";
    const code = await runWhatIf(args, { stdout: (s) => (out += s), stderr: (s) => (err += s) });
    return { code, out, err };
  };

  it("--json: devices per suggestion, devicesAvailable, one-GPU changes first; 40GB read as GiB", async () => {
    const file = join(dir, "known-cli.pickle");
    python([GEN, "known", "--moment", "step3", file]);
    const r = await run([file, "--suggest", "--capacity", "40GB", "--json"]);
    expect(r.err).toBe("");
    expect(r.code).toBe(0);
    const j = JSON.parse(r.out);
    expect(j.devicesAvailable).toBe(1);
    expect(j.capacity.bytes).toBe(40 * GiB);
    expect(j.capacity.detail).toContain("GiB");
    const devs: number[] = j.suggestions.map((s: { devices: number }) => s.devices);
    const firstMulti = devs.findIndex((d) => d > 1);
    expect(firstMulti).toBeGreaterThan(0);
    expect(devs.slice(firstMulti).every((d) => d > 1)).toBe(true);
    for (const s of j.suggestions) {
      const m = /over (\d+) ranks/.exec(s.action);
      expect(s.devices).toBe(m ? Number(m[1]) : 1);
    }
    const eight = JSON.parse((await run([file, "--suggest", "--devices", "8", "--json"])).out);
    expect(eight.devicesAvailable).toBe(8);
    const saved = eight.suggestions.map((s: { savedBytes: number }) => s.savedBytes);
    expect(saved).toEqual([...saved].sort((a: number, b: number) => b - a));
    const text = await run([file, "--suggest"]);
    expect(text.out).toContain("suggestions for 1 GPU");
    expect(text.out).toContain("needing more than 1 GPU");
    const bad = await run([file, "--devices", "0"]);
    expect(bad.code).toBe(1);
    expect(bad.err).toContain("--devices");
  });
});
