// "What if" (issue 13, getting under the limit), beside the peak in the side panel: the ranked
// suggestions of core suggest() (computed in the worker: ~1 s on a big trace, a placeholder meanwhile),
// each with its new peak, saving, caveat and — when the device's capacity is known — whether it fits; an
// OOM says how much more was needed. Choosing one draws its curve on the timeline (WhatIfOverlay), shows
// the new composition at the new peak, and goes into the share link (`whatif=`). Any selection (a category,
// a call site, a call-tree node through openWhatIf) can be asked the same: gone / halved / freed early /
// recomputed (WhatIfSelectionBar).

import { Fragment, type ReactNode, useEffect, useMemo, useState } from "react";
import type {
  Capacity,
  WhatIfAction,
  WhatIfAnswer,
  WhatIfSuggestAnswer,
  WhatIfSuggestionRow,
  WhatIfTarget,
} from "../../../../workers/api";
import { parseCapacity } from "../../../core/units";
import { Bytes } from "../../components/Bytes";
import { formatBytes, formatCount, formatPercent } from "../../format";
import { useApp } from "../../state/app";
import { useSide, useSideKey } from "../../state/store";
import { namedSuggestion } from "./specs";
import { openWhatIf, useWhatIf } from "./store";
import "./whatif.css";

/** Suggestions shown before "show all". */
const FIRST = 5;
let tickets = 0;

type Suggestions =
  | { status: "idle" }
  | { status: "loading"; since: number }
  | { status: "ready"; answer: WhatIfSuggestAnswer }
  | { status: "error"; message: string };

