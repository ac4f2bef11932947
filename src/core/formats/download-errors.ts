// What to tell the user when a snapshot URL cannot be downloaded: the same words wherever the download
// runs (the page for the rank overview, the worker for `#src=`). Pure: the page's origin and protocol
// are passed in.

import { formatCount } from "../units";

export interface PageLocation {
  origin: string;
  protocol: string;
}

export type DownloadFailure =
  | { kind: "network" }
  | { kind: "status"; status: number; statusText: string }
  | { kind: "broke"; bytes: number; message: string };

/** The URL as shown in a message (long ones cut). */
export function shownUrl(href: string): string {
  return href.length > 200 ? `${href.slice(0, 197)}…` : href;
}

export function downloadFailureMessage(href: string, page: PageLocation, f: DownloadFailure): string {
  const shown = shownUrl(href);
  if (f.kind === "status") {
    return `Could not download ${shown}: the server answered HTTP ${f.status}${f.statusText ? ` ${f.statusText}` : ""}.`;
  }
  if (f.kind === "broke") {
    return `The download of ${shown} broke off after ${formatCount(f.bytes)} bytes: ${f.message}`;
  }
  const url = new URL(href);
  const local = /^(localhost|127\.\d+\.\d+\.\d+|\[::1\])$/.test(url.hostname);
  if (page.protocol === "https:" && url.protocol === "http:" && !local) {
    return `Could not download ${shown}: this page is served over https, and browsers do not let it fetch plain http (mixed content). Use an https URL for the snapshot.`;
  }
  return url.origin === page.origin
    ? `Could not download ${shown}: the request failed (the server is unreachable or the connection was cut).`
    : `Could not download ${shown}: the request failed or was refused. Either the server is unreachable, or it does not let this page read the file — it must answer with the header Access-Control-Allow-Origin (CORS) for ${page.origin}.`;
}
