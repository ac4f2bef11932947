// Category colours: the Okabe–Ito palette (distinguishable with the common colour-vision deficiencies)
// first, then Paul Tol's "muted" set, so each category of a file gets its own colour. A few well-known
// categories get fixed colours so they look the same in every file.

export const PALETTE = [
  "#0072B2", // blue
  "#E69F00", // orange
  "#009E73", // bluish green
  "#CC79A7", // reddish purple
  "#56B4E9", // sky blue
  "#D55E00", // vermillion
  "#F0E442", // yellow
  "#332288", // indigo (Tol)
  "#117733", // green (Tol)
  "#882255", // wine (Tol)
  "#44AA99", // teal (Tol)
  "#999933", // olive (Tol)
  "#AA4499", // purple (Tol)
  "#DDCC77", // sand (Tol)
  "#88CCEE", // cyan (Tol)
  "#CC6677", // rose (Tol)
];

const FIXED: Record<string, string> = {
  parameter: "#0072B2",
  parameters: "#0072B2",
  gradient: "#E69F00",
  gradients: "#E69F00",
  optimizer_state: "#009E73",
  "optimizer state": "#009E73",
  activation: "#CC79A7",
  activations: "#CC79A7",
  input: "#56B4E9",
  // Allocated and freed within one phase (backward in flight, forward transients, optimizer scratch).
  temporary: "#D55E00",
  autograd_detail: "#F0E442",
  // torch_npu's workspace allocator: shown apart (not in memory_allocated(), timing not recorded).
  workspace: "#332288",
  // Inference engines' KV caches (vLLM, SGLang, Hugging Face caches).
  kv_cache: "#999933",
  other: "#DDCC77",
};

/** "unknown": no rule could tell; neutral so it never reads as a real category. */
const NEUTRAL = "#8c8c8c";

/** Colours for a list of categories, in order: fixed ones keep theirs, the rest take free slots. */
export function categoryColors(names: readonly string[]): string[] {
  const used = new Set<string>();
  const out: string[] = new Array(names.length);
  names.forEach((n, i) => {
    const key = n.toLowerCase();
    const fixed = FIXED[key];
    if (fixed && !used.has(fixed)) {
      out[i] = fixed;
      used.add(fixed);
    }
  });
  let next = 0;
  names.forEach((n, i) => {
    if (out[i]) return;
    const key = n.toLowerCase();
    if (key === "unknown" || key === "unattributed") {
      out[i] = NEUTRAL;
      return;
    }
    while (next < PALETTE.length && used.has(PALETTE[next])) next++;
    if (next < PALETTE.length) {
      out[i] = PALETTE[next];
      used.add(PALETTE[next]);
    } else {
      // Beyond 16 distinct categories: evenly spaced hues, still one per category.
      const h = (i * 137.508) % 360;
      out[i] = `hsl(${h.toFixed(0)} 55% 50%)`;
    }
  });
  return out;
}

/**
 * Colours for block states in the segment map. Rounding waste is drawn in the theme's foreground colour
 * (var(--fg)): any fixed colour would be some category's (vermillion is temporary's).
 */
export const STATE_COLORS = {
  allocated: "#0072B2",
  pendingFree: "#E69F00",
  inactive: "#d9d9d9",
  unknown: "#999999",
};
