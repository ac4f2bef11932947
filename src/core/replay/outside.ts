// Memory outside the caching allocator at an OOM: the device's total − what the device reported free
// (the oom entry's device_free, from cudaMemGetInfo) − what the caching allocator had reserved then. It is
// what NCCL, the CUDA context, other processes and other allocators held (pytorch#147179: nvidia-smi shows
// more than PyTorch reserved). Without the total it cannot be known: null.

import type { CountersSidecar } from "../model/types";
import { formatBytes } from "../units";

/** The device total for `device`: an explicit figure, else the counters sidecar's (when it names that device). */
export function deviceTotalFor(
  device: number,
  counters: CountersSidecar | null,
  explicitBytes?: number | null,
): number | null {
  if (explicitBytes !== undefined && explicitBytes !== null && Number.isFinite(explicitBytes))
    return explicitBytes;
  const total = counters?.deviceTotalBytes ?? null;
  if (total === null || !Number.isFinite(total)) return null;
  if (counters?.device !== null && counters?.device !== undefined && counters.device !== device) return null;
  return total;
}

/** total − free − reserved, or null when the total or device_free is unknown. */
export function outsideAllocatorBytes(
  totalBytes: number | null,
  deviceFreeBytes: number | null,
  reservedBytes: number,
): number | null {
  if (totalBytes === null || deviceFreeBytes === null) return null;
  return totalBytes - deviceFreeBytes - reservedBytes;
}

/** The sentence the report and the page add to an OOM's explanation. */
export function outsideSentence(
  totalBytes: number | null,
  deviceFreeBytes: number | null,
  reservedBytes: number,
): string {
  const outside = outsideAllocatorBytes(totalBytes, deviceFreeBytes, reservedBytes);
  if (outside === null || totalBytes === null || deviceFreeBytes === null) {
    return deviceFreeBytes === null
      ? ""
      : "; the device's total is unknown, so the memory held outside the caching allocator cannot be told (give --device-total, or a counters sidecar with device_total_bytes)";
  }
  return (
    `; ${formatBytes(outside)} was held outside PyTorch's caching allocator (NCCL, the CUDA context, other processes or allocators): ` +
    `device total ${formatBytes(totalBytes)} − ${formatBytes(deviceFreeBytes)} free − ${formatBytes(reservedBytes)} reserved`
  );
}
