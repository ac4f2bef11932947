// The series view: several dumps of one rank as one story (core seriesLeaks, what `peakscope leaks FILE…`
// prints). Allocated and each category per dump as stacked bars on one scale; the verdict (the leak named, or
// "no growth found") with how warm-up was told apart; the growth table per call site and category (click a row:
// its live bytes per dump); and any two dumps compared as `report A --compare B` compares two snapshots.
// Self-contained: the page shows it instead of the rank overview when the files are a series (store.ts).

import "./series.css";
import { useMemo } from "react";
import { CATEGORY_NAMES } from "../../../core/attribution/rules";
import { compareDumps, type DumpSummary, type GrowthTableRow } from "../../../core/leaks/index";
import { Bytes } from "../../components/Bytes";
import { exactBytes, formatBytes, formatCount } from "../../format";
import { categoryColors } from "../../palette";
import { useSeries } from "./store";

const KIND_TEXT: Record<GrowthTableRow["kind"], string> = {
  leak: "leak",
  "one-off": "warm-up",
  growing: "growing",
  steady: "steady",
  shrinks: "shrinks",
};

export function SeriesView() {
  const entries = useSeries((s) => s.entries);
  const status = useSeries((s) => s.status);
  const result = useSeries((s) => s.result);
  const refusal = useSeries((s) => s.refusal);
  const selected = useSeries((s) => s.selected);
  const done = entries.filter((e) => e.status === "done").length;
  const failed = entries.filter((e) => e.status === "error");
  const byFile = useMemo(
    () => new Map(entries.filter((e) => e.summary).map((e) => [e.name, e.summary as DumpSummary])),
    [entries],
  );
  const dumps = (result?.steps ?? []).map((s) => ({ step: s.step, summary: byFile.get(s.file as string) }));

  return (
    <section
      className="card series-view"
      aria-label="Series"
      data-testid="series-view"
      data-status={status}
      data-verdict={result?.verdict ?? ""}
    >
      <div className="toolbar">
        <h2 className="series-title">
          Series — {formatCount(done)} of {formatCount(entries.length)} dumps{" "}
          <span className="muted small" data-testid="series-progress">
            {status === "loading"
              ? "reading two at a time; each dump is summarised, then let go"
              : result
                ? result.stepSource.detail
                : ""}
          </span>
        </h2>
      </div>
      {refusal && (
        <p className="series-refusal" role="alert" data-testid="series-refusal">
          {refusal}
        </p>
      )}
      {failed.map((e) => (
        <p key={e.id} className="series-refusal" role="alert">
          {e.name}: {e.error}
        </p>
      ))}
      {result && (
        <>
          <div className={`series-verdict verdict-${result.verdict}`} data-testid="series-verdict">
            <p>
              <strong>
                {result.verdict === "leak" ? "Leak" : result.verdict === "none" ? "No leak" : "Too few steps"}
                :
              </strong>{" "}
              {result.message}
            </p>
            {result.leaks.map((l) => (
              <p key={`${l.site}\u0000${l.category}`} className="series-leak" data-testid="series-leak">
                <span title={l.site}>{l.label}</span> ({l.category}): <Bytes value={l.bytesPerStep} signed />{" "}
                per step, grew in steps {l.steps.join(", ")}
              </p>
            ))}
            <p className="muted small">{result.warmUp.text}</p>
            <p className="muted small">Rule: {result.rule.text}.</p>
          </div>
          <SeriesChart dumps={dumps} />
          <GrowthTable rows={result.growth} steps={result.steps.map((s) => s.step)} />
          {selected && <SiteDetail rows={result.growth} steps={result.steps.map((s) => s.step)} />}
          <CompareDumps dumps={dumps} />
        </>
      )}
    </section>
  );
}

/** Allocated and each category per dump, stacked, on one byte scale. */
function SeriesChart({ dumps }: { dumps: { step: number; summary: DumpSummary | undefined }[] }) {
  const cats = CATEGORY_NAMES.filter((c) => dumps.some((d) => (d.summary?.categories[c] ?? 0) > 0));
  const colors = categoryColors(cats);
  const max = Math.max(1, ...dumps.map((d) => d.summary?.allocatedBytes ?? 0));
  const W = 72;
  const H = 160;
  return (
    <figure className="series-chart" data-testid="series-chart">
      <svg
        width={dumps.length * W + 20}
        height={H + 36}
        role="img"
        aria-label={`Allocated per dump, by category: ${dumps.map((d) => `step ${d.step} ${formatBytes(d.summary?.allocatedBytes ?? 0)}`).join(", ")}`}
      >
        {dumps.map((d, i) => {
          let y = H;
          return (
            <g key={d.step} transform={`translate(${10 + i * W},8)`}>
              {cats.map((c, k) => {
                const v = d.summary?.categories[c] ?? 0;
                const h = (v / max) * H;
                y -= h;
                return (
                  <rect key={c} x={8} y={y} width={W - 24} height={h} fill={colors[k]}>
                    <title>{`step ${d.step}: ${c} ${formatBytes(v)} (${exactBytes(v)})`}</title>
                  </rect>
                );
              })}
              <text x={W / 2 - 4} y={H + 14} textAnchor="middle" className="series-axis">
                step {d.step}
              </text>
              <text x={W / 2 - 4} y={H + 27} textAnchor="middle" className="series-axis">
                {formatBytes(d.summary?.allocatedBytes ?? 0)}
              </text>
            </g>
          );
        })}
      </svg>
      <figcaption className="legend">
        {cats.map((c, k) => (
          <span key={c}>
            <span className="swatch" style={{ background: colors[k] }} />
            {c}
          </span>
        ))}
        <span className="muted small">one scale: the tallest bar is {formatBytes(max)} allocated</span>
      </figcaption>
    </figure>
  );
}

