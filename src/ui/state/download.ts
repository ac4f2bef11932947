// Downloads a snapshot from a URL the user chose (`#src=URL`): only http(s), no credentials, with
// progress, and an error that says what went wrong (HTTP status, or a request the browser refused —
// unreachable, or a server that does not allow this page to read it: CORS).

import { downloadFailureMessage, type PageLocation } from "../../core/formats/download-errors";

export interface DownloadProgress {
  bytesDone: number;
  /** 0 when the server did not say (no Content-Length). */
  bytesTotal: number;
}

export class DownloadError extends Error {}

/** The URL resolved against the page, or an explanation of why it cannot be loaded. */
export function checkUrl(raw: string): { url: URL } | { error: string } {
  let url: URL;
  try {
    url = new URL(raw, document.baseURI);
  } catch {
    return { error: "it is not a URL" };
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    return { error: `only http and https URLs can be loaded, not ${url.protocol}` };
  }
  if (url.username || url.password) return { error: "URLs with a user name or password are not loaded" };
  return { url };
}

/** The file name a URL points at (its last path segment), for display. */
export function nameOfUrl(url: URL): string {
  const last = url.pathname.split("/").filter(Boolean).pop() ?? "";
  try {
    return decodeURIComponent(last) || url.host || "download";
  } catch {
    return last || url.host || "download";
  }
}

/** Where this page is, for the download messages. */
export function pageLocation(): PageLocation {
  return { origin: location.origin, protocol: location.protocol };
}

export async function download(
  url: URL,
  onProgress: (p: DownloadProgress) => void,
  signal: AbortSignal,
): Promise<Blob> {
  let res: Response;
  try {
    res = await fetch(url, { mode: "cors", credentials: "omit", cache: "no-store", signal });
  } catch (e) {
    if (signal.aborted) throw e;
    throw new DownloadError(downloadFailureMessage(url.href, pageLocation(), { kind: "network" }));
  }
  if (!res.ok) {
    throw new DownloadError(
      downloadFailureMessage(url.href, pageLocation(), {
        kind: "status",
        status: res.status,
        statusText: res.statusText,
      }),
    );
  }
  const total = Number(res.headers.get("Content-Length") ?? 0) || 0;
  if (!res.body) {
    const b = await res.blob();
    onProgress({ bytesDone: b.size, bytesTotal: b.size });
    return b;
  }
  const reader = res.body.getReader();
  const parts: Uint8Array[] = [];
  let done = 0;
  let last = 0;
  try {
    for (;;) {
      const r = await reader.read();
      if (r.done) break;
      parts.push(r.value);
      done += r.value.byteLength;
      const now = performance.now();
      if (now - last > 50) {
        last = now;
        onProgress({ bytesDone: done, bytesTotal: Math.max(total, done) });
      }
    }
  } catch (e) {
    if (signal.aborted) throw e;
    throw new DownloadError(
      downloadFailureMessage(url.href, pageLocation(), {
        kind: "broke",
        bytes: done,
        message: e instanceof Error ? e.message : String(e),
      }),
    );
  }
  onProgress({ bytesDone: done, bytesTotal: done });
  return new Blob(parts as BlobPart[]);
}
