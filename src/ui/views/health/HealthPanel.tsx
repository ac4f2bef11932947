// Allocator health of the shown device (core src/core/health via workers/health.ts): what the counters
// sidecar's memory_stats() says (one verdict per counter, with its meaning), the file's allocator_settings,
// the pending frees (record_stream: freed by the program, held for another stream), and fragmentation at
// the peak and at each OOM (largest free block vs the request, the live blocks pinning the most fragmented
// segments). The timeline can overlay the cached / inactive-split / pending curves (HealthOverlay).

import { NoSegments } from "../../components/NoSegments";
import "./health.css";
import { useEffect, useState } from "react";
import type { HealthAnswer } from "../../../../workers/api";
import type { FragmentationDetail } from "../../../core/health/index";
import { Bytes } from "../../components/Bytes";
import { exactBytes, formatBytes, formatCount, formatDurationUs } from "../../format";
import { nextPaint, tracked } from "../../state/idle";
import { useSide, useSideKey } from "../../state/store";
import { HealthOverlayToggles } from "./HealthOverlay";

/** allocator_settings keys, in one line each (the CUDA caching allocator's options). */
const SETTING_MEANING: Record<string, string> = {
  PYTORCH_CUDA_ALLOC_CONF: "the environment variable the options came from (empty: all defaults)",
  max_split_size: "blocks above this are never split (max_split_size_mb); -1 or huge: no limit",
  garbage_collection_threshold:
    "fraction of memory at which unused cached blocks are reclaimed before a cudaMalloc (0: off)",
  expandable_segments: "segments grow in place by mapping pages (less fragmentation across sizes)",
  roundup_power2_divisions:
    "request sizes rounded up to power-of-two divisions, per size (0: 512-byte rounding)",
  pinned_num_register_threads: "threads that register pinned host memory",
  release_lock_on_cudamalloc: "the allocator's lock is released during cudaMalloc",
  pinned_use_cuda_host_register: "pinned host memory via cudaHostRegister instead of cudaHostAlloc",
  trace_alloc_max_entries: "the trace ring buffer's size: older entries are dropped beyond it",
  trace_alloc_overflowed: "true: the ring buffer dropped its oldest entries (the trace starts mid-run)",
  record_context_cpp: "C++ frames were recorded in the stacks",
};

const LEVEL_TEXT = { ok: "ok", info: "note", warn: "warn", bad: "bad" } as const;

const isBytesKey = (k: string) => /bytes|max_split_size/.test(k);

/** The allocator-health panel, or a sentence for a file without segments. */
export function HealthPanel() {
  return (
    <NoSegments panel="Allocator health">
      <HealthPanelView />
    </NoSegments>
  );
}

