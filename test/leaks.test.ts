// `peakscope leaks` and src/core/leaks against the generator's truth (test/gen/generate.py leaks): planted
// leaks — a kept list, a graph kept alive, a slowly growing cache — in one trace (recorded from the start and
// from after the model, with and without step annotations) and as a series of dumps; steady runs (the same run
// without the leak) give "none"; the real training files give no leak; bad series are refused with words.
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { runLeaks } from "../src/cli/leaks";
import { main } from "../src/cli/main";
import { readSnapshotFile } from "../src/cli/read-file";
import {
  analyseGrowth,
  compareDumps,
  type LeaksJson,
  stepFromFileName,
  stepFromTag,
  summarizeDump,
  traceLeaks,
} from "../src/core/leaks/index";
import { isSeries } from "../src/ui/views/series/detect";
import { HAVE_REAL, python, REAL_DIR } from "./helpers/python";

const MiB = 1 << 20;
const LEAKS = ["list", "graph", "cache"] as const;
type Leak = (typeof LEAKS)[number] | "none";

interface LiveRow {
  site: string | null;
  category: string;
  bytes: number;
}
interface TraceTruth {
  leak: string | null;
  leakSites: { site: string; category: string }[];
  steps: { step: number; endEvent: number; allocatedBytes: number; leakBytes: number[]; live: LiveRow[] }[];
}
interface SeriesTruth {
  leak: string | null;
  leakSites: { site: string; category: string }[];
  dumps: { file: string; step: number; allocatedBytes: number; leakBytes: number[]; live: LiveRow[] }[];
}

const root = mkdtempSync(join(tmpdir(), "peakscope-leaks-"));
const trace = (leak: Leak, from: string, ann = true) =>
  join(root, `t-${leak}-${from}${ann ? "" : "-noann"}.pickle`);
const series = (leak: Leak) => join(root, `s-${leak}`);
const readJson = <T>(p: string): T => JSON.parse(readFileSync(p, "utf8")) as T;
const dumpsOf = (dir: string) =>
  readdirSync(dir)
    .filter((f) => f.endsWith(".pickle"))
    .map((f) => join(dir, f));

async function leaks(args: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runLeaks(args, { stdout: (s) => out.push(s), stderr: (s) => err.push(s) });
  return { code, out: out.join(""), err: err.join("") };
}
async function leaksJson(args: string[]) {
  const r = await leaks([...args, "--json"]);
  return { ...r, json: r.code === 1 ? (null as unknown as LeaksJson) : (JSON.parse(r.out) as LeaksJson) };
}

/** Growth per step of a truth series that grows by the same bytes every step (checked here). */
function evenGrowth(values: number[]): number {
  const d = values.slice(1).map((v, i) => v - values[i]);
  expect(new Set(d).size, `the planted leak grows evenly: ${d}`).toBe(1);
  return d[0];
}

beforeAll(() => {
  const gen = (args: string[]) => python(["test/gen/generate.py", "leaks", ...args]);
  for (const leak of ["none", ...LEAKS] as Leak[]) {
    gen(["--leak", leak, trace(leak, "start")]);
    gen(["--leak", leak, "--record-from", "after-build", trace(leak, "after-build")]);
    gen(["--leak", leak, "--series", series(leak)]);
  }
  gen(["--leak", "list", "--no-annotations", trace("list", "start", false)]);
  gen(["--leak", "none", "--no-annotations", trace("none", "start", false)]);
  gen(["--leak", "none", "--series", "--extra-parameter", join(root, "other-model")]);
}, 120_000);

