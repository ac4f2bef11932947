// Totals from the segment fields, per device and overall, and category bytes from the blocks.
//
// What counts in a category: the rounded size of every `active_allocated` block. That is exactly what the
// segment field `allocated_size` counts; `active_pending_free` blocks (freed by the user, waiting on a stream
// event, see record_stream) count in `active_size` but not in `allocated_size`, so they are reported apart
// (`pendingFreeBytes`, by category too) and are in no category. When the active_allocated blocks of a
// device do not add up to Σ allocated_size, the difference is `reconciliationBytes`, so that
//   Σ categories + reconciliationBytes = allocatedBytes   exactly, per device and overall,
// and the active-total check fails (it names the numbers).

import type { Attribution } from "../attribution";
import { CATEGORY_NAMES } from "../attribution/rules";
import { BlockState, type SnapshotModel } from "../model/types";

export interface Totals {
  reservedBytes: number;
  activeBytes: number;
  allocatedBytes: number;
  /** Σ requested_size; null when a segment lacks the field. */
  requestedBytes: number | null;
}

export interface DeviceTotals extends Totals {
  device: number;
  segments: number;
  /** Bytes of active_allocated blocks per category id. */
  categoryBytes: number[];
  /** Bytes of active_pending_free blocks per category id. */
  pendingFreeCategoryBytes: number[];
  /** allocatedBytes − Σ active_allocated block sizes (0 when the blocks tile to allocated_size). */
  reconciliationBytes: number;
  blockAllocatedBytes: number;
  blockActiveBytes: number;
  blockTotalBytes: number;
}

export interface SnapshotTotals {
  overall: DeviceTotals;
  devices: DeviceTotals[];
}

const nCat = CATEGORY_NAMES.length;

function emptyDevice(device: number): DeviceTotals {
  return {
    device,
    segments: 0,
    reservedBytes: 0,
    activeBytes: 0,
    allocatedBytes: 0,
    requestedBytes: 0,
    categoryBytes: new Array(nCat).fill(0),
    pendingFreeCategoryBytes: new Array(nCat).fill(0),
    reconciliationBytes: 0,
    blockAllocatedBytes: 0,
    blockActiveBytes: 0,
    blockTotalBytes: 0,
  };
}

/** Devices that hold segments, in index order. */
export function segmentDevices(model: SnapshotModel): number[] {
  const set = new Set<number>();
  for (let s = 0; s < model.segments.length; s++) set.add(model.segments.device[s]);
  return [...set].sort((a, b) => a - b);
}

export function computeTotals(
  model: SnapshotModel,
  attribution: Attribution,
  extraDevices: number[] = [],
): SnapshotTotals {
  const byDevice = new Map<number, DeviceTotals>();
  const dev = (d: number) => {
    let t = byDevice.get(d);
    if (!t) byDevice.set(d, (t = emptyDevice(d)));
    return t;
  };
  for (const d of extraDevices) dev(d);
  const seg = model.segments;
  const blk = model.blocks;
  for (let s = 0; s < seg.length; s++) {
    const t = dev(seg.device[s]);
    t.segments++;
    t.reservedBytes += seg.totalSizeBytes[s];
    t.activeBytes += seg.activeSizeBytes[s];
    t.allocatedBytes += seg.allocatedSizeBytes[s];
    const req = seg.requestedSizeBytes[s];
    t.requestedBytes = t.requestedBytes === null || Number.isNaN(req) ? null : t.requestedBytes + req;
    const first = seg.firstBlock[s];
    const end = first + seg.blockCount[s];
    for (let b = first; b < end; b++) {
      const size = blk.sizeBytes[b];
      const state = blk.state[b];
      t.blockTotalBytes += size;
      if (state === BlockState.active_allocated) {
        t.blockAllocatedBytes += size;
        t.blockActiveBytes += size;
        t.categoryBytes[attribution.blockCategory[b]] += size;
      } else if (state === BlockState.active_pending_free) {
        t.blockActiveBytes += size;
        t.pendingFreeCategoryBytes[attribution.blockCategory[b]] += size;
      }
    }
  }
  const devices = [...byDevice.values()].sort((a, b) => a.device - b.device);
  const overall = emptyDevice(-1);
  for (const t of devices) {
    t.reconciliationBytes = t.allocatedBytes - t.blockAllocatedBytes;
    overall.segments += t.segments;
    overall.reservedBytes += t.reservedBytes;
    overall.activeBytes += t.activeBytes;
    overall.allocatedBytes += t.allocatedBytes;
    overall.requestedBytes =
      overall.requestedBytes === null || t.requestedBytes === null
        ? null
        : overall.requestedBytes + t.requestedBytes;
    overall.reconciliationBytes += t.reconciliationBytes;
    overall.blockAllocatedBytes += t.blockAllocatedBytes;
    overall.blockActiveBytes += t.blockActiveBytes;
    overall.blockTotalBytes += t.blockTotalBytes;
    for (let c = 0; c < nCat; c++) {
      overall.categoryBytes[c] += t.categoryBytes[c];
      overall.pendingFreeCategoryBytes[c] += t.pendingFreeCategoryBytes[c];
    }
  }
  return { overall, devices };
}

/** `{parameters: N, …, unknown: N}` from per-category-id bytes. */
export function categoryRecord(bytes: number[]): Record<string, number> {
  return Object.fromEntries(CATEGORY_NAMES.map((n, i) => [n, bytes[i]]));
}
