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

/** The hash of a rank overview of these URLs. */
export function writeManySources(urls: string[]): string {
  const enc = (v: string) => encodeURIComponent(v).replace(/%2F/gi, "/").replace(/%3A/gi, ":");
  return `v=1&${urls.map((u, i) => `src${i === 0 ? "" : i + 1}=${enc(u)}`).join("&")}`;
}
