// Byte sizes for people: binary units (KiB, MiB, GiB) with two decimals, sign kept for deltas.

const UNITS = ["B", "KiB", "MiB", "GiB", "TiB"];

export function formatBytes(bytes: number, opts: { signed?: boolean } = {}): string {
  if (!Number.isFinite(bytes)) return "–";
  const sign = bytes < 0 ? "−" : opts.signed ? "+" : "";
  let v = Math.abs(bytes);
  let u = 0;
  while (v >= 1024 && u < UNITS.length - 1) {
    v /= 1024;
    u++;
  }
  return `${sign}${u === 0 ? v.toFixed(0) : v.toFixed(2)} ${UNITS[u]}`;
}

/** Exact bytes with thousands separators, for hovers and reports: "1,048,576 bytes". */
export function exactBytes(bytes: number): string {
  return `${Math.round(bytes).toLocaleString("en-US")} bytes`;
}
