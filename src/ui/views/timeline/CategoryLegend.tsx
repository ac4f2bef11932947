// The timeline's category legend: one button per category (click highlights it in the timeline and the
// segment map). A category some of whose allocations on this timeline were inferred (no stack: allocated
// before recording) says so — "parameters · partly inferred" with the hatch — and names the rule in its
// title; torch_npu's workspace says it is not on the timeline at all.

import { describeRule, InferredSwatch, inferredText, WORKSPACE_NOTE } from "../../components/Inferred";
import { formatCount } from "../../format";
import { useSide } from "../../state/store";

export function CategoryLegend() {
  const S = useSide();
  const panel = S((s) => s.panel);
  const colors = S((s) => s.colors);
  const highlightCategory = S((s) => s.highlightCategory);
  const setHighlightCategory = S((s) => s.setHighlightCategory);
  const categories = panel?.categories ?? [];
  const trace = panel?.inference?.trace ?? [];
  const rules = panel?.rules ?? [];
  const workspaceBytes = panel?.inference?.workspaceBytes ?? 0;
  return (
    <>
      {categories.map((c) => {
        const parts = trace.filter((p) => p.category === c.name);
        const inferred = parts.length > 0;
        const workspace = c.name === "workspace" && workspaceBytes > 0;
        const action =
          highlightCategory === c.name
            ? "Show every category again"
            : `Highlight ${c.name} in the timeline and the segment map`;
        const why = inferred
          ? `${parts
              .map(
                (p) =>
                  `${formatCount(p.count)} ${c.name} allocations on this timeline: ${inferredText(p.rule, describeRule(rules, p.rule))}`,
              )
              .join("\n")}\n`
          : workspace
            ? `${WORKSPACE_NOTE}: not on this timeline.\n`
            : "";
        return (
          <button
            type="button"
            key={c.id}
            className="legend-item"
            aria-pressed={highlightCategory === c.name}
            title={`${why}${action}`}
            data-category={c.name}
            data-inferred={inferred ? parts.map((p) => p.rule).join(" ") : undefined}
            onClick={() => setHighlightCategory(highlightCategory === c.name ? null : c.name)}
          >
            {inferred ? (
              <InferredSwatch color={colors[c.id]} />
            ) : (
              <span className="swatch" style={{ background: colors[c.id] }} />
            )}
            {c.name}
            {inferred && <span className="legend-note inferred-line"> · partly inferred</span>}
            {workspace && (
              <span className="legend-note muted"> · not on the timeline (timing not recorded)</span>
            )}
          </button>
        );
      })}
    </>
  );
}
