// The view state in the URL hash, versioned: `#v=1&src=…&device=0&axis=time&t0=…&t1=…&pin=…&cat=…`.
// Pure functions (no DOM): parse a hash into a LinkState plus notices about what was ignored, and write a
// LinkState back. Every per-file parameter has a twin ending in 2 for the second file of a comparison
// (`src2`, `device2`, `t02`, …). Unknown or bad parameters are ignored, each with a notice.
//
// | parameter       | meaning                                                                              |
// | --------------- | ------------------------------------------------------------------------------------ |
// | v               | link version: 1                                                                      |
// | src             | a snapshot URL to download (http/https, CORS); relative URLs resolve against the page |
// | name, hash      | a dropped file's name and content hash (hash.ts): the link asks for that file        |
// | device          | the device shown                                                                     |
// | view            | the timeline: `stacked` (by category) or `allocations` (each allocation)             |
// | axis            | `time` or `event`                                                                    |
// | t0, t1          | the visible range, from the trace's start: µs on the time axis, events on the other  |
// | pin             | the event the segment map shows (absent: the snapshot)                               |
// | moment          | the current moment: `snapshot`, `event:N`, `range:A..B` or `peak` (momentLink.ts);   |
// |                 | absent: the moment the file opens at (the peak unless the snapshot is within 2 %)    |
// | cat             | the highlighted category                                                             |
// | site            | the highlighted call site (`path:line:function` as in the file)                      |
// | color           | the segment map's colouring: `category` or `state`                                   |
// | whatif          | the chosen what-if: `peakscope whatif` options (`--scale category:parameters=1/2 …`)  |
// | whatifid        | the suggestion the chosen what-if is (`zero1x2`): named as the list names it; absent: |
// |                 | a custom what-if, named as asked (`optimizer_state × 1/2`) even when specs coincide   |
// | devices         | GPUs available for the what-if ranking (`whatif --devices N`); absent: 1             |
// | cap             | the device capacity typed in What if, in bytes (`whatif --capacity`); absent: the    |
// |                 | counters' or the OOM's, if any                                                       |
// | link            | comparison: `1` shared time axis (zoom and cursor move both), `0` each its own axis;  |
// |                 | always written, so a link keeps the toggle whatever the page's default is           |
// | align           | comparison: `start` or `snapshot` (the first `_snapshot()` marker of each file)       |
// | at              | comparison: "Compare at" `snapshots` or `peaks`; absent: the default (each file's    |
// |                 | peak when both have one, else the snapshots), so only `at=snapshots` is written       |
// | tq, tdir, tby, town, thide, tg, trange | the call tree's search, filters, groups and range (treeLink.ts) |

import { parseMoment } from "./momentLink";
import { isTreeKey, parseTreeParam, type TreeLink, writeTreeParams } from "./treeLink";

export const LINK_VERSION = 1;

export interface SideLink {
  src?: string;
  name?: string;
  hash?: string;
  device?: number;
  view?: "stacked" | "allocations";
  axis?: "time" | "event";
  t0?: number;
  t1?: number;
  pin?: number;
  cat?: string;
  site?: string;
  color?: "category" | "state";
  /** The chosen what-if (views/whatif): CLI options joined by spaces. */
  whatif?: string;
  /** The suggestion id the chosen what-if came from (absent: a custom what-if). */
  whatifid?: string;
  /** GPUs available for the what-if ranking (absent: 1). */
  devices?: number;
  /** The device capacity the user typed, in bytes (absent: none typed). */
  cap?: number;
  /** The current moment as `body[data-moment]` says it (momentLink.ts); absent: the file's default. */
  moment?: string;
}

export interface LinkState {
  a: SideLink;
  /** The second file of a comparison. */
  b: SideLink | null;
  link?: boolean;
  align?: "start" | "snapshot";
  /** Comparison: what the verdict and the diff tabs compare (absent: each file's peak when both have one). */
  at?: "peaks" | "snapshots";
  /** The call tree's filters (page-wide). */
  tree?: TreeLink;
}

const SIDE_KEYS = [
  "src",
  "name",
  "hash",
  "device",
  "view",
  "axis",
  "t0",
  "t1",
  "pin",
  "cat",
  "site",
  "color",
  "whatif",
  "whatifid",
  "devices",
  "cap",
  "moment",
] as const;
type SideKey = (typeof SIDE_KEYS)[number];

const MAX_VALUE = 4096;

/** A parameter value as shown in a notice: short, one line. */
function show(v: string): string {
  const one = v.replace(/\s+/g, " ");
  return one.length > 60 ? `${one.slice(0, 57)}…` : one;
}

