// Which files the page opens as a series (pure: no DOM). A series is one rank's dumps after different steps.

import { stepFromFileName, stepFromTag } from "../../../core/leaks/index";
import { rankFromFileName } from "../../../core/ranks/index";

/**
 * Files that are a series: three or more, every one naming a distinct step (file name `…step3…`, `_s3_`,
 * `-s3`, else its sidecar's `tag`), and no two naming different ranks (file name, else sidecar `rank`).
 */
export function isSeries(names: string[], sidecars: ({ tag?: unknown; rank?: unknown } | null)[]): boolean {
  if (names.length < 3) return false;
  const distinct = (xs: (number | null)[]) => xs.every((x) => x !== null) && new Set(xs).size === xs.length;
  const steps = names.map(stepFromFileName);
  const tags = sidecars.map((s) => stepFromTag(typeof s?.tag === "string" ? s.tag : null));
  if (!distinct(steps) && !distinct(tags)) return false;
  const ranks = names.map((n, i) => {
    const r = rankFromFileName(n);
    if (r !== null) return r;
    const s = sidecars[i]?.rank;
    return typeof s === "number" ? s : null;
  });
  return new Set(ranks.filter((r) => r !== null)).size <= 1;
}
