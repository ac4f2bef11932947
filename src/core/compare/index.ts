// Compare two snapshots (or two sets of live allocations: peaks.ts compares the peaks): per-category and
// per-call-site deltas (other − base, over active_allocated blocks, the bytes that make up allocated_size),
// largest first, and a one-line verdict. Call sites are matched on
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

/**
 * Unknown blocks of one side counted as parameters because the other side's parameters account for them
 * exactly (MATCH_RULE): the same weights, recorded on one side and not on the other.
 */
export interface UnknownMatch {
  /** The side whose unknown blocks were matched. */
  side: "base" | "other";
  /** The block size (rounded bytes) matched. */
  sizeBytes: number;
  blocks: number;
  /** blocks × sizeBytes. */
  bytes: number;
  /** The other side's call site of those parameters when they all share one (its portable key), else null. */
  site: string | null;
}

export const MATCH_RULE =
  "unknown blocks of one file are counted as parameters where, for their exact block size, the other file " +
  "holds exactly that many more parameter blocks than this one (the same weights, recorded in one file and " +
  "allocated before recording in the other); any other count at that size is left unknown";

export interface Comparison {
  /** other − base per category (after matching unknown blocks to parameters: `matched`). */
  categories: Record<string, number>;
  /** Unknown blocks counted as parameters (MATCH_RULE); [] when none. */
  matched: UnknownMatch[];
  /** Σ matched bytes per side. */
  matchedBytes: { base: number; other: number };
  /** The rule, for people. */
  matchRule: string;
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

/**
 * What a comparison reads of one side: its live allocations — a snapshot's active_allocated blocks, or
 * the allocations alive at a replayed event (peaks.ts) — each as rounded bytes, category id
 * (CATEGORY_NAMES) and call site. One walk serves the matching (MATCH_RULE) and the tally alike.
 */
export interface LiveSet {
  forEach(visit: (sizeBytes: number, category: number, site: LiveSite) => void): void;
}

/** A call site as a comparison keys it: the portable key (matched across files) and its display label. */
export interface LiveSite {
  portableKey: string;
  label: string;
}

/** A snapshot's active_allocated blocks (the bytes of allocated_size), every device. */
export function snapshotLive(side: CompareSide): LiveSet {
  const { model, attribution: a } = side;
  return {
    forEach(visit) {
      for (let b = 0; b < model.blocks.length; b++) {
        if (model.blocks.state[b] !== BlockState.active_allocated) continue;
        visit(model.blocks.sizeBytes[b], a.blockCategory[b], a.sites[a.blockSite[b]]);
      }
    },
  };
}

const UNKNOWN = CATEGORY_NAMES.indexOf("unknown");
const PARAMETERS = CATEGORY_NAMES.indexOf("parameters");

/** Per block size: live unknown blocks, parameter blocks, and the parameters' site keys. */
function sizeCounts(live: LiveSet) {
  const u = new Map<number, number>();
  const p = new Map<number, number>();
  const pSites = new Map<number, Set<string>>();
  live.forEach((size, c, site) => {
    if (c === UNKNOWN) u.set(size, (u.get(size) ?? 0) + 1);
    else if (c === PARAMETERS) {
      p.set(size, (p.get(size) ?? 0) + 1);
      let set = pSites.get(size);
      if (!set) pSites.set(size, (set = new Set()));
      set.add(site.portableKey);
    }
  });
  return { u, p, pSites };
}

/** The matches of MATCH_RULE, both ways, between two snapshots. */
export function matchUnknownToParameters(base: CompareSide, other: CompareSide): UnknownMatch[] {
  return matchLive(snapshotLive(base), snapshotLive(other));
}

/** The matches of MATCH_RULE, both ways, between two sets of live allocations. */
export function matchLive(base: LiveSet, other: LiveSet): UnknownMatch[] {
  const A = sizeCounts(base);
  const B = sizeCounts(other);
  const out: UnknownMatch[] = [];
  const one = (side: UnknownMatch["side"], me: typeof A, them: typeof A) => {
    for (const [size, n] of me.u) {
      const more = (them.p.get(size) ?? 0) - (me.p.get(size) ?? 0);
      if (more !== n) continue;
      const sites = them.pSites.get(size);
      out.push({
        side,
        sizeBytes: size,
        blocks: n,
        bytes: n * size,
        site: sites && sites.size === 1 ? [...sites][0] : null,
      });
    }
  };
  one("base", A, B);
  one("other", B, A);
  return out.sort((x, y) => (x.side < y.side ? -1 : x.side > y.side ? 1 : y.bytes - x.bytes));
}

function tally(live: LiveSet, matched: Map<number, string | null> = new Map()): Tally {
  const categories = new Array(CATEGORY_NAMES.length).fill(0);
  const siteCat = new Map<string, number>();
  const labels = new Map<string, string>();
  live.forEach((size, category, site) => {
    let c = category;
    let key = site.portableKey;
    const match = c === UNKNOWN ? matched.get(size) : undefined;
    if (match !== undefined) {
      // matched to the other file's parameters (MATCH_RULE): their category, and their site when one
      c = PARAMETERS;
      if (match !== null) key = match;
    }
    categories[c] += size;
    const k = `${key}\u0000${c}`;
    siteCat.set(k, (siteCat.get(k) ?? 0) + size);
    if (!labels.has(key)) labels.set(key, key === site.portableKey ? site.label : key);
  });
  return { categories, siteCat, labels };
}

export function compareSnapshots(base: CompareSide, other: CompareSide, maxSites = 20): Comparison {
  return compareLive(snapshotLive(base), snapshotLive(other), maxSites);
}

/** Two sets of live allocations compared (other − base), unknown blocks matched first (MATCH_RULE). */
export function compareLive(base: LiveSet, other: LiveSet, maxSites = 20): Comparison {
  const matched = matchLive(base, other);
  const bySide = (side: UnknownMatch["side"]) =>
    new Map(matched.filter((m) => m.side === side).map((m) => [m.sizeBytes, m.site]));
  const a = tally(base, bySide("base"));
  const b = tally(other, bySide("other"));
  // Labels for a matched site come from the side where it is a real site.
  for (const [k, v] of a.labels) if (b.labels.get(k) === k) b.labels.set(k, v);
  for (const [k, v] of b.labels) if (a.labels.get(k) === k) a.labels.set(k, v);
  const matchedBytes = {
    base: matched.filter((m) => m.side === "base").reduce((x, m) => x + m.bytes, 0),
    other: matched.filter((m) => m.side === "other").reduce((x, m) => x + m.bytes, 0),
  };
  return compareTallies(a, b, maxSites, matched, matchedBytes);
}

/**
 * The comparison of two tallies (two snapshots, or two dumps of a series summarised apart). `matched` are
 * the unknown blocks counted as the other side's parameters (none for tallies made without the models).
 */
export function compareTallies(
  a: Tally,
  b: Tally,
  maxSites = 20,
  matched: UnknownMatch[] = [],
  matchedBytes = { base: 0, other: 0 },
): Comparison {
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
  return { categories, matched, matchedBytes, matchRule: MATCH_RULE, totalDeltaBytes, callSites, verdict };
}