function HealthPanelView() {
  const S = useSide();
  const k = useSideKey();
  const ask = S((s) => s.ask);
  const device = S((s) => s.device);
  const panel = S((s) => s.panel);
  const settings = S((s) => s.summary?.allocatorSettings ?? null);
  const fileName = S((s) => s.fileName);
  const [answer, setAnswer] = useState<HealthAnswer | null>(null);
  const [error, setError] = useState<string | null>(null);

  useEffect(() => {
    if (!panel) return;
    let stale = false;
    setError(null);
    // After the timeline's first picture (or 250 ms): its curves cost a pass over the whole trace, and
    // the worker answers in order, so asked at once they would hold the timeline's first drawing back.
    tracked(async () => {
      await nextPaint(250);
      return stale ? null : ask((api) => api.health(device));
    }).then(
      (a) => {
        if (!stale && a) setAnswer(a);
      },
      (e) => {
        if (!stale) setError(e instanceof Error ? e.message : String(e));
      },
    );
    return () => {
      stale = true;
    };
  }, [ask, device, panel]);

  const s = answer?.summary ?? null;
  return (
    <section className="card health" aria-label="Allocator health" data-testid="health">
      <h2 id={`health-title-${k}`}>Allocator health — device {device}</h2>
      <p className="muted small">
        What the caching allocator did with the memory it holds: its own counters (from the counters sidecar),
        its settings, frees held back for another stream, and free space stuck inside segments.
      </p>
      {(error || answer?.error) && <p className="status-fail">{error ?? answer?.error}</p>}
      {panel?.replay && (
        <div className="health-block">
          <span className="label muted small">On the timeline above: </span>
          <HealthOverlayToggles />
          {s?.max && (
            <div className="muted small" data-testid="health-max">
              Highest over the trace: cached {fmtMax(s.max.cached?.value)}, inactive split{" "}
              {fmtMax(s.max.inactiveSplit?.value)}, pending {fmtMax(s.max.pending?.value)}.
            </div>
          )}
        </div>
      )}
      <Verdicts answer={answer} countersFile={panel?.countersFile ?? null} fileName={fileName} />
      <Settings settings={settings} />
      {s && <PendingFrees report={s.pendingFrees} />}
      {s && <Fragmentation peak={s.fragmentation.peak} ooms={s.fragmentation.ooms} />}
      {!panel?.replay && panel && (
        <p className="muted small">
          No trace on this device: pending frees and fragmentation over time need one (record it with{" "}
          <code>torch.cuda.memory._record_memory_history()</code>).
        </p>
      )}
    </section>
  );
}

const fmtMax = (v: number | undefined) => (v === undefined ? "—" : formatBytes(v));

