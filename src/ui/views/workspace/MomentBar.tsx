// The current moment's controls, above the pinned timeline: Peak, Snapshot, the previous / next event,
// the visible part of the timeline as a range, and what the moment is in words.

import { Bytes } from "../../components/Bytes";
import { formatCount } from "../../format";
import { eventsInView, pinRange } from "../../state/moment";
import { useSide } from "../../state/store";
import { useMoment, useMomentFacts } from "./useMomentFacts";

export function MomentBar() {
  const S = useSide();
  const replay = S((s) => s.panel?.replay ?? null);
  const moment = useMoment();
  const facts = useMomentFacts();
  const hasTrace = !!replay && replay.events > 0;
  const step = (d: number) => {
    if (!replay) return;
    const cur = S.getState().pinnedEvent ?? replay.events - 1;
    S.getState().pin(Math.max(0, Math.min(replay.events - 1, cur + d)));
  };
  return (
    <div className="moment-bar toolbar" data-testid="moment-bar">
      <span className="label">Moment</span>
      <span className="group">
        <button
          type="button"
          aria-pressed={moment.kind === "peak"}
          disabled={!hasTrace}
          onClick={() => replay && S.getState().pin(replay.peakEvent)}
          data-testid="moment-peak"
          title="The highest allocated moment of the trace (key p)"
        >
          Peak
        </button>
        <button
          type="button"
          aria-pressed={moment.kind === "snapshot"}
          onClick={() => S.getState().pin(null)}
          data-testid="moment-snapshot"
          title="The snapshot's own blocks: the end of the trace (key s)"
        >
          Snapshot
        </button>
        <button
          type="button"
          aria-pressed={moment.kind === "event"}
          disabled={!hasTrace}
          onClick={() => step(-1)}
          title="The event before (←; Shift+← 100 back)"
          aria-label="Previous event"
          data-testid="moment-prev"
        >
          ◀
        </button>
        <button
          type="button"
          disabled={!hasTrace}
          onClick={() => step(1)}
          title="The event after (→; Shift+→ 100 on)"
          aria-label="Next event"
          data-testid="moment-next"
        >
          ▶
        </button>
        <button
          type="button"
          aria-pressed={moment.kind === "range"}
          disabled={!hasTrace}
          onClick={() => {
            void eventsInView(S).then((r) => r && pinRange(S, r.a, r.b));
          }}
          title="The events visible in the timeline as a range: the views show its highest moment (key r)"
          data-testid="moment-range"
        >
          Visible range
        </button>
      </span>
      <span className="moment-words" data-testid="moment-words">
        {moment.kind === "peak" && "At the peak"}
        {moment.kind === "snapshot" && "At the snapshot (end of the trace)"}
        {moment.kind === "event" && `After event #${formatCount(moment.event)}`}
        {moment.kind === "range" &&
          `Events ${formatCount(moment.a)}..${formatCount(moment.b)}: at their highest, event #${formatCount(moment.event)}`}
        {facts && (
          <>
            {" — "}
            <Bytes value={facts.totalBytes} testId="moment-total" /> allocated
          </>
        )}
        <span className="muted"> · every pane shows this moment unless it says otherwise</span>
      </span>
    </div>
  );
}
