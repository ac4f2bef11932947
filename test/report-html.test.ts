// `peakscope report FILE --html OUT`: one self-contained HTML file. Its numbers are checked against the
// generator's ground truth (test/gen/generate.py known → OUT.truth.json), against `report --json` run
// separately on every real file, and against Python's unpickler (segment totals); its CSP hash against
// node:crypto; escaping against a Python-written snapshot whose strings are HTML.

import { createHash } from "node:crypto";
import { mkdtempSync, readdirSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { main } from "../src/cli/main";
import { base64, cspHash, esc, samplePoints, sha256 } from "../src/report-html/index";
import { HAVE_REAL, python, REAL_DIR } from "./helpers/python";

const dir = mkdtempSync(join(tmpdir(), "peakscope-html-"));

async function cli(args: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(args, { stdout: (s) => out.push(s), stderr: (s) => err.push(s) });
  return { code, out: out.join(""), err: err.join("") };
}

/** The attributes of the element whose data-testid is `id` (null when there is none). */
function el(html: string, id: string): Record<string, string> | null {
  const at = html.indexOf(`data-testid="${id}"`);
  if (at < 0) return null;
  const start = html.lastIndexOf("<", at);
  const end = html.indexOf(">", at);
  const tag = html.slice(start, end);
  const attrs: Record<string, string> = {};
  for (const m of tag.matchAll(/([\w-]+)="([^"]*)"/g)) attrs[m[1]] = m[2];
  return attrs;
}
const value = (html: string, id: string) => {
  const a = el(html, id);
  return a ? Number(a["data-value"]) : null;
};
const unEscape = (s: string) =>
  s
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, "&");

/** The report's page and the separately computed `report --json` of the same file. */
async function both(file: string, extra: string[] = []) {
  const out = join(dir, `${file.split("/").pop()}.html`);
  const h = await cli(["report", file, ...extra, "--html", out]);
  const j = await cli(["report", file, ...extra, "--json"]);
  expect(h.code).toBe(j.code);
  expect(h.err).toContain(`wrote ${out}`);
  return { html: readFileSync(out, "utf8"), json: JSON.parse(j.out), stdout: h.out };
}

/** Every number the page shows that `report --json` has, equal. */
function expectSameNumbers(html: string, r: any) {
  expect(unEscape(html.split('data-testid="file">')[1].split("<")[0])).toBe(r.file);
  for (const k of ["reserved", "active", "allocated"])
    expect(value(html, `total-${k}`), k).toBe(r.totals[`${k}Bytes`]);
  // n/a (an empty data-value) when the file has no requested sizes
  expect(el(html, "total-requested")?.["data-value"]).toBe(String(r.totals.requestedBytes ?? ""));
  for (const [name, n] of Object.entries(r.categories)) {
    expect(value(html, `category-${name}`), name).toBe(n);
    expect(Number(el(html, `category-${name}`)?.["data-inferred"]), `${name} inferred`).toBe(
      r.inferredBytes[name] ?? 0,
    );
  }
  // a reason with no bytes has no row
  for (const [why, n] of Object.entries(r.unknownBytesByReason))
    expect(value(html, `unknown-${why}`), why).toBe((n as number) > 0 ? n : null);
  for (const c of r.checks) expect(el(html, `check-${c.id}`)?.["data-status"], c.id).toBe(c.status);
  // No peak (no trace, no counters): the peak element says so with an empty data-value; else its figures.
  expect(el(html, "peak")?.["data-value"]).toBe(r.peak ? String(r.peak.allocatedBytes) : "");
  if (r.peak) {
    expect(Number(el(html, "peak")?.["data-device"])).toBe(r.peak.device);
    expect(el(html, "peak")?.["data-run-peak"]).toBe(r.peak.isRunPeak ? "1" : "0");
    for (const [c, n] of Object.entries(r.peak.categories))
      expect(value(html, `peak-category-${c}`), `peak ${c}`).toBe((n as number) > 0 ? n : null);
  }
  r.topCallSites.forEach((s: any, i: number) => {
    expect(value(html, `site-${i}`)).toBe(s.bytes);
    expect(unEscape(el(html, `site-${i}`)?.["data-site"] ?? "")).toBe(s.site);
  });
  expect(el(html, `site-${r.topCallSites.length}`)).toBeNull();
  for (const d of r.devices.length > 1 ? r.devices : []) {
    expect(el(html, `device-${d.device}`)).not.toBeNull();
  }
}