export function WhatIfPanel() {
  const S = useSide();
  const k = useSideKey();
  const side = S((s) => s.side);
  const ask = S((s) => s.ask);
  const device = S((s) => s.device);
  const panel = S((s) => s.panel);
  const fileName = S((s) => s.fileName);
  const replay = panel?.replay ?? null;
  const chosen = useWhatIf((w) => w.chosen[side]);
  const capacityTyped = useWhatIf((w) => w.capacity[side]);
  const capacityNote = useWhatIf((w) => w.capacityNote[side]);
  const devices = useWhatIf((w) => w.devices[side]);
  const refusal = useWhatIf((w) => w.refusal[side]);
  const choose = useWhatIf((w) => w.choose);
  const [sug, setSug] = useState<Suggestions>({ status: "idle" });
  const [all, setAll] = useState(false);

  // The ranked suggestions: off the main thread, newest request wins (older ones answer `stale`).
  useEffect(() => {
    if (!replay) {
      setSug({ status: "idle" });
      return;
    }
    let stale = false;
    const ticket = ++tickets;
    setSug({ status: "loading", since: performance.now() });
    // After the timeline's and the map's first requests (the worker answers in order, and suggest() can
    // take a second on a big trace): started once the page is idle, or within half a second.
    const start = () => {
      if (stale) return;
      ask((api) =>
        api.whatIfSuggest({ device, capacityBytes: capacityTyped, capacityNote, devices, ticket }),
      ).then(
        (answer) => {
          if (stale || answer.stale) return;
          setSug(answer.error ? { status: "error", message: answer.error } : { status: "ready", answer });
        },
        (e) => {
          if (!stale) setSug({ status: "error", message: e instanceof Error ? e.message : String(e) });
        },
      );
    };
    const idle =
      typeof requestIdleCallback === "function" ? requestIdleCallback(start, { timeout: 500 }) : -1;
    const timer = idle < 0 ? setTimeout(start, 200) : null;
    return () => {
      stale = true;
      if (idle >= 0) cancelIdleCallback(idle);
      if (timer) clearTimeout(timer);
    };
  }, [ask, device, replay, capacityTyped, capacityNote, devices]);

  // A chosen what-if from a link that names a suggestion (`whatifid=`) with the same options: name it as
  // the list does. A custom what-if keeps the name it was asked with, even when its options coincide
  // with a suggestion's ("optimizer_state × 1/2" is not "ZeRO-1 over 2 ranks").
  const suggestions = sug.status === "ready" ? sug.answer.suggestions : null;
  useEffect(() => {
    if (!chosen || !suggestions) return;
    const same = namedSuggestion(chosen, suggestions);
    if (same) choose(side, { specs: chosen.specs, label: same.action, id: same.id });
  }, [chosen, suggestions, choose, side]);

  if (!panel) return null;
  if (!replay) {
    return (
      <section className="card whatif" aria-labelledby={`whatif-title-${k}`} data-testid="whatif">
        <h2 id={`whatif-title-${k}`}>What if</h2>
        <p className="small muted">
          No trace on this device: a what-if replays the trace's allocations with a change, so it needs the
          allocation history (<code>peakscope_hook.start()</code> before the model is built).
        </p>
      </section>
    );
  }
  const answer = sug.status === "ready" ? sug.answer : null;
  const capacity = answer?.capacity ?? null;
  const ooms = (answer?.oom ?? []).filter((o) => Number.isFinite(o.deviceFreeBytes));
  const list = suggestions ?? [];
  const chosenAt = chosen?.id ? list.findIndex((s) => s.id === chosen.id) : -1;
  // A chosen suggestion is always shown (a link may name the 14th), its details right under it, so that
  // nothing moves above the row just clicked; another what-if (a selection's, a link's) shows above.
  const shown = all || chosenAt >= FIRST ? list : list.slice(0, FIRST);
  const inList = chosenAt >= 0;
  const detail = chosen && (
    <ChosenDetail
      key={chosen.specs.join("\n")}
      specs={chosen.specs}
      label={chosen.label}
      fileName={fileName ?? "FILE"}
      capacityTyped={capacityTyped}
      inline={inList}
      onClear={() => choose(side, null)}
    />
  );
  return (
    <section
      className="card whatif"
      aria-labelledby={`whatif-title-${k}`}
      data-testid="whatif"
      data-side={side}
      data-status={sug.status}
    >
      <h2 id={`whatif-title-${k}`}>What if</h2>
      <p className="small muted whatif-lead">
        Getting the peak (<Bytes value={replay.peakBytes} />) down: each change below is replayed on this
        trace, allocation by allocation. Click one to draw its curve (dashed) on the timeline.
      </p>
      {ooms.map((o) => (
        <div className="gap-flag" key={o.eventIndex} data-testid="whatif-oom" data-needed={o.neededBytes}>
          <strong>
            Out of memory at event #{formatCount(o.eventIndex)}: you needed <Bytes value={o.neededBytes} />{" "}
            more.
          </strong>{" "}
          It asked for <Bytes value={o.requestBytes} /> with <Bytes value={o.allocatedBytes} /> allocated and{" "}
          <Bytes value={o.deviceFreeBytes} /> free on the device.
        </div>
      ))}
      <CapacityLine capacity={capacity} typed={capacityTyped} side={side} />
      <DevicesLine devices={devices} side={side} />
      {refusal && (
        <p className="small status-fail" data-testid="whatif-refusal">
          {refusal}
        </p>
      )}
      {chosen && !inList && detail}
      <h3>
        Suggestions for {devices} GPU{devices === 1 ? "" : "s"}:{" "}
        {capacity ? "what fits, cheapest change first" : "by saving at the peak"}
      </h3>
      {sug.status === "loading" && <Placeholder since={sug.since} />}
      {sug.status === "error" && (
        <p className="status-fail small" data-testid="whatif-error">
          The suggestions could not be computed: {sug.message}
        </p>
      )}
      {answer && list.length === 0 && (
        <p className="small muted">
          Nothing to suggest: no parameters, gradients, optimizer state or activations were found on this
          trace.
        </p>
      )}
      {answer && list.length > 0 && (
        <ol className="whatif-list" aria-label="What-if suggestions" data-testid="whatif-suggestions">
          {shown.map((s, i) => (
            <SuggestionItem
              key={s.id}
              s={s}
              rank={i + 1}
              devicesAvailable={devices}
              firstNeedingMore={s.devices > devices && (i === 0 || shown[i - 1].devices <= devices)}
              baseline={answer.baselinePeakBytes}
              chosen={chosen?.id === s.id}
              onChoose={() =>
                choose(side, chosen?.id === s.id ? null : { specs: s.specs, label: s.action, id: s.id })
              }
            >
              {chosen?.id === s.id ? detail : null}
            </SuggestionItem>
          ))}
        </ol>
      )}
      {list.length > FIRST && (
        <button type="button" className="link small" onClick={() => setAll(!all)} data-testid="whatif-all">
          {all ? "Show the first few" : `Show all ${list.length} suggestions`}
        </button>
      )}
      <p className="small muted whatif-hint">
        Or ask about anything you select: click a category or a call site below, then “What if it were gone /
        halved / freed early / recomputed”.
      </p>
    </section>
  );
}

