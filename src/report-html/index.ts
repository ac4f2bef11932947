// `peakscope report FILE --html OUT.html`: one self-contained HTML page from the report JSON (the object
// `report --json` prints, so the numbers are the same) and the two pictures. Pure functions: no DOM, no
// file system; the page can build the same file for a "Save report" button.
//
// The page needs no script and loads nothing: its Content-Security-Policy is default-src 'none' with the
// one <style> element allowed by its hash; the pictures are inline SVG with presentation attributes.
// Every string from the snapshot is HTML-escaped. Exact byte counts sit in data-value attributes.

import type { Attribution } from "../core/attribution/index";
import { CATEGORY_NAMES } from "../core/attribution/rules";
import type { SnapshotModel } from "../core/model/types";
import type { Replay } from "../core/replay/types";
import { formatDeltaMiB, formatMiB } from "../core/report/format";
import type { CheckJson, ReportJson } from "../core/report/index";
import { exactBytesShort, formatCount } from "../core/units";
import { hostSection } from "./host";
import { esc } from "./html";
import {
  type SegmentMapPicture,
  segmentMapPictures,
  type TimelinePicture,
  timelinePicture,
} from "./pictures";
import { cspHash } from "./sha256";
import { colorOf, segmentMapSvg, timelineSvg } from "./svg";

export { esc } from "./html";
export * from "./pictures";
export { base64, cspHash, sha256 } from "./sha256";
export { CATEGORY_COLORS, colorOf, segmentMapSvg, timelineSvg } from "./svg";

export interface ReportPictures {
  /** One per device with a trace. */
  timelines: TimelinePicture[];
  /** One per device with segments. */
  segmentMaps: SegmentMapPicture[];
}

export interface HtmlOptions {
  /** ISO time the report was made (shown; omitted when absent). */
  generatedAt?: string;
  /** peakscope's version (shown). */
  version?: string;
  /** Where the capture guide lives (a link; never fetched). */
  captureHelpUrl?: string;
}

/** The pictures from core objects: the replays (prepareReplays) and the attribution's block categories. */
export function buildReportPictures(
  model: SnapshotModel,
  attribution: Pick<Attribution, "blockCategory" | "categoryNames">,
  replays: Map<number, Replay>,
  maxPoints = 2000,
): ReportPictures {
  const names = attribution.categoryNames;
  return {
    timelines: [...replays.keys()]
      .sort((a, b) => a - b)
      .map((d) => timelinePicture(replays.get(d)!, names, maxPoints)),
    segmentMaps: segmentMapPictures(model, attribution.blockCategory, names),
  };
}

const CSS = `
:root{color-scheme:light dark;--fg:#1b1b1b;--muted:#5c5c5c;--bg:#fff;--line:#ddd;--card:#f6f6f4;--pass:#1a7f37;--fail:#c62828;--skip:#7a7a7a}
@media (prefers-color-scheme:dark){:root{--fg:#e8e8e8;--muted:#a8a8a8;--bg:#161616;--line:#3a3a3a;--card:#202020}
svg .axis,svg .mark{fill:#bbb}svg .grid{stroke:#3a3a3a}svg .reserved{stroke:#ddd}svg .f{fill:#2c2c2c}}
*{box-sizing:border-box}
body{margin:0 auto;max-width:1080px;padding:24px 28px 48px;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg)}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;padding-bottom:4px;border-bottom:1px solid var(--line)}h3{font-size:14px;margin:16px 0 6px}
.file{font:600 15px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;word-break:break-all}
.meta,.note,.muted{color:var(--muted)}.meta{font-size:12px}
table{border-collapse:collapse;width:100%;margin:6px 0}th,td{padding:3px 8px;border-bottom:1px solid var(--line);text-align:left;vertical-align:top}
th{font-weight:600;font-size:12px;color:var(--muted)}td.n,th.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.sub{padding-left:28px;color:var(--muted)}td.cat{white-space:nowrap}
code,.site{font:12px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;word-break:break-all}
.cards{display:flex;gap:10px;flex-wrap:wrap}.card{background:var(--card);border-radius:6px;padding:8px 12px;min-width:170px}
.card b{display:block;font-size:18px;font-variant-numeric:tabular-nums}.card span{font-size:12px;color:var(--muted)}
.st{display:inline-block;min-width:44px;text-align:center;font:700 11px system-ui,sans-serif;border-radius:3px;padding:1px 5px;color:#fff}
.st.pass{background:var(--pass)}.st.fail{background:var(--fail)}.st.skipped{background:var(--skip)}
.warn{color:var(--fail);font-weight:600}.inf{font-style:italic;color:var(--muted)}
svg{max-width:100%;height:auto;display:block;margin:6px 0}svg.sw{display:inline-block;vertical-align:-2px;margin:0 6px 0 0}
.legend{display:flex;flex-wrap:wrap;gap:4px 14px;font-size:12px}
footer{margin-top:36px;font-size:12px;color:var(--muted)}
@media print{body{max-width:none}h2{break-after:avoid}svg{break-inside:avoid}}
`;

