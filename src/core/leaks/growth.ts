// The verdict on a series of measurements taken at the same point of successive steps (the end of each step
// in one trace, or one dump per step): per (call site, category), its live bytes at each step; a leak grows
// by at least the threshold in every step from its first growth to the last one measured, for at least
// `minGrowthSteps` steps. Growth that stops (a site that grew, then stayed flat or shrank) is one-off state —
// warm-up: optimizer moments, gradients, lazily made buffers. The allocator's cache never enters: only
// allocated (rounded block) bytes are measured, never reserved.

export const DEFAULT_THRESHOLD_BYTES = 1 << 20;
export const DEFAULT_MIN_GROWTH_STEPS = 3;

export interface GrowthRow {
  /** The call-site string `report` uses (`path:line:function` as written in the file). */
  site: string;
  /** Short form for display (`train.py:57 forward`). */
  label: string;
  category: string;
  /** Live bytes at each measured step (aligned with the steps). */
  live: number[];
}

export interface GrowthOptions {
  thresholdBytes?: number;
  minGrowthSteps?: number;
}

export interface LeakRow {
  site: string;
  label: string;
  category: string;
  /** Mean growth per step over the steps it grew in: exact when each step grew by the same rounded bytes. */
  bytesPerStep: number;
  /** The steps it grew in (the later step of each measured pair). */
  steps: number[];
  /** Live bytes at each measured step, in the order of the steps. */
  liveBytesByStep: number[];
}

export interface OneOffRow {
  site: string;
  label: string;
  category: string;
  /** Bytes it grew by in total, and the steps it grew in before it stopped. */
  bytes: number;
  steps: number[];
}

export interface GrowthTableRow {
  site: string;
  label: string;
  category: string;
  liveBytesByStep: number[];
  /** last − first measured. */
  growthBytes: number;
  /**
   * "leak" (flagged); "one-off" (grew, then stopped: warm-up); "growing" (grew in the last step, but below
   * the rule: too little or too few steps); "steady" (back where it started, or never changed); "shrinks".
   */
  kind: "leak" | "one-off" | "growing" | "steady" | "shrinks";
}

export interface GrowthResult {
  verdict: "leak" | "none" | "too-few-steps";
  leaks: LeakRow[];
  /** Growth that stopped before the last step: one-off state (warm-up), largest first. */
  oneOff: OneOffRow[];
  /** Every row with any change, and the largest steady ones: largest growth first. */
  table: GrowthTableRow[];
  thresholdBytes: number;
  minGrowthSteps: number;
}

/** The rule in one sentence, for the CLI, the JSON and the page. */
export function growthRule(thresholdBytes: number, minGrowthSteps: number): string {
  const mib = thresholdBytes / 2 ** 20;
  const t = Number.isInteger(mib) ? `${mib} MiB` : `${thresholdBytes} B`;
  return (
    `a leak is a (call site, category) whose live bytes grow by ≥ ${t} per step in every step from its first ` +
    `growth to the last step measured, at least ${minGrowthSteps} steps; growth that stops (flat or shrinking ` +
    "after it) is one-off state — warm-up: optimizer moments, gradients, lazily made buffers; the allocator's " +
    "cache is not counted (allocated bytes only)"
  );
}

/**
 * Analyse rows measured at `stepNumbers` (ascending). Growth per step is the change between two measurements
 * divided by the steps between them (dumps after steps 2, 4, 6 measure two steps each).
 */
export function analyseGrowth(
  stepNumbers: number[],
  rows: GrowthRow[],
  opts: GrowthOptions = {},
): GrowthResult {
  const thresholdBytes = opts.thresholdBytes ?? DEFAULT_THRESHOLD_BYTES;
  const minGrowthSteps = opts.minGrowthSteps ?? DEFAULT_MIN_GROWTH_STEPS;
  const n = stepNumbers.length;
  const leaks: LeakRow[] = [];
  const oneOff: OneOffRow[] = [];
  const table: GrowthTableRow[] = [];
  for (const row of rows) {
    const live = row.live;
    let firstGrowing = n; // first index i (≥ 1) of the growing suffix
    for (let i = n - 1; i >= 1; i--) {
      const perStep = (live[i] - live[i - 1]) / (stepNumbers[i] - stepNumbers[i - 1]);
      if (perStep >= thresholdBytes) firstGrowing = i;
      else break;
    }
    const growingSteps = n - firstGrowing;
    const growthBytes = n > 0 ? live[n - 1] - live[0] : 0;
    let kind: GrowthTableRow["kind"] = "steady";
    if (growingSteps >= minGrowthSteps) {
      kind = "leak";
      const base = live[firstGrowing - 1];
      leaks.push({
        site: row.site,
        label: row.label,
        category: row.category,
        bytesPerStep: (live[n - 1] - base) / (stepNumbers[n - 1] - stepNumbers[firstGrowing - 1]),
        steps: stepNumbers.slice(firstGrowing),
        liveBytesByStep: [...live],
      });
    } else {
      const grewIn: number[] = [];
      let lastGrowth = -1;
      for (let i = 1; i < n; i++) {
        if (live[i] > live[i - 1]) {
          grewIn.push(stepNumbers[i]);
          lastGrowth = i;
        }
      }
      if (lastGrowth < 0) kind = growthBytes < 0 ? "shrinks" : "steady";
      else if (lastGrowth === n - 1) kind = "growing";
      else if (growthBytes > 0) {
        kind = "one-off";
        oneOff.push({ ...pick(row), bytes: growthBytes, steps: grewIn });
      } else kind = growthBytes < 0 ? "shrinks" : "steady";
    }
    table.push({ ...pick(row), liveBytesByStep: [...live], growthBytes, kind });
  }
  const order =
    <T extends { site: string; category: string }>(key: (x: T) => number) =>
    (a: T, b: T) =>
      key(b) - key(a) || a.site.localeCompare(b.site) || a.category.localeCompare(b.category);
  leaks.sort(order((x) => x.bytesPerStep));
  oneOff.sort(order((x) => x.bytes));
  table.sort(order((x) => (x.kind === "leak" ? 1e18 : 0) + x.growthBytes));
  const verdict = n - 1 < minGrowthSteps ? "too-few-steps" : leaks.length > 0 ? "leak" : "none";
  return { verdict, leaks: verdict === "leak" ? leaks : [], oneOff, table, thresholdBytes, minGrowthSteps };
}

const pick = (r: GrowthRow) => ({ site: r.site, label: r.label, category: r.category });

/**
 * The step at which memory runs out, projected: the last measured step's peak plus the leaks' growth per
 * step, against the capacity; null without a leak or a capacity. Already above it: the last step.
 */
export function projectOomStep(
  lastStep: number,
  lastPeakBytes: number | null,
  growthPerStepBytes: number,
  capacityBytes: number | null,
): number | null {
  if (capacityBytes === null || lastPeakBytes === null || !(growthPerStepBytes > 0)) return null;
  if (lastPeakBytes > capacityBytes) return lastStep;
  return lastStep + Math.floor((capacityBytes - lastPeakBytes) / growthPerStepBytes) + 1;
}
