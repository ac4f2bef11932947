// The timeline tooltip's answer to "what is this?" (issue 21): the phase of the run the cursor is in, and
// in the stacked chart the allocation whose part of the column is under the pointer — its size, category,
// own-code line and address (worker `blockAt`: the column's category, then that category's blocks stacked
// oldest first, as "each allocation" stacks them) — not only the totals.

import { useEffect, useState } from "react";
import type { BlockAtAnswer, PhaseRunsAnswer, TimelineAnswer } from "../../../../workers/api";
import { formatBytes, formatCount } from "../../format";
import { useSide } from "../../state/store";
import { PHASE_FILL, PHASE_LABEL, runAt } from "./phase-runs";
import { type Plot, pxToX } from "./scales";

/** How long the pointer rests before the worker is asked (moves in between ask nothing). */
const REST_MS = 40;

export function HoverPhase({ runs, event }: { runs: PhaseRunsAnswer | null; event: number }) {
  if (!runs || runs.runs.length === 0 || event < 0) return null;
  const run = runAt(runs.runs, event);
  return (
    <div className="small" data-testid="tooltip-phase" data-phase={run?.phase ?? "none"}>
      phase:{" "}
      {run ? (
        <>
          <span className="swatch" style={{ background: PHASE_FILL[run.phase] }} />
          <strong>{PHASE_LABEL[run.phase]}</strong>{" "}
          <span className="muted">
            (events #{formatCount(run.startEvent)}–#{formatCount(run.endEvent - 1)})
          </span>
        </>
      ) : (
        <span className="muted">none (before the first phased entry)</span>
      )}
    </div>
  );
}

/** The allocation under the pointer in the stacked chart; `onEvent` gets the column's event. */
export function HoverBlock({
  plot,
  answer,
  bucket,
  py,
  axis,
  onEvent,
}: {
  plot: Plot;
  answer: TimelineAnswer;
  bucket: number;
  py: number;
  axis: "time" | "event";
  onEvent?: (event: number) => void;
}) {
  const S = useSide();
  const ask = S((s) => s.ask);
  const device = S((s) => s.device);
  const [hit, setHit] = useState<(BlockAtAnswer & { py: number }) | null>(null);
  const x0 = pxToX(plot, plot.left + bucket);
  const x1 = pxToX(plot, plot.left + bucket + 1);
  const yBytes = ((plot.top + plot.plotHeight - py) / plot.plotHeight) * plot.yMax;
  const inside = Number.isFinite(answer.allocMax[bucket]) && yBytes >= 0 && yBytes < answer.allocMax[bucket];

  useEffect(() => {
    if (!inside) {
      setHit(null);
      return;
    }
    let stale = false;
    const t = setTimeout(() => {
      ask((api) => api.blockAt({ device, axis, x0, x1, yBytes })).then(
        (a) => {
          if (stale) return;
          setHit(a && { ...a, py });
          if (a && onEvent) onEvent(a.event);
        },
        () => {},
      );
    }, REST_MS);
    return () => {
      stale = true;
      clearTimeout(t);
    };
  }, [ask, device, axis, x0, x1, yBytes, py, inside, onEvent]);

  if (!inside) return null;
  const d = hit?.detail ?? null;
  return (
    <div
      className="detail hover-block"
      data-testid="tooltip-block"
      data-alloc={d?.alloc ?? ""}
      data-addr={d?.addr ?? ""}
      data-size={d?.sizeBytes ?? ""}
      data-category={hit?.category ?? ""}
      data-event={hit?.event ?? ""}
      // The pointer's height the answer is for (tests wait for it: the worker answers after a rest).
      data-py={hit ? Math.round(hit.py) : ""}
    >
      {!hit ? (
        <span className="muted small">…</span>
      ) : !d ? (
        <span className="muted small">
          {hit.category ? `${hit.category.replace(/_/g, " ")}: no single allocation here` : "above the stack"}
        </span>
      ) : (
        <>
          <div>
            under the pointer: <strong>{formatBytes(d.sizeBytes)}</strong>{" "}
            <span className="muted">{d.category.replace(/_/g, " ")}</span> at{" "}
            <code>{`0x${d.addr.toString(16)}`}</code>
          </div>
          <div className="small">
            {hit.ownLine ? (
              <>
                your code: <code className="own">{hit.ownLine}</code>
              </>
            ) : (
              <span className="muted">
                no frame of your own code{d.site ? <> · call site: {d.site}</> : ""}
              </span>
            )}
          </div>
          <div className="muted small">
            {d.allocEvent >= 0
              ? `allocated at event #${formatCount(d.allocEvent)}`
              : "allocated before the trace"}
            {d.freeEvent >= 0 ? `, freed at #${formatCount(d.freeEvent)}` : ", alive at the snapshot"}
          </div>
        </>
      )}
    </div>
  );
}