function Verdicts({
  answer,
  countersFile,
  fileName,
}: {
  answer: HealthAnswer | null;
  countersFile: string | null;
  fileName: string | null;
}) {
  const verdicts = answer?.verdicts ?? [];
  return (
    <div className="health-block" data-testid="health-verdicts">
      <h3>memory_stats(){countersFile ? ` — from ${countersFile}` : ""}</h3>
      {!countersFile ? (
        <p className="muted small" data-testid="health-no-sidecar">
          No counters sidecar: these counters are not in a snapshot. Drop{" "}
          <code>{fileName ?? "FILE"}.counters.json</code> with the snapshot (the JSON of{" "}
          <code>torch.cuda.memory_stats()</code>, <code>memory_allocated()</code>,{" "}
          <code>max_memory_allocated()</code>… taken at the dump) to see retries, OOMs, inactive split.
        </p>
      ) : verdicts.length === 0 ? (
        <p className="muted small">
          The sidecar is about device {answer?.countersDevice ?? "?"}, not this one: its counters do not apply
          here.
        </p>
      ) : (
        <table className="num-table health-table">
          <thead>
            <tr>
              <th>counter</th>
              <th>value</th>
              <th className="wide">what it says</th>
            </tr>
          </thead>
          <tbody>
            {verdicts.map((v) => (
              <tr
                key={v.key}
                className={`stat-verdict level-${v.level}`}
                data-testid="verdict"
                data-key={v.key}
                data-value={v.value ?? ""}
                data-level={v.level}
              >
                <td>
                  <span className={`level-badge ${v.level}`}>{LEVEL_TEXT[v.level]}</span> <code>{v.key}</code>
                </td>
                <td title={v.value === null ? "" : isBytesKey(v.key) ? exactBytes(v.value) : String(v.value)}>
                  {v.value === null ? "—" : isBytesKey(v.key) ? formatBytes(v.value) : formatCount(v.value)}
                </td>
                <td className="wide">
                  <div>{v.verdict}</div>
                  <div className="muted small">{v.meaning}</div>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}

function settingText(v: unknown): string {
  if (v === null || v === undefined) return "—";
  if (typeof v === "string") return v === "" ? '"" (not set)' : v;
  if (typeof v !== "object") return String(v);
  if (!Array.isArray(v)) {
    const vals = Object.values(v as Record<string, unknown>);
    if (vals.length > 0 && vals.every((x) => x === 0)) return "all 0 (off)";
  }
  const s = JSON.stringify(v);
  return s.length > 160 ? `${s.slice(0, 157)}…` : s;
}

function Settings({ settings }: { settings: Record<string, unknown> | null }) {
  const entries = settings ? Object.entries(settings) : [];
  return (
    <div className="health-block" data-testid="health-settings">
      <h3>allocator_settings (from the snapshot)</h3>
      {entries.length === 0 ? (
        <p className="muted small">
          This snapshot has no <code>allocator_settings</code> (older torch, or torch_npu): the defaults are
          assumed.
        </p>
      ) : (
        <table className="num-table health-table">
          <tbody>
            {entries.map(([key, v]) => (
              <tr key={key} data-testid="setting" data-key={key}>
                <td>
                  <code>{key}</code>
                </td>
                <td className="setting-value">{settingText(v)}</td>
                <td className="wide muted small">{SETTING_MEANING[key] ?? ""}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </div>
  );
}

function PendingFrees({ report }: { report: NonNullable<HealthAnswer["summary"]>["pendingFrees"] }) {
  const [all, setAll] = useState(false);
  const items = all ? report.items : report.items.slice(0, 8);
  return (
    <div className="health-block" data-testid="health-pending" data-count={report.count}>
      <h3>Pending frees (record_stream)</h3>
      <p className="small">
        {report.count === 0 ? (
          <>
            <strong>None</strong>: every free was returned to the pool at once (no block waited for another
            stream).
            {report.maxPendingBytes > 0 &&
              ` The pending curve's ${formatBytes(report.maxPendingBytes)} is a block between its free_requested and free_completed entries, written back to back: not held.`}
          </>
        ) : (
          <>
            <strong>{formatCount(report.count)}</strong> block{report.count === 1 ? "" : "s"} (
            {formatBytes(report.bytes)}) were freed by the program but held back: the block had been used on
            another stream (<code>tensor.record_stream()</code> or cross-stream use), so the allocator waited
            for that stream before reusing it. At most <strong>{formatBytes(report.maxPendingBytes)}</strong>{" "}
            were pending at once
            {report.maxPendingEvent !== null ? ` (event #${formatCount(report.maxPendingEvent)})` : ""}.
            Memory pending here is reserved but unusable: it can force new segments.
          </>
        )}
      </p>
      {report.items.length > 0 && (
        <table className="num-table health-table">
          <thead>
            <tr>
              <th title="Events (and time) between free requested and free completed">held for</th>
              <th>stream</th>
              <th>size</th>
              <th className="wide">allocated at (call site)</th>
            </tr>
          </thead>
          <tbody>
            {items.map((p) => (
              <tr key={p.allocation} data-testid="pending-free" title={p.meaning}>
                <td>
                  {formatCount(p.gapEvents)} events
                  {p.gapUs !== null ? <div className="muted small">{formatDurationUs(p.gapUs)}</div> : null}
                  {p.open && <div className="status-fail small">still pending at the snapshot</div>}
                </td>
                <td title={p.streamRaw !== null ? `raw stream id ${p.streamRaw}` : undefined}>{p.stream}</td>
                <td>
                  <Bytes value={p.sizeBytes} />
                </td>
                <td className="wide">
                  <code className="site">{p.site ?? "—"}</code>
                  <div className="muted small">
                    freed at{" "}
                    {p.freeRequestedEvent === null
                      ? "before the trace"
                      : `event #${formatCount(p.freeRequestedEvent)}`}
                    , returned{" "}
                    {p.freeCompletedEvent === null
                      ? "never (still pending)"
                      : `at event #${formatCount(p.freeCompletedEvent)}`}
                  </div>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {report.items.length > 8 && (
        <button type="button" className="link small" onClick={() => setAll(!all)}>
          {all ? "Show the 8 longest" : `Show all ${formatCount(report.items.length)}`}
        </button>
      )}
    </div>
  );
}

function Fragmentation({ peak, ooms }: { peak: FragmentationDetail | null; ooms: FragmentationDetail[] }) {
  return (
    <div className="health-block" data-testid="health-fragmentation">
      <h3>
        Fragmentation at the peak
        {ooms.length > 0 ? ` and at ${ooms.length === 1 ? "the OOM" : `each of ${ooms.length} OOMs`}` : ""}
      </h3>
      {!peak && ooms.length === 0 && <p className="muted small">No peak in the trace (no allocation).</p>}
      {peak && <FragmentationAt d={peak} title="At the peak" />}
      {ooms.map((o, i) => (
        <FragmentationAt
          key={o.eventIndex}
          d={o}
          title={ooms.length === 1 ? "At the OOM" : `At OOM ${i + 1}`}
        />
      ))}
    </div>
  );
}

function FragmentationAt({ d, title }: { d: FragmentationDetail; title: string }) {
  const fits = d.fitsLargestFreeBlock;
  return (
    <div
      className={d.kind === "oom" ? "frag oom" : "frag"}
      data-testid="fragmentation"
      data-kind={d.kind}
      data-event={d.eventIndex}
    >
      <div>
        <strong>{title}</strong>{" "}
        <span className="muted small">(after event #{formatCount(d.eventIndex)})</span>
      </div>
      <dl className="facts small">
        <div>
          <dt>request</dt>
          <dd>
            {d.requestRoundedBytes === null ? "—" : <Bytes value={d.requestRoundedBytes} />}
            {d.requestBytes !== null && d.requestRoundedBytes !== d.requestBytes
              ? ` (asked ${formatBytes(d.requestBytes)})`
              : ""}
          </dd>
        </div>
        <div>
          <dt>largest free block</dt>
          <dd
            className={fits === false ? "status-fail" : undefined}
            data-testid="largest-free"
            data-value={d.largestFreeBlockBytes}
          >
            <Bytes value={d.largestFreeBlockBytes} />
            {fits === null ? "" : fits ? " — the request fits" : " — too small for the request"}
          </dd>
        </div>
        <div>
          <dt>free in cached segments</dt>
          <dd>
            <Bytes value={d.freeInCachedSegmentsBytes} />
          </dd>
        </div>
        <div>
          <dt>of it inside segments with live blocks (inactive split)</dt>
          <dd>
            <Bytes value={d.inactiveSplitBytes} />
          </dd>
        </div>
        <div>
          <dt>segments</dt>
          <dd>
            {formatCount(d.regions)} ({formatCount(d.heldRegions)} holding live blocks)
          </dd>
        </div>
        {d.deviceFreeBytes !== null && (
          <div>
            <dt>device free (reported)</dt>
            <dd>
              <Bytes value={d.deviceFreeBytes} />
            </dd>
          </div>
        )}
      </dl>
      <p className="small">{d.message}.</p>
      {d.pinned.length > 0 && (
        <>
          <div className="small muted">
            The most fragmented segments, and the live blocks that keep them from being released (free one of
            these, or allocate it elsewhere, and the segment can merge):
          </div>
          <ul className="pinned small">
            {d.pinned.map((p) => (
              <li key={p.address} data-testid="pinned-segment">
                segment <code>0x{p.address.toString(16)}</code> {formatBytes(p.sizeBytes)}:{" "}
                <strong>{formatBytes(p.freeBytes)} free</strong> (largest piece{" "}
                {formatBytes(p.largestFreeBytes)}), pinned by {formatCount(p.liveBlocks)} live block
                {p.liveBlocks === 1 ? "" : "s"}
                <ul>
                  {p.blocks.slice(0, 3).map((b) => (
                    <li key={b.allocation}>
                      {formatBytes(b.sizeBytes)} {b.category}
                      {b.pendingFree ? " (pending free)" : ""} from{" "}
                      <code className="site">{b.site || "—"}</code>
                    </li>
                  ))}
                  {p.blocks.length > 3 && <li className="muted">… {p.blocks.length - 3} more</li>}
                </ul>
              </li>
            ))}
          </ul>
        </>
      )}
    </div>
  );
}
