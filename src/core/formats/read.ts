// The one entry point: bytes in, SnapshotModel out. Sniffs the content (never the file name), streams
// it through the right decoder and the unpickler, and turns every failure into a SnapshotReadError.

import { SnapshotAssembler } from "../model/assemble";
import type { LoadPreview } from "../model/preview";
import { dropRecycledMemory } from "../model/recycled-memory";
import type { InputFormat, SnapshotModel } from "../model/types";
import { MIN_WARM_BYTES, type WarmMemory } from "../model/warm-memory";
import { nextTask } from "../next-task";
import { PickleError } from "../pickle/errors";
import { type UnpickleLimits, Unpickler } from "../pickle/unpickler";
import { readArtifactJson, readHtmlArtifact, readTraceIfChromeTrace } from "./artifacts/read-artifact";
import { type ByteSource, bytesByteSource, readChunks, readFirstSlice } from "./byte-source";
import { inflate } from "./compression";
import { SnapshotReadError } from "./errors";
import { jsonToValues, parseJsonText } from "./json";
import { openZipEntry } from "./zip";

export interface ReadProgress {
  phase: "reading" | "parsing" | "building";
  bytesDone: number;
  bytesTotal: number;
}

export interface ReadOptions {
  /** Slice size; tests shrink it to exercise chunk boundaries. */
  chunkBytes?: number;
  /** Slices after the first grow fourfold up to this (default: all slices are `chunkBytes`). */
  maxChunkBytes?: number;
  /** Slices read ahead of the one being parsed (default 1). */
  readAhead?: number;
  onProgress?: (p: ReadProgress) => void;
  /** Called at most every `previewEveryMs` while parsing, with memory over the entries read so far. */
  onPreview?: (p: LoadPreview) => void;
  previewEveryMs?: number;
  previewBuckets?: number;
  signal?: AbortSignal;
  limits?: Partial<UnpickleLimits>;
  /** "js": parse trace entries with the JavaScript scanner alone (default: WebAssembly where it runs). */
  scanner?: "wasm" | "js";
  /** Memory another thread faults in ahead of need, for the trace's columns (see model/warm-memory.ts). */
  warmMemory?: WarmMemory;
}

const DEFAULT_CHUNK_BYTES = 16 << 20;
/** The most bytes parsed in one go before the next task (see unpickle()). */
const FEED_BYTES = 4 << 20;

/** JSON is parsed as one string; V8 strings stop near 512 MiB. */
const MAX_JSON_BYTES = 400 << 20;

type Kind = "pickle" | "gzip" | "zip" | "json" | "html";

export function sniff(head: Uint8Array): Kind | null {
  const b0 = head[0];
  if (b0 === 0x80) return "pickle";
  if (b0 === 0x1f && head[1] === 0x8b) return "gzip";
  if (b0 === 0x50 && head[1] === 0x4b && (head[2] === 0x03 || head[2] === 0x05)) return "zip";
  // Protocol 0/1 pickles start with MARK, EMPTY_DICT or EMPTY_LIST.
  if (b0 === 0x28 || b0 === 0x7d || b0 === 0x5d) return "pickle";
  // A protocol 0 pickle that opens with GLOBAL ("cmodule\nname\n"): let the unpickler refuse it by name.
  if (b0 === 0x63 && /^c[\w.]+\n[\w.]+\n/.test(String.fromCharCode(...head.subarray(0, 64)))) return "pickle";
  let i = 0;
  while (i < head.length && (head[i] === 0x20 || head[i] === 0x0a || head[i] === 0x0d || head[i] === 0x09))
    i++;
  if (head[i] === 0x7b || head[i] === 0x5b) return "json";
  // an HTML page: a MemoryViz page holds a snapshot (formats/artifacts/memoryviz-html.ts)
  if (
    /^(?:\xef\xbb\xbf)?\s*<(?:!doctype|html|head|body|meta|script|!--)/i.test(
      String.fromCharCode(...head.subarray(0, 64)),
    )
  )
    return "html";
  if (
    i === 0 &&
    head[0] === 0xef &&
    head[1] === 0xbb &&
    head[2] === 0xbf &&
    (head[3] === 0x7b || head[3] === 0x5b)
  )
    return "json";
  return null;
}

