// `prof.export_memory_timeline(path, device=…)` files → the model. Two forms (the suffix chose it when
// written; we tell them apart by shape): `.raw.json.gz` rows `[t_ns, action, bytes, category]` and the
// `.json` form `[times_us, sizes]` (sizes[k]: 9 slots, slot 0 unused, slot c+1 = live bytes of
// category c after time k). Neither names tensors or addresses, so each category becomes one level:
// when its live bytes change, the block holding that level is freed and one of the new level made.
// The curve and what the peak held are then exactly PyTorch's own numbers, in PyTorch's categories.

import { ModelBuilder } from "../../model/builder";
import type { SnapshotModel } from "../../model/types";
import { SnapshotReadError } from "../errors";

/** PyTorch's _CATEGORY_TO_INDEX order; index 7 is "no category" (unknown). */
export const TIMELINE_CATEGORIES = [
  "parameter",
  "optimizer_state",
  "input",
  "temporary",
  "activation",
  "gradient",
  "autograd_detail",
  "unknown",
] as const;

/** Whether a parsed JSON value is one of the two timeline forms. */
export function timelineForm(v: unknown): "raw" | "coalesced" | null {
  if (!Array.isArray(v) || v.length === 0) return null;
  const first = v[0];
  if (!Array.isArray(first)) return null;
  if (
    v.length === 2 &&
    Array.isArray(v[1]) &&
    first.length === v[1].length &&
    (first.length === 0 || (typeof first[0] === "number" && Array.isArray(v[1][0])))
  )
    return "coalesced";
  if (first.length === 4 && first.every((x) => typeof x === "number")) return "raw";
  return null;
}

const LEVEL_ADDRESS = 2 ** 48;
const LEVEL_STRIDE = 2 ** 40;

class Levels {
  readonly level = new Float64Array(8);
  private readonly open = new Uint8Array(8);
  private readonly generation = new Float64Array(8);
  negative = 0;
  constructor(private readonly b: ModelBuilder) {}

  private addr(c: number): number {
    return LEVEL_ADDRESS + c * LEVEL_STRIDE + (this.generation[c] % 2) * 512;
  }

  set(c: number, bytes: number, timeUs: number): void {
    if (bytes === this.level[c]) return;
    if (bytes < 0) {
      this.negative++;
      bytes = 0;
    }
    if (this.open[c]) {
      const a = this.addr(c);
      this.b.addTraceEntry(0, { action: "free_requested", addr: a, sizeBytes: this.level[c], timeUs });
      this.b.addTraceEntry(0, { action: "free_completed", addr: a, sizeBytes: this.level[c], timeUs });
      this.open[c] = 0;
      this.generation[c]++;
    }
    this.level[c] = bytes;
    if (bytes > 0) {
      this.b.addTraceEntry(0, {
        action: "alloc",
        addr: this.addr(c),
        sizeBytes: bytes,
        timeUs,
        category: TIMELINE_CATEGORIES[c],
      });
      this.open[c] = 1;
    }
  }
}

function bad(fileName: string, what: string): never {
  throw new SnapshotReadError(
    "corrupt",
    `${fileName}: ${what}. It starts like an export_memory_timeline file but is damaged; export it again.`,
  );
}

export function readMemoryTimeline(
  v: unknown[],
  form: "raw" | "coalesced",
  fileName: string,
  byteLength: number,
): SnapshotModel {
  const b = new ModelBuilder();
  const levels = new Levels(b);
  const running = new Float64Array(8);
  if (form === "raw") {
    let tMin = Number.POSITIVE_INFINITY;
    for (const row of v)
      if (Array.isArray(row) && typeof row[0] === "number" && row[0] >= 0) tMin = Math.min(tMin, row[0]);
    if (!Number.isFinite(tMin)) tMin = 0;
    for (let r = 0; r < v.length; r++) {
      const row = v[r];
      if (!Array.isArray(row) || row.length !== 4 || !row.every((x) => typeof x === "number")) {
        bad(fileName, `row ${r} is not [t, action, bytes, category]`);
      }
      const [t, action, bytes, cat] = row as number[];
      if (!(action >= 1 && action <= 4) || !(cat >= 0 && cat <= 7) || !Number.isInteger(cat)) {
        bad(fileName, `row ${r} has action ${action} / category ${cat} (expected 1–4 / 0–7)`);
      }
      if (!Number.isFinite(bytes) || Math.abs(bytes) > Number.MAX_SAFE_INTEGER) {
        bad(fileName, `row ${r} has ${bytes} bytes, beyond any real size`);
      }
      running[cat] += bytes;
      levels.set(cat, running[cat], (t < 0 ? tMin : t) / 1000);
    }
  } else {
    const [times, sizes] = v as [unknown[], unknown[]];
    for (let k = 0; k < times.length; k++) {
      const t = times[k];
      const s = sizes[k];
      if (typeof t !== "number" || !Array.isArray(s) || s.length < 9) {
        bad(fileName, `step ${k} is not a time with 9 category sizes`);
      }
      const row = s as unknown[];
      for (let c = 0; c < 8; c++) {
        const bytes = row[c + 1];
        if (
          typeof bytes !== "number" ||
          !Number.isFinite(bytes) ||
          Math.abs(bytes) > Number.MAX_SAFE_INTEGER
        ) {
          bad(fileName, `step ${k} has a size that is not a byte count (${String(bytes)})`);
        }
      }
      // what shrinks first, then what grows: no moment in between is above either step's total
      for (let c = 0; c < 8; c++)
        if ((row[c + 1] as number) < levels.level[c]) levels.set(c, row[c + 1] as number, t);
      for (let c = 0; c < 8; c++)
        if ((row[c + 1] as number) > levels.level[c]) levels.set(c, row[c + 1] as number, t);
    }
  }
  const notes: string[] = [];
  if (levels.negative > 0) {
    notes.push(
      `${levels.negative} times a category's live bytes went below zero in the file (a tensor destroyed before it was made); it was taken as zero.`,
    );
  }
  b.ensureDevices(1);
  return b.finish({
    kind: "memory-timeline",
    lacks: [
      "No segments, addresses or stacks: an export_memory_timeline file holds live bytes per category over time, so there is no segment map, no fragmentation and no call site.",
      "Categories are PyTorch's own (torch/profiler/_memory_profiler.py): PARAMETER, OPTIMIZER_STATE, INPUT, ACTIVATION, GRADIENT as ours; TEMPORARY and AUTOGRAD_DETAIL are our temporary; no category is unknown.",
      "One device, which the file does not name (the device= given to export_memory_timeline); shown as cuda:0.",
      "Each category is drawn as one level: the file does not separate tensors of the same category.",
    ],
    noSegments: true,
    exactSizes: true,
    devices: [{ deviceType: "cuda", deviceId: 0 }],
    fileName,
    byteLength,
    format: "timeline-json",
    pickleProtocol: null,
    notes,
  });
}