function GrowthTable({ rows, steps }: { rows: GrowthTableRow[]; steps: number[] }) {
  const selected = useSeries((s) => s.selected);
  const select = useSeries((s) => s.select);
  const shown = rows
    .filter((r) => r.kind !== "steady")
    .concat(rows.filter((r) => r.kind === "steady").slice(0, 5));
  return (
    <div className="series-table-box">
      <table
        className="num-table series-growth"
        data-testid="series-growth"
        aria-label="Growth per call site and category"
      >
        <thead>
          <tr>
            <th>kind</th>
            <th className="series-site">call site</th>
            <th>category</th>
            {steps.map((s) => (
              <th key={s}>step {s}</th>
            ))}
            <th title="The last dump minus the first">growth</th>
          </tr>
        </thead>
        <tbody>
          {shown.map((r) => {
            const isSel = selected?.site === r.site && selected.category === r.category;
            return (
              <tr
                key={`${r.site}\u0000${r.category}`}
                className={`series-row kind-${r.kind}${isSel ? " selected" : ""}`}
                data-kind={r.kind}
                aria-selected={isSel}
                onClick={() => select(isSel ? null : { site: r.site, category: r.category })}
              >
                <td>{KIND_TEXT[r.kind]}</td>
                <td className="series-site" title={r.site}>
                  {r.label}
                </td>
                <td>{r.category}</td>
                {r.liveBytesByStep.map((v, i) => (
                  <td key={steps[i]}>
                    <Bytes value={v} />
                  </td>
                ))}
                <td>
                  <Bytes value={r.growthBytes} signed />
                </td>
              </tr>
            );
          })}
        </tbody>
      </table>
      <p className="muted small">Click a row: its live bytes in each dump.</p>
    </div>
  );
}

function SiteDetail({ rows, steps }: { rows: GrowthTableRow[]; steps: number[] }) {
  const selected = useSeries((s) => s.selected);
  const row = rows.find((r) => r.site === selected?.site && r.category === selected?.category);
  if (!row) return null;
  const max = Math.max(1, ...row.liveBytesByStep);
  return (
    <div className="series-site-detail" data-testid="series-site">
      <h3>
        <span title={row.site}>{row.label}</span> ({row.category}): live bytes per dump
      </h3>
      <ul className="series-bars">
        {row.liveBytesByStep.map((v, i) => (
          <li key={steps[i]}>
            <span className="series-bar-label">step {steps[i]}</span>
            <span className="series-bar" style={{ width: `${(100 * v) / max}%` }} />
            <Bytes value={v} />
          </li>
        ))}
      </ul>
    </div>
  );
}

function CompareDumps({ dumps }: { dumps: { step: number; summary: DumpSummary | undefined }[] }) {
  const pair = useSeries((s) => s.pair);
  const setPair = useSeries((s) => s.setPair);
  const files = dumps
    .filter((d) => d.summary)
    .map((d) => ({ step: d.step, file: (d.summary as DumpSummary).file }));
  const a = dumps.find((d) => d.summary?.file === pair?.[0])?.summary;
  const b = dumps.find((d) => d.summary?.file === pair?.[1])?.summary;
  const c = useMemo(() => (a && b ? compareDumps(a, b, 10) : null), [a, b]);
  if (!pair || files.length < 2) return null;
  const pick = (k: 0 | 1) => (
    <select
      aria-label={k === 0 ? "Compare dump A" : "with dump B"}
      value={pair[k]}
      onChange={(e) => setPair(k === 0 ? [e.currentTarget.value, pair[1]] : [pair[0], e.currentTarget.value])}
    >
      {files.map((f) => (
        <option key={f.file} value={f.file}>
          step {f.step} — {f.file}
        </option>
      ))}
    </select>
  );
  return (
    <div className="series-compare" data-testid="series-compare">
      <h3>
        Compare {pick(0)} with {pick(1)}
      </h3>
      {c && (
        <>
          <p data-testid="series-compare-verdict">{c.verdict}</p>
          <table className="num-table">
            <tbody>
              {Object.entries(c.categories)
                .filter(([, v]) => v !== 0)
                .map(([k, v]) => (
                  <tr key={k}>
                    <td>{k}</td>
                    <td>
                      <Bytes value={v} signed />
                    </td>
                  </tr>
                ))}
              {c.callSites.map((s) => (
                <tr key={s.site}>
                  <td title={s.site}>
                    {s.label} ({s.category})
                  </td>
                  <td>
                    <Bytes value={s.deltaBytes} signed />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
    </div>
  );
}
