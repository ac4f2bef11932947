// The rank overview: more than two snapshots opened at once, one row per file (rank, peak, allocated and
// reserved at the snapshot, reserved − allocated, categories as a stacked bar, checks), the outliers
// flagged with the category that makes the difference (core rankOverview, what `peakscope ranks` prints),
// beside one track per rank: its allocated memory over its trace, every track on one shared time axis and
// byte scale (RankTracks). Click a row or a track to open that file; tick two and "Compare" opens them side
// by side.

import "./ranks.css";
import { useMemo, useState } from "react";
import type { RankOutlier, RankRow } from "../../../core/ranks/index";
import { Bytes } from "../../components/Bytes";
import { exactBytes, formatBytes, formatBytesSigned, formatCount, formatPercent } from "../../format";
import { categoryColors } from "../../palette";
import { RankTracks } from "./RankTracks";
import { type RankEntry, useRanks } from "./store";

const PEAK_SOURCE: Record<string, string> = {
  counters: "the sidecar's max_memory_allocated (the whole run's)",
  trace: "replayed from the trace",
};

export function RankOverview() {
  const entries = useRanks((r) => r.entries);
  const overview = useRanks((r) => r.overview);
  const status = useRanks((r) => r.status);
  const checked = useRanks((r) => r.checked);
  const startedAt = useRanks((r) => r.startedAt);
  const finishedAt = useRanks((r) => r.finishedAt);
  const [basis, setBasis] = useState<"peak" | "snapshot">("peak");

  const byName = useMemo(() => new Map(entries.map((e) => [e.name, e])), [entries]);
  const rows = overview?.ranks ?? [];
  const outliers = useMemo(() => new Map((overview?.outliers ?? []).map((o) => [o.file, o])), [overview]);
  const done = entries.filter((e) => e.status === "done").length;
  const failed = entries.filter((e) => e.status === "error");
  const pending = entries.filter((e) => e.status !== "done" && e.status !== "error");

  // One colour per category across every rank (the same as in the file views).
  const categories = useMemo(() => {
    const total = new Map<string, number>();
    for (const r of rows)
      for (const [c, v] of Object.entries({ ...r.categories, ...r.peakCategories }))
        total.set(c, (total.get(c) ?? 0) + v);
    return [...total.entries()]
      .filter(([, v]) => v > 0)
      .sort((a, b) => b[1] - a[1])
      .map(([c]) => c);
  }, [rows]);
  const colors = useMemo(() => {
    const list = categoryColors(categories);
    return new Map(categories.map((c, i) => [c, list[i]]));
  }, [categories]);
  const compOf = (r: RankRow) =>
    basis === "peak" && Object.keys(r.peakCategories).length > 0
      ? { comp: r.peakCategories, at: "peak" as const }
      : { comp: r.categories, at: "snapshot" as const };
  const barMax = Math.max(1, ...rows.map((r) => Object.values(compOf(r).comp).reduce((a, b) => a + b, 0)));

  const elapsed = ((status === "loading" ? performance.now() : finishedAt) - startedAt) / 1000;
  const canCompare = checked.length === 2;

  return (
    <section
      className="card rank-overview"
      aria-label="Rank overview"
      data-testid="rank-overview"
      data-status={status}
      data-ranks={rows.length}
    >
      <div className="toolbar">
        <h2 className="rank-title">
          Rank overview —{" "}
          {status === "loading" || failed.length > 0
            ? `${formatCount(done)} rank${done === 1 ? "" : "s"} of ${formatCount(entries.length)} files`
            : `${formatCount(done)} ranks`}{" "}
          <span className="muted small" data-testid="rank-progress">
            {status === "loading"
              ? `reading ${formatCount(Math.min(entries.length, done + failed.length + 1))} of ${formatCount(entries.length)}… (two at a time; each file is summarised, then let go)`
              : `read in ${elapsed.toFixed(1)} s${failed.length > 0 ? `; ${formatCount(failed.length)} not snapshots or not readable (listed below)` : ""}`}
          </span>
        </h2>
        <span className="spacer" />
        {status === "loading" && (
          <button type="button" onClick={() => useRanks.getState().stop()}>
            Stop reading
          </button>
        )}
        <button
          type="button"
          className={canCompare ? "primary" : undefined}
          disabled={!canCompare}
          onClick={() => void useRanks.getState().compareChecked()}
          data-testid="rank-compare"
          title={
            canCompare
              ? "Open the two ticked files side by side, with the difference between them"
              : "Tick two rows (the boxes on the left) to compare them side by side"
          }
        >
          Compare {checked.length === 2 ? "the 2 ticked" : `(${checked.length}/2 ticked)`}
        </button>
      </div>

      {overview && (
        <OutlierSummary
          outliers={overview.outliers}
          median={overview.medianPeakBytes}
          rule={overview.rule}
          rows={rows.length}
        />
      )}

      {rows.length > 0 && (
        // The tracks on the left (one per rank, one shared axis), the table beside them.
        <div className="rank-split">
          <RankTracks rows={rows} entries={byName} outliers={outliers} />
          <div className="rank-table-side">
            <div className="toolbar">
              <span className="label">categories</span>
              <span className="group">
                <button type="button" aria-pressed={basis === "peak"} onClick={() => setBasis("peak")}>
                  At the peak
                </button>
                <button
                  type="button"
                  aria-pressed={basis === "snapshot"}
                  onClick={() => setBasis("snapshot")}
                >
                  At the snapshot
                </button>
              </span>
              <span className="muted small">
                Click a row to open that file · tick two to compare them · bars share one byte scale
              </span>
            </div>
            <div className="rank-table-box">
              <table className="num-table rank-table" data-testid="rank-table">
                <thead>
                  <tr>
                    <th title="Tick two rows, then Compare">compare</th>
                    <th title="From the file names (rank3, rank_3, -r3), else the sidecars' rank, else the order given">
                      rank
                    </th>
                    <th className="rank-file">file</th>
                    <th title="The sidecar's max_memory_allocated when a .counters.json came with the file (the whole run's), else the trace's replayed peak">
                      peak
                    </th>
                    <th title="This rank's peak minus the median peak over the ranks">vs median</th>
                    <th title="Σ allocated_size of the segments at the snapshot (live tensors)">allocated</th>
                    <th title="Σ total_size of the segments at the snapshot (what the cache holds)">
                      reserved
                    </th>
                    <th title="reserved − allocated at the snapshot: cached beyond live tensors (free inside segments, pending frees)">
                      reserved − allocated
                    </th>
                    <th className="bar-col">categories at the {basis}</th>
                    <th
                      className="checks-col"
                      title="The report's consistency checks: real failures only (a dump taken away from the peak is information, listed in grey)"
                    >
                      checks
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {rows.map((r) => {
                    const e = byName.get(r.file);
                    if (!e) return null;
                    return (
                      <Row
                        key={r.file}
                        row={r}
                        entry={e}
                        outlier={outliers.get(r.file) ?? null}
                        checked={checked.includes(e.id)}
                        comp={compOf(r)}
                        barMax={barMax}
                        colors={colors}
                      />
                    );
                  })}
                </tbody>
              </table>
            </div>
            <div className="legend" data-testid="rank-legend">
              {categories.map((c) => (
                <span key={c}>
                  <span className="swatch" style={{ background: colors.get(c) }} />
                  {c}
                </span>
              ))}
            </div>
          </div>
        </div>
      )}

      {pending.length > 0 && (
        <ul className="rank-pending small muted" data-testid="rank-pending">
          {pending.slice(0, 8).map((e) => (
            <li key={e.id}>
              {e.status === "waiting" ? "waiting" : e.status === "downloading" ? "downloading…" : "reading…"}{" "}
              <code>{e.name}</code>
            </li>
          ))}
          {pending.length > 8 && <li>… and {formatCount(pending.length - 8)} more</li>}
        </ul>
      )}
      {failed.length > 0 && (
        <details className="rank-errors" data-testid="rank-errors" open={failed.length <= 3}>
          <summary className="rank-errors-title">
            {formatCount(failed.length)} file{failed.length === 1 ? "" : "s"} not in the overview (not a
            snapshot, or not readable)
          </summary>
          <ul className="small">
            {failed.map((e) => (
              <li key={e.id}>
                <code>{e.name}</code>: {e.error}
              </li>
            ))}
          </ul>
        </details>
      )}
    </section>
  );
}

