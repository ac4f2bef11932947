// Node-side file access for the CLI: a ByteSource over a file handle, with errors a user can act on.

import { open } from "node:fs/promises";
import { basename } from "node:path";
import { type AttributionHelper, streamingTo } from "../core/attribution/handoff";
import type { ByteSource } from "../core/formats/byte-source";
import { permissionDenied, SnapshotReadError } from "../core/formats/errors";
import { type ReadOptions, readSnapshot } from "../core/formats/read";
import type { SnapshotModel } from "../core/model/types";
import { nodeWarmMemory } from "./warm-memory";

export async function withFileSource<T>(path: string, use: (src: ByteSource) => Promise<T>): Promise<T> {
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(path, "r");
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === "EACCES" || code === "EPERM") throw permissionDenied(path);
    if (code === "ENOENT") throw new SnapshotReadError("io", `${path}: no such file.`);
    if (code === "EISDIR")
      throw new SnapshotReadError("io", `${path} is a directory; give the snapshot file inside it.`);
    throw new SnapshotReadError("io", `${path} could not be opened: ${(e as Error).message}`);
  }
  try {
    const { size } = await handle.stat();
    const src: ByteSource = {
      name: basename(path),
      sizeBytes: size,
      read: async (offset, length) => {
        const buf = new Uint8Array(length);
        const { bytesRead } = await handle.read(buf, 0, length, offset);
        return bytesRead === length ? buf : buf.subarray(0, bytesRead);
      },
      // Lets the reader recycle its slice buffers instead of faulting in fresh memory per slice.
      readInto: async (offset, target) =>
        target.subarray(0, (await handle.read(target, 0, target.length, offset)).bytesRead),
      // (so the scanner's memory takes the slices: scanned where they are, no copy into its window)
      readsInPlace: true,
    };
    return await use(src);
  } finally {
    await handle.close();
  }
}

/**
 * The slices a file is read in. Small, because the slices' memory is recycled once read (readChunks), and
 * until then each slice is fresh memory the kernel writes the file into: the parser's first pass over
 * such memory ran at ≈ 0.7 GB/s on this project's machine against ≈ 15 GB/s over memory already used
 * (16 MB slices, three of them fresh: 85 of a 101 MB read's 450 ms in the scanner's window copy).
 */
const SLICE_BYTES = 4 << 20;

/**
 * Reads a snapshot file; unless told otherwise, a worker thread faults in its trace columns' memory, and
 * `helper`, if given, pairs the trace as it is read (attribution/streamed-pairing.ts).
 */
export async function readSnapshotFile(
  path: string,
  opts?: ReadOptions,
  helper?: AttributionHelper | null,
): Promise<SnapshotModel> {
  const own = opts?.warmMemory === undefined ? nodeWarmMemory() : null;
  const warm = own ?? opts?.warmMemory ?? null;
  const sized: ReadOptions = { chunkBytes: SLICE_BYTES, ...opts };
  try {
    return await withFileSource(path, (src) =>
      readSnapshot(src, warm ? { ...sized, warmMemory: helper ? streamingTo(warm, helper) : warm } : sized),
    );
  } finally {
    own?.release();
  }
}
