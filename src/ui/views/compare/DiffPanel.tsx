// The difference between the two files: the verdict line (in the pinned header), the totals of each and
// their difference with the signed delta per category (the Categories tab), and per call site beside both
// segment maps (the Call sites tab), largest first, coloured by sign. Every number is the `compare` section
// of `peakscope report A --compare B --json`: B − A at each file's peak (`compare.atPeaks`, the default
// when both files have a trace) or over the live blocks of each snapshot, as "Compare at" says. Clicking a
// call site highlights its blocks in both segment maps (each at its file's current moment).

import type { CompareAnswer } from "../../../../workers/api";
import { Bytes } from "../../components/Bytes";
import { ErrorBoundary } from "../../components/ErrorBoundary";
import { formatBytes } from "../../format";
import { categoryColors } from "../../palette";
import { useApp } from "../../state/app";
import type { Side } from "../../state/client";
import { SideContext, sides } from "../../state/store";
import { SegmentMap } from "../segment-map/SegmentMap";
import { type CompareAt, comparisonAt, momentNote, peakWords } from "./moment";

const sign = (v: number) => (v > 0 ? "up" : v < 0 ? "down" : "zero");

/** The one-line verdict (B − A) at the chosen moment, in the comparison's pinned header. */
export function Verdict({ at }: { at: CompareAt }) {
  const answer = useApp((a) => a.compare);
  if (!answer) return null;
  const c = comparisonAt(answer, at);
  const cli =
    at === "peaks"
      ? "compare.atPeaks of peakscope report A --compare B --json"
      : "peakscope report A --compare B";
  return (
    <p
      className={`verdict ${sign(c.totalDeltaBytes)}`}
      data-testid="verdict"
      data-delta={c.totalDeltaBytes}
      data-moment={at}
      title={`${momentNote(answer, at)}, as ${cli} says it:\n${c.verdict}`}
    >
      {c.verdict}
    </p>
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
export function DiffCategories({ at }: { at: CompareAt }) {
  const answer = useApp((a) => a.compare);
  const base = useApp((a) => a.base);
  const aName = sides[base]((s) => s.fileName);
  const bName = sides[1 - base]((s) => s.fileName);
  if (!answer) return null;
  const c = comparisonAt(answer, at);
  const note = momentNote(answer, at);
  const names = Object.keys(c.categories);
  const colors = categoryColors(names);
  const cats = names
    .map((n, i) => ({ name: n, delta: c.categories[n], color: colors[i] }))
    .sort((x, y) => Math.abs(y.delta) - Math.abs(x.delta) || x.name.localeCompare(y.name));
  const maxCat = Math.max(1, ...cats.map((x) => Math.abs(x.delta)));
  return (
    <div className="cmp-cats">
      <section aria-labelledby="diff-title" data-testid="diff-totals" data-moment={at}>
        <h2 id="diff-title">
          Totals of <span className="side-badge side-a">A</span> and{" "}
          <span className="side-badge side-b">B</span>{" "}
          {at === "peaks" ? "at their peaks" : "at their snapshots"}
        </h2>
        <table className="num-table diff-totals">
          <thead>
            <tr>
              <th scope="col">{at === "peaks" ? "Each peak's device" : "All devices"}</th>
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
            {totalRows(answer, at).map(([key, label, a, b, what]) => (
              <tr key={key} data-testid={`diff-total-${key}`} data-a={a ?? ""} data-b={b ?? ""}>
                <th scope="row">{label}</th>
                <td>{a === null ? "—" : <Bytes value={a} note={`A, ${what.a}`} />}</td>
                <td>{b === null ? "—" : <Bytes value={b} note={`B, ${what.b}`} />}</td>
                <td
                  className={a !== null && b !== null ? sign(b - a) : undefined}
                  data-testid="diff-delta-cell"
                >
                  {a === null || b === null ? (
                    "—"
                  ) : (
                    <Bytes value={b - a} signed note={`B − A, ${what.delta}`} />
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
        {at === "peaks" && answer.compare.atPeaks ? (
          <p className="small muted" data-testid="diff-peaks-where">
            {peakWords("A", answer.compare.atPeaks.basePeak)}.{" "}
            {peakWords("B", answer.compare.atPeaks.otherPeak)}. What B held more (
            <span className="up">+</span>) or less (<span className="down">−</span>) than A at its peak, as{" "}
            <code>compare.atPeaks</code> of <code>peakscope report A --compare B --json</code> says it.
          </p>
        ) : (
          <p className="small muted">
            What B holds more (<span className="up">+</span>) or less (<span className="down">−</span>) than A
            in live blocks at each file's snapshot, as <code>peakscope report A --compare B</code> prints it.
          </p>
        )}
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
                  <Bytes value={x.delta} signed note={`${x.name.replace(/_/g, " ")}, ${note}`} />
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

type TotalRow = [
  key: string,
  label: string,
  a: number | null,
  b: number | null,
  what: { a: string; b: string; delta: string },
];

/** The totals table's rows: allocated at each peak, or the snapshot's four totals. */
function totalRows(answer: CompareAnswer, at: CompareAt): TotalRow[] {
  const p = answer.compare.atPeaks;
  if (at === "peaks" && p) {
    return [
      [
        "peak",
        "Allocated at the peak",
        p.basePeak.allocatedBytes,
        p.otherPeak.allocatedBytes,
        {
          a: peakWords("A", p.basePeak),
          b: peakWords("B", p.otherPeak),
          delta: "each file's peak",
        },
      ],
    ];
  }
  const o = answer.compare.otherTotals;
  const t = answer.baseTotals;
  const what = (x: string) => ({
    a: `${x} at its snapshot`,
    b: `${x} at its snapshot`,
    delta: `${x} at the snapshots`,
  });
  return [
    ["allocated", "Allocated", t.allocatedBytes, o.allocatedBytes, what("allocated")],
    ["reserved", "Reserved", t.reservedBytes, o.reservedBytes, what("reserved")],
    ["active", "Active", t.activeBytes, o.activeBytes, what("active")],
    ["requested", "Requested", t.requestedBytes, o.requestedBytes, what("requested")],
  ];
}

/**
 * The Call sites tab: the signed delta per call site, largest first, beside both segment maps (A above
 * B); clicking a site highlights its blocks in both.
 */
export function DiffSites({ at }: { at: CompareAt }) {
  const answer = useApp((a) => a.compare);
  const base = useApp((a) => a.base);
  const highlight = sides[base]((s) => (s.highlightBy === "portable" ? s.highlightSite : null));
  const highlightBoth = useApp((a) => a.highlightBoth);
  if (!answer) return null;
  const c = comparisonAt(answer, at);
  const note = momentNote(answer, at);
  const maxSite = Math.max(1, ...c.callSites.map((x) => Math.abs(x.deltaBytes)));
  return (
    <div className="cmp-sites">
      <section aria-labelledby="diff-site-title" data-testid="diff-sites">
        <h2 id="diff-site-title">
          By call site (B − A) {at === "peaks" ? "at the peaks" : "at the snapshots"}
        </h2>
        <p className="small muted">
          Largest changes first. Sites are matched by <code>file:line:function</code> without install paths,
          so runs from different machines line up. Click one to highlight its blocks in both maps; each map
          shows its file at the moment named above it.
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
                    title={`${s.site}\nmostly ${s.category.replace(/_/g, " ")}\n${formatBytes(s.deltaBytes)}: ${note}`}
                    onClick={() => highlightBoth(selected ? null : s.site)}
                  >
                    <span className={`site-bytes ${sign(s.deltaBytes)}`}>
                      <Bytes value={s.deltaBytes} signed note={note} />
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