/** Names what a file that is not a snapshot looks like, so the message can say so. */
function describeForeign(head: Uint8Array): string {
  const ascii = String.fromCharCode(...head.subarray(0, 16));
  if (ascii.startsWith("\x89PNG")) return "a PNG image";
  if (ascii.startsWith("%PDF")) return "a PDF document";
  if (ascii.startsWith("\xff\xd8\xff")) return "a JPEG image";
  if (/^\s*<(!doctype|html|\?xml)/i.test(ascii)) return "an HTML or XML document";
  if (ascii.startsWith("\x7fELF")) return "an executable";
  if (ascii.startsWith("BZh")) return "a bzip2 archive (decompress it first)";
  if (ascii.startsWith("\xfd7zXZ")) return "an xz archive (decompress it first)";
  if (ascii.startsWith("\x28\xb5\x2f\xfd")) return "a zstd archive (decompress it first)";
  const printable = head.every((c) => c === 9 || c === 10 || c === 13 || (c >= 32 && c < 127));
  if (printable) return `text starting ${JSON.stringify(ascii.slice(0, 12))}`;
  const hex = Array.from(head.subarray(0, 4), (c) => c.toString(16).padStart(2, "0")).join(" ");
  return `binary data starting with bytes ${hex}`;
}

function checkAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new SnapshotReadError("cancelled", "Loading was cancelled.");
}

function translate(e: unknown, fileName: string, format: InputFormat): SnapshotReadError {
  if (e instanceof SnapshotReadError) {
    return e.message.includes(fileName)
      ? e
      : new SnapshotReadError(e.code, `${fileName}: ${e.message}`, e.offset);
  }
  const where = format === "pickle" ? "" : " (offsets count decompressed bytes)";
  if (e instanceof PickleError) {
    switch (e.kind) {
      case "truncated":
        return new SnapshotReadError(
          "truncated",
          `${fileName} is truncated: ${e.message}${where}. The file was cut short (an interrupted dump, download or copy); write or copy it again.`,
          e.offset,
        );
      case "unsafe":
        return new SnapshotReadError("unsafe", `${fileName} was refused: ${e.message}${where}.`, e.offset);
      case "limit":
        return new SnapshotReadError(
          "too-large",
          `${fileName} exceeds a safety limit at byte ${e.offset}${where}: ${e.message}. A real snapshot does not do this; the file is probably damaged.`,
          e.offset,
        );
      default:
        return new SnapshotReadError(
          "corrupt",
          `${fileName} is not a readable pickle: ${e.message}${where}. The file is damaged or not a snapshot; dump it again.`,
          e.offset,
        );
    }
  }
  const message = e instanceof Error ? e.message : String(e);
  if (
    /incorrect header|invalid|unexpected end|premature|TypeError: .*(compress|stream)/i.test(message) ||
    format !== "pickle"
  ) {
    return new SnapshotReadError(
      "corrupt",
      `${fileName}: the compressed data is damaged or cut short (${message}). Compress or copy the snapshot again.`,
    );
  }
  return new SnapshotReadError("io", `${fileName} could not be read: ${message}`);
}

async function unpickle(
  chunks: AsyncIterable<Uint8Array>,
  assembler: SnapshotAssembler,
  totalBytes: number | null,
  opts: ReadOptions,
  progressTotal: number,
  progressOf: () => number,
): Promise<{ root: unknown; protocol: number | null; trailingBytes: number }> {
  const u = new Unpickler({
    hooks: assembler.hooks,
    scanner: assembler.scanner,
    limits: opts.limits,
    totalBytes: totalBytes ?? undefined,
  });
  assembler.attachMemo(u.memo);
  let lastPreview = Number.NEGATIVE_INFINITY; // the first slice gives a picture at once
  const parseStart = performance.now();
  // Where trace entries began (stream offset), to size the columns once from the bytes per entry.
  let entriesFrom = -1;
  let rowsFrom = 0;
  let sized = false;
  for await (const chunk of chunks) {
    // A big slice is parsed in pieces with a task boundary between them: a browser delivers the bytes
    // of the slice being read ahead on this same thread, between tasks, so this is what lets reading
    // overlap parsing (and Cancel is seen sooner).
    for (let at = 0; at < chunk.length; at += FEED_BYTES) {
      if (at > 0) await nextTask();
      checkAborted(opts.signal);
      u.feed(chunk.subarray(at, Math.min(chunk.length, at + FEED_BYTES)));
      if (!sized && totalBytes !== null) {
        if (entriesFrom < 0) {
          if (assembler.stagedRows > 0) {
            entriesFrom = u.offset;
            rowsFrom = assembler.stagedRows;
          }
        } else if (u.offset > entriesFrom) {
          const perByte = (assembler.stagedRows - rowsFrom) / (u.offset - entriesFrom);
          assembler.expectRows(Math.ceil(assembler.stagedRows + perByte * (totalBytes - u.offset) * 1.1));
          sized = true;
        }
      }
      opts.warmMemory?.onRowsWritten?.(assembler.stagedRows);
      opts.onProgress?.({ phase: "parsing", bytesDone: progressOf(), bytesTotal: progressTotal });
      const now = performance.now();
      const every = opts.previewEveryMs ?? 250;
      if (opts.onPreview && now - lastPreview >= every) {
        // (not when the whole file, at this pace, is read before the next one would come: the full
        // picture follows at once, and the preview's pass over the entries would only delay it)
        const done = progressTotal > 0 ? progressOf() / progressTotal : 0;
        const restMs = done > 0 ? ((now - parseStart) * (1 - done)) / done : Number.POSITIVE_INFINITY;
        if (lastPreview === Number.NEGATIVE_INFINITY || restMs >= every) {
          opts.onPreview(assembler.preview(opts.previewBuckets ?? 800));
          lastPreview = performance.now();
        }
      }
    }
    if (u.done && totalBytes === null) break;
  }
  return { root: u.finish(), protocol: u.protocol, trailingBytes: u.trailingBytes };
}

