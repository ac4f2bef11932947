// Notes attached to live allocations (`torch.cuda.memory._annotate_tensor(t, text)`, torch 2.14), shown
// with the allocation they belong to: its size, call site and when it was made. From the worker's
// replay report (core replayReport's timeline.annotated); the notes are text, never markup.

import { Bytes } from "../../components/Bytes";
import { formatCount } from "../../format";
import { useSide, useSideKey } from "../../state/store";

export function Annotations() {
  const S = useSide();
  const k = useSideKey();
  const panel = S((s) => s.panel);
  const list = panel?.replayReport?.timeline.annotated?.filter((a) => a.device === panel.device) ?? [];
  if (!panel || list.length === 0) return null;
  return (
    <section className="card annotations" aria-labelledby={`annot-title-${k}`} data-testid="annotations">
      <h2 id={`annot-title-${k}`}>Notes on allocations</h2>
      <p className="muted">Text attached with _annotate_tensor to a live allocation, with that allocation.</p>
      <table className="num-table">
        <thead>
          <tr>
            <th scope="col">Note</th>
            <th scope="col">Allocation</th>
            <th scope="col">Call site</th>
            <th scope="col">Allocated at</th>
          </tr>
        </thead>
        <tbody>
          {list.map((a) => (
            <tr key={`${a.address}:${a.allocEvent}`} data-testid="annotated-allocation">
              <td data-field="note">{a.notes.join(" · ")}</td>
              <td data-value={a.sizeBytes}>
                <Bytes value={a.sizeBytes} /> at 0x{a.address.toString(16)}
              </td>
              <td>{a.site.split(/[\\/]/).at(-1)}</td>
              <td>
                {a.allocEvent >= 0 ? (
                  <button type="button" onClick={() => S.getState().pin(a.allocEvent)}>
                    event #{formatCount(a.allocEvent)}
                  </button>
                ) : (
                  "before the trace"
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}
