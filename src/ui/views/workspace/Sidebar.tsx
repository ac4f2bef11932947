// The workspace's right sidebar: the selection's details and actions. A category (clicked here, in the
// Summary or a legend) shows its bytes at the current moment and what-if actions; a call site its key;
// below, every category at the moment, each a button that selects it. A block clicked in Segments or a
// node in the Call tree / Flame shows its details here too (SelectionDetails.tsx), above the rest.

import { Bytes } from "../../components/Bytes";
import { ShortcutHint } from "../../components/ShortcutsDialog";
import { formatPercent } from "../../format";
import { momentName } from "../../state/moment";
import { useSide } from "../../state/store";
import { WhatIfSelectionBar } from "../whatif/WhatIfPanel";
import { SelectionDetails, useSelectedItem } from "./SelectionDetails";
import { useMoment, useMomentFacts } from "./useMomentFacts";

export function Sidebar() {
  const S = useSide();
  const colors = S((s) => s.colors);
  const category = S((s) => s.highlightCategory);
  const site = S((s) => s.highlightSite);
  const setCategory = S((s) => s.setHighlightCategory);
  const moment = useMoment();
  const facts = useMomentFacts();
  const total = facts?.totalBytes ?? 0;
  const selected = category ? facts?.byCategory.find((c) => c.name === category) : null;
  const item = useSelectedItem();
  return (
    <div className="ws-side-inner">
      <section className="card" aria-label="Selection" data-testid="selection">
        <h2>Selection</h2>
        {item && <SelectionDetails item={item} />}
        {category ? (
          <div data-testid="selection-category" data-category={category}>
            <p>
              <span className="swatch" style={{ background: colors[selected?.index ?? 0] }} />
              <strong>{category.replace(/_/g, " ")}</strong>:{" "}
              <Bytes value={selected?.bytes ?? 0} testId="selection-bytes" /> at {momentName(moment)}
              {total > 0 ? ` (${formatPercent((selected?.bytes ?? 0) / total)})` : ""}.
            </p>
            <WhatIfSelectionBar from="category" />
            <button type="button" onClick={() => setCategory(null)}>
              Clear selection
            </button>
          </div>
        ) : site ? (
          <div data-testid="selection-site">
            <p>
              Call site <code>{site}</code> is highlighted in the timeline and the segment map.
            </p>
            <WhatIfSelectionBar from="site" />
            <button type="button" onClick={() => S.getState().setHighlightSite(null)}>
              Clear selection
            </button>
          </div>
        ) : item ? null : (
          <p className="small muted">
            Nothing selected. Click a category below, a call site in the Summary, a block in Segments or a
            node in the Call tree.
          </p>
        )}
      </section>
      <section className="card" aria-label="Categories at the moment" data-testid="sidebar-categories">
        <h2>At {momentName(moment)}</h2>
        {facts ? (
          <ul className="side-cats">
            {facts.byCategory.map((c) => (
              <li key={c.name} data-category={c.name} data-value={c.bytes}>
                <button
                  type="button"
                  className="link cat-button"
                  aria-pressed={category === c.name}
                  onClick={() => setCategory(category === c.name ? null : c.name)}
                >
                  <span className="swatch" style={{ background: colors[c.index] }} />
                  {c.name.replace(/_/g, " ")}
                </button>
                <span className="num">
                  <Bytes value={c.bytes} /> · {formatPercent(c.bytes / Math.max(1, total), 0)}
                </span>
              </li>
            ))}
          </ul>
        ) : (
          <p className="muted">…</p>
        )}
      </section>
      <ShortcutHint />
    </div>
  );
}