/**
 * Counts bytes flowing through an iterable (compressed input progress), and the slices in shared memory
 * (the scanner's, read into it to be scanned in place).
 */
function counting(
  chunks: AsyncIterable<Uint8Array>,
  counter: { bytes: number; inPlace: number },
): AsyncIterable<Uint8Array> {
  return {
    async *[Symbol.asyncIterator]() {
      for await (const c of chunks) {
        counter.bytes += c.length;
        if (typeof SharedArrayBuffer === "function" && c.buffer instanceof SharedArrayBuffer)
          counter.inPlace++;
        yield c;
      }
    },
  };
}

export async function readSnapshot(src: ByteSource, opts: ReadOptions = {}): Promise<SnapshotModel> {
  const chunkBytes = opts.chunkBytes ?? DEFAULT_CHUNK_BYTES;
  const name = src.name;
  dropRecycledMemory(); // an earlier load's leftovers are not this one's to hold
  if (src.sizeBytes === 0) {
    throw new SnapshotReadError(
      "empty",
      `${name} is empty (0 bytes). The dump was interrupted or never written; run _dump_snapshot() again and open the new file.`,
      0,
    );
  }
  const firstSlice = await readFirstSlice(src, chunkBytes);
  const head = firstSlice.bytes.subarray(0, 64);
  const kind = sniff(head);
  if (kind === null) {
    throw new SnapshotReadError(
      "not-snapshot",
      `${name} is not a memory snapshot: it holds ${describeForeign(head)}. Open the pickle written by torch.cuda.memory._dump_snapshot() (optionally gzip'd or zipped).`,
      0,
    );
  }
  let format: InputFormat = kind === "gzip" ? "pickle+gzip" : kind;
  const warm = opts.warmMemory;
  const maxChunkBytes = opts.maxChunkBytes ?? chunkBytes;
  const readAhead = opts.readAhead ?? 1;
  // where the warmer will fault the columns in ahead (a file of ≈ 1 M entries and more), the memo too
  const sharedMemory =
    warm?.prefaultShared !== undefined && src.sizeBytes >= 4 * (warm.minBytes ?? MIN_WARM_BYTES);
  // A plain pickle's slices are fed to the unpickler, which keeps no reference to them: buffers recycle.
  // Where the source reads into any memory (Node), that memory is the scanner's (shared, so it stays valid
  // as it grows), and the slices are scanned where they are: the slices being read ahead, the one parsed
  // and the one given back.
  const reuse = kind === "pickle";
  const inPlace = reuse && sharedMemory && src.readsInPlace === true && opts.scanner !== "js";
  const assembler = new SnapshotAssembler({
    wasm: opts.scanner !== "js",
    sharedMemory,
    sliceBytes: inPlace ? (readAhead + 3) * maxChunkBytes : 0,
  });
  assembler.staging.warmMemory = opts.warmMemory ?? null;
  const notes: string[] = [];
  const read = { bytes: 0, inPlace: 0 };
  const fileChunks = counting(
    readChunks(
      src,
      chunkBytes,
      maxChunkBytes,
      readAhead,
      reuse,
      firstSlice,
      inPlace ? (length) => assembler.scanner.sliceMemory(length) : null,
    ),
    read,
  );
  try {
    let root: unknown;
    let protocol: number | null = null;
    if (kind === "html") {
      // the snapshot a MemoryViz page holds, read as the snapshot it is
      return await readHtmlArtifact(fileChunks, name, src.sizeBytes, (pickle) =>
        readSnapshot(bytesByteSource(pickle, name), { ...opts, onProgress: undefined }),
      );
    }
    if (kind === "json") {
      const start = Math.min(4096, src.sizeBytes);
      const trace = await readTraceIfChromeTrace(
        firstSlice.bytes.length >= start ? firstSlice.bytes.subarray(0, start) : await src.read(0, start),
        fileChunks,
        name,
        src.sizeBytes,
        false,
      );
      if (trace) return trace;
      root = await readJson(fileChunks, src.sizeBytes, name, assembler);
      if (root instanceof ArtifactModel) return root.model;
    } else if (kind === "pickle") {
      const r = await unpickle(fileChunks, assembler, src.sizeBytes, opts, src.sizeBytes, () => read.bytes);
      root = r.root;
      protocol = r.protocol;
      if (r.trailingBytes > 0)
        notes.push(
          `${r.trailingBytes} bytes after the pickle's STOP were ignored (torch_npu overwrites dumps without truncating them)`,
        );
    } else {
      let inner: AsyncIterable<Uint8Array>;
      let innerTotal: number | null = null;
      if (kind === "gzip") inner = inflate(fileChunks, "gzip");
      else {
        const entry = await openZipEntry(src, chunkBytes);
        inner = entry.chunks;
        innerTotal = entry.uncompressedBytes;
        notes.push(`read ${entry.name} from the zip archive`);
      }
      // Sniff the decompressed content: a pickle, or JSON.
      const it = inner[Symbol.asyncIterator]();
      const first = await it.next();
      if (first.done || first.value.length === 0) {
        throw new SnapshotReadError(
          "empty",
          `${name}: the compressed snapshot inside is empty. Compress the dump again.`,
          0,
        );
      }
      const rest: AsyncIterable<Uint8Array> = {
        async *[Symbol.asyncIterator]() {
          yield first.value;
          for (let n = await it.next(); !n.done; n = await it.next()) yield n.value;
        },
      };
      const innerKind = sniff(first.value.subarray(0, 64));
      if (innerKind === "json") {
        format = kind === "zip" ? "zip" : "json";
        const trace = await readTraceIfChromeTrace(
          first.value.subarray(0, 4096),
          rest,
          name,
          src.sizeBytes,
          true,
        );
        if (trace) return trace;
        root = await readJson(rest, innerTotal, name, assembler);
        if (root instanceof ArtifactModel) return root.model;
      } else if (innerKind === "pickle") {
        const r = await unpickle(rest, assembler, innerTotal, opts, src.sizeBytes, () => read.bytes);
        root = r.root;
        protocol = r.protocol;
      } else {
        throw new SnapshotReadError(
          "not-snapshot",
          `${name} is compressed, but what is inside is not a memory snapshot: it holds ${describeForeign(first.value.subarray(0, 64))}.`,
          0,
        );
      }
    }
    opts.onProgress?.({ phase: "building", bytesDone: src.sizeBytes, bytesTotal: src.sizeBytes });
    const model = assembler.finish(root, {
      fileName: name,
      byteLength: src.sizeBytes,
      format,
      pickleProtocol: protocol,
      notes,
      slicesReadInPlace: read.inPlace,
    });
    if (model.layout === "segment-list" && format === "pickle") model.source.format = "segment-list";
    return model;
  } catch (e) {
    throw translate(e, name, format);
  }
}

