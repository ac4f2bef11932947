// Test helpers: read files and fingerprint models so two reads can be compared exactly.
import { readFileSync } from "node:fs";
import { basename } from "node:path";
import { bytesByteSource } from "../../src/core/formats/byte-source";
import { type ReadOptions, readSnapshot } from "../../src/core/formats/read";
import { stackFrames } from "../../src/core/model/builder";
import { idAt, type SnapshotModel } from "../../src/core/model/types";

export function readBytes(
  bytes: Uint8Array,
  name = "test.pickle",
  opts?: ReadOptions,
): Promise<SnapshotModel> {
  return readSnapshot(bytesByteSource(bytes, name), opts);
}

export function readPath(path: string, opts?: ReadOptions): Promise<SnapshotModel> {
  return readBytes(new Uint8Array(readFileSync(path)), basename(path), opts);
}

/** Everything a model says, as plain data with stacks spelled out (ids differ between reads). */
export function fingerprint(m: SnapshotModel): unknown {
  const stack = (s: number) => stackFrames(m, s).map((f) => `${f.filename}:${f.line}:${f.name}`);
  const segments = [];
  for (let i = 0; i < m.segments.length; i++) {
    const s = m.segments;
    segments.push([
      s.device[i],
      s.address[i],
      s.totalSizeBytes[i],
      s.allocatedSizeBytes[i],
      s.activeSizeBytes[i],
      s.requestedSizeBytes[i],
      s.streamRaw[i],
      s.segmentType[i],
      s.poolId0[i],
      s.poolId1[i],
      s.isExpandable[i],
      stack(s.stack[i]),
      s.blockCount[i],
    ]);
  }
  const blocks = [];
  for (let i = 0; i < m.blocks.length; i++) {
    const b = m.blocks;
    blocks.push([
      b.segment[i],
      b.address[i],
      b.sizeBytes[i],
      b.requestedSizeBytes[i],
      b.state[i],
      stack(b.stack[i]),
    ]);
  }
  const str = (i: number) => (i < 0 ? null : m.strings[i]);
  const traceRows = (t: SnapshotModel["traces"][number]) => {
    const rows = [];
    for (let i = 0; i < t.length; i++) {
      rows.push([
        m.actionNames[t.action[i]],
        t.addr[i],
        t.sizeBytes[i],
        t.streamRaw[i],
        t.timeUs[i],
        stack(t.stack[i]),
        t.deviceFreeBytes[i],
        str(idAt(t.compileContext, i)),
        str(idAt(t.userMetadata, i)),
        str(idAt(t.category, i)),
        t.isWorkspace[i],
        ...(t.forwardStack ? [stack(t.forwardStack[i])] : []),
      ]);
    }
    return rows;
  };
  const traces = m.traces.map(traceRows);
  const host = m.host
    ? {
        segments: m.host.segments.map((s) => ({ ...s, stack: stack(s.stack) })),
        trace: traceRows(m.host.trace),
      }
    : null;
  const blockForward = m.blocks.forwardStack ? Array.from(m.blocks.forwardStack, stack) : null;
  return {
    layout: m.layout,
    legacyHistory: m.legacyHistory,
    segments,
    blocks,
    traces,
    annotations: m.annotations,
    allocatorSettings: m.allocatorSettings,
    ...(host ? { host } : {}),
    ...(blockForward ? { blockForward } : {}),
  };
}
