// Compare two snapshots: per-category and per-call-site deltas (other − base, over active_allocated blocks,
// the bytes that make up allocated_size), largest first, and a one-line verdict. Call sites are matched on
// the site's portable key (file:line:function with install prefixes and path separators removed), so the
// same line matches across machines, venvs and operating systems.

import type { Attribution } from "../attribution";
import { CATEGORY_NAMES } from "../attribution/rules";
import { BlockState, type SnapshotModel } from "../model/types";
import { formatDeltaMiB } from "../report/format";

export interface CompareSide {
  model: SnapshotModel;
  attribution: Attribution;
}

export interface SiteDelta {
  /** Portable `file:line:function`. */
  site: string;
  /** Short display form (`train.py:57 forward`). */
  label: string;
  /** The category holding most of the change at this site. */
  category: string;
  deltaBytes: number;
  baseBytes: number;
  otherBytes: number;
}

export interface Comparison {
  /** other − base per category. */
  categories: Record<string, number>;
  totalDeltaBytes: number;
  /** Non-zero site deltas, largest |delta| first. */
  callSites: SiteDelta[];
  verdict: string;
}

/** What a comparison needs of one side: bytes per category (CATEGORY_NAMES order) and per (site, category). */
export interface Tally {
  categories: number[];
  /** portableKey \0 category → bytes */
  siteCat: Map<string, number>;
  labels: Map<string, string>;
}

function tally(side: CompareSide): Tally {
  const { model, attribution: a } = side;
  const categories = new Array(CATEGORY_NAMES.length).fill(0);
  const siteCat = new Map<string, number>();
  const labels = new Map<string, string>();
  for (let b = 0; b < model.blocks.length; b++) {
    if (model.blocks.state[b] !== BlockState.active_allocated) continue;
    const size = model.blocks.sizeBytes[b];
    const c = a.blockCategory[b];
    categories[c] += size;
    const site = a.sites[a.blockSite[b]];
    const k = `${site.portableKey}\u0000${c}`;
    siteCat.set(k, (siteCat.get(k) ?? 0) + size);
    if (!labels.has(site.portableKey)) labels.set(site.portableKey, site.label);
  }
  return { categories, siteCat, labels };
}

export function compareSnapshots(base: CompareSide, other: CompareSide, maxSites = 20): Comparison {
  return compareTallies(tally(base), tally(other), maxSites);
}

/** The comparison of two tallies (two snapshots, or two dumps of a series summarised apart). */
export function compareTallies(a: Tally, b: Tally, maxSites = 20): Comparison {
  const categories: Record<string, number> = {};
  const deltas = CATEGORY_NAMES.map((name, i) => {
    const d = b.categories[i] - a.categories[i];
    categories[name] = d;
    return d;
  });
  const totalDeltaBytes = deltas.reduce((x, y) => x + y, 0);

  // Per (site, category) deltas, then folded per site.
  const keys = new Set([...a.siteCat.keys(), ...b.siteCat.keys()]);
  const perSiteCat: { site: string; cat: number; delta: number; base: number; other: number }[] = [];
  for (const k of keys) {
    const [site, cat] = k.split("\u0000");
    const x = a.siteCat.get(k) ?? 0;
    const y = b.siteCat.get(k) ?? 0;
    perSiteCat.push({ site, cat: Number(cat), delta: y - x, base: x, other: y });
  }
  const perSite = new Map<string, SiteDelta & { bestCatDelta: number }>();
  for (const r of perSiteCat) {
    let s = perSite.get(r.site);
    if (!s) {
      s = {
        site: r.site,
        label: b.labels.get(r.site) ?? a.labels.get(r.site) ?? r.site,
        category: CATEGORY_NAMES[r.cat],
        deltaBytes: 0,
        baseBytes: 0,
        otherBytes: 0,
        bestCatDelta: 0,
      };
      perSite.set(r.site, s);
    }
    s.deltaBytes += r.delta;
    s.baseBytes += r.base;
    s.otherBytes += r.other;
    if (Math.abs(r.delta) > Math.abs(s.bestCatDelta)) {
      s.bestCatDelta = r.delta;
      s.category = CATEGORY_NAMES[r.cat];
    }
  }
  const callSites = [...perSite.values()]
    .filter((s) => s.deltaBytes !== 0)
    .sort((x, y) => Math.abs(y.deltaBytes) - Math.abs(x.deltaBytes) || x.site.localeCompare(y.site))
    .slice(0, maxSites)
    .map(({ bestCatDelta: _b, ...s }) => s);

  /** The site with the largest same-signed change inside one category. */
  const topSite = (cat: number, sign: number) => {
    let best: (typeof perSiteCat)[number] | null = null;
    for (const r of perSiteCat) {
      if (r.cat !== cat || Math.sign(r.delta) !== sign) continue;
      if (!best || Math.abs(r.delta) > Math.abs(best.delta)) best = r;
    }
    return best ? (b.labels.get(best.site) ?? a.labels.get(best.site) ?? best.site) : null;
  };

  const moved = deltas
    .map((d, i) => ({ d, i }))
    .filter(({ d }) => d !== 0)
    .sort((x, y) => Math.abs(y.d) - Math.abs(x.d));
  let verdict: string;
  if (moved.length === 0) verdict = "no change: +0.00 MiB in every category";
  else {
    const word = totalDeltaBytes > 0 ? "growth" : totalDeltaBytes < 0 ? "shrink" : "no net change";
    const head = `${word} ${formatDeltaMiB(totalDeltaBytes)}`;
    if (moved.length === 1) {
      const { d, i } = moved[0];
      const site = topSite(i, Math.sign(d));
      verdict = `${head}, all in ${CATEGORY_NAMES[i]}${site ? `: ${site}` : ""}`;
    } else {
      const parts = moved.slice(0, 3).map(({ d, i }) => {
        const site = topSite(i, Math.sign(d));
        return `${CATEGORY_NAMES[i]} ${formatDeltaMiB(d)}${site ? ` (${site})` : ""}`;
      });
      const rest = moved.length > 3 ? `, and ${moved.length - 3} more` : "";
      verdict = `${head}: ${parts.join(", ")}${rest}`;
    }
  }
  return { categories, totalDeltaBytes, callSites, verdict };
}