function Placeholder({ since }: { since: number }) {
  const [now, setNow] = useState(performance.now());
  useEffect(() => {
    const t = setInterval(() => setNow(performance.now()), 250);
    return () => clearInterval(t);
  }, []);
  const s = Math.max(0, (now - since) / 1000);
  return (
    <div className="whatif-placeholder" aria-busy="true" data-testid="whatif-loading">
      <span className="whatif-spinner" aria-hidden="true" />
      Replaying about fifteen changes in the background
      {s >= 0.5 ? ` (${s.toFixed(1)} s)` : ""}… checkpointing needs a pass over every module call, about a
      second for a million events. The page stays usable meanwhile.
    </div>
  );
}

function CapacityLine({
  capacity,
  typed,
  side,
}: {
  capacity: Capacity | null;
  typed: number | null;
  side: 0 | 1;
}) {
  const setCapacity = useWhatIf((w) => w.setCapacity);
  const note = useWhatIf((w) => w.capacityNote[side]);
  const [text, setText] = useState(typed !== null ? formatBytes(typed) : "");
  const [error, setError] = useState<string | null>(null);
  // A capacity set from elsewhere (a link's `cap=`) shows in the field; what the user typed stays as typed.
  // biome-ignore lint/correctness/useExhaustiveDependencies: only a change of the stored capacity rewrites the field
  useEffect(() => {
    const shown = text.trim() === "" ? null : (parseCapacity(text)?.bytes ?? undefined);
    if (shown !== typed) setText(typed !== null ? formatBytes(typed) : "");
  }, [typed]);
  const apply = () => {
    if (text.trim() === "") {
      setError(null);
      setCapacity(side, null);
      return;
    }
    const c = parseCapacity(text);
    if (c === null) setError(`“${text}” is not a size: write 24GiB, 80GB or a number of bytes.`);
    else {
      setError(null);
      setCapacity(side, c.bytes, c.note);
    }
  };
  return (
    <div className="small whatif-capacity" data-testid="whatif-capacity" data-value={capacity?.bytes ?? ""}>
      {capacity ? (
        <>
          Device capacity <strong>{formatBytes(capacity.bytes)}</strong>{" "}
          <span className="muted">({capacity.source === "option" ? "as typed" : capacity.detail})</span>
          {capacity.source === "option" && note && (
            <div className="muted" data-testid="whatif-capacity-note">
              {note}
            </div>
          )}
        </>
      ) : (
        <>
          Device capacity unknown (no OOM in this trace, no device total in a counters sidecar): type it to
          see what fits.
        </>
      )}
      <form
        className="whatif-capacity-form"
        onSubmit={(e) => {
          e.preventDefault();
          apply();
        }}
      >
        <label>
          Capacity{" "}
          <input
            type="text"
            value={text}
            placeholder="e.g. 24GiB"
            title="What memory_allocated() can reach on this device: its total memory less the CUDA context and what other processes hold (24GiB, 80GB, or bytes; GB is read as GiB, as GPU memory is quoted)"
            size={10}
            onChange={(e) => setText(e.currentTarget.value)}
            data-testid="whatif-capacity-input"
          />
        </label>{" "}
        <button type="submit">Check fit</button>
      </form>
      {error && <div className="status-fail">{error}</div>}
    </div>
  );
}

