// The call tree's filters in the share link (link.ts reads and writes them beside the other parameters).
// Pure functions (no DOM). Page-wide, not per file: a comparison's B − A tree uses the same filters.
//
// | parameter | meaning                                                   |
// | --------- | --------------------------------------------------------- |
// | tq        | the "Search frames" text or `/regex/flags`                |
// | tdir      | `bottom-up` (absent: top-down)                            |
// | tby       | `module` (absent: by stack)                               |
// | town      | `1`: only own code                                        |
// | thide     | `1`: hide library frames                                  |
// | tg        | custom groups, `Name:regex;Name:regex` (each part escaped) |
// | trange    | a range measure, `live-at-end:A..B` (allocated-in, freed-in) |
//
// `tg`: the groups in order; a name and a regex each have `%`, `:` and `;` escaped as `%25`, `%3A`, `%3B`
// (so they never split), then the whole value is escaped once more as every link value is.

export interface TreeLink {
  q?: string;
  dir?: "top-down" | "bottom-up";
  by?: "stack" | "module";
  own?: boolean;
  hide?: boolean;
  /** Custom groups, in order: a name and a regex over `filename:line:name`. */
  groups?: TreeGroup[];
  /** A range measure over events from..to instead of one moment. */
  range?: TreeRangeLink;
}

export interface TreeRangeLink {
  from: number;
  to: number;
  measure: "live-at-end" | "allocated-in" | "freed-in";
}

export interface TreeGroup {
  name: string;
  re: string;
}

export const TREE_KEYS: readonly string[] = ["tq", "tdir", "tby", "town", "thide", "tg", "trange"];

export function isTreeKey(key: string): boolean {
  return TREE_KEYS.includes(key);
}

/** Reads one tree parameter into `into`; returns the reason it was ignored, or null. */
export function parseTreeParam(into: TreeLink, key: string, raw: string): string | null {
  switch (key) {
    case "tq":
      if (raw.length === 0) return "empty";
      into.q = raw;
      return null;
    case "tdir":
      if (raw !== "top-down" && raw !== "bottom-up") return "expected top-down or bottom-up";
      into.dir = raw;
      return null;
    case "tby":
      if (raw !== "stack" && raw !== "module") return "expected stack or module";
      into.by = raw;
      return null;
    case "town":
    case "thide":
      if (raw !== "0" && raw !== "1") return "expected 0 or 1";
      if (key === "town") into.own = raw === "1";
      else into.hide = raw === "1";
      return null;
    case "trange": {
      const m = /^(live-at-end|allocated-in|freed-in):(\d+)\.\.(\d+)$/.exec(raw);
      if (!m) return "expected live-at-end|allocated-in|freed-in:A..B";
      const from = Number(m[2]);
      const to = Number(m[3]);
      if (from > to) return "A is after B";
      into.range = { measure: m[1] as TreeRangeLink["measure"], from, to };
      return null;
    }
    case "tg": {
      const groups: TreeGroup[] = [];
      for (const part of raw.split(";")) {
        if (part.length === 0) continue;
        const c = part.indexOf(":");
        if (c <= 0) return "expected Name:regex;…";
        let name: string;
        let re: string;
        try {
          name = decodeURIComponent(part.slice(0, c));
          re = decodeURIComponent(part.slice(c + 1));
        } catch {
          return "a group is not escaped properly";
        }
        if (name.length === 0 || re.length === 0) return "expected Name:regex;…";
        if (groups.some((g) => g.name === name)) return `group ${name} given twice`;
        groups.push({ name, re });
      }
      if (groups.length === 0) return "empty";
      into.groups = groups;
      return null;
    }
  }
  return "not a parameter peakscope knows";
}

/** `key=value` pairs for what differs from the defaults (nothing for the default view). */
export function writeTreeParams(t: TreeLink | undefined, enc: (v: string) => string): string[] {
  if (!t) return [];
  const p: string[] = [];
  if (t.q) p.push(`tq=${enc(t.q)}`);
  if (t.dir === "bottom-up") p.push("tdir=bottom-up");
  if (t.by === "module") p.push("tby=module");
  if (t.own) p.push("town=1");
  if (t.hide) p.push("thide=1");
  if (t.range) p.push(`trange=${t.range.measure}:${t.range.from}..${t.range.to}`);
  if (t.groups && t.groups.length > 0) p.push(`tg=${enc(writeGroups(t.groups))}`);
  return p;
}

/** The `tg` value before the link's own escaping. */
export function writeGroups(groups: readonly TreeGroup[]): string {
  return groups.map((g) => `${escapePart(g.name)}:${escapePart(g.re)}`).join(";");
}

/** `%`, `:` and `;` escaped (decodeURIComponent reads them back); the rest stays readable. */
function escapePart(v: string): string {
  return v.replace(/[%:;]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}
