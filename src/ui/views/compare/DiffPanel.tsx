// The difference between the two files, between their columns: the verdict line, the totals of each and
// their difference, and the signed deltas per category and per call site, largest first, coloured by
// sign. Every number is the `compare` section of `peakscope report A --compare B --json` (B − A, over the
// live blocks of each snapshot). Clicking a call site highlights its blocks in both segment maps.

import { Bytes } from "../../components/Bytes";
import { formatBytes } from "../../format";
import { categoryColors } from "../../palette";
import { useApp } from "../../state/app";
import { sides } from "../../state/store";

const sign = (v: number) => (v > 0 ? "up" : v < 0 ? "down" : "zero");

export function DiffPanel() {
  const answer = useApp((a) => a.compare);
  const status = useApp((a) => a.compareStatus);
  const error = useApp((a) => a.compareError);
  const base = useApp((a) => a.base);
  const highlight = sides[base]((s) => (s.highlightBy === "portable" ? s.highlightSite : null));
  const highlightBoth = useApp((a) => a.highlightBoth);
  const aName = sides[base]((s) => s.fileName);
  const bName = sides[1 - base]((s) => s.fileName);

  if (!answer) {
    return (
      <aside className="diff" data-testid="diff" data-status={status}>
        <section className="card">
          <h2>Difference B − A</h2>
          {status === "error" ? (
            <p className="status-fail" data-testid="diff-error">
              The comparison failed: {error}
            </p>
          ) : (
            <p className="muted small">
              {status === "loading" ? "Comparing…" : "The difference appears once both files are open."}
            </p>
          )}
        </section>
      </aside>
    );
  }
  const c = answer.compare;
  const names = Object.keys(c.categories);
  const colors = categoryColors(names);
  const cats = names
    .map((n, i) => ({ name: n, delta: c.categories[n], color: colors[i] }))
    .sort((x, y) => Math.abs(y.delta) - Math.abs(x.delta) || x.name.localeCompare(y.name));
  const maxCat = Math.max(1, ...cats.map((x) => Math.abs(x.delta)));
  const maxSite = Math.max(1, ...c.callSites.map((x) => Math.abs(x.deltaBytes)));
  const totals: [string, string, number | null, number | null][] = [
    ["allocated", "Allocated", answer.baseTotals.allocatedBytes, c.otherTotals.allocatedBytes],
    ["reserved", "Reserved", answer.baseTotals.reservedBytes, c.otherTotals.reservedBytes],
    ["active", "Active", answer.baseTotals.activeBytes, c.otherTotals.activeBytes],
    ["requested", "Requested", answer.baseTotals.requestedBytes, c.otherTotals.requestedBytes],
  ];
  return (
    <aside className="diff" data-testid="diff" data-status={status}>
      <section className="card" aria-labelledby="diff-title">
        <h2 id="diff-title">
          Difference <span className="side-badge side-b">B</span> −{" "}
          <span className="side-badge side-a">A</span>
        </h2>
        <p className="small muted" title={`A: ${aName}\nB: ${bName}`}>
          What B holds more (<span className="up">+</span>) or less (<span className="down">−</span>) than A
          in live blocks at each file's snapshot, as <code>peakscope report A --compare B</code> prints it.
        </p>
        <p
          className={`verdict ${sign(c.totalDeltaBytes)}`}
          data-testid="verdict"
          data-delta={c.totalDeltaBytes}
        >
          {c.verdict}
        </p>
        <table className="num-table diff-totals">
          <thead>
            <tr>
              <th scope="col">All devices</th>
              <th scope="col">A</th>
              <th scope="col">B</th>
              <th scope="col">B − A</th>
            </tr>
          </thead>
          <tbody>
            {totals.map(([key, label, a, b]) => (
              <tr key={key} data-testid={`diff-total-${key}`} data-a={a ?? ""} data-b={b ?? ""}>
                <th scope="row">{label}</th>
                <td>{a === null ? "—" : <Bytes value={a} />}</td>
                <td>{b === null ? "—" : <Bytes value={b} />}</td>
                <td className={a !== null && b !== null ? sign(b - a) : undefined}>
                  {a === null || b === null ? "—" : <Bytes value={b - a} signed />}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </section>

      <section className="card" aria-labelledby="diff-cat-title" data-testid="diff-categories">
        <h2 id="diff-cat-title">By category</h2>
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
      </section>

      <section className="card" aria-labelledby="diff-site-title" data-testid="diff-sites">
        <h2 id="diff-site-title">By call site</h2>
        <p className="small muted">
          Largest changes first. Sites are matched by <code>file:line:function</code> without install paths,
          so runs from different machines line up. Click one to highlight its blocks in both maps.
        </p>
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
        {highlight && (
          <p className="small">
            Highlighting <code>{highlight}</code> in both maps{" "}
            <button type="button" className="link" onClick={() => highlightBoth(null)}>
              clear
            </button>
          </p>
        )}
      </section>
    </aside>
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
