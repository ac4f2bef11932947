// The page's rank overview reads each file in a worker (workers/ranks.ts): its summaries must be exactly
// what `peakscope ranks` computes (src/cli/ranks.ts summarizeFile), its curves ≤ 400 points and their max
// the replayed peak; and the worker's health answer (workers/health.ts) carries the sidecar's numbers.
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { summarizeFile } from "../src/cli/ranks";
import { rankOverview } from "../src/core/ranks/index";
import { manySources, writeManySources } from "../src/ui/state/ranksLink";
import { Engine } from "../workers/engine";
import { healthAnswer, healthTimeline } from "../workers/health";
import { RANK_CURVE_POINTS, summarizeRankFile } from "../workers/ranks";
import { python } from "./helpers/python";

const dir = mkdtempSync(join(tmpdir(), "peakscope-ranks-page-"));
const N = 5;
const OUTLIER = 3;
let truth: { outlier: number; outlierCategory: string; files: { file: string; peakBytes: number }[] };

const blobOf = (path: string) => new Blob([readFileSync(path)]);

beforeAll(() => {
  python(["test/gen/generate.py", "ranks", "--ranks", String(N), "--outlier", String(OUTLIER), dir]);
  truth = JSON.parse(readFileSync(join(dir, "ranks.truth.json"), "utf8"));
});

describe("rank overview worker", () => {
  it("summaries equal peakscope ranks' (with and without the sidecar); curves ≤ 400 points", async () => {
    const page = [];
    const cli = [];
    for (let r = 0; r < N; r++) {
      const name = `snapshot_rank${r}.pickle`;
      const path = join(dir, name);
      const sidecar = readFileSync(`${path}.counters.json`, "utf8");
      const res = await summarizeRankFile(blobOf(path), name, {
        text: sidecar,
        name: `${name}.counters.json`,
      });
      expect(res.ok).toBe(true);
      if (!res.ok) return;
      const fromCli = await summarizeFile(path);
      expect({ ...res.summary, file: "" }).toEqual({ ...fromCli, file: "" });
      expect(res.summary.peakSource).toBe("counters");
      expect(res.countersError).toBeNull();
      const c = res.curve;
      expect(c).not.toBeNull();
      if (!c) return;
      expect(c.byEvent.points).toBeLessThanOrEqual(RANK_CURVE_POINTS);
      expect(c.byTime?.points ?? 0).toBeLessThanOrEqual(RANK_CURVE_POINTS);
      expect(Math.max(...c.byEvent.allocated)).toBe(c.peakBytes);
      expect(Math.max(...(c.byTime?.allocated ?? []))).toBe(c.peakBytes);
      page.push(res.summary);
      cli.push({ ...fromCli, file: name });
      // Without its sidecar: the replayed peak (the generator records from the start: the same bytes).
      const bare = await summarizeRankFile(blobOf(path), name, null);
      expect(bare.ok && bare.summary.peakSource).toBe("trace");
      expect(bare.ok && bare.summary.peakBytes).toBe(truth.files[r].peakBytes);
    }
    const o = rankOverview(page);
    expect(o).toEqual(rankOverview(cli));
    expect(o.outliers.map((x) => [x.rank, x.category])).toEqual([[truth.outlier, truth.outlierCategory]]);
  });

  it("a file that is not a snapshot is an error, not a crash; a bad sidecar is reported and left out", async () => {
    const junk = await summarizeRankFile(
      new Blob([new TextEncoder().encode('{"hello": 1}')]),
      "x.json",
      null,
    );
    expect(junk.ok).toBe(false);
    const path = join(dir, "snapshot_rank0.pickle");
    const bad = await summarizeRankFile(blobOf(path), "snapshot_rank0.pickle", {
      text: "{not json",
      name: "s.counters.json",
    });
    expect(bad.ok).toBe(true);
    // The sidecar's own error, naming the file (the snapshot still opens, from its trace).
    expect(bad.ok ? bad.countersError : null).toContain("s.counters.json");
    expect(bad.ok && bad.summary.peakSource).toBe("trace");
  });

  it("health: verdict values are the sidecar's; the overlay buckets are the curves' max", async () => {
    const path = join(dir, "snapshot_rank0.pickle");
    const sidecarText = readFileSync(`${path}.counters.json`, "utf8");
    const sidecar = JSON.parse(sidecarText);
    const e = new Engine();
    const opened = await e.open(blobOf(path), "snapshot_rank0.pickle");
    expect(opened.ok).toBe(true);
    e.setCounters(sidecarText, "snapshot_rank0.pickle.counters.json");
    const h = healthAnswer(e, 0);
    expect(h.error).toBeNull();
    expect(h.summary).not.toBeNull();
    for (const key of [
      "num_alloc_retries",
      "num_ooms",
      "inactive_split_bytes.all.current",
      "allocated_bytes.all.peak",
    ]) {
      const v = h.verdicts.find((x) => x.key === key);
      expect(v?.value, key).toBe(sidecar.memory_stats[key]);
    }
    const r = e.device(0).replay;
    const t = healthTimeline(e, {
      device: 0,
      axis: "event",
      x0: -0.5,
      x1: r.length - 0.5,
      buckets: r.length,
    });
    let max = 0;
    for (const v of t.cached) if (Number.isFinite(v) && v > max) max = v;
    expect(max).toBe(h.summary?.max.cached?.value);
  });

  it("links: more than two src URLs (src, src2, src3… or src repeated) open the overview", () => {
    expect(manySources("#v=1&src=a&src2=b")).toBeNull();
    expect(manySources("#v=1&src=a")).toBeNull();
    expect(manySources("#v=1&src3=c&src=a&src2=b")).toEqual(["a", "b", "c"]);
    expect(manySources("#src=a&src=b&src=c&src2=d")).toEqual(["a", "b", "c", "d"]);
    expect(manySources("#v=1&device=0&t0=1")).toBeNull();
    const urls = ["http://h/x/r0.pickle", "http://h/x/r1.pickle", "http://h/x/r2.pickle?a=1&b=2"];
    expect(manySources(`#${writeManySources(urls)}`)).toEqual(urls);
  });
});
