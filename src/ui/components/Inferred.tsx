// How the page marks a category that was inferred (from sizes and lifetimes: memory allocated before
// recording began has no stack) rather than read from a stack: a hatched swatch ╲╲, the word "inferred",
// and the rule that made it — its id in the text, its description on hover (title) and in the disclosures.
// The same hatch is drawn on the timeline's bands and the segment map's blocks (hatch.ts).

import type { InferredPart, RuleText } from "../../../workers/api";
import { formatBytes, formatCount } from "../format";
import { firstSentence } from "./StackList";

/** The rule's description without its leading "Inferred." (the mark already says so). */
export function ruleBody(description: string): string {
  return description.replace(/^Inferred\.\s*/, "");
}

/** "inferred (matches-gradient): Allocated before recording began …" */
export function inferredText(rule: string, description: string): string {
  return `inferred (${rule}): ${ruleBody(description)}`;
}

export function describeRule(rules: readonly RuleText[] | undefined, id: string): string {
  return rules?.find((r) => r.id === id)?.description ?? "";
}

/** Parts of one category, merged by rule (a category may be named by two rules, e.g. adam-quartet). */
export function partsOf(parts: readonly InferredPart[] | undefined, category: string): InferredPart[] {
  return (parts ?? []).filter((p) => p.category === category && p.bytes > 0);
}

/** The title of a mark: one line per rule with its bytes and description. */
export function partsTitle(
  parts: readonly InferredPart[],
  rules: readonly RuleText[] | undefined,
  unit: "blocks" | "allocations" = "blocks",
): string {
  return parts
    .map(
      (p) =>
        `${formatBytes(p.bytes)} (${formatCount(p.count)} ${unit}) ${inferredText(p.rule, describeRule(rules, p.rule))}`,
    )
    .join("\n");
}

/** The hatched swatch of "inferred" (CSS: .swatch.inferred); `color` is the category's. */
export function InferredSwatch({ color }: { color?: string }) {
  return (
    <span
      className="swatch inferred"
      style={color ? { backgroundColor: color } : undefined}
      aria-hidden="true"
    />
  );
}

/**
 * A small, non-interactive mark: "╲ 24 MiB inferred · matches-gradient", the rules' descriptions in its title.
 * For places inside a button (call sites) or a table cell (the peak).
 */
export function InferredBadge({
  parts,
  rules,
  testId,
  showRule = true,
  unit,
}: {
  parts: readonly InferredPart[];
  rules: readonly RuleText[] | undefined;
  testId?: string;
  showRule?: boolean;
  unit?: "blocks" | "allocations";
}) {
  if (parts.length === 0) return null;
  const bytes = parts.reduce((a, p) => a + p.bytes, 0);
  const ids = [...new Set(parts.map((p) => p.rule))];
  return (
    <span
      className="inferred-badge"
      title={partsTitle(parts, rules, unit)}
      data-testid={testId}
      data-value={bytes}
      data-rules={ids.join(" ")}
    >
      <InferredSwatch />
      {formatBytes(bytes)} inferred{showRule ? ` · ${ids.join(", ")}` : ""}
    </span>
  );
}

/**
 * One line for a tooltip or a detail panel: "inferred (rule): description". `short`: the description's
 * first sentence (tooltips), the whole of it in the title.
 */
export function InferredLine({
  rule,
  description,
  short = false,
}: {
  rule: string;
  description: string;
  short?: boolean;
}) {
  const body = ruleBody(description);
  return (
    <div className="inferred-line small" data-testid="inferred-line" title={description}>
      <InferredSwatch />
      <strong>inferred ({rule})</strong>: {short ? firstSentence(body) : body}
    </div>
  );
}

/** The torch_npu workspace note, wherever a workspace block or total is shown. */
export const WORKSPACE_NOTE = "torch_npu workspace: not in memory_allocated(); its timing is not recorded";
