// Size formatting shared by the text report, the verdicts and the UI: MiB with 2 decimals.

export const MIB = 2 ** 20;

/** `12.34 MiB` */
export function formatMiB(bytes: number): string {
  return `${(bytes / MIB).toFixed(2)} MiB`;
}

/** `+12.34 MiB`, `-0.50 MiB`, `+0.00 MiB` (a signed delta). */
export function formatDeltaMiB(bytes: number): string {
  const s = (Math.abs(bytes) / MIB).toFixed(2);
  return `${bytes < 0 ? "-" : "+"}${s} MiB`;
}

/** `1,234,567 B` */
export { exactBytesShort as formatBytes } from "../units";
