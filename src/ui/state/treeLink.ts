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

export interface TreeLink {
  q?: string;
  dir?: "top-down" | "bottom-up";
  by?: "stack" | "module";
  own?: boolean;
  hide?: boolean;
}

export const TREE_KEYS: readonly string[] = ["tq", "tdir", "tby", "town", "thide"];

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
  }
  return "not a parameter memscope knows";
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
  return p;
}