function FitBadge({ fits }: { fits: boolean | null }) {
  if (fits === null) return null;
  return (
    <span className={fits ? "whatif-fit ok" : "whatif-fit no"} data-fits={fits ? "1" : "0"}>
      {fits ? "✓ fits" : "✗ does not fit"}
    </span>
  );
}

/** "GPUs available": the ranking puts what works on them first (ZeRO over N ranks needs N). */
function DevicesLine({ devices, side }: { devices: number; side: 0 | 1 }) {
  const setDevices = useWhatIf((w) => w.setDevices);
  const [text, setText] = useState(String(devices));
  useEffect(() => setText(String(devices)), [devices]);
  const apply = (v: string) => {
    const n = Number(v);
    if (Number.isInteger(n) && n >= 1 && n <= 100000) setDevices(side, n);
  };
  return (
    <div className="small whatif-capacity" data-testid="whatif-devices" data-value={devices}>
      <label>
        GPUs available{" "}
        <input
          type="number"
          min={1}
          step={1}
          value={text}
          title="How many GPUs you can use for this job: changes that need more (ZeRO over N ranks needs N) are listed after those that work on these"
          onChange={(e) => {
            setText(e.currentTarget.value);
            apply(e.currentTarget.value);
          }}
          style={{ width: "5em" }}
          data-testid="whatif-devices-input"
        />
      </label>{" "}
      <span className="muted">changes that work on these come first</span>
    </div>
  );
}

function SuggestionItem({
  s,
  rank,
  devicesAvailable,
  firstNeedingMore,
  baseline,
  chosen,
  onChoose,
  children,
}: {
  s: WhatIfSuggestionRow;
  rank: number;
  devicesAvailable: number;
  /** The first of those needing more GPUs than available: a heading goes above it. */
  firstNeedingMore: boolean;
  baseline: number;
  chosen: boolean;
  onChoose: () => void;
  children?: ReactNode;
}) {
  const nothing = s.savedBytes <= 0;
  const more = s.devices > devicesAvailable;
  return (
    <li className={nothing ? "nothing" : undefined} data-devices={s.devices}>
      {firstNeedingMore && (
        <div className="small muted whatif-more" data-testid="whatif-needs-more">
          Needing more than {devicesAvailable} GPU{devicesAvailable === 1 ? "" : "s"}:
        </div>
      )}
      <button
        type="button"
        className="whatif-suggestion"
        aria-pressed={chosen}
        data-testid="whatif-suggestion"
        data-id={s.id}
        data-peak={s.peakBytes}
        data-peak-event={s.peakEvent}
        data-saved={s.savedBytes}
        title={`Assumption: ${s.assumption}\n\nSame in the terminal: peakscope whatif FILE ${s.specs.join(" ")}`}
        onClick={onChoose}
      >
        <span className="whatif-rank">{rank}.</span>
        <span className="whatif-action">
          {s.action}
          {s.devices > 1 && (
            <span className={more ? "whatif-needs more" : "whatif-needs muted"}>
              {" "}
              · needs {s.devices} GPUs (figures per GPU)
            </span>
          )}
        </span>
        <span className="whatif-figures">
          new peak{" "}
          <strong>
            <Bytes value={s.peakBytes} />
          </strong>
          {" · "}
          {nothing ? (
            <span className="muted">saves nothing at the peak</span>
          ) : (
            <>
              saves <Bytes value={s.savedBytes} /> (
              {formatPercent(baseline > 0 ? s.savedBytes / baseline : 0, 0)})
            </>
          )}{" "}
          <FitBadge fits={s.fits} />
        </span>
        <span className="whatif-meter" aria-hidden="true">
          <span style={{ width: `${baseline > 0 ? Math.min(100, (s.peakBytes / baseline) * 100) : 0}%` }} />
        </span>
      </button>
      <div className="whatif-caveat">{s.caveat}</div>
      {children}
    </li>
  );
}

