// Selections and transformations as the CLI writes them:
//   category:NAME   site:FILE:LINE   frame:TEXT   ids:1,2,3   window:FROM..TO (events)   time:FROM..TO (µs)
//   phase:forward|backward|optimizer|parameters
// joined with "&" (all hold) and "|" (any holds), "|" binding loosest. A "&" or "|" splits only when a
// selection kind and ":" follow it, so C++ frame texts (`at::Tensor const&, …`) stay whole.

import { PHASE_NAMES } from "./phases";
import type { PhaseName, Selection, Transform } from "./types";

export class WhatIfSpecError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "WhatIfSpecError";
  }
}

const KINDS = ["category", "site", "frame", "ids", "window", "time", "phase"] as const;
const KIND_AHEAD = new RegExp(`^(?:${KINDS.join("|")}):`);

/** Splits at each `sep` that a selection kind and ":" follow. */
function splitOn(spec: string, sep: "&" | "|"): string[] {
  const out: string[] = [];
  let from = 0;
  for (let i = 0; i < spec.length; i++) {
    if (spec[i] === sep && KIND_AHEAD.test(spec.slice(i + 1))) {
      out.push(spec.slice(from, i));
      from = i + 1;
    }
  }
  out.push(spec.slice(from));
  return out;
}

function range(text: string, what: string): [number, number] {
  const m = /^\s*(-?\d+(?:\.\d+)?)\s*\.\.\s*(-?\d+(?:\.\d+)?)\s*$/.exec(text);
  if (!m) throw new WhatIfSpecError(`${what} takes FROM..TO (two numbers), not "${text}"`);
  const a = Number(m[1]);
  const b = Number(m[2]);
  if (b < a) throw new WhatIfSpecError(`${what}: ${a}..${b} is empty (TO is before FROM)`);
  return [a, b];
}

function atom(spec: string): Selection {
  const colon = spec.indexOf(":");
  const kind = colon > 0 ? spec.slice(0, colon) : "";
  const value = colon > 0 ? spec.slice(colon + 1) : "";
  switch (kind) {
    case "category":
      if (!value) throw new WhatIfSpecError("category: needs a name (category:gradients)");
      return { kind: "category", category: value };
    case "site": {
      const at = value.lastIndexOf(":");
      const line = Number(value.slice(at + 1));
      if (at <= 0 || !Number.isInteger(line) || line < 0)
        throw new WhatIfSpecError(`site: takes FILE:LINE (site:train.py:57), not "${value}"`);
      return { kind: "site", file: value.slice(0, at), line };
    }
    case "frame":
      if (!value) throw new WhatIfSpecError("frame: needs a text to find in the stack's frames");
      return { kind: "frame", text: value };
    case "ids": {
      const ids = value.split(",").map((s) => Number(s.trim()));
      if (ids.length === 0 || ids.some((x) => !Number.isInteger(x) || x < 0))
        throw new WhatIfSpecError(`ids: takes allocation ids separated by commas, not "${value}"`);
      return { kind: "ids", ids };
    }
    case "window": {
      const [fromEvent, toEvent] = range(value, "window:");
      if (!Number.isInteger(fromEvent) || !Number.isInteger(toEvent))
        throw new WhatIfSpecError(`window: takes event indices, not "${value}"`);
      return { kind: "window", fromEvent, toEvent };
    }
    case "time": {
      const [fromUs, toUs] = range(value, "time:");
      return { kind: "time", fromUs, toUs };
    }
    case "phase":
      if (!PHASE_NAMES.includes(value as PhaseName) || value === "none")
        throw new WhatIfSpecError(
          `phase: is one of forward, backward, optimizer, parameters, not "${value}"`,
        );
      return { kind: "phase", phase: value as PhaseName };
    default:
      throw new WhatIfSpecError(
        `"${spec}" is not a selection: write category:NAME, site:FILE:LINE, frame:TEXT, ids:1,2, ` +
          "window:FROM..TO, time:FROM..TO or phase:NAME",
      );
  }
}

/** Parses a SPEC: category:NAME, site:FILE:LINE, frame:TEXT, … joined with & and |. */
export function parseSelection(spec: string): Selection {
  const anyOf = splitOn(spec, "|").map((part) => {
    const allOf = splitOn(part, "&").map(atom);
    return allOf.length === 1 ? allOf[0] : ({ kind: "all", of: allOf } as Selection);
  });
  return anyOf.length === 1 ? anyOf[0] : { kind: "any", of: anyOf };
}

/** "0.5", "1/8", "50%" → a factor ≥ 0. */
export function parseFactor(text: string): number {
  const t = text.trim();
  let v: number;
  const frac = /^(\d+(?:\.\d+)?)\s*\/\s*(\d+(?:\.\d+)?)$/.exec(t);
  if (frac) v = Number(frac[1]) / Number(frac[2]);
  else if (t.endsWith("%")) v = Number(t.slice(0, -1)) / 100;
  else v = t === "" ? Number.NaN : Number(t);
  if (!Number.isFinite(v) || v < 0)
    throw new WhatIfSpecError(`a scale factor is a number ≥ 0 (0.5, 1/8, 50%), not "${text}"`);
  return v;
}

/** `SPEC=FACTOR` (the last "=" splits). */
export function parseScale(text: string): Transform {
  const eq = text.lastIndexOf("=");
  if (eq <= 0)
    throw new WhatIfSpecError(`--scale takes SPEC=FACTOR (category:parameters=0.5), not "${text}"`);
  return { op: "scale", select: parseSelection(text.slice(0, eq)), factor: parseFactor(text.slice(eq + 1)) };
}

/** A recompute MODULE: a frame text, with or without the `frame:` prefix. */
export function parseRecompute(text: string): Transform {
  const module = text.startsWith("frame:") ? text.slice("frame:".length) : text;
  if (!module) throw new WhatIfSpecError("--recompute needs a frame text naming the module (gpt.py:77)");
  return { op: "recompute", module };
}

function atomSpec(s: Selection): string {
  switch (s.kind) {
    case "category":
      return `category:${s.category}`;
    case "site":
      return `site:${s.file}:${s.line}`;
    case "frame":
      return `frame:${s.text}`;
    case "ids":
      return `ids:${s.ids.join(",")}`;
    case "window":
      return `window:${s.fromEvent}..${s.toEvent}`;
    case "time":
      return `time:${s.fromUs}..${s.toUs}`;
    case "phase":
      return `phase:${s.phase}`;
    case "all":
      return s.of.map((x) => (x.kind === "any" ? `(${selectionSpec(x)})` : atomSpec(x))).join("&");
    case "any":
      return s.of.map((x) => (x.kind === "any" ? `(${selectionSpec(x)})` : atomSpec(x))).join("|");
  }
}

/** The selection as a SPEC (parseSelection reads it back when "any" holds only atoms and "all"s of atoms). */
export function selectionSpec(s: Selection): string {
  return atomSpec(s);
}

/** 0.125 → "1/8", 0.5 → "1/2", 0.3 → "0.3". */
export const factorText = (f: number) => {
  for (const d of [2, 3, 4, 8, 16, 32, 64]) if (Math.abs(f * d - 1) < 1e-12) return `1/${d}`;
  return String(f);
};

/** The transformation as a CLI option. */
export function transformSpec(t: Transform): string {
  switch (t.op) {
    case "remove":
      return `--remove ${selectionSpec(t.select)}`;
    case "scale":
      return `--scale ${selectionSpec(t.select)}=${factorText(t.factor)}`;
    case "free-early":
      return `--free-early ${selectionSpec(t.select)}`;
    case "recompute":
      return `--recompute ${t.module}`;
  }
}
