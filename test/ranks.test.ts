// `peakscope ranks` and src/core/ranks on the generator's rank files (test/gen/generate.py ranks): each rank's
// peak and categories as the simulation's truth says, the outlier and its category as ranks.truth.json says,
// the JSON's keys, and a `peakscope report --json` file giving the same row as its snapshot.
import { copyFileSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { main } from "../src/cli/main";
import { runRanks, summarizeFile, summarizeInWorkers } from "../src/cli/ranks";
import { median, type RankSummary, rankFromFileName, rankOverview } from "../src/core/ranks/index";
import { python } from "./helpers/python";

interface RankTruth {
  file: string;
  rank: number;
  batch: number;
  peakBytes: number;
  maxMemoryAllocated: number;
  peakCategories: Record<string, number>;
  snapshotCategories: Record<string, number>;
  allocatedBytes: number;
  reservedBytes: number;
}
interface RanksTruth {
  ranks: number;
  outlier: number | null;
  outlierCategory: string | null;
  medianPeakBytes: number;
  outlierAboveMedianBytes: number | null;
  files: RankTruth[];
}

const root = mkdtempSync(join(tmpdir(), "peakscope-ranks-"));
const odd = join(root, "odd"); // 5 ranks, rank 2 the outlier
const even = join(root, "even"); // 4 ranks, rank 0 the outlier (median of an even count)
const none = join(root, "none"); // 3 ranks, no outlier
const truth: Record<string, RanksTruth> = {};

async function ranks(args: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await runRanks(args, { stdout: (s) => out.push(s), stderr: (s) => err.push(s) });
  return { code, out: out.join(""), err: err.join("") };
}

const pickles = (dir: string, t: RanksTruth) => t.files.map((f) => join(dir, f.file));

beforeAll(() => {
  python(["test/gen/generate.py", "ranks", "--ranks", "5", "--outlier", "2", odd]);
  python(["test/gen/generate.py", "ranks", "--ranks", "4", "--outlier", "0", even]);
  python(["test/gen/generate.py", "ranks", "--ranks", "3", none]);
  for (const [k, d] of [
    ["odd", odd],
    ["even", even],
    ["none", none],
  ])
    truth[k] = JSON.parse(readFileSync(join(d, "ranks.truth.json"), "utf8"));
});

describe("peakscope ranks on generated rank files", () => {
  for (const [name, dir] of [
    ["odd", odd],
    ["even", even],
  ] as const) {
    it(`${name}: every rank's peak and categories equal the truth; the outlier is the truth's`, async () => {
      const t = truth[name];
      // shuffled order on the command line: ranks come from the file names
      const files = pickles(dir, t).reverse();
      const r = await ranks([...files, "--json"]);
      expect(r.err).toBe("");
      const j = JSON.parse(r.out);
      expect(j.ranks.map((x: { rank: number }) => x.rank)).toEqual(t.files.map((f) => f.rank));
      for (const f of t.files) {
        const row = j.ranks.find((x: { rank: number }) => x.rank === f.rank);
        expect(row.file).toBe(join(dir, f.file));
        expect(row.rankSource).toBe("file-name");
        expect(row.peakBytes, `rank ${f.rank}`).toBe(f.peakBytes);
        expect(row.peakBytes).toBe(f.maxMemoryAllocated);
        expect(row.peakSource).toBe("counters");
        expect(row.peakCategories, `rank ${f.rank} at the peak`).toEqual(f.peakCategories);
        expect(row.categories, `rank ${f.rank} at the snapshot`).toEqual(f.snapshotCategories);
        expect(row.allocatedBytes).toBe(f.allocatedBytes);
        expect(row.reservedBytes).toBe(f.reservedBytes);
        expect(row.fragmentation).toBe(f.reservedBytes - f.allocatedBytes);
      }
      expect(j.medianPeakBytes).toBe(t.medianPeakBytes);
      expect(j.outliers).toHaveLength(1);
      expect(j.outliers[0].rank).toBe(t.outlier);
      expect(j.outliers[0].category).toBe(t.outlierCategory);
      expect(j.outliers[0].aboveMedianBytes).toBe(t.outlierAboveMedianBytes);
      expect(j.outliers[0].basis).toBe("peak");
      expect(r.code).toBe(2);
    });
  }

  it("no outlier: uneven batches alone stay within 5 % of the median; exit 0", async () => {
    const t = truth.none;
    expect(t.outlier).toBeNull();
    const r = await ranks([...pickles(none, t), "--json", "--jobs", "3"]);
    const j = JSON.parse(r.out);
    expect(j.outliers).toEqual([]);
    expect(new Set(j.ranks.map((x: { peakBytes: number }) => x.peakBytes)).size).toBeGreaterThan(1);
    expect(r.code).toBe(0);
  });

  it("the JSON has exactly the documented keys and types", async () => {
    const r = await ranks([...pickles(odd, truth.odd), "--json"]);
    const j = JSON.parse(r.out);
    for (const k of ["ranks", "outliers"]) expect(j).toHaveProperty(k);
    for (const row of j.ranks) {
      for (const k of [
        "file",
        "rank",
        "peakBytes",
        "allocatedBytes",
        "reservedBytes",
        "categories",
        "checks",
      ])
        expect(row, k).toHaveProperty(k);
      expect(typeof row.file).toBe("string");
      expect(Number.isInteger(row.rank)).toBe(true);
      for (const k of ["peakBytes", "allocatedBytes", "reservedBytes"]) expect(typeof row[k]).toBe("number");
      expect(["pass", "fail"]).toContain(row.checks);
      // every rank was dumped after step 2, away from its peak: snapshot-vs-peak is information, not a
      // failure; the generator's numbers say the gap is beyond 2 %
      const f = truth.odd.files.find((x) => row.file.endsWith(x.file)) as (typeof truth.odd.files)[number];
      expect((f.peakBytes - f.allocatedBytes) / f.peakBytes).toBeGreaterThan(0.02);
      expect(row.checks).toBe("pass");
      expect(row.failedChecks).toEqual([]);
      expect(row.infoChecks).toEqual(["snapshot-vs-peak"]);
      for (const v of Object.values(row.categories)) expect(typeof v).toBe("number");
    }
    for (const o of j.outliers) {
      for (const k of ["rank", "aboveMedianBytes", "category"]) expect(o, k).toHaveProperty(k);
      expect(typeof o.category).toBe("string");
    }
  });

  it("a `peakscope report --json` file gives the same row as its snapshot", async () => {
    const t = truth.odd;
    const jsonDir = join(root, "json");
    mkdirSync(jsonDir, { recursive: true });
    const jsons: string[] = [];
    for (const f of t.files) {
      const out: string[] = [];
      await main(["report", join(odd, f.file), "--json"], { stdout: (s) => out.push(s), stderr: () => {} });
      const path = join(jsonDir, `rank${f.rank}.json`);
      writeFileSync(path, out.join(""));
      jsons.push(path);
    }
    const fromPickles = JSON.parse((await ranks([...pickles(odd, t), "--json"])).out);
    const fromJsons = JSON.parse((await ranks([...jsons, "--json"])).out);
    const strip = (row: Record<string, unknown>) => ({ ...row, file: undefined });
    expect(fromJsons.ranks.map(strip)).toEqual(fromPickles.ranks.map(strip));
    expect(fromJsons.outliers.map(strip)).toEqual(fromPickles.outliers.map(strip));
    // mixed: one JSON in place of its snapshot
    const mixed = pickles(odd, t).map((p, i) => (i === 2 ? jsons[2] : p));
    const m = JSON.parse((await ranks([...mixed, "--json", "--jobs", "1"])).out);
    expect(strip(m.ranks[2])).toEqual(strip(fromPickles.ranks[2]));
    expect(m.outliers[0].rank).toBe(2);
  });

  it("without a rank in the file names the sidecar's rank is used, else the order given", async () => {
    const t = truth.odd;
    const d = join(root, "renamed");
    mkdirSync(d, { recursive: true });
    const names = ["alpha", "beta", "gamma", "delta", "epsilon"];
    const files = t.files.map((f, i) => {
      const p = join(d, `${names[i]}.pickle`);
      copyFileSync(join(odd, f.file), p);
      copyFileSync(join(odd, `${f.file}.counters.json`), `${p}.counters.json`);
      return p;
    });
    const j = JSON.parse((await ranks([...[...files].reverse(), "--json"])).out);
    expect(
      j.ranks.map((x: { rank: number; rankSource: string; file: string }) => [x.rank, x.rankSource, x.file]),
    ).toEqual(files.map((f, i) => [i, "sidecar", f]));
    expect(j.outliers[0].rank).toBe(2);
    // no sidecars: the order on the command line
    const bare = files.map((f) => {
      const p = f.replace(/\.pickle$/, "-copy.pickle");
      copyFileSync(f, p);
      return p;
    });
    const k = JSON.parse((await ranks([...bare, "--json"])).out);
    expect(k.ranks.map((x: { rankSource: string }) => x.rankSource)).toEqual(bare.map(() => "order"));
    expect(k.ranks[2].peakSource).toBe("trace");
    expect(k.ranks[2].peakBytes).toBe(t.files[2].peakBytes);
  });

  it("an unreadable file is named on stderr and exits 1; bad usage exits 1", async () => {
    const r = await ranks([join(root, "missing_rank9.pickle"), join(odd, truth.odd.files[0].file), "--json"]);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/missing_rank9\.pickle/);
    expect(JSON.parse(r.out).errors).toHaveLength(1);
    expect((await ranks(["--json"])).code).toBe(1);
    expect((await ranks(["x.pickle", "--jobs", "0"])).code).toBe(1);
  });

  it("worker threads (TypeScript loaded through tsx in each) give what this thread gives", async () => {
    const files = pickles(odd, truth.odd);
    const inWorkers = await summarizeInWorkers(files, 3);
    const here = [];
    for (const f of files) here.push(await summarizeFile(f));
    expect(inWorkers).toEqual(here);
    expect(inWorkers.every((x) => !("error" in x))).toBe(true);
  });

  it("text output names the outlier and its category", async () => {
    const r = await ranks(pickles(odd, truth.odd));
    expect(r.out).toMatch(/outlier: rank 2 .* input/);
  });
});