async function readJson(
  chunks: AsyncIterable<Uint8Array>,
  totalBytes: number | null,
  name: string,
  assembler: SnapshotAssembler,
): Promise<unknown> {
  if (totalBytes !== null && totalBytes > MAX_JSON_BYTES) {
    throw new SnapshotReadError(
      "too-large",
      `${name} is a ${Math.round(totalBytes / 2 ** 20)} MiB JSON file; peakscope reads JSON snapshots up to ${MAX_JSON_BYTES >> 20} MiB. Open the original pickle instead.`,
    );
  }
  const decoder = new TextDecoder("utf-8");
  let text = "";
  let size = 0;
  for await (const c of chunks) {
    size += c.length;
    if (size > MAX_JSON_BYTES) {
      throw new SnapshotReadError(
        "too-large",
        `${name}: the JSON snapshot is larger than ${MAX_JSON_BYTES >> 20} MiB. Open the original pickle instead.`,
      );
    }
    text += decoder.decode(c, { stream: true });
  }
  text += decoder.decode();
  const parsed = parseJsonText(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text, name);
  if (
    parsed !== null &&
    typeof parsed === "object" &&
    !Array.isArray(parsed) &&
    "memory_allocated" in parsed &&
    !("segments" in parsed)
  ) {
    throw new SnapshotReadError(
      "not-snapshot",
      `${name} is a counters sidecar (memory_allocated, max_memory_allocated…), not a snapshot. Open the dump it belongs to, and drop this file together with it.`,
    );
  }
  const artifact = readArtifactJson(parsed, name, totalBytes ?? size);
  if (artifact) return new ArtifactModel(artifact);
  return jsonToValues(parsed, assembler.hooks);
}

/** readJson's answer when the JSON was another artifact (a memory timeline), already a model. */
class ArtifactModel {
  constructor(readonly model: SnapshotModel) {}
}