const STATUS = { pass: "PASS", fail: "FAIL", skipped: "SKIP" } as const;

/** `12.34 MiB` with the exact bytes in a tooltip and a data-value attribute. */
function bytes(n: number, testid?: string, extra = ""): string {
  return `<span${testid ? ` data-testid="${esc(testid)}"` : ""} data-value="${n}" title="${exactBytesShort(n)}"${extra}>${formatMiB(n)}</span>`;
}

function pct(part: number, whole: number): string {
  return whole > 0 ? `${((100 * part) / whole).toFixed(1)}%` : "–";
}

function swatch(name: string): string {
  return `<svg class="sw" width="11" height="11" viewBox="0 0 11 11" aria-hidden="true"><rect width="11" height="11" rx="2" fill="${colorOf(name)}"/></svg>`;
}

function checksTable(checks: CheckJson[], prefix: string): string {
  if (checks.length === 0) return `<p class="muted">No checks.</p>`;
  const rows = checks.map(
    (c) =>
      `<tr data-testid="${prefix}${esc(c.id)}" data-status="${esc(c.status)}"><td><span class="st ${esc(c.status)}">${STATUS[c.status] ?? esc(c.status)}</span></td><td><code>${esc(c.id)}</code><div class="muted">${esc(c.title)}</div></td><td>${esc(c.detail)}</td></tr>`,
  );
  return `<table><thead><tr><th>status</th><th>check</th><th>what was compared</th></tr></thead><tbody>${rows.join("")}</tbody></table>`;
}