describe("src/core/ranks", () => {
  it("rank numbers from file names", () => {
    expect(rankFromFileName("/x/snapshot_rank12.pickle")).toBe(12);
    expect(rankFromFileName("dump_rank_3.pickle")).toBe(3);
    expect(rankFromFileName("job-r7.pickle.gz")).toBe(7);
    expect(rankFromFileName("/runs/rank4/snapshot.pickle")).toBe(4);
    expect(rankFromFileName("snapshot.pickle")).toBeNull();
    expect(rankFromFileName("run-rabbit.pickle")).toBeNull();
  });

  it("the rule: 5 % or 1 GiB above the median; the category with the largest excess", () => {
    const GiB = 1024 ** 3;
    const s = (file: string, peak: number, cats: Record<string, number>): RankSummary => ({
      file,
      sidecarRank: null,
      worldSize: null,
      peakBytes: peak,
      peakSource: "counters",
      replayPeakBytes: null,
      countersPeakBytes: peak,
      allocatedBytes: 0,
      reservedBytes: 0,
      activeBytes: 0,
      categories: cats,
      peakCategories: {},
      checks: "pass",
      failedChecks: [],
      infoChecks: [],
      input: "report-json",
    });
    // median 100 GiB: +1.5 GiB (1.5 %) is an outlier by bytes, +0.5 GiB is not; no peak composition, so
    // the category comes from the snapshot's
    const o = rankOverview([
      s("rank0", 100 * GiB, { activations: 50 * GiB, other: 1 }),
      s("rank1", 100 * GiB, { activations: 50 * GiB, other: 1 }),
      s("rank2", 101.5 * GiB, { activations: 51.5 * GiB, other: 1 }),
      s("rank3", 100.5 * GiB, { activations: 50 * GiB, other: 0.5 * GiB }),
      s("rank4", 99 * GiB, { activations: 49 * GiB, other: 1 }),
    ]);
    expect(o.medianPeakBytes).toBe(100 * GiB);
    expect(o.outliers.map((x) => [x.rank, x.aboveMedianBytes, x.category, x.basis])).toEqual([
      [2, 1.5 * GiB, "activations", "snapshot"],
    ]);
    // small job: 5 % decides (6 % above is an outlier, 4 % is not)
    const small = rankOverview([s("rank0", 1000, {}), s("rank1", 1060, { input: 60 }), s("rank2", 1040, {})]);
    expect(small.medianPeakBytes).toBe(1040);
    expect(small.outliers).toEqual([]);
    const small2 = rankOverview([
      s("rank0", 1000, {}),
      s("rank1", 1000, {}),
      s("rank2", 1061, { input: 61 }),
    ]);
    expect(small2.outliers.map((x) => [x.rank, x.aboveMedianBytes, x.category])).toEqual([[2, 61, "input"]]);
    expect(median([4, 1, 3, 2])).toBe(2.5);
    expect(median([])).toBeNull();
  });
});
