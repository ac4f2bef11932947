// The difference between the two files: the verdict line (in the pinned header), the totals of each and
// their difference with the signed delta per category (the Categories tab), and per call site beside both
// segment maps (the Call sites tab), largest first, coloured by sign. Every number is the `compare` section
// of `peakscope report A --compare B --json` (B − A, over the live blocks of each snapshot). Clicking a call
// site highlights its blocks in both segment maps.

import { Bytes } from "../../components/Bytes";
import { ErrorBoundary } from "../../components/ErrorBoundary";
import { formatBytes } from "../../format";
import { categoryColors } from "../../palette";
import { useApp } from "../../state/app";
import type { Side } from "../../state/client";
import { SideContext, sides } from "../../state/store";
import { SegmentMap } from "../segment-map/SegmentMap";

const sign = (v: number) => (v > 0 ? "up" : v < 0 ? "down" : "zero");

/** The one-line verdict (B − A), in the comparison's pinned header. */
export function Verdict() {
  const answer = useApp((a) => a.compare);
  if (!answer) return null;
  const c = answer.compare;
  return (
    <div className="verdict-line">
      <span className="verdict-label" aria-hidden="true">
        <span className="side-badge side-b">B</span> − <span className="side-badge side-a">A</span>
      </span>
      <p
        className={`verdict ${sign(c.totalDeltaBytes)}`}
        data-testid="verdict"
        data-delta={c.totalDeltaBytes}
        title={`B − A in live blocks at each file's snapshot, as peakscope report A --compare B prints it:\n${c.verdict}`}
      >
        {c.verdict}
      </p>
    </div>
  );
}

/** Before the answer: comparing, or why it failed. */
export function DiffStatus() {
  const status = useApp((a) => a.compareStatus);
  const error = useApp((a) => a.compareError);
  return status === "error" ? (
    <p className="status-fail" data-testid="diff-error">
      The comparison failed: {error}
    </p>
  ) : (
    <p className="muted small">
      {status === "loading" ? "Comparing…" : "The difference appears once both files are open."}
    </p>
  );
}