function parseValue(key: SideKey, raw: string): { value: unknown } | { error: string } {
  switch (key) {
    case "src":
    case "name":
    case "cat":
    case "site":
      return raw.length === 0 ? { error: "empty" } : { value: raw };
    case "hash":
      return /^[0-9a-f]{8,64}$/i.test(raw) ? { value: raw.toLowerCase() } : { error: "not a hex digest" };
    case "device":
    case "pin":
      return /^\d{1,9}$/.test(raw) ? { value: Number(raw) } : { error: "not a whole number ≥ 0" };
    case "t0":
    case "t1": {
      const n = Number(raw);
      return raw.trim() !== "" && Number.isFinite(n) ? { value: n } : { error: "not a number" };
    }
    case "view":
      return raw === "stacked" || raw === "allocations"
        ? { value: raw }
        : { error: "expected stacked or allocations" };
    case "axis":
      return raw === "time" || raw === "event" ? { value: raw } : { error: "expected time or event" };
    case "color":
      return raw === "category" || raw === "state" ? { value: raw } : { error: "expected category or state" };
    case "whatifid":
      return /^[\w:./-]{1,200}$/.test(raw) ? { value: raw } : { error: "not a suggestion id" };
    case "devices":
      return /^[1-9]\d{0,5}$/.test(raw) ? { value: Number(raw) } : { error: "not a whole number ≥ 1" };
    case "cap":
      return /^[1-9]\d{0,15}$/.test(raw)
        ? { value: Number(raw) }
        : { error: "not a whole number of bytes ≥ 1" };
    case "moment":
      return parseMoment(raw) ? { value: raw } : { error: "expected snapshot, peak, event:N or range:A..B" };
    case "whatif":
      return /^--(remove|scale|free-early|recompute)\s+\S/.test(raw.trim())
        ? { value: raw.trim() }
        : { error: "expected peakscope whatif options: --remove, --scale, --free-early or --recompute" };
  }
}

export interface Parsed {
  state: LinkState;
  /** What was ignored and why, one short item each: `t0=abc (not a number)`. */
  notices: string[];
  /** True when the hash held no parameters at all. */
  empty: boolean;
}

export function parseLink(hash: string): Parsed {
  const text = hash.startsWith("#") ? hash.slice(1) : hash;
  const notices: string[] = [];
  const state: LinkState = { a: {}, b: null };
  if (text.trim() === "") return { state, notices, empty: true };
  let params: URLSearchParams;
  try {
    params = new URLSearchParams(text);
  } catch {
    return { state, notices: ["all of it (its parameters could not be read)"], empty: false };
  }
  const seen = new Set<string>();
  const b: SideLink = {};
  let version: string | null = null;
  for (const [key, raw] of params) {
    if (seen.has(key)) {
      notices.push(`a second ${show(key)} (the first one is used)`);
      continue;
    }
    seen.add(key);
    if (raw.length > MAX_VALUE) {
      notices.push(`${show(key)} (longer than ${MAX_VALUE} characters)`);
      continue;
    }
    if (key === "v") {
      version = raw;
      continue;
    }
    if (key === "link") {
      if (raw === "0" || raw === "1") state.link = raw === "1";
      else notices.push(`link=${show(raw)} (expected 0 or 1)`);
      continue;
    }
    if (key === "align") {
      if (raw === "start" || raw === "snapshot") state.align = raw;
      else notices.push(`align=${show(raw)} (expected start or snapshot)`);
      continue;
    }
    if (key === "at") {
      if (raw === "peaks" || raw === "snapshots") state.at = raw;
      else notices.push(`at=${show(raw)} (expected peaks or snapshots)`);
      continue;
    }
    if (isTreeKey(key)) {
      const err = parseTreeParam((state.tree ??= {}), key, raw);
      if (err) notices.push(`${show(key)}=${show(raw)} (${err})`);
      continue;
    }
    const second = key.endsWith("2") && (SIDE_KEYS as readonly string[]).includes(key.slice(0, -1));
    const base = (second ? key.slice(0, -1) : key) as SideKey;
    if (!(SIDE_KEYS as readonly string[]).includes(base)) {
      notices.push(`${show(key)} (not a parameter peakscope knows)`);
      continue;
    }
    const r = parseValue(base, raw);
    if ("error" in r) {
      notices.push(`${show(key)}=${show(raw)} (${r.error})`);
      continue;
    }
    (second ? b : state.a)[base] = r.value as never;
  }
  if (version === null) {
    if (seen.size > 0) notices.push(`the missing version (read as v=${LINK_VERSION})`);
  } else if (version !== String(LINK_VERSION)) {
    notices.push(`v=${show(version)} (this page reads v=${LINK_VERSION}; the parameters it knows are used)`);
  }
  if (Object.keys(b).length > 0) state.b = b;
  return { state, notices, empty: false };
}

function fmt(n: number): string {
  if (Number.isInteger(n)) return String(n);
  return String(Math.round(n * 100) / 100);
}

export function writeLink(s: LinkState): string {
  const p: string[] = [`v=${LINK_VERSION}`];
  const put = (k: string, v: string | number | undefined) => {
    if (v === undefined || v === "") return;
    p.push(`${k}=${encodeComponent(typeof v === "number" ? fmt(v) : v)}`);
  };
  const side = (l: SideLink, suffix: string) => {
    for (const k of SIDE_KEYS) put(k + suffix, l[k] as string | number | undefined);
  };
  side(s.a, "");
  p.push(...writeTreeParams(s.tree, encodeComponent));
  if (s.b) {
    side(s.b, "2");
    // Both values are written: the default (each file on its own axis) changed once already, and a link
    // must restore the toggle as it was, not as the opening page's default has it.
    if (s.link !== undefined) put("link", s.link ? "1" : "0");
    if (s.align) put("align", s.align);
    if (s.at) put("at", s.at);
  }
  return p.join("&");
}

/** encodeURIComponent, but keeping `/` and `:` readable (both are safe inside a fragment's values). */
function encodeComponent(v: string): string {
  return encodeURIComponent(v).replace(/%2F/gi, "/").replace(/%3A/gi, ":");
}
