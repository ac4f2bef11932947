// The host (pinned) memory section of the HTML report: the same numbers as `report --json`'s `host`.

import { formatMiB } from "../core/report/format";
import type { ReportJson } from "../core/report/index";
import { exactBytesShort } from "../core/units";
import { esc } from "./html";

const cell = (n: number, id?: string) =>
  `<span${id ? ` data-testid="${id}"` : ""} data-value="${n}" title="${exactBytesShort(n)}">${formatMiB(n)}</span>`;

export function hostSection(r: ReportJson): string {
  const h = r.host;
  if (!h) return "";
  const sites = h.topCallSites
    .map(
      (s) =>
        `<tr><td class="n">${cell(s.bytes)}</td><td>${esc(s.label)}</td><td class="n">${s.blocks}</td></tr>`,
    )
    .join("");
  return [
    `<section id="host" data-testid="host"><h2>Host (pinned) memory</h2>`,
    `<p class="muted">The host caching allocator's pinned blocks (record_pinned_host_memory): its own lane, not in the device totals; sizes are rounded block sizes.</p>`,
    `<table><tbody>`,
    `<tr><th>pinned blocks</th><td class="n" data-testid="host-segments" data-value="${h.segments}">${h.segments}</td></tr>`,
    `<tr><th>reserved</th><td class="n">${cell(h.reservedBytes, "host-reserved")}</td></tr>`,
    `<tr><th>allocated</th><td class="n">${cell(h.allocatedBytes, "host-allocated")}</td></tr>`,
    `<tr><th>peak allocated</th><td class="n">${cell(h.peakAllocatedBytes, "host-peak")}</td></tr>`,
    `<tr><th>host trace entries</th><td class="n" data-value="${h.traceEntries}">${h.traceEntries}</td></tr>`,
    `</tbody></table>`,
    sites
      ? `<table><thead><tr><th class="n">size</th><th>call site</th><th class="n">blocks</th></tr></thead><tbody>${sites}</tbody></table>`
      : "",
    `</section>`,
  ].join("");
}
