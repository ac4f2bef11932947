// The three artifact kinds that are not snapshot pickles, as read.ts dispatches to them after sniffing
// the content (never the name): profiler traces, export_memory_timeline files, MemoryViz pages.

import type { SnapshotModel } from "../../model/types";
import { readMemoryTimeline, timelineForm } from "./memory-timeline";
import { pickleFromMemoryVizPage } from "./memoryviz-html";
import { looksLikeChromeTrace, readProfilerTrace } from "./profiler-trace";

/** Bytes → text slices (UTF-8, a character split across slices kept whole). */
export async function* textOf(chunks: AsyncIterable<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder("utf-8");
  for await (const c of chunks) {
    const t = decoder.decode(c, { stream: true });
    if (t.length > 0) yield t;
  }
  const last = decoder.decode();
  if (last.length > 0) yield last;
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
  return readProfilerTrace(textOf(chunks), fileName, byteLength, gzip);
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