function OutlierSummary({
  outliers,
  median,
  rule,
  rows,
}: {
  outliers: RankOutlier[];
  median: number | null;
  rule: string;
  rows: number;
}) {
  if (median === null) {
    return (
      <p className="muted">No rank has a peak (no trace and no counters sidecar): nothing to compare.</p>
    );
  }
  return (
    <div className="rank-verdict" data-testid="rank-verdict" data-outliers={outliers.length}>
      {outliers.length === 0 ? (
        <p className="gap-flag ok">
          <strong>No rank stands out</strong>: every peak of the {formatCount(rows)} ranks is within 5 % (and
          1 GiB) of the median peak, {formatBytes(median)}.
        </p>
      ) : (
        outliers.map((o) => (
          <p key={o.file} className="gap-flag" data-testid="rank-outlier-line" data-rank={o.rank}>
            <strong>▲ Rank {o.rank} stands out</strong>: its peak {formatBytes(o.peakBytes)} is{" "}
            <strong>{formatBytes(o.aboveMedianBytes)}</strong> ({formatPercent(o.aboveMedianFraction)}) above
            the median peak ({formatBytes(median)}).{" "}
            {o.category ? (
              <>
                The difference is <strong className="rank-cat">{o.category}</strong>:{" "}
                {formatBytesSigned(o.categoryExcessBytes)} more than the median rank's {o.category}{" "}
                {o.basis === "peak" ? "at the peak" : "at the snapshot (its peak's composition is unknown)"}.
              </>
            ) : (
              "No category explains it (every category is at or below the median)."
            )}
          </p>
        ))
      )}
      <p className="muted small">Rule: {rule}.</p>
    </div>
  );
}

