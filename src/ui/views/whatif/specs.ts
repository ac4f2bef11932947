// What-ifs as text, pure (no DOM, no store): the link's `whatif=` value (the `peakscope whatif` options,
// joined by spaces, as one would type them after the file) and the options in words.

/** The link's `whatif=` value: the CLI options joined by spaces (what one would type after the file). */
export function whatIfLinkValue(specs: readonly string[]): string {
  return specs.join(" ");
}

/** Splits a `whatif=` value back into CLI options (each starts with --remove/--scale/--free-early/--recompute). */
export function specsOfLink(value: string): string[] {
  return value
    .trim()
    .split(/\s+(?=--(?:remove|scale|free-early|recompute)\s)/)
    .map((s) => s.trim())
    .filter((s) => s !== "");
}

const OP_WORD: Record<string, string> = {
  remove: "gone",
  "free-early": "freed early",
  recompute: "recomputed (activation checkpointing)",
};

/** CLI options in words: "category:activations halved; site:model.py:120 gone". */
export function describeSpecs(specs: readonly string[]): string {
  return specs
    .map((s) => {
      const m = /^--(remove|scale|free-early|recompute)\s+([\s\S]+)$/.exec(s.trim());
      if (!m) return s;
      const [, op, v] = m;
      if (op === "scale") {
        const eq = v.lastIndexOf("=");
        const f = v.slice(eq + 1);
        return `${shortSelection(v.slice(0, eq))} × ${f}${f === "1/2" ? " (halved)" : ""}`;
      }
      return `${op === "recompute" ? shortFrame(v) : shortSelection(v)} ${OP_WORD[op]}`;
    })
    .join("; ");
}

/** Long paths in a selection cut to their last two components. */
function shortSelection(sel: string): string {
  return sel.replace(/(?:site|frame):([^&|]+)/g, (m, body: string) => m.replace(body, shortFrame(body)));
}

function shortFrame(text: string): string {
  const parts = text.split("/");
  return parts.length > 2 ? `…/${parts.slice(-2).join("/")}` : text;
}

/**
 * The suggestion a chosen what-if may be named after: only the one a link names (`whatifid=`), and only
 * while its options are still the same. A what-if asked as such ("optimizer_state × 1/2") keeps its own
 * name even when its options coincide with a suggestion's ("ZeRO-1 over 2 ranks").
 */
export function namedSuggestion<T extends { id: string; specs: readonly string[] }>(
  chosen: { id: string | null; linkId?: string | null; specs: readonly string[] },
  suggestions: readonly T[],
): T | null {
  if (chosen.id || !chosen.linkId) return null;
  const key = chosen.specs.join("\n");
  return suggestions.find((s) => s.id === chosen.linkId && s.specs.join("\n") === key) ?? null;
}