function ChosenDetail({
  specs,
  label,
  fileName,
  capacityTyped,
  inline,
  onClear,
}: {
  specs: string[];
  label: string;
  fileName: string;
  capacityTyped: number | null;
  /** Under its suggestion (which names it already). */
  inline: boolean;
  onClear: () => void;
}) {
  const S = useSide();
  const ask = S((s) => s.ask);
  const device = S((s) => s.device);
  const panel = S((s) => s.panel);
  const colors = S((s) => s.colors);
  const [a, setA] = useState<WhatIfAnswer | null>(null);
  const key = specs.join("\n");
  useEffect(() => {
    let stale = false;
    const ticket = ++tickets;
    setA(null);
    ask((api) => api.whatIf({ device, specs: key.split("\n"), capacityBytes: capacityTyped, ticket })).then(
      (r) => {
        if (!stale && !r.stale) setA(r);
      },
      () => {},
    );
    return () => {
      stale = true;
    };
  }, [ask, device, key, capacityTyped]);
  const names = panel?.categories.map((c) => c.name) ?? [];
  const before = panel?.replay?.peakByCategory ?? [];
  const rows = useMemo(() => {
    if (!a || a.error) return [];
    return names
      .map((n, c) => ({ n, c, was: before[c] ?? 0, now: a.categoriesAtPeak[n] ?? 0 }))
      .filter((r) => r.was !== 0 || r.now !== 0);
  }, [a, names, before]);
  const moved = a && !a.error && a.peakEvent !== a.baselinePeakEvent;
  return (
    <div
      className="whatif-chosen"
      data-testid="whatif-chosen"
      data-peak={a && !a.error ? a.peakBytes : ""}
      data-peak-event={a && !a.error ? a.peakEvent : ""}
      aria-live="polite"
    >
      <div className="whatif-chosen-head">
        <span className="whatif-dash" aria-hidden="true" />
        {inline ? <span className="small">drawn dashed on the timeline</span> : <strong>{label}</strong>}
        <span className="spacer" />
        <button type="button" onClick={onClear} data-testid="whatif-clear">
          Clear
        </button>
      </div>
      {!a && <p className="small muted">Replaying…</p>}
      {a?.error && (
        <p className="status-fail small" data-testid="whatif-chosen-error">
          This what-if could not be applied to this file: {a.error}
        </p>
      )}
      {a && !a.error && (
        <>
          <p className="whatif-verdict">
            New peak{" "}
            <strong>
              <Bytes value={a.peakBytes} testId="whatif-new-peak" />
            </strong>{" "}
            at event #{formatCount(a.peakEvent)}
            {moved ? ` (the peak moves: it was at #${formatCount(a.baselinePeakEvent)})` : " (same moment)"}
            {" — "}
            {a.savedBytes >= 0 ? (
              <>
                saves <Bytes value={a.savedBytes} /> of <Bytes value={a.baselinePeakBytes} />
              </>
            ) : (
              <span className="status-fail">
                <Bytes value={-a.savedBytes} /> higher than now
              </span>
            )}
            . <FitBadge fits={a.fits} />
          </p>
          <table className="num-table" data-testid="whatif-composition">
            <caption>What the peak is made of</caption>
            <thead>
              <tr>
                <th scope="col">Category</th>
                <th scope="col">Peak now</th>
                <th scope="col">What if</th>
                <th scope="col">Change</th>
              </tr>
            </thead>
            <tbody>
              {rows.map((r) => (
                <tr key={r.n} data-category={r.n} data-value={r.now}>
                  <td>
                    <span className="swatch" style={{ background: colors[r.c] }} />
                    {r.n.replace(/_/g, " ")}
                  </td>
                  <td>
                    <Bytes value={r.was} />
                  </td>
                  <td>
                    <Bytes value={r.now} />
                  </td>
                  <td className={r.now < r.was ? "down" : r.now > r.was ? "up" : "muted"}>
                    {r.now === r.was ? "—" : <Bytes value={r.now - r.was} signed />}
                  </td>
                </tr>
              ))}
              <tr className="total">
                <th scope="row">allocated</th>
                <td>
                  <Bytes value={a.baselinePeakBytes} />
                </td>
                <td>
                  <strong>
                    <Bytes value={a.peakBytes} />
                  </strong>
                </td>
                <td>
                  <Bytes value={-a.savedBytes} signed />
                </td>
              </tr>
            </tbody>
          </table>
          <p className="small muted">
            “Peak now” is at event #{formatCount(a.baselinePeakEvent)}, “What if” at event #
            {formatCount(a.peakEvent)}: each column is one moment, so a category may grow where the peak
            moves.
          </p>
          <details className="small">
            <summary>Exact under which assumption, and the same in the terminal</summary>
            <p>{a.assumption}</p>
            {a.transforms.map((t) => (
              <p key={t.spec} className="muted">
                <code>{t.spec}</code>: {formatCount(t.allocations)} allocations, <Bytes value={t.bytes} />{" "}
                before the change
                {t.calls !== undefined ? `; ${t.checkpointedCalls} of ${t.calls} calls checkpointed` : ""}.
              </p>
            ))}
            <code className="whatif-cli" data-testid="whatif-cli">
              peakscope whatif {fileName} {a.specs.map(quote).join(" ")}
            </code>
          </details>
        </>
      )}
    </div>
  );
}

