// Links to a rank overview: more than two snapshot URLs in one hash, as `src`, `src2`, `src3`, … (the
// comparison's `src` / `src2` continued) or as `src` repeated. Pure functions (no DOM).

/** The URLs of a hash that asks for more than two files, in order; null for one or two (or none). */
export function manySources(hash: string): string[] | null {
  const text = hash.startsWith("#") ? hash.slice(1) : hash;
  if (!/(^|&)src/.test(text)) return null;
  let params: URLSearchParams;
  try {
    params = new URLSearchParams(text);
  } catch {
    return null;
  }
  const numbered: [number, string][] = [];
  let order = 0;
  for (const [key, value] of params) {
    const m = /^src(\d*)$/.exec(key);
    if (!m || value === "") continue;
    const n = m[1] === "" ? 1 : Number(m[1]);
    if (!Number.isInteger(n) || n < 1 || n > 100000) continue;
    // Repeated `src`: in the order written, before `src2`.
    numbered.push([m[1] === "" ? order++ / 1e6 : n, value]);
  }
  if (numbered.length <= 2) return null;
  numbered.sort((a, b) => a[0] - b[0]);
  return [...new Set(numbered.map(([, v]) => v))];
}

/** What a series view's link keeps beside its files: the growth row picked and the two dumps compared. */
export interface SeriesPick {
  /** The picked growth-table row: `pick` (its call site) and `pickcat` (its category). */
  row: { site: string; category: string } | null;
  /** The compared dumps (entry names), A then B: `pair` twice. */
  pair: [string, string] | null;
}

const enc = (v: string) => encodeURIComponent(v).replace(/%2F/gi, "/").replace(/%3A/gi, ":");

/** The hash of a rank overview (or series) of these URLs, with a series' picks when given. */
export function writeManySources(urls: string[], pick?: SeriesPick): string {
  const parts = urls.map((u, i) => `src${i === 0 ? "" : i + 1}=${enc(u)}`);
  if (pick?.row) parts.push(`pick=${enc(pick.row.site)}`, `pickcat=${enc(pick.row.category)}`);
  if (pick?.pair) parts.push(`pair=${enc(pick.pair[0])}`, `pair=${enc(pick.pair[1])}`);
  return `v=1&${parts.join("&")}`;
}

/** The series picks a hash carries (none: nulls). */
export function seriesPick(hash: string): SeriesPick {
  const text = hash.startsWith("#") ? hash.slice(1) : hash;
  let params: URLSearchParams;
  try {
    params = new URLSearchParams(text);
  } catch {
    return { row: null, pair: null };
  }
  const site = params.get("pick");
  const category = params.get("pickcat");
  const pair = params.getAll("pair");
  return {
    row: site && category ? { site, category } : null,
    pair: pair.length === 2 && pair[0] !== pair[1] ? [pair[0], pair[1]] : null,
  };
}