describe("leaks in one trace (generated runs, truth from the bookkeeping)", () => {
  for (const from of ["start", "after-build"]) {
    for (const leak of ["none", ...LEAKS] as Leak[]) {
      it(`${leak}, recorded from the ${from}`, async () => {
        const truth = readJson<TraceTruth>(`${trace(leak, from)}.truth.json`);
        const { code, json: j } = await leaksJson([trace(leak, from)]);
        expect(j.mode).toBe("trace");
        expect(j.stepSource.kind).toBe("optimizer-step");
        // The steps end exactly where the simulation's optimizer steps ended.
        expect(j.steps.map((s) => [s.step, s.endEvent, s.allocatedBytes])).toEqual(
          truth.steps.map((s) => [s.step, s.endEvent, s.allocatedBytes]),
        );
        for (let k = 1; k < j.steps.length; k++)
          expect(j.steps[k].startEvent).toBe(truth.steps[k - 1].endEvent + 1);
        // The lazily made buffer (train.py:64) grows once and stops: warm-up, never a leak.
        const lazy = (rows: LiveRow[]) => rows.find((r) => r.site?.endsWith("train.py:64:main"))?.bytes ?? 0;
        const lazyStep = truth.steps.find((s) => lazy(s.live) > 0)?.step;
        expect(j.warmUp.oneOff.map((o) => [o.site, o.category, o.steps])).toContainEqual([
          truth.steps.flatMap((s) => s.live).find((r) => r.site?.endsWith("train.py:64:main"))?.site,
          "input",
          [lazyStep],
        ]);
        if (leak === "none") {
          expect([code, j.verdict, j.leaks, j.message]).toEqual([0, "none", [], "no growth found"]);
          return;
        }
        expect(code).toBe(2);
        expect(j.verdict).toBe("leak");
        expect(j.leaks.map((l) => [l.site, l.category]).sort()).toEqual(
          truth.leakSites.map((s) => [s.site, s.category]).sort(),
        );
        truth.leakSites.forEach((s, i) => {
          const mine = j.leaks.find((l) => l.site === s.site && l.category === s.category);
          const live = truth.steps.map((t) => t.leakBytes[i]);
          expect(mine?.liveBytesByStep).toEqual(live);
          expect(mine?.bytesPerStep).toBe(evenGrowth(live));
          expect(mine?.steps).toEqual(truth.steps.slice(1).map((t) => t.step));
        });
        // What each middle step kept into the next: the leak's growth, plus the lazy buffer in its step.
        for (let k = 1; k < truth.steps.length - 1; k++) {
          const grown = truth.leakSites.reduce(
            (s, _x, i) => s + truth.steps[k].leakBytes[i] - truth.steps[k - 1].leakBytes[i],
            0,
          );
          const lazyBytes = truth.steps[k].step === lazyStep ? lazy(truth.steps[k].live) : 0;
          expect(j.steps[k].retainedBytes, `step ${truth.steps[k].step}`).toBe(grown + lazyBytes);
        }
        expect(j.steps[j.steps.length - 1].retainedBytes).toBeNull();
        expect(j.projectedOomStep).toBeNull(); // no capacity known (the sidecar has no device total)
      });
    }
  }

  it("without annotations the steps come from the optimizer's repetition, said with its confidence", async () => {
    for (const leak of ["list", "none"] as Leak[]) {
      const truth = readJson<TraceTruth>(`${trace(leak, "start", false)}.truth.json`);
      const { code, json: j } = await leaksJson([trace(leak, "start", false)]);
      expect(j.stepSource.kind).toBe("repetition");
      expect(j.stepSource.confidence).toBe("high");
      expect(j.stepSource.detail).toMatch(/optimizer's allocations recurring/);
      expect(j.steps.map((s) => s.endEvent)).toEqual(truth.steps.map((s) => s.endEvent));
      expect(j.verdict).toBe(leak === "none" ? "none" : "leak");
      expect(code).toBe(leak === "none" ? 0 : 2);
      if (leak === "list") expect(j.leaks.map((l) => l.site)).toEqual([truth.leakSites[0].site]);
    }
  });

  it("--step-marker picks annotations by name, and says when none matches", async () => {
    const { json: j } = await leaksJson([trace("cache", "start"), "--step-marker", "zero_grad"]);
    expect(j.stepSource.kind).toBe("step-marker");
    expect(j.steps).toHaveLength(8);
    expect(j.verdict).toBe("leak");
    const bad = await leaks([trace("cache", "start"), "--step-marker", "NoSuchStep"]);
    expect(bad.code).toBe(1);
    expect(bad.err).toMatch(/no annotation with a time matches it.*Optimizer\.step#AdamW\.step/);
    const badRe = await leaks([trace("cache", "start"), "--step-marker", "("]);
    expect(badRe.code).toBe(1);
    expect(badRe.err).toMatch(/not a regular expression/);
  });

  it("projects the step at which memory runs out from --capacity", async () => {
    const cap = 256 * MiB;
    const truth = readJson<TraceTruth>(`${trace("graph", "start")}.truth.json`);
    const { json: j } = await leaksJson([trace("graph", "start"), "--capacity", "256MiB"]);
    const perStep = truth.leakSites.reduce(
      (s, _x, i) => s + evenGrowth(truth.steps.map((t) => t.leakBytes[i])),
      0,
    );
    const last = j.steps[j.steps.length - 1];
    // Peak of step s = the last step's peak + the growth per step × the steps since: the first s above cap.
    let s = last.step;
    while ((last.peakBytes as number) + perStep * (s - last.step) <= cap) s++;
    expect(j.projectedOomStep).toBe(s);
    expect(j.capacity).toMatchObject({ bytes: cap, source: "option" });
  });

  it("the JSON has the keys the issue names", async () => {
    const { json: j } = await leaksJson([trace("list", "start")]);
    for (const k of ["mode", "steps", "leaks", "verdict", "projectedOomStep"]) expect(j).toHaveProperty(k);
    for (const k of ["step", "startEvent", "endEvent", "allocatedBytes", "peakBytes"])
      expect(j.steps[0]).toHaveProperty(k);
    for (const k of ["site", "category", "bytesPerStep", "steps", "liveBytesByStep"])
      expect(j.leaks[0]).toHaveProperty(k);
    const { json: s } = await leaksJson(dumpsOf(series("list")));
    for (const k of ["step", "file", "allocatedBytes", "peakBytes"]) expect(s.steps[0]).toHaveProperty(k);
  });
});

describe("leaks across a series of dumps", () => {
  for (const leak of ["none", ...LEAKS] as Leak[]) {
    it(`${leak}: dumps after steps 2–7`, async () => {
      const truth = readJson<SeriesTruth>(join(series(leak), "series.truth.json"));
      // Given in a shuffled order: the steps come from the file names.
      const files = dumpsOf(series(leak)).reverse();
      const { code, json: j } = await leaksJson(files);
      expect(j.mode).toBe("series");
      expect(j.stepSource.kind).toBe("file-name");
      expect(j.steps.map((s) => [s.step, s.file?.split("/").pop(), s.allocatedBytes])).toEqual(
        truth.dumps.map((d) => [d.step, d.file, d.allocatedBytes]),
      );
      // The lazy buffer made in step 3 grew once: warm-up.
      expect(j.warmUp.oneOff.map((o) => [o.site.split("/").pop(), o.category, o.steps])).toContainEqual([
        "train.py:64:main",
        "input",
        [3],
      ]);
      if (leak === "none") {
        expect([code, j.verdict, j.leaks]).toEqual([0, "none", []]);
        return;
      }
      expect([code, j.verdict]).toEqual([2, "leak"]);
      expect(j.leaks.map((l) => [l.site, l.category]).sort()).toEqual(
        truth.leakSites.map((s) => [s.site, s.category]).sort(),
      );
      truth.leakSites.forEach((s, i) => {
        const mine = j.leaks.find((l) => l.site === s.site && l.category === s.category);
        const live = truth.dumps.map((d) => d.leakBytes[i]);
        expect(mine?.liveBytesByStep).toEqual(live);
        expect(mine?.bytesPerStep).toBe(evenGrowth(live));
        expect(mine?.steps).toEqual(truth.dumps.slice(1).map((d) => d.step));
      });
    });
  }

  it("every other dump: growth per step is the change over the steps between them", async () => {
    const truth = readJson<SeriesTruth>(join(series("list"), "series.truth.json"));
    const pick = truth.dumps.filter((d) => d.step % 2 === 1); // 3, 5, 7: two measured pairs
    const { json: j } = await leaksJson(pick.map((d) => join(series("list"), d.file)));
    expect(j.verdict).toBe("too-few-steps"); // 2 pairs < 3 steps of growth
    const four = truth.dumps.filter((d) => d.step !== 3); // 2, 4, 5, 6, 7
    const { json: k } = await leaksJson(four.map((d) => join(series("list"), d.file)));
    const growth = evenGrowth(truth.dumps.map((d) => d.leakBytes[0]));
    expect(k.leaks[0].bytesPerStep).toBe(growth);
    expect(k.leaks[0].steps).toEqual([4, 5, 6, 7]);
  });

  it("steps from the sidecars' tag, else the order given", async () => {
    const dir = join(root, "renamed");
    mkdirSync(dir);
    const truth = readJson<SeriesTruth>(join(series("cache"), "series.truth.json"));
    const named = truth.dumps.map((d, i) => {
      const to = join(dir, `dump-${String.fromCharCode(97 + i)}.pickle`);
      copyFileSync(join(series("cache"), d.file), to);
      copyFileSync(join(series("cache"), `${d.file}.counters.json`), `${to}.counters.json`);
      return to;
    });
    const { json: j } = await leaksJson([...named].reverse());
    expect(j.stepSource.kind).toBe("sidecar-tag");
    expect(j.steps.map((s) => s.step)).toEqual(truth.dumps.map((d) => d.step));
    const bare = join(root, "bare");
    mkdirSync(bare);
    const plain = truth.dumps.map((d, i) => {
      const to = join(bare, `dump-${String.fromCharCode(97 + i)}.pickle`);
      copyFileSync(join(series("cache"), d.file), to);
      return to;
    });
    const { json: o } = await leaksJson(plain);
    expect(o.stepSource.kind).toBe("order");
    expect(o.steps.map((s) => s.step)).toEqual(truth.dumps.map((_d, i) => i + 1));
    expect(o.verdict).toBe("leak");
  });

  it("refuses, with words, dumps of different ranks and plainly different runs", async () => {
    const dir = join(root, "ranks");
    mkdirSync(dir);
    const files = dumpsOf(series("none"));
    const other = join(dir, "peakscope-rank1-step9.pickle");
    copyFileSync(files[0], other);
    const r = await leaks([...files, other]);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/different ranks: .* is rank 0 .* is rank 1/);
    const m = await leaks([...files.slice(0, 3), ...dumpsOf(join(root, "other-model")).slice(3)]);
    expect(m.code).toBe(1);
    expect(m.err).toMatch(
      /plainly different runs: their parameter blocks differ \(3 blocks, 24\.00 MiB against 4 blocks, 28\.00 MiB\)/,
    );
  });

  it("bad input: exit 1 with the reader's words; help lists the command", async () => {
    const r = await leaks([join(root, "nope.pickle")]);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/nope\.pickle/);
    expect((await leaks([])).code).toBe(1);
    expect((await leaks(["a", "b", "--step-marker", "x"])).err).toMatch(/one file/);
    const out: string[] = [];
    expect(await main(["help"], { stdout: (s) => out.push(s), stderr: () => {} })).toBe(0);
    expect(out.join("")).toMatch(
      /peakscope leaks FILE\.\.\. \[--json\] \[--capacity SIZE\] \[--step-marker REGEX\]/,
    );
  });
});