/** A spec as one shell word after its option (as the CLI's "try:" line writes it). */
function quote(spec: string): string {
  const sp = spec.indexOf(" ");
  const opt = spec.slice(0, sp);
  const val = spec.slice(sp + 1);
  return /^[\w./:=,@+-]+$/.test(val) ? spec : `${opt} '${val.replaceAll("'", "'\\''")}'`;
}

const ACTIONS: { action: WhatIfAction; text: string; help: string }[] = [
  { action: "remove", text: "gone", help: "As if these allocations never existed" },
  {
    action: "halve",
    text: "halved",
    help: "Each allocation at half its size (bf16 instead of fp32, half the batch…)",
  },
  {
    action: "free-early",
    text: "freed early",
    help: "Each is held only while the phase that made it runs (forward, backward + optimizer step, …)",
  },
  {
    action: "recompute",
    text: "recomputed",
    help: "Activation checkpointing: dropped after the forward, recomputed when the backward needs them",
  },
];

/**
 * "What if it were gone / halved / freed early / recomputed" for the selection of a card: the highlighted
 * category (`from="category"`) or call site (`from="site"`). Nothing while nothing is selected, or in a
 * comparison.
 */
export function WhatIfSelectionBar({ from }: { from: "category" | "site" }) {
  const S = useSide();
  const side = S((s) => s.side);
  const category = S((s) => s.highlightCategory);
  const site = S((s) => (s.highlightBy === "key" ? s.highlightSite : null));
  const hasTrace = S((s) => !!s.panel?.replay);
  const single = useApp((a) => a.mode === "single");
  const [busy, setBusy] = useState<WhatIfAction | null>(null);
  const value = from === "category" ? category : site;
  if (!single || !value) return null;
  const target: WhatIfTarget =
    from === "category" ? { kind: "category", category: value } : { kind: "site", site: value };
  const name = from === "category" ? value.replace(/_/g, " ") : "this call site";
  return (
    <div className="whatif-bar" data-testid={`whatif-bar-${from}`}>
      <span className="muted">What if {name} were</span>
      {ACTIONS.map((x, i) => {
        const noRecompute = x.action === "recompute" && from === "category" && value !== "activations";
        return (
          <Fragment key={x.action}>
            {i > 0 && <span className="muted"> / </span>}
            <button
              type="button"
              className="link"
              disabled={!hasTrace || busy !== null || noRecompute}
              title={
                !hasTrace
                  ? "No trace on this device: a what-if replays the trace"
                  : noRecompute
                    ? "Recomputing applies to activations (what a module's forward saves for its backward)"
                    : x.help
              }
              data-action={x.action}
              onClick={() => {
                setBusy(x.action);
                void openWhatIf({ side, target, action: x.action }).finally(() => {
                  setBusy(null);
                  // The answer is in the "What if" card, above: bring it into view.
                  document
                    .querySelector(`[data-testid=whatif][data-side="${side}"]`)
                    ?.scrollIntoView({ block: "nearest", behavior: "smooth" });
                });
              }}
            >
              {x.text}
            </button>
          </Fragment>
        );
      })}
      <span className="muted">?</span>
    </div>
  );
}
