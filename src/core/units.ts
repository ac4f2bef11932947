// Byte sizes for people, one implementation for the CLI, the worker and the page: binary units
// (KiB, MiB, GiB) with two decimals, and exact bytes for hovers.

const UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];

/** 1536 → "1.50 KiB"; negative values get a real minus sign. */
export function formatBytes(bytes: number, digits = 2): string {
  if (!Number.isFinite(bytes)) return "—";
  const neg = bytes < 0;
  let v = Math.abs(bytes);
  let u = 0;
  while (v >= 1024 && u < UNITS.length - 1) {
    v /= 1024;
    u++;
  }
  const text = u === 0 ? `${v} B` : `${v.toFixed(digits)} ${UNITS[u]}`;
  return neg ? `−${text}` : text;
}

/** Signed: "+10.00 MiB" / "−2.00 KiB" / "±0 B". */
export function formatBytesSigned(bytes: number): string {
  if (bytes === 0) return "±0 B";
  return bytes > 0 ? `+${formatBytes(bytes)}` : formatBytes(bytes);
}

/** Exact bytes with thousands separators, for hovers and reports: "1,048,576 bytes". */
export function exactBytes(bytes: number): string {
  if (!Number.isFinite(bytes)) return "unknown";
  return `${formatCount(bytes)} bytes`;
}

/** Exact bytes, short, for check details and report text: "1,048,576 B". */
export function exactBytesShort(bytes: number): string {
  return `${formatCount(bytes)} B`;
}

/**
 * A whole number with thousands separators: 1234567 → "1,234,567" (as toLocaleString("en-US"), without
 * Intl, whose first use costs tens of milliseconds in a fresh worker).
 */
export function formatCount(n: number): string {
  if (!Number.isFinite(n)) return "—";
  const whole = Math.round(Math.abs(n));
  let head = String(whole);
  let tail = "";
  while (head.length > 3) {
    tail = `,${head.slice(-3)}${tail}`;
    head = head.slice(0, -3);
  }
  return `${n < 0 && whole !== 0 ? "-" : ""}${head}${tail}`;
}

const SIZE_UNITS: Record<string, number> = {
  "": 1,
  b: 1,
  k: 1024,
  kib: 1024,
  kb: 1e3,
  m: 1024 ** 2,
  mib: 1024 ** 2,
  mb: 1e6,
  g: 1024 ** 3,
  gib: 1024 ** 3,
  gb: 1e9,
  t: 1024 ** 4,
  tib: 1024 ** 4,
  tb: 1e12,
};

/** "80GiB", "80 GB", "85,899,345,920" → bytes (whole, > 0); null when it is not a size. */
export function parseSize(text: string): number | null {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$/.exec(text.replace(/,/g, ""));
  const unit = m ? SIZE_UNITS[m[2].toLowerCase()] : undefined;
  if (!m || unit === undefined) return null;
  const v = Math.round(Number(m[1]) * unit);
  return v > 0 ? v : null;
}

/** A device capacity as typed, in bytes, and how the unit was read. */
export interface ParsedCapacity {
  bytes: number;
  /** Set when a decimal unit was read as binary: `"40 GB" read as 40 GiB (42,949,672,960 B)`. */
  note: string | null;
}

/**
 * A GPU's capacity as people write it: "40 GB", "80GiB", "24g", "85899345920". GPU memory is quoted in
 * binary units whatever the label ("A100 40 GB" has 40 GiB), so KB / MB / GB / TB mean KiB / MiB / GiB /
 * TiB here, and the note says so; null when it is not a size.
 */
export function parseCapacity(text: string): ParsedCapacity | null {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$/.exec(text.replace(/,/g, ""));
  if (!m) return null;
  const unit = m[2].toLowerCase();
  const decimal = /^[kmgt]b$/.test(unit);
  const bytes = parseSize(decimal ? `${m[1]}${unit[0]}ib` : `${m[1]}${unit}`);
  if (bytes === null) return null;
  if (!decimal) return { bytes, note: null };
  const binary = `${m[1]} ${unit[0].toUpperCase()}iB`;
  return {
    bytes,
    note: `"${text.trim()}" read as ${binary} (${exactBytesShort(bytes)}): GPU memory sizes are binary`,
  };
}