/** The Categories tab: the totals of each file and their difference, then the signed delta per category. */
export function DiffCategories() {
  const answer = useApp((a) => a.compare);
  const base = useApp((a) => a.base);
  const aName = sides[base]((s) => s.fileName);
  const bName = sides[1 - base]((s) => s.fileName);
  if (!answer) return null;
  const c = answer.compare;
  const names = Object.keys(c.categories);
  const colors = categoryColors(names);
  const cats = names
    .map((n, i) => ({ name: n, delta: c.categories[n], color: colors[i] }))
    .sort((x, y) => Math.abs(y.delta) - Math.abs(x.delta) || x.name.localeCompare(y.name));
  const maxCat = Math.max(1, ...cats.map((x) => Math.abs(x.delta)));
  const totals: [string, string, number | null, number | null][] = [
    ["allocated", "Allocated", answer.baseTotals.allocatedBytes, c.otherTotals.allocatedBytes],
    ["reserved", "Reserved", answer.baseTotals.reservedBytes, c.otherTotals.reservedBytes],
    ["active", "Active", answer.baseTotals.activeBytes, c.otherTotals.activeBytes],
    ["requested", "Requested", answer.baseTotals.requestedBytes, c.otherTotals.requestedBytes],
  ];
  return (
    <div className="cmp-cats">
      <section aria-labelledby="diff-title" data-testid="diff-totals">
        <h2 id="diff-title">
          Totals of <span className="side-badge side-a">A</span> and{" "}
          <span className="side-badge side-b">B</span>
        </h2>
        <table className="num-table diff-totals">
          <thead>
            <tr>
              <th scope="col">All devices</th>
              <th scope="col" title={aName ?? ""}>
                A
              </th>
              <th scope="col" title={bName ?? ""}>
                B
              </th>
              <th scope="col">B − A</th>
            </tr>
          </thead>
          <tbody>
            {totals.map(([key, label, a, b]) => (
              <tr key={key} data-testid={`diff-total-${key}`} data-a={a ?? ""} data-b={b ?? ""}>
                <th scope="row">{label}</th>
                <td>{a === null ? "—" : <Bytes value={a} />}</td>
                <td>{b === null ? "—" : <Bytes value={b} />}</td>
                <td
                  className={a !== null && b !== null ? sign(b - a) : undefined}
                  data-testid="diff-delta-cell"
                >
                  {a === null || b === null ? "—" : <Bytes value={b - a} signed />}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
        <p className="small muted">
          What B holds more (<span className="up">+</span>) or less (<span className="down">−</span>) than A
          in live blocks at each file's snapshot, as <code>peakscope report A --compare B</code> prints it.
        </p>
      </section>

      <section aria-labelledby="diff-cat-title" data-testid="diff-categories">
        <h2 id="diff-cat-title">By category (B − A)</h2>
        <table className="num-table">
          <tbody>
            {cats.map((x) => (
              <tr
                key={x.name}
                data-category={x.name}
                data-delta={x.delta}
                className={x.delta === 0 ? "muted" : undefined}
              >
                <td>
                  <span className="swatch" style={{ background: x.color }} />
                  {x.name.replace(/_/g, " ")}
                </td>
                <td className={sign(x.delta)}>
                  <Bytes value={x.delta} signed />
                </td>
                <td className="diverging">
                  <DeltaBar value={x.delta} max={maxCat} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
        {c.matched.length > 0 && (
          <p className="small muted" data-testid="diff-matched" title={c.matchRule}>
            Counted as parameters:{" "}
            {c.matched
              .map(
                (m) =>
                  `${m.blocks} unknown block${m.blocks === 1 ? "" : "s"} of ${formatBytes(m.sizeBytes)} in ${m.side === "base" ? "A" : "B"}`,
              )
              .join(", ")}{" "}
            — the other file holds exactly that many more parameter blocks of that size (the same weights,
            recorded in one file only).
          </p>
        )}
      </section>
    </div>
  );
}

/**
 * The Call sites tab: the signed delta per call site, largest first, beside both segment maps (A above
 * B); clicking a site highlights its blocks in both.
 */
export function DiffSites() {
  const answer = useApp((a) => a.compare);
  const base = useApp((a) => a.base);
  const highlight = sides[base]((s) => (s.highlightBy === "portable" ? s.highlightSite : null));
  const highlightBoth = useApp((a) => a.highlightBoth);
  if (!answer) return null;
  const c = answer.compare;
  const maxSite = Math.max(1, ...c.callSites.map((x) => Math.abs(x.deltaBytes)));
  return (
    <div className="cmp-sites">
      <section aria-labelledby="diff-site-title" data-testid="diff-sites">
        <h2 id="diff-site-title">By call site (B − A)</h2>
        <p className="small muted">
          Largest changes first. Sites are matched by <code>file:line:function</code> without install paths,
          so runs from different machines line up. Click one to highlight its blocks in both maps.
        </p>
        {highlight && (
          <p className="small">
            Highlighting <code>{highlight}</code> in both maps{" "}
            <button type="button" className="link" onClick={() => highlightBoth(null)}>
              clear
            </button>
          </p>
        )}
        {c.callSites.length === 0 ? (
          <p className="small muted">No call site changed.</p>
        ) : (
          <ul className="sites" aria-label="Call sites by change">
            {c.callSites.map((s) => {
              const selected = highlight === s.site;
              return (
                <li key={s.site}>
                  <button
                    type="button"
                    className="site"
                    aria-pressed={selected}
                    data-site={s.site}
                    data-delta={s.deltaBytes}
                    title={`${s.site}\nmostly ${s.category.replace(/_/g, " ")}\n${formatBytes(s.deltaBytes)} (B − A)`}
                    onClick={() => highlightBoth(selected ? null : s.site)}
                  >
                    <span className={`site-bytes ${sign(s.deltaBytes)}`}>
                      <Bytes value={s.deltaBytes} signed />
                    </span>
                    <span className="site-name">{s.label}</span>
                    <span className="small muted site-meta">{s.category.replace(/_/g, " ")}</span>
                    <DeltaBar value={s.deltaBytes} max={maxSite} />
                  </button>
                </li>
              );
            })}
          </ul>
        )}
      </section>
      <div className="cmp-maps">
        <SideMap side={base} label="A" />
        <SideMap side={(1 - base) as Side} label="B" />
      </div>
    </div>
  );
}

/** One file's segment map at its snapshot, in that side's context (its highlight, its device). */
function SideMap({ side, label }: { side: Side; label: "A" | "B" }) {
  const S = sides[side];
  const device = S((s) => s.device);
  const ready = S((s) => s.status === "ready");
  return (
    <SideContext.Provider value={S}>
      <div className="cmp-map" data-testid={`map-${label.toLowerCase()}`} data-side={side}>
        <span className={`side-badge side-${label.toLowerCase()}`}>{label}</span>
        {ready && (
          <ErrorBoundary name={`segment map ${label}`}>
            <SegmentMap key={device} />
          </ErrorBoundary>
        )}
      </div>
    </SideContext.Provider>
  );
}

/** A bar from the middle: right (red) for growth, left (blue) for shrink. */
function DeltaBar({ value, max }: { value: number; max: number }) {
  const w = `${(Math.abs(value) / max) * 50}%`;
  return (
    <span className="delta-bar" aria-hidden="true">
      <span
        className={sign(value)}
        style={value >= 0 ? { left: "50%", width: w } : { right: "50%", width: w }}
      />
    </span>
  );
}
