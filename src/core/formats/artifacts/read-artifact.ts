// The three artifact kinds that are not snapshot pickles, as read.ts dispatches to them after sniffing
// the content (never the name): profiler traces, export_memory_timeline files, MemoryViz pages.

import type { SnapshotModel } from "../../model/types";
import { readMemoryTimeline, timelineForm } from "./memory-timeline";
import { pickleFromMemoryVizPage } from "./memoryviz-html";
import { looksLikeChromeTrace, readProfilerTrace } from "./profiler-trace";

/**
 * Bytes → text slices (UTF-8, a character split across slices kept whole). Each slice is cut after its
 * last ASCII byte and decoded in one non-streaming call (the rest goes with the next slice): a
 * streaming TextDecoder is several times slower on big slices (1.4 s of 4 s for a 50 MB trace in Node).
 */
export async function* textOf(chunks: AsyncIterable<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder("utf-8");
  let rest: Uint8Array | null = null;
  for await (const chunk of chunks) {
    let c = chunk;
    if (rest !== null) {
      const joined = new Uint8Array(rest.length + c.length);
      joined.set(rest);
      joined.set(c, rest.length);
      c = joined;
      rest = null;
    }
    let cut = c.length;
    while (cut > 0 && c[cut - 1] >= 0x80 && c.length - cut < 8) cut--;
    if (cut < c.length) {
      rest = c.slice(cut);
      c = c.subarray(0, cut);
    }
    if (c.length > 0) yield decoder.decode(c);
  }
  if (rest !== null) yield decoder.decode(rest);
}

/** Reads a Chrome trace when `head` (the first decompressed bytes) shows one; null otherwise (nothing read). */
export async function readTraceIfChromeTrace(
  head: Uint8Array,
  chunks: AsyncIterable<Uint8Array>,
  fileName: string,
  byteLength: number,
  gzip: boolean,
): Promise<SnapshotModel | null> {
  const text = new TextDecoder("utf-8").decode(head.subarray(0, 4096));
  if (!looksLikeChromeTrace(text)) return null;
  return readProfilerTrace(chunks, fileName, byteLength, gzip);
}

/** A parsed JSON value that is an export_memory_timeline file → its model; null otherwise. */
export function readArtifactJson(
  parsed: unknown,
  fileName: string,
  byteLength: number,
): SnapshotModel | null {
  const form = timelineForm(parsed);
  if (!form) return null;
  return readMemoryTimeline(parsed as unknown[], form, fileName, byteLength);
}

/** A MemoryViz page: the snapshot inside, read by `readPickle`, said to come from the page. */
export async function readHtmlArtifact(
  chunks: AsyncIterable<Uint8Array>,
  fileName: string,
  byteLength: number,
  readPickle: (pickle: Uint8Array) => Promise<SnapshotModel>,
): Promise<SnapshotModel> {
  const pickle = await pickleFromMemoryVizPage(textOf(chunks), fileName);
  const model = await readPickle(pickle);
  model.source.kind = "memoryviz-html";
  model.source.format = "html";
  model.source.byteLength = byteLength;
  model.source.notes.unshift(
    `read from a MemoryViz page: the snapshot pickle (${pickle.length} bytes) embedded in its local_files`,
  );
  return model;
}
