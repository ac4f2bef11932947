// The file's "Growth" section: the steps found in its trace (annotations, else the optimizer's repetition,
// said with how sure), what each step kept into the next, and the verdict — the leak named (call site,
// category, bytes per step, the steps it grew in) or "no growth found" (core traceLeaks, what `peakscope leaks
// FILE` prints). Self-contained: one card, for the side panel (or a tab).

import "./series.css";
import { Bytes } from "../../components/Bytes";
import { formatCount } from "../../format";
import { useSideKey } from "../../state/store";
import { useTraceLeaks } from "./useTraceLeaks";

/**
 * A small model's trace holds thousands of steps: a row each would be thousands of DOM rows, built and laid
 * out on the main thread before the timeline's first picture. The first and the last EDGE_ROWS are listed
 * (warm-up, and where growth shows); null marks the gap.
 */
const EDGE_ROWS = 20;
function shownSteps<T>(steps: T[]): (T | null)[] {
  if (steps.length <= 2 * EDGE_ROWS + 1) return steps;
  return [...steps.slice(0, EDGE_ROWS), null, ...steps.slice(steps.length - EDGE_ROWS)];
}

export function GrowthSection() {
  const k = useSideKey();
  const { answer: j, error } = useTraceLeaks();
  if (error)
    return (
      <section className="card growth-section" aria-labelledby={`growth-title-${k}`} data-testid="growth">
        <h2 id={`growth-title-${k}`}>Growth</h2>
        <p className="status-fail">{error}</p>
      </section>
    );
  if (!j) return null;
  return (
    <section
      className={`card growth-section verdict-${j.verdict}`}
      aria-labelledby={`growth-title-${k}`}
      data-testid="growth"
      data-verdict={j.verdict}
    >
      <h2 id={`growth-title-${k}`}>Growth</h2>
      <p data-testid="growth-verdict">
        <strong>{j.verdict === "leak" ? "Leak" : j.verdict === "none" ? "No leak" : "Too few steps"}:</strong>{" "}
        {j.message}
      </p>
      {j.leaks.length > 0 && (
        <ul>
          {j.leaks.map((l) => (
            <li key={`${l.site}\u0000${l.category}`} data-testid="growth-leak">
              <span title={l.site}>{l.label}</span> ({l.category}): <Bytes value={l.bytesPerStep} signed />{" "}
              per step, steps {l.steps.join(", ")}
            </li>
          ))}
        </ul>
      )}
      {j.steps.length > 0 && (
        <>
          <p className="muted small">
            {formatCount(j.steps.length)} steps: {j.stepSource.detail}.
          </p>
          <table className="num-table small" data-testid="growth-steps">
            <thead>
              <tr>
                <th>step</th>
                <th title="Allocated at the step's end">end</th>
                <th title="The highest allocated within the step">peak</th>
                <th title="Bytes the step allocated that are still allocated at the end of the next step">
                  kept
                </th>
              </tr>
            </thead>
            <tbody>
              {shownSteps(j.steps).map((s) =>
                s === null ? (
                  <tr key="gap" data-testid="growth-steps-gap">
                    <td colSpan={4} className="muted">
                      … {formatCount(j.steps.length - 2 * EDGE_ROWS)} steps not listed here (
                      <code>peakscope leaks FILE --json</code> lists every one)
                    </td>
                  </tr>
                ) : (
                  <tr key={s.step}>
                    <td>{s.step}</td>
                    <td>
                      <Bytes value={s.allocatedBytes} />
                    </td>
                    <td>{s.peakBytes === null ? "—" : <Bytes value={s.peakBytes} />}</td>
                    <td>{s.retainedBytes == null ? "—" : <Bytes value={s.retainedBytes} />}</td>
                  </tr>
                ),
              )}
            </tbody>
          </table>
        </>
      )}
      {j.steps.length > 1 && <p className="muted small">{j.warmUp.text}</p>}
    </section>
  );
}