function summarySection(r: ReportJson): string {
  const t = r.totals;
  const card = (label: string, key: string, n: number | null, sub: string) =>
    `<div class="card"><span>${label}</span><b>${n === null ? `<span data-testid="total-${key}" data-value="">n/a</span>` : bytes(n, `total-${key}`)}</b><span>${sub}</span></div>`;
  const out = [
    `<section id="summary"><h2>Summary</h2><div class="cards">`,
    card("reserved", "reserved", t.reservedBytes, "Σ segment total_size"),
    card("active", "active", t.activeBytes, "Σ active_size"),
    card("allocated", "allocated", t.allocatedBytes, "Σ allocated_size"),
    card("requested", "requested", t.requestedBytes, "what the program asked for"),
    "</div>",
  ];
  if (r.devices.length > 1) {
    out.push(
      `<table data-testid="devices"><thead><tr><th>device</th><th class="n">reserved</th><th class="n">active</th><th class="n">allocated</th></tr></thead><tbody>`,
      ...r.devices.map(
        (d) =>
          `<tr data-testid="device-${d.device}"><td>${d.device}</td><td class="n">${bytes(d.reservedBytes)}</td><td class="n">${bytes(d.activeBytes)}</td><td class="n">${bytes(d.allocatedBytes)}</td></tr>`,
      ),
      "</tbody></table>",
    );
  }
  if (r.counters) {
    out.push(
      `<p class="muted">Counters sidecar read${r.counters.tag ? ` (tag <code>${esc(r.counters.tag)}</code>` : " ("}${r.counters.device === null ? "" : `, device ${r.counters.device}`}): the counter checks below compare against it.</p>`,
    );
  }
  out.push("</section>");
  return out.join("");
}

function categoriesSection(r: ReportJson, opts: HtmlOptions): string {
  const whole = r.totals.allocatedBytes;
  const rows: string[] = [];
  for (const name of CATEGORY_NAMES) {
    const n = r.categories[name] ?? 0;
    const inf = r.inferredBytes[name] ?? 0;
    rows.push(
      `<tr data-testid="category-${esc(name)}" data-value="${n}" data-inferred="${inf}"><td>${swatch(name)}${esc(name)}</td><td class="n">${bytes(n)}</td><td class="n">${pct(n, whole)}</td><td class="n">${exactBytesShort(n)}</td><td class="n">${inf > 0 ? `<span class="inf" data-value="${inf}" title="${exactBytesShort(inf)}">${formatMiB(inf)} inferred</span>` : ""}</td></tr>`,
    );
    if (name === "unknown" && n > 0) {
      for (const [why, b] of Object.entries(r.unknownBytesByReason)) {
        if (b > 0)
          rows.push(
            `<tr data-testid="unknown-${esc(why)}" data-value="${b}"><td class="sub">${esc(why)}</td><td class="n">${bytes(b)}</td><td class="n">${pct(b, whole)}</td><td class="n">${exactBytesShort(b)}</td><td></td></tr>`,
          );
      }
    }
  }
  if (r.reconciliationBytes !== 0) {
    rows.push(
      `<tr data-testid="reconciliation" data-value="${r.reconciliationBytes}"><td>reconciliation</td><td class="n">${bytes(r.reconciliationBytes)}</td><td></td><td class="n">${exactBytesShort(r.reconciliationBytes)}</td><td></td></tr>`,
    );
  }
  rows.push(
    `<tr><th>= allocated</th><th class="n">${bytes(whole)}</th><th></th><th class="n">${exactBytesShort(whole)}</th><th></th></tr>`,
  );
  const out = [
    `<section id="categories"><h2>What holds the memory</h2><p class="muted">active_allocated blocks by category; they add up to allocated exactly. “Inferred”: no stack says it; named from sizes and lifetimes.</p>`,
    `<table><thead><tr><th>category</th><th class="n">size</th><th class="n">of allocated</th><th class="n">bytes</th><th class="n">inferred</th></tr></thead><tbody>${rows.join("")}</tbody></table>`,
  ];
  if (r.pendingFreeBytes > 0)
    out.push(
      `<p data-testid="pending-free" data-value="${r.pendingFreeBytes}">Pending free (active, not allocated, in no category): ${bytes(r.pendingFreeBytes)}.</p>`,
    );
  if (r.workspaceBytes > 0)
    out.push(
      `<p data-testid="workspace" data-value="${r.workspaceBytes}">torch_npu workspace ${bytes(r.workspaceBytes)}: not in memory_allocated(); its timing is not recorded, so it is kept out of the peak.</p>`,
    );
  if ((r.unknownBytesByReason["before-recording"] ?? 0) > 0 || Object.keys(r.inferredBytes).length > 0) {
    out.push(
      `<p class="note">Fix: start recording (<code>torch.cuda.memory._record_memory_history()</code>, or <code>peakscope_hook.start()</code>) before the model is built, so its memory has stacks: ${opts.captureHelpUrl ? `see <a href="${esc(opts.captureHelpUrl)}">Capture</a>` : "see “Capture” in peakscope's README"}.</p>`,
    );
  }
  if (r.noStackReasons.length > 0) {
    out.push(
      `<h3>No stack recorded for ${bytes(r.categories.unknown ?? 0)}; likely because:</h3><ul>${r.noStackReasons.map((s) => `<li>${esc(s)}</li>`).join("")}</ul>`,
    );
  }
  out.push("</section>");
  return out.join("");
}

function peakSection(r: ReportJson): string {
  const p = r.peak;
  if (!p) {
    return `<section id="peak"><h2>The peak</h2><p class="muted" data-testid="peak" data-value="">No trace and no counters sidecar: the peak is not known from this file.</p></section>`;
  }
  const gap = r.snapshotVsPeakGapBytes ?? 0;
  const dev = r.timeline.devices.find((d) => d.device === p.device);
  const where =
    p.source === "trace"
      ? `the replayed trace, event ${formatCount(p.eventIndex ?? 0)} of ${formatCount(dev?.events ?? r.timeline.events)}`
      : "the counters sidecar's max_memory_allocated";
  const big = p.allocatedBytes > 0 && gap > 0.02 * p.allocatedBytes;
  const out = [
    `<section id="peak"><h2>The peak and what it held</h2>`,
    `<p>Peak on device ${p.device}: <b>${bytes(p.allocatedBytes, "peak", ` data-device="${p.device}" data-source="${esc(p.source)}" data-run-peak="${p.isRunPeak ? 1 : 0}"`)}</b> (${esc(where)}). The snapshot holds ${bytes(p.allocatedBytes - gap)}: <span${big ? ' class="warn"' : ""}>gap ${bytes(gap, "peak-gap")} (${pct(gap, p.allocatedBytes)} of the peak)</span>.</p>`,
  ];
  if (!p.isRunPeak)
    out.push(
      `<p class="warn">This is the highest point of the recorded window only: the run's peak may be earlier (recording started late, or a ring buffer dropped the start). A counters sidecar gives the run's true peak.</p>`,
    );
  if (p.note) out.push(`<p class="muted">${esc(p.note)}</p>`);
  const cats = CATEGORY_NAMES.filter((c) => (p.categories[c] ?? 0) > 0);
  if (cats.length > 0) {
    out.push(
      `<table><thead><tr><th>category at the peak</th><th class="n">size</th><th class="n">of the peak</th><th class="n">inferred</th></tr></thead><tbody>`,
      ...cats.map((c) => {
        const inf = p.inferredBytes[c] ?? 0;
        return `<tr data-testid="peak-category-${esc(c)}" data-value="${p.categories[c]}"><td>${swatch(c)}${esc(c)}</td><td class="n">${bytes(p.categories[c])}</td><td class="n">${pct(p.categories[c], p.allocatedBytes)}</td><td class="n">${inf > 0 ? `<span class="inf" data-value="${inf}">${formatMiB(inf)} inferred</span>` : ""}</td></tr>`;
      }),
      "</tbody></table>",
    );
  }
  if (p.topCallSites.length > 0) {
    out.push(
      `<h3>Call sites at the peak</h3><table><thead><tr><th class="n">size</th><th>category</th><th>call site</th></tr></thead><tbody>`,
      ...p.topCallSites.map(
        (s, i) =>
          `<tr data-testid="peak-site-${i}" data-value="${s.bytes}"><td class="n">${bytes(s.bytes)}</td><td>${esc(s.category)}</td><td class="site">${esc(s.site)}</td></tr>`,
      ),
      "</tbody></table>",
    );
  }
  out.push("</section>");
  return out.join("");
}

function legend(names: string[]): string {
  return `<div class="legend">${names.map((n) => `<span>${swatch(n)}${esc(n)}</span>`).join("")}<span><svg class="sw" width="18" height="11" viewBox="0 0 18 11" aria-hidden="true"><line x1="0" x2="18" y1="6" y2="6" stroke="#555" stroke-width="1.4" stroke-dasharray="4 3"/></svg>reserved</span></div>`;
}

function timelineSection(r: ReportJson, pics: ReportPictures): string {
  const out = [`<section id="timeline"><h2>Timeline</h2>`];
  if (pics.timelines.length === 0) {
    out.push(
      `<p class="muted">This file has no trace (device_traces is empty: history was not recorded), so there is no timeline and no replayed peak.</p>`,
    );
  } else {
    const m = r.timeline.markers;
    out.push(
      `<p class="muted">Allocated memory by category after each event of the replayed trace (rounded block bytes), reserved as a dashed line; ${formatCount(r.timeline.events)} events; markers: ${m.snapshot} snapshot, ${m.oom} OOM, ${m.annotations} annotations. Drawn from at most ${formatCount(Math.max(...pics.timelines.map((t) => t.x.length)))} points per device: each stretch of events keeps its lowest and highest.</p>`,
    );
    for (const t of pics.timelines) {
      out.push(`<h3>Device ${t.device}</h3>`, timelineSvg(t), legend(t.categories));
    }
    for (const o of r.timeline.oom)
      out.push(
        `<p class="warn">OOM on device ${o.device} at event ${formatCount(o.eventIndex)}: ${esc(o.message)}</p>`,
      );
  }
  out.push("</section>");
  return out.join("");
}

function segmentsSection(pics: ReportPictures): string {
  const out = [`<section id="segments"><h2>Segments at the snapshot</h2>`];
  if (pics.segmentMaps.length === 0) out.push(`<p class="muted">No segments: nothing was reserved.</p>`);
  else {
    out.push(
      `<p class="muted">Every reserved segment to scale, packed into rows; its blocks by category (grey: free in the segment; dark grey: pending free). Hover a segment for its address and size.</p>`,
    );
    const names = new Set<string>();
    for (const m of pics.segmentMaps) for (const s of m.segments) for (const b of s.blocks) names.add(b.cls);
    for (const m of pics.segmentMaps) {
      out.push(
        `<h3>Device ${m.device}: ${formatCount(m.segments.length)} segments, ${bytes(m.reservedBytes)} reserved, ${bytes(m.allocatedBytes)} allocated</h3>`,
        segmentMapSvg(m),
      );
    }
    const order = [...CATEGORY_NAMES, "(pending free)", "(free)"];
    out.push(
      `<div class="legend">${[...names]
        .sort((a, b) => order.indexOf(a) - order.indexOf(b))
        .map((n) => `<span>${swatch(n)}${esc(n)}</span>`)
        .join("")}</div>`,
    );
  }
  out.push("</section>");
  return out.join("");
}

function sitesSection(r: ReportJson): string {
  if (r.topCallSites.length === 0)
    return `<section id="call-sites"><h2>Top call sites</h2><p class="muted">No allocated blocks.</p></section>`;
  const rows = r.topCallSites.map((s, i) => {
    const lib = s.library
      ? `<div class="site muted">→ ${esc(s.library)}${s.libraryInnermost ? ` … ${esc(s.libraryInnermost)}` : ""}</div>`
      : "";
    return `<tr data-testid="site-${i}" data-value="${s.bytes}" data-site="${esc(s.site)}"${s.inferred ? ' data-inferred="1"' : ""}><td class="n">${bytes(s.bytes)}</td><td class="cat">${swatch(s.category)}${esc(s.category)}</td><td><div class="site">${esc(s.label)}</div>${lib}</td><td class="n">${formatCount(s.blocks)}</td><td>${s.inferred ? '<span class="inf">inferred</span>, ' : ""}<code>${esc(s.rule)}</code>, ${esc(s.via)}</td></tr>`;
  });
  return `<section id="call-sites"><h2>Top call sites</h2><p class="muted">active_allocated blocks by the innermost frame of your own code (with the library function it called beneath).</p><table><thead><tr><th class="n">size</th><th>category</th><th>call site</th><th class="n">blocks</th><th>rule</th></tr></thead><tbody>${rows.join("")}</tbody></table></section>`;
}

function compareSection(r: ReportJson): string {
  const c = r.compare;
  if (!c) return "";
  const p = c.atPeaks;
  // Each row: the snapshots' delta, then (when both files have a peak) the peaks'.
  const cell = (testId: string, v: number) =>
    `<td class="n" data-testid="${testId}" data-value="${v}" title="${exactBytesShort(v)}">${formatDeltaMiB(v)}</td>`;
  const cats = CATEGORY_NAMES.map(
    (n) =>
      `<tr data-testid="delta-${esc(n)}" data-value="${c.categories[n] ?? 0}"><td>${swatch(n)}${esc(n)}</td><td class="n" title="${exactBytesShort(c.categories[n] ?? 0)}">${formatDeltaMiB(c.categories[n] ?? 0)}</td>${p ? cell(`peak-delta-${esc(n)}`, p.categories[n] ?? 0) : ""}</tr>`,
  );
  const sites = c.callSites.map(
    (s) =>
      `<tr data-value="${s.deltaBytes}"><td class="n" title="${exactBytesShort(s.deltaBytes)}">${formatDeltaMiB(s.deltaBytes)}</td><td>${esc(s.category)}</td><td class="site">${esc(s.label)}<div class="muted">${esc(s.site)}</div></td></tr>`,
  );
  return [
    `<section id="compare"><h2>Compared with <span class="file">${esc(c.otherFile)}</span></h2>`,
    `<p data-testid="verdict" data-value="${c.totalDeltaBytes}"><b>${esc(c.verdict)}</b> <span class="muted">(at the snapshots)</span></p>`,
    p
      ? `<p data-testid="verdict-peaks" data-value="${p.totalDeltaBytes}"><b>${esc(p.verdict)}</b> <span class="muted">(at the peaks: this file after event ${p.basePeak.eventIndex} of device ${p.basePeak.device}, the other after event ${p.otherPeak.eventIndex} of device ${p.otherPeak.device})</span></p>`
      : `<p class="muted">Not compared at the peaks: a file has no trace to replay.</p>`,
    `<table><thead><tr><th>category</th><th class="n">${esc(c.otherFile)} − this file, at the snapshots</th>${p ? '<th class="n">at the peaks</th>' : ""}</tr></thead><tbody>${cats.join("")}</tbody></table>`,
    sites.length > 0
      ? `<h3>Call-site deltas</h3><table><thead><tr><th class="n">delta</th><th>category</th><th>call site</th></tr></thead><tbody>${sites.join("")}</tbody></table>`
      : "",
    `<h3>Checks of ${esc(c.otherFile)}</h3>`,
    checksTable(c.otherChecks, "other-check-"),
    "</section>",
  ].join("");
}

/** The whole HTML file. */
export function renderReportHtml(r: ReportJson, pictures: ReportPictures, opts: HtmlOptions = {}): string {
  const style = CSS.trim();
  const csp = `default-src 'none'; style-src ${cspHash(style)}; img-src data:; base-uri 'none'; form-action 'none'`;
  const failed = r.checks.filter((c) => c.status === "fail").length;
  const body = [
    `<header><h1>peakscope report</h1><div class="file" data-testid="file">${esc(r.file)}</div>`,
    `<p class="meta">${[
      opts.generatedAt ? `made ${esc(opts.generatedAt)}` : "",
      `peakscope${opts.version ? ` ${esc(opts.version)}` : ""}`,
      "the same numbers as <code>peakscope report --json</code>",
      "sizes in MiB (1 MiB = 1,048,576 B), exact bytes on hover",
    ]
      .filter(Boolean)
      .join(" · ")}</p>`,
    `<p data-testid="verdict-checks" data-failed="${failed}">${failed === 0 ? "Every check passed or was skipped." : `<span class="warn">${failed} check${failed === 1 ? "" : "s"} failed</span> (see Checks).`}</p></header>`,
    summarySection(r),
    hostSection(r),
    categoriesSection(r, opts),
    `<section id="checks"><h2>Checks</h2>${checksTable(r.checks, "check-")}</section>`,
    peakSection(r),
    timelineSection(r, pictures),
    segmentsSection(pictures),
    sitesSection(r),
    compareSection(r),
    r.notes.length > 0
      ? `<section id="notes"><h2>Notes</h2><ul>${r.notes.map((n) => `<li>${esc(n)}</li>`).join("")}</ul></section>`
      : "",
    `<footer>Made by peakscope from ${esc(r.file)}. This file loads nothing and runs no script.</footer>`,
  ];
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<meta name="color-scheme" content="light dark">
<title>peakscope report: ${esc(r.file)}</title>
<style>${style}</style>
</head>
<body>
${body.join("\n")}
</body>
</html>
`;
}