/** Self-contained: a strict CSP whose one hash is the <style>'s, no script, nothing fetched. */
function expectSelfContained(html: string) {
  const csp = /<meta http-equiv="Content-Security-Policy" content="([^"]+)">/.exec(html)?.[1];
  expect(csp).toBeDefined();
  expect(csp).toMatch(
    /^default-src 'none'; style-src 'sha256-[A-Za-z0-9+/=]+'; img-src data:; base-uri 'none'/,
  );
  const style = /<style>([\s\S]*?)<\/style>/.exec(html)![1];
  const digest = createHash("sha256").update(style, "utf8").digest("base64");
  expect(csp).toContain(`'sha256-${digest}'`);
  // Every "<" in the file starts a real tag (text is escaped): list the tags and their attribute names.
  const tags = [...html.matchAll(/<([a-zA-Z][\w-]*)([^>]*)>/g)];
  const names = new Set(tags.map((t) => t[1].toLowerCase()));
  for (const bad of ["script", "iframe", "object", "embed", "link", "img", "base", "form", "meta-refresh"])
    expect(names.has(bad), `<${bad}>`).toBe(false);
  for (const t of tags) {
    const attrs = [...t[2].replace(/"[^"]*"/g, '""').matchAll(/\s([^\s=]+)=/g)].map((m) =>
      m[1].toLowerCase(),
    );
    for (const a of attrs) {
      expect(a.startsWith("on"), `${t[1]} ${a}`).toBe(false); // no event handlers
      expect(
        ["style", "src", "srcset", "action", "formaction", "poster", "data", "href"].includes(a),
        `${t[1]} ${a}`,
      ).toBe(false);
    }
  }
  const meta = tags.filter((t) => t[1].toLowerCase() === "meta").map((t) => t[2]);
  expect(meta.some((m) => /http-equiv="refresh"/i.test(m))).toBe(false);
  expect(html).not.toMatch(/javascript:/i);
  // the only URL is the SVG namespace
  expect(
    [...html.matchAll(/https?:\/\/[^\s"'<>)]+/g)]
      .map((m) => m[0])
      .filter((u) => u !== "http://www.w3.org/2000/svg"),
  ).toEqual([]);
}

describe("sha256 / CSP hash, escaping, sampling", () => {
  it("sha256 equals node:crypto on edge lengths and UTF-8", () => {
    for (const s of [
      "",
      "abc",
      "a".repeat(55),
      "a".repeat(56),
      "a".repeat(63),
      "a".repeat(64),
      "héllo ✓ 𝄞".repeat(77),
    ]) {
      expect(base64(sha256(new TextEncoder().encode(s)))).toBe(
        createHash("sha256").update(s, "utf8").digest("base64"),
      );
      expect(cspHash(s)).toBe(`'sha256-${createHash("sha256").update(s, "utf8").digest("base64")}'`);
    }
  });

  it("esc escapes the five HTML characters", () => {
    expect(esc(`<a href="x" title='y'>&</a>`)).toBe(
      "&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;&lt;/a&gt;",
    );
  });

  it("samplePoints: ≤ maxPoints, in order, every bucket's extremes, so the peak is a point", () => {
    let seed = 7;
    const rnd = () => (seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32;
    for (const n of [0, 1, 5, 1999, 2000, 2001, 50_000]) {
      const a = Float64Array.from({ length: n }, () => Math.floor(rnd() * 1000));
      const p = samplePoints(a, n, 2000);
      expect(p.length).toBeLessThanOrEqual(2000);
      expect(p[0]).toBe(-1);
      for (let i = 1; i < p.length; i++) expect(p[i]).toBeGreaterThan(p[i - 1]);
      if (n > 0) {
        expect(p.at(-1)).toBe(n - 1);
        let peak = 0;
        for (let i = 1; i < n; i++) if (a[i] > a[peak]) peak = i;
        expect(p).toContain(peak);
        let low = 0;
        for (let i = 1; i < n; i++) if (a[i] < a[low]) low = i;
        expect(p).toContain(low);
      }
      if (n + 1 <= 2000) expect(p.length).toBe(n + 1);
      else expect(p.length).toBeLessThanOrEqual(2000);
    }
  });
});

describe("report --html on the generator's known run", () => {
  const file = join(dir, "known.pickle");
  python(["test/gen/generate.py", "known", file]);
  const truth = JSON.parse(readFileSync(`${file}.truth.json`, "utf8"));

  it("shows the ground truth: totals, categories, the peak and what it held", async () => {
    const { html, json } = await both(file);
    const t = truth.snapshot;
    expect(value(html, "total-reserved")).toBe(t.reservedBytes);
    expect(value(html, "total-allocated")).toBe(t.allocatedBytes);
    expect(value(html, "total-active")).toBe(t.activeBytes);
    expect(value(html, "total-requested")).toBe(t.requestedBytes);
    for (const [name, n] of Object.entries(t.categories))
      expect(value(html, `category-${name}`), name).toBe(n);
    expect(value(html, "peak")).toBe(truth.peak.allocatedBytes);
    for (const [name, n] of Object.entries(truth.peak.categories))
      expect(value(html, `peak-category-${name}`), name).toBe((n as number) > 0 ? n : null);
    expectSameNumbers(html, json);
    expectSelfContained(html);
  });

  it("the timeline: ≤ 2000 points, its peak the replayed peak; the segment map holds the segment totals", async () => {
    const { html } = await both(file);
    const tl = el(html, "timeline-0")!;
    expect(Number(tl["data-points"])).toBeLessThanOrEqual(2000);
    expect(Number(tl["data-events"])).toBe(truth.traceEntries);
    expect(Number(tl["data-peak"])).toBe(truth.peak.allocatedBytes);
    const map = el(html, "segments-0")!;
    expect(Number(map["data-segments"])).toBe(truth.snapshot.segments);
    expect(Number(map["data-reserved"])).toBe(truth.snapshot.reservedBytes);
    expect(Number(map["data-allocated"])).toBe(truth.snapshot.allocatedBytes);
  });

  it("with the counters sidecar, the counter checks appear as in --json", async () => {
    const { html, json } = await both(file, ["--counters", `${file}.counters.json`]);
    expect(json.checks.find((c: any) => c.id === "allocated-counter").status).toBe("pass");
    expectSameNumbers(html, json);
  });

  it("a long trace is downsampled to ≤ 2000 points and keeps its peak", async () => {
    const big = join(dir, "random.pickle");
    python(["test/gen/generate.py", "random-trace", "--seed", "3", "--events", "30000", big]);
    const { html, json } = await both(big);
    for (const d of json.timeline.devices) {
      const tl = el(html, `timeline-${d.device}`)!;
      expect(Number(tl["data-events"])).toBe(d.events);
      expect(Number(tl["data-points"])).toBeLessThanOrEqual(2000);
      expect(Number(tl["data-points"])).toBeGreaterThan(1000);
      expect(Number(tl["data-peak"])).toBe(d.peakAllocatedBytes);
    }
    expectSameNumbers(html, json);
  });

  it("compare: the verdict and the deltas of report --compare --json", async () => {
    const other = join(dir, "known-mid.pickle");
    python(["test/gen/generate.py", "known", "--moment", "mid_backward", other]);
    const { html, json } = await both(file, ["--compare", other]);
    expect(unEscape(html.split('data-testid="verdict"')[1].split("<b>")[1].split("</b>")[0])).toBe(
      json.compare.verdict,
    );
    expect(value(html, "verdict")).toBe(json.compare.totalDeltaBytes);
    for (const [name, n] of Object.entries(json.compare.categories))
      expect(value(html, `delta-${name}`)).toBe(n);
    // At the peaks too: the same numbers as compare.atPeaks.
    expect(value(html, "verdict-peaks")).toBe(json.compare.atPeaks.totalDeltaBytes);
    for (const [name, n] of Object.entries(json.compare.atPeaks.categories))
      expect(value(html, `peak-delta-${name}`)).toBe(n);
  });
});

describe("report --html escapes every string from the file", () => {
  it("frames, file name and notes written as HTML come out as text", async () => {
    const evil = join(dir, `x<b>"&'.pickle`);
    python([
      "-c",
      `
import pickle, sys
bad = "<script>alert(1)</script>\\"' onload=alert(2) &amp;"
frames = [{"filename": "/home/u/" + bad + ".py", "line": 7, "name": "<img src=x onerror=alert(3)>"}]
blk = {"address": 4096, "size": 1048576, "requested_size": 1048576, "state": "active_allocated", "frames": frames}
seg = {"device": 0, "address": 4096, "total_size": 2097152, "allocated_size": 1048576, "active_size": 1048576,
       "requested_size": 1048576, "stream": 0, "segment_type": "large", "segment_pool_id": (0, 0),
       "is_expandable": False, "frames": frames,
       "blocks": [blk, {"address": 4096 + 1048576, "size": 1048576, "requested_size": 0, "state": "inactive", "frames": []}]}
tr = [{"action": "segment_alloc", "addr": 4096, "size": 2097152, "stream": 0, "time_us": 1, "frames": frames},
      {"action": "alloc", "addr": 4096, "size": 1048576, "stream": 0, "time_us": 2, "frames": frames}]
pickle.dump({"segments": [seg], "device_traces": [tr], "weird_key<script>": 1}, open(sys.argv[1], "wb"))
`,
      evil,
    ]);
    const { html, json } = await both(evil);
    expect(json.topCallSites[0].site).toContain("<script>");
    expectSelfContained(html);
    expect(html).not.toContain("<script>");
    expect(html).not.toContain("<img");
    expect(html).not.toContain("<b>\"&'");
    expect(html).toContain("&lt;script&gt;alert(1)&lt;/script&gt;");
    expect(html).toContain("x&lt;b&gt;&quot;&amp;&#39;.pickle");
    expectSameNumbers(html, json);
  });
});

describe("report --html on every real file: the numbers of report --json", () => {
  const files = readdirSync(REAL_DIR).filter(
    (f) => /\.(pickle|pkl|json)$/.test(f) && !f.endsWith(".counters.json"),
  );
  it("the real files are there", () => {
    expect(HAVE_REAL).toBe(true);
    expect(files.length).toBeGreaterThan(10);
  });
  for (const f of files) {
    it(f, async () => {
      const { html, json } = await both(resolve(REAL_DIR, f));
      expectSameNumbers(html, json);
      expectSelfContained(html);
      // segment totals as Python's unpickler sums them (JSON files: json.load)
      const sums = JSON.parse(
        python([
          "-c",
          `
import json, pickle, sys
p = sys.argv[1]
raw = open(p, "rb").read()
try:
    d = pickle.loads(raw)
except Exception:
    d = json.loads(raw)
segs = d if isinstance(d, list) else d.get("segments", [])
out = {}
for s in segs:
    k = str(s.get("device", 0))
    out.setdefault(k, [0, 0, 0])
    out[k][0] += s["total_size"]; out[k][1] += s["allocated_size"]; out[k][2] += 1
print(json.dumps(out))
`,
          resolve(REAL_DIR, f),
        ]),
      );
      for (const [d, [reserved, allocated, n]] of Object.entries(sums) as [string, number[]][]) {
        const map = el(html, `segments-${d}`)!;
        expect(Number(map["data-reserved"]), `device ${d}`).toBe(reserved);
        expect(Number(map["data-segments"]), `device ${d}`).toBe(n);
        // blocks' allocated bytes vs allocated_size: equal unless the file's segments disagree with blocks
        const dev = json.devices.find((x: any) => String(x.device) === d);
        expect(dev.allocatedBytes).toBe(allocated);
        expect(Number(map["data-allocated"])).toBe(allocated - dev.reconciliationBytes);
      }
      for (const t of json.timeline.devices) {
        const tl = el(html, `timeline-${t.device}`);
        if (t.events === 0) continue;
        expect(Number(tl?.["data-points"])).toBeLessThanOrEqual(2000);
        expect(Number(tl?.["data-peak"])).toBe(t.peakAllocatedBytes);
      }
    });
  }
});