describe("the page's series: which files, and two dumps compared", () => {
  it("a series is ≥ 3 files naming distinct steps (name or sidecar tag) and at most one rank", () => {
    const steps = [
      "peakscope-rank0-step2.pickle",
      "peakscope-rank0-step3.pickle",
      "peakscope-rank0-step4.pickle",
    ];
    expect(isSeries(steps, [null, null, null])).toBe(true);
    expect(isSeries(steps.slice(0, 2), [null, null])).toBe(false); // two files: the comparison
    const ranks = ["snapshot_rank0.pickle", "snapshot_rank1.pickle", "snapshot_rank2.pickle"];
    expect(isSeries(ranks, [{ tag: "step2" }, { tag: "step2" }, { tag: "step2" }])).toBe(false); // the rank overview
    expect(
      isSeries(["a.pickle", "b.pickle", "c.pickle"], [{ tag: "step1" }, { tag: "step2" }, { tag: "step3" }]),
    ).toBe(true);
    expect(
      isSeries(["r0-step1.pickle", "r0-step2.pickle", "x-step3.pickle"], [null, null, { rank: 1 }]),
    ).toBe(true);
    expect(
      isSeries(["rank0-step1.pickle", "rank0-step2.pickle", "rank1-step3.pickle"], [null, null, null]),
    ).toBe(false);
  });

  it("compareDumps of two summaries: the leak's growth in its category, as the truth says", async () => {
    const truth = readJson<SeriesTruth>(join(series("list"), "series.truth.json"));
    const [a, b] = [truth.dumps[0], truth.dumps[truth.dumps.length - 1]];
    const sa = summarizeDump(await readSnapshotFile(join(series("list"), a.file)), a.file);
    const sb = summarizeDump(await readSnapshotFile(join(series("list"), b.file)), b.file);
    const c = compareDumps(sa, sb);
    const sum = (rows: LiveRow[], cat: string) =>
      rows.filter((r) => r.category === cat).reduce((s, r) => s + r.bytes, 0);
    expect(c.categories.input).toBe(sum(b.live, "input") - sum(a.live, "input"));
    const site = c.callSites.find((x) => truth.leakSites[0].site.endsWith(x.site));
    expect(site?.deltaBytes).toBe(b.leakBytes[0] - a.leakBytes[0]);
    expect(c.verdict).toMatch(/^growth/);
  });
});