function Row({
  row: r,
  entry,
  outlier,
  checked,
  comp,
  barMax,
  colors,
}: {
  row: RankRow;
  entry: RankEntry;
  outlier: RankOutlier | null;
  checked: boolean;
  comp: { comp: Record<string, number>; at: "peak" | "snapshot" };
  barMax: number;
  colors: Map<string, string>;
}) {
  const open = () => void useRanks.getState().openRank(entry.id);
  const parts = Object.entries(comp.comp)
    .filter(([, v]) => v > 0)
    .sort((a, b) => b[1] - a[1]);
  const total = parts.reduce((a, [, v]) => a + v, 0);
  const countersError = entry.result?.countersError ?? null;
  return (
    <tr
      className={outlier ? "rank-row outlier" : "rank-row"}
      data-testid="rank-row"
      data-rank={r.rank}
      data-file={r.file}
      data-outlier={outlier ? "1" : "0"}
      data-category={outlier?.category ?? undefined}
      data-peak={r.peakBytes ?? ""}
      data-peak-source={r.peakSource ?? ""}
      onClick={(e) => {
        if ((e.target as HTMLElement).closest("input, button, summary")) return;
        open();
      }}
      title={`Open ${r.file}`}
    >
      <td>
        <input
          type="checkbox"
          checked={checked}
          onChange={() => useRanks.getState().toggleChecked(entry.id)}
          aria-label={`Tick rank ${r.rank} (${r.file}) for Compare`}
          data-testid="rank-check"
        />
      </td>
      <td className="rank-num">
        {outlier && (
          <span className="outlier-mark" title="Outlier: peak above the median by more than 5 % or 1 GiB">
            ▲{" "}
          </span>
        )}
        {r.rank}
        {r.rankSource !== "file-name" && (
          <span
            className="muted small"
            title={
              r.rankSource === "sidecar"
                ? "rank from the counters sidecar"
                : "no rank in the name or sidecar: the order given"
            }
          >
            {" "}
            ({r.rankSource === "sidecar" ? "sidecar" : "order"})
          </span>
        )}
      </td>
      <td className="rank-file">
        <button type="button" className="link" onClick={open} data-testid="rank-open">
          {r.file}
        </button>
        {entry.source.kind === "file" && entry.source.counters && (
          <span className="muted small sidecar" title={`counters sidecar: ${entry.source.counters.name}`}>
            +{" "}
            {entry.source.counters.name.endsWith(".counters.json")
              ? ".counters.json"
              : entry.source.counters.name}
          </span>
        )}
        {countersError && (
          <div className="status-fail small" title={countersError}>
            sidecar not used: {countersError}
          </div>
        )}
      </td>
      <td title={r.peakSource ? PEAK_SOURCE[r.peakSource] : "no trace and no sidecar"}>
        {r.peakBytes === null ? "—" : <Bytes value={r.peakBytes} />}
        <div className="muted small">
          {r.peakSource === "counters" ? "sidecar" : r.peakSource === "trace" ? "replayed" : ""}
        </div>
      </td>
      <td
        className={outlier ? "status-fail" : undefined}
        data-testid="rank-above"
        data-value={r.aboveMedianBytes ?? ""}
      >
        {r.aboveMedianBytes === null ? "—" : formatBytesSigned(r.aboveMedianBytes)}
        {outlier && (
          <div className="outlier-why small" data-testid="rank-outlier">
            ▲ outlier
            {outlier.category
              ? `: ${outlier.category} ${formatBytesSigned(outlier.categoryExcessBytes)}`
              : ""}
          </div>
        )}
      </td>
      <td>
        <Bytes value={r.allocatedBytes} />
      </td>
      <td>
        <Bytes value={r.reservedBytes} />
      </td>
      <td>
        <Bytes value={r.fragmentation} />
        <div className="muted small">
          {r.reservedBytes > 0 ? `${formatPercent(r.fragmentation / r.reservedBytes, 0)} of reserved` : ""}
        </div>
      </td>
      <td className="bar-col">
        <div
          className="rank-bar"
          role="img"
          aria-label={`${comp.at === "peak" ? "at the peak" : "at the snapshot"}: ${parts.map(([c, v]) => `${c} ${formatBytes(v)}`).join(", ")}`}
        >
          {parts.map(([c, v]) => (
            <span
              key={c}
              style={{ width: `${(100 * v) / barMax}%`, background: colors.get(c) ?? "#888" }}
              title={`${c}: ${formatBytes(v)} (${exactBytes(v)}) ${comp.at === "peak" ? "at the peak" : "at the snapshot"}`}
              className={outlier?.category === c ? "hot" : undefined}
            />
          ))}
        </div>
        <div className="muted small">
          {formatBytes(total)}
          {comp.at === "snapshot" && Object.keys(r.peakCategories).length === 0
            ? " at the snapshot (peak composition unknown)"
            : ""}
        </div>
      </td>
      <td className="checks-col">
        <span
          className={r.checks === "pass" ? "status-pass" : "status-fail"}
          title={r.failedChecks.length === 0 ? "no check failed" : `failed: ${r.failedChecks.join(", ")}`}
          data-testid="rank-checks"
          data-status={r.checks}
          data-info={r.infoChecks.join(" ")}
        >
          {r.checks === "pass" ? "pass" : `fail (${r.failedChecks.length})`}
        </span>
        {r.failedChecks.length > 0 && <div className="muted small">{r.failedChecks.join(", ")}</div>}
        {/* Information, never a failure (issue 21): e.g. a dump taken away from the peak (after the step). */}
        {r.infoChecks.length > 0 && (
          <div
            className="muted small"
            title="Information, not a failure: the snapshot was taken away from the peak (normal for a dump after the step); the peak column shows the peak"
          >
            info: {r.infoChecks.join(", ")}
          </div>
        )}
      </td>
    </tr>
  );
}

/** Over a rank's file or a comparison of two, opened from the overview: the way back. */
export function RanksBackBar() {
  const shown = useRanks((r) => r.shown);
  const entries = useRanks((r) => r.entries);
  const openedFrom = useRanks((r) => r.openedFrom);
  const overview = useRanks((r) => r.overview);
  if (shown || entries.length === 0) return null;
  const names = openedFrom.map((id) => entries.find((e) => e.id === id)?.name).filter(Boolean);
  const rankOf = (n: string | undefined) => overview?.ranks.find((r) => r.file === n)?.rank;
  return (
    <nav className="rank-back" aria-label="Rank overview navigation" data-testid="rank-back">
      <button type="button" onClick={() => useRanks.getState().back()}>
        ← Back to the rank overview
      </button>
      <span className="muted small">
        {names.length > 0
          ? `showing ${names.map((n) => `rank ${rankOf(n) ?? "?"} (${n})`).join(" vs ")}, one of ${formatCount(entries.length)} files`
          : `${formatCount(entries.length)} files`}
      </span>
    </nav>
  );
}
