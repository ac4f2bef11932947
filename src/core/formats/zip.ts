// Finds the snapshot inside a .zip (stored or deflated; zip64 sizes understood) and yields its bytes.

import { type ByteSource, readChunks } from "./byte-source";
import { inflate } from "./compression";
import { SnapshotReadError } from "./errors";

interface ZipEntry {
  name: string;
  method: number;
  compressedBytes: number;
  uncompressedBytes: number;
  localHeaderOffset: number;
}

const EOCD_SIG = 0x06054b50;
const CEN_SIG = 0x02014b50;
const LOC_SIG = 0x04034b50;
const ZIP64_EOCD_LOCATOR_SIG = 0x07064b50;

function u16(b: Uint8Array, p: number): number {
  return b[p] | (b[p + 1] << 8);
}
function u32(b: Uint8Array, p: number): number {
  return (b[p] | (b[p + 1] << 8) | (b[p + 2] << 16) | (b[p + 3] << 24)) >>> 0;
}
function u64(b: Uint8Array, p: number): number {
  return u32(b, p + 4) * 4294967296 + u32(b, p);
}

function corrupt(src: ByteSource, what: string, offset: number | null): SnapshotReadError {
  return new SnapshotReadError(
    offset === null ? "corrupt" : "truncated",
    `${src.name} is a zip archive but ${what}${offset === null ? "" : ` (at byte ${offset})`}. Re-create the zip, or unzip it and open the snapshot inside.`,
    offset,
  );
}

async function listEntries(src: ByteSource): Promise<ZipEntry[]> {
  const tailBytes = Math.min(src.sizeBytes, 65_557);
  const tailStart = src.sizeBytes - tailBytes;
  const tail = await src.read(tailStart, tailBytes);
  let eocd = -1;
  for (let i = tail.length - 22; i >= 0; i--) {
    if (u32(tail, i) === EOCD_SIG) {
      eocd = i;
      break;
    }
  }
  if (eocd < 0)
    throw corrupt(
      src,
      "its end-of-archive record is missing (the file is probably cut short)",
      src.sizeBytes,
    );
  let count = u16(tail, eocd + 10);
  let cdSize = u32(tail, eocd + 12);
  let cdOffset = u32(tail, eocd + 16);
  if (eocd >= 20 && u32(tail, eocd - 20) === ZIP64_EOCD_LOCATOR_SIG) {
    const z64 = await src.read(u64(tail, eocd - 20 + 8), 56);
    count = u64(z64, 32);
    cdSize = u64(z64, 40);
    cdOffset = u64(z64, 48);
  }
  if (cdOffset + cdSize > src.sizeBytes)
    throw corrupt(src, "its directory points past the end of the file", cdOffset);
  const cd = await src.read(cdOffset, cdSize);
  const entries: ZipEntry[] = [];
  let p = 0;
  for (let i = 0; i < count && p + 46 <= cd.length; i++) {
    if (u32(cd, p) !== CEN_SIG) throw corrupt(src, "its directory is damaged", null);
    const nameLen = u16(cd, p + 28);
    const extraLen = u16(cd, p + 30);
    const commentLen = u16(cd, p + 32);
    const name = new TextDecoder().decode(cd.subarray(p + 46, p + 46 + nameLen));
    let compressedBytes = u32(cd, p + 20);
    let uncompressedBytes = u32(cd, p + 24);
    let localHeaderOffset = u32(cd, p + 42);
    // zip64 extra field: present values replace the 0xFFFFFFFF placeholders, in this order.
    for (let e = p + 46 + nameLen; e + 4 <= p + 46 + nameLen + extraLen; ) {
      const id = u16(cd, e);
      const len = u16(cd, e + 2);
      if (id === 0x0001) {
        let q = e + 4;
        if (uncompressedBytes === 0xffffffff) {
          uncompressedBytes = u64(cd, q);
          q += 8;
        }
        if (compressedBytes === 0xffffffff) {
          compressedBytes = u64(cd, q);
          q += 8;
        }
        if (localHeaderOffset === 0xffffffff) localHeaderOffset = u64(cd, q);
      }
      e += 4 + len;
    }
    entries.push({ name, method: u16(cd, p + 10), compressedBytes, uncompressedBytes, localHeaderOffset });
    p += 46 + nameLen + extraLen + commentLen;
  }
  return entries;
}

/** Picks the snapshot entry and returns a stream of its uncompressed bytes. */
export async function openZipEntry(
  src: ByteSource,
  chunkBytes: number,
): Promise<{ name: string; uncompressedBytes: number; chunks: AsyncIterable<Uint8Array> }> {
  const files = (await listEntries(src)).filter(
    (e) => !e.name.endsWith("/") && !e.name.startsWith("__MACOSX/"),
  );
  if (files.some((e) => e.name === "data.pkl" || e.name.endsWith("/data.pkl"))) {
    throw new SnapshotReadError(
      "not-snapshot",
      `${src.name} is a torch.save() checkpoint (a zip with data.pkl), not a memory snapshot. Open the file written by torch.cuda.memory._dump_snapshot().`,
    );
  }
  if (files.length === 0)
    throw new SnapshotReadError("not-snapshot", `${src.name} is an empty zip archive: it holds no snapshot.`);
  const preferred = files.filter((e) => /\.(pickle|pkl|json|pt|bin)$/i.test(e.name));
  const entry = (preferred.length > 0 ? preferred : files).reduce((a, b) =>
    b.uncompressedBytes > a.uncompressedBytes ? b : a,
  );
  const local = await src.read(entry.localHeaderOffset, 30);
  if (local.length < 30 || u32(local, 0) !== LOC_SIG)
    throw corrupt(src, `the entry ${entry.name} is damaged`, entry.localHeaderOffset);
  const dataStart = entry.localHeaderOffset + 30 + u16(local, 26) + u16(local, 28);
  if (dataStart + entry.compressedBytes > src.sizeBytes) {
    throw corrupt(src, `the entry ${entry.name} runs past the end of the file`, src.sizeBytes);
  }
  const slice: ByteSource = {
    name: `${src.name}:${entry.name}`,
    sizeBytes: entry.compressedBytes,
    read: (offset, length) => src.read(dataStart + offset, length),
  };
  if (entry.method === 0)
    return {
      name: entry.name,
      uncompressedBytes: entry.uncompressedBytes,
      chunks: readChunks(slice, chunkBytes),
    };
  if (entry.method === 8) {
    return {
      name: entry.name,
      uncompressedBytes: entry.uncompressedBytes,
      chunks: inflate(readChunks(slice, chunkBytes), "deflate-raw"),
    };
  }
  throw new SnapshotReadError(
    "corrupt",
    `${src.name}: the entry ${entry.name} uses zip compression method ${entry.method}, which peakscope cannot read. Re-zip it with plain deflate, or unzip it and open the snapshot.`,
  );
}