describe("the rule itself", () => {
  it("a site that grows below the threshold, or for fewer than 3 steps, or then stops, is not a leak", () => {
    const steps = [1, 2, 3, 4, 5];
    const row = (live: number[]) => ({ site: "x.py:1:f", label: "x.py:1 f", category: "input", live });
    const g = (live: number[]) => analyseGrowth(steps, [row(live)]);
    expect(g([0, MiB, 2 * MiB, 3 * MiB, 4 * MiB]).verdict).toBe("leak"); // exactly 1 MiB per step
    expect(g([0, MiB - 512, 2 * MiB - 1024, 3 * MiB - 1536, 4 * MiB - 2048]).verdict).toBe("none");
    expect(g([0, 0, 0, MiB, 2 * MiB]).verdict).toBe("none"); // 2 steps of growth
    expect(g([0, 0, MiB, 2 * MiB, 3 * MiB]).verdict).toBe("leak"); // a leak that starts late
    expect(g([0, 5 * MiB, 10 * MiB, 15 * MiB, 15 * MiB]).verdict).toBe("none"); // stopped: one-off
    expect(g([0, 5 * MiB, 10 * MiB, 15 * MiB, 15 * MiB]).oneOff[0].bytes).toBe(15 * MiB);
    expect(analyseGrowth([1, 2, 3], [row([0, MiB, 2 * MiB])]).verdict).toBe("too-few-steps");
  });

  it("steps from file names and tags", () => {
    expect(stepFromFileName("dumps/peakscope-rank0-step3.pickle")).toBe(3);
    expect(stepFromFileName("run_s12_.pickle")).toBe(12);
    expect(stepFromFileName("snap-s7.pickle")).toBe(7);
    expect(stepFromFileName("step_4/snapshot.pickle")).toBeNull(); // the file name, not its folder
    expect(stepFromFileName("sizes.pickle")).toBeNull();
    expect(stepFromTag("step5")).toBe(5);
    expect(stepFromTag("end")).toBeNull();
  });
});

describe.skipIf(!HAVE_REAL)("the real training files give no leak", () => {
  it("no file is flagged", async () => {
    const files = readdirSync(REAL_DIR).filter((f) => !f.endsWith(".md"));
    expect(files.length).toBeGreaterThan(10);
    for (const f of files) {
      const model = await readSnapshotFile(join(REAL_DIR, f));
      const j = traceLeaks(model);
      expect(j.verdict, f).not.toBe("leak");
      expect(j.leaks, f).toEqual([]);
    }
  }, 120_000);
});
