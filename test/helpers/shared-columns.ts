// A model as a big read in a page that shares memory (or the CLI) has it: the trace columns an attribution
// helper reads in SharedArrayBuffers (src/core/attribution/handoff.ts reads a model only then).
import type { SnapshotModel } from "../../src/core/model/types";

/** The model with the trace columns the helper reads moved into shared memory, as a big read has them. */
export function withSharedColumns(model: SnapshotModel): SnapshotModel {
  const share = <T extends Uint8Array | Int32Array | Float64Array>(
    xs: T,
    make: (b: SharedArrayBuffer) => T,
  ) => {
    const out = make(new SharedArrayBuffer(xs.byteLength));
    out.set(xs as never);
    return out;
  };
  for (const t of model.traces) {
    t.action = share(t.action, (b) => new Uint8Array(b));
    t.addr = share(t.addr, (b) => new Float64Array(b));
    t.sizeBytes = share(t.sizeBytes, (b) => new Float64Array(b));
    t.stack = share(t.stack, (b) => new Int32Array(b));
  }
  return model;
}
