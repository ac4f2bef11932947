// Helpers for the attribution / checks / compare / report tests: small models built with ModelBuilder.

import { ModelBuilder } from "../src/core/model/builder";
import type { SnapshotModel } from "../src/core/model/types";

export type Frames = readonly (readonly [string, number, string])[];

export interface BlockSpec {
  size: number;
  state?: "active_allocated" | "active_pending_free" | "inactive";
  frames?: Frames;
}

export interface SegmentSpec {
  device?: number;
  address?: number;
  blocks: BlockSpec[];
  /** Defaults: Σ block sizes, Σ active_allocated, Σ active (allocated + pending free). */
  totalSizeBytes?: number;
  allocatedSizeBytes?: number;
  activeSizeBytes?: number;
}

export function internStack(b: ModelBuilder, frames: Frames | undefined): number {
  if (!frames || frames.length === 0) return 0;
  return b.internStack(frames.map(([f, l, n]) => b.internFrame(f, l, n)));
}

/** A model whose segments hold the given blocks; segment fields default to what the blocks add up to. */
export function buildModel(
  segments: SegmentSpec[],
  traces: {
    device: number;
    entries: { action: string; addr?: number; size?: number; frames?: Frames; category?: string }[];
  }[] = [],
  fileName = "planted.pickle",
): SnapshotModel {
  const b = new ModelBuilder();
  let next = 0x7f0000000000;
  for (const s of segments) {
    const sum = (pred: (x: BlockSpec) => boolean) => s.blocks.filter(pred).reduce((n, x) => n + x.size, 0);
    const address = s.address ?? next;
    const total = s.totalSizeBytes ?? sum(() => true);
    next = address + Math.max(total, 2 ** 21);
    b.addSegment({
      device: s.device ?? 0,
      address,
      totalSizeBytes: total,
      allocatedSizeBytes:
        s.allocatedSizeBytes ?? sum((x) => (x.state ?? "active_allocated") === "active_allocated"),
      activeSizeBytes: s.activeSizeBytes ?? sum((x) => (x.state ?? "active_allocated") !== "inactive"),
      requestedSizeBytes: sum((x) => (x.state ?? "active_allocated") === "active_allocated"),
      segmentType: "large",
    });
    for (const blk of s.blocks) {
      b.addBlock({
        sizeBytes: blk.size,
        state: blk.state ?? "active_allocated",
        stack: internStack(b, blk.frames),
      });
    }
  }
  for (const t of traces) {
    b.ensureDevices(t.device + 1);
    for (const e of t.entries) {
      b.addTraceEntry(t.device, {
        action: e.action,
        addr: e.addr,
        sizeBytes: e.size,
        stack: internStack(b, e.frames),
        category: e.category,
      });
    }
  }
  return b.finish({ fileName, byteLength: 0, format: "pickle", pickleProtocol: 4, notes: [] });
}

export const MiB = 2 ** 20;
