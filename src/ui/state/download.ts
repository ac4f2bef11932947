// Downloads a snapshot from a URL the user chose (`#src=URL`): only http(s), no credentials, with
// progress, and an error that says what went wrong (HTTP status, or a request the browser refused —
// unreachable, or a server that does not allow this page to read it: CORS).

import { formatCount } from "../../core/units";

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

export async function download(
  url: URL,
  onProgress: (p: DownloadProgress) => void,
  signal: AbortSignal,
): Promise<Blob> {
  const shown = url.href.length > 200 ? `${url.href.slice(0, 197)}…` : url.href;
  let res: Response;
  try {
    res = await fetch(url, { mode: "cors", credentials: "omit", cache: "no-cache", signal });
  } catch (e) {
    if (signal.aborted) throw e;
    const local = /^(localhost|127\.\d+\.\d+\.\d+|\[::1\])$/.test(url.hostname);
    if (location.protocol === "https:" && url.protocol === "http:" && !local) {
      throw new DownloadError(
        `Could not download ${shown}: this page is served over https, and browsers do not let it fetch plain http (mixed content). Use an https URL for the snapshot.`,
      );
    }
    const sameOrigin = url.origin === location.origin;
    throw new DownloadError(
      sameOrigin
        ? `Could not download ${shown}: the request failed (the server is unreachable or the connection was cut).`
        : `Could not download ${shown}: the request failed or was refused. Either the server is unreachable, or it does not let this page read the file — it must answer with the header Access-Control-Allow-Origin (CORS) for ${location.origin}.`,
    );
  }
  if (!res.ok) {
    throw new DownloadError(
      `Could not download ${shown}: the server answered HTTP ${res.status}${res.statusText ? ` ${res.statusText}` : ""}.`,
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
      `The download of ${shown} broke off after ${formatCount(done)} bytes: ${e instanceof Error ? e.message : String(e)}`,
    );
  }
  onProgress({ bytesDone: done, bytesTotal: done });
  return new Blob(parts as BlobPart[]);
}
