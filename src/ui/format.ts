// Number formatting for the views: binary units (KiB/MiB/GiB), exact bytes for title attributes,
// durations on a µs axis. Pure functions, no DOM.

export { exactBytes, formatBytes, formatBytesSigned, formatCount } from "../core/units";

export function formatPercent(fraction: number, digits = 1): string {
  if (!Number.isFinite(fraction)) return "—";
  return `${(fraction * 100).toFixed(digits)}%`;
}

/** A duration in µs as the largest readable unit: "850 µs", "12.5 ms", "3.20 s", "2 min 5 s". */
export function formatDurationUs(us: number): string {
  if (!Number.isFinite(us)) return "—";
  const a = Math.abs(us);
  const sign = us < 0 ? "−" : "";
  if (a < 1000) return `${sign}${trim(a, 0)} µs`;
  if (a < 1e6) return `${sign}${trim(a / 1e3, a < 1e4 ? 2 : 1)} ms`;
  if (a < 60e6) return `${sign}${trim(a / 1e6, a < 1e7 ? 3 : 2)} s`;
  const min = Math.floor(a / 60e6);
  const s = (a - min * 60e6) / 1e6;
  return `${sign}${min} min ${trim(s, 1)} s`;
}

function trim(v: number, digits: number): string {
  return v
    .toFixed(digits)
    .replace(/(\.\d*?)0+$/, "$1")
    .replace(/\.$/, "");
}

export function formatAddress(addr: number): string {
  if (!Number.isFinite(addr)) return "—";
  return `0x${addr.toString(16)}`;
}

/** Nice tick step for a byte axis: powers of two times 1, 2 or 5 in the current unit. */
export function byteTicks(max: number, approxCount: number): number[] {
  if (!(max > 0)) return [0];
  const raw = max / Math.max(1, approxCount);
  let unit = 1;
  while (unit * 1024 <= raw) unit *= 1024;
  const r = raw / unit;
  const m =
    r <= 1
      ? 1
      : r <= 2
        ? 2
        : r <= 5
          ? 5
          : r <= 10
            ? 10
            : r <= 20
              ? 20
              : r <= 50
                ? 50
                : r <= 100
                  ? 100
                  : r <= 200
                    ? 200
                    : 500;
  const step = m * unit;
  const out: number[] = [];
  for (let v = 0; v <= max * 1.0001; v += step) out.push(v);
  return out;
}
