// MemoryViz pages (`torch.cuda._memory_viz` trace_plot / segment_plot / profile_plot) hold the snapshot
// pickle as base64 in `const local_files = [{"name": …, "base64": "…"}]`, padded with 1–3 NUL bytes
// (so the length is a multiple of 3). The page is read as it streams: text before the marker is
// dropped, the base64 is decoded as it arrives; only the decoded pickle is held, never the page.

import { SnapshotReadError } from "../errors";

const B64 = new Int16Array(128).fill(-1);
for (let i = 0; i < 64; i++)
  B64["ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".charCodeAt(i)] = i;

export function looksLikeHtml(head: string): boolean {
  return /^\s*(?:\ufeff)?\s*<(?:!doctype|html|head|body|meta|script|!--)/i.test(head);
}

export const NO_SNAPSHOT_IN_PAGE =
  'MemoryViz pages written by torch.cuda._memory_viz (trace_plot, segment_plot, profile_plot) hold one; a page from export_memory_timeline("….html") holds only a picture: export "….raw.json.gz" instead, or open the pickle from torch.cuda.memory._dump_snapshot().';

/** The snapshot pickle inside a MemoryViz page (trailing NUL padding removed). */
export async function pickleFromMemoryVizPage(
  text: AsyncIterable<string>,
  fileName: string,
): Promise<Uint8Array> {
  let state: "seek" | "name" | "b64" | "done" = "seek";
  let tail = ""; // text kept while looking for the marker / the "base64" key
  let consumed = 0;
  let markerAt = -1;
  let out = new Uint8Array(1 << 16);
  let length = 0;
  let acc = 0;
  let bits = 0;
  const put = (byte: number) => {
    if (length === out.length) {
      const next = new Uint8Array(out.length * 2);
      next.set(out);
      out = next;
    }
    out[length++] = byte;
  };
  for await (const chunk of text) {
    if (state === "done") continue;
    let s = tail + chunk;
    const sBase = consumed - tail.length;
    consumed += chunk.length;
    tail = "";
    if (state === "seek") {
      const m = /\blocal_files\s*=\s*\[/.exec(s);
      if (!m) {
        tail = s.slice(-64); // the marker may straddle two slices
        continue;
      }
      markerAt = sBase + m.index;
      s = s.slice(m.index + m[0].length);
      state = "name";
    }
    let i = 0;
    if (state === "name") {
      const m = /"base64"\s*:\s*"/.exec(s);
      if (!m) {
        if (s.length > 1 << 20) {
          throw new SnapshotReadError(
            "not-snapshot",
            `${fileName}: the page's local_files (character ${markerAt}) has no "base64" entry. ${NO_SNAPSHOT_IN_PAGE}`,
            markerAt,
          );
        }
        tail = s;
        continue;
      }
      i = m.index + m[0].length;
      state = "b64";
    }
    for (; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (c === 0x22) {
        state = "done";
        break;
      }
      if (c === 0x3d) continue; // "=" padding
      let v: number;
      if (c === 0x5c) {
        // a JSON escape: "\/" is "/", a line break some writers add ("\n") is skipped
        const next = s.charCodeAt(++i);
        if (next !== 0x2f) continue;
        v = B64[0x2f];
      } else v = c < 128 ? B64[c] : -1;
      if (v < 0) {
        throw new SnapshotReadError(
          "corrupt",
          `${fileName}: the snapshot's base64 in the page is damaged at character ${sBase + i} (${JSON.stringify(s[i])}). Save the page again.`,
          sBase + i,
        );
      }
      acc = (acc << 6) | v;
      bits += 6;
      if (bits >= 8) {
        bits -= 8;
        put((acc >> bits) & 0xff);
        acc &= (1 << bits) - 1;
      }
    }
  }
  if (state === "seek") {
    throw new SnapshotReadError(
      "not-snapshot",
      `${fileName} is an HTML page without a memory snapshot in it (no "local_files"). ${NO_SNAPSHOT_IN_PAGE}`,
      0,
    );
  }
  if (state !== "done") {
    throw new SnapshotReadError(
      "truncated",
      `${fileName}: the page ends inside the snapshot's base64 (started at character ${markerAt}). The page was cut short; save it again.`,
      markerAt,
    );
  }
  // trailing NULs after the pickle's STOP ('.'): the writer's padding to a multiple of 3
  let end = length;
  while (end > 0 && length - end < 3 && out[end - 1] === 0) end--;
  if (end === 0) {
    throw new SnapshotReadError(
      "not-snapshot",
      `${fileName}: the page's local_files holds an empty file. ${NO_SNAPSHOT_IN_PAGE}`,
      markerAt,
    );
  }
  return out.subarray(0, end);
}
