// The local server behind `peakscope view`: the built site (dist/) and the snapshot files named on the
// command line, nothing else, on 127.0.0.1 only. The files are served in place (never copied) under an
// unguessable path, and only to requests addressed to this server by its own host name (127.0.0.1 or
// localhost with this port), so a web page that rebinds a DNS name to 127.0.0.1 cannot read them.

import { randomBytes } from "node:crypto";
import { createReadStream, type Stats } from "node:fs";
import { stat } from "node:fs/promises";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { basename, extname, join, normalize, sep } from "node:path";

const MIME: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json; charset=utf-8",
  ".map": "application/json; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".txt": "text/plain; charset=utf-8",
  ".wasm": "application/wasm",
  ".woff2": "font/woff2",
  ".webmanifest": "application/manifest+json",
};

export interface ServedFile {
  /** The file on disk (served as is, read on each request). */
  path: string;
}

export interface ViewServerOptions {
  /** The built site: a folder with index.html. */
  siteDir: string;
  files: ServedFile[];
  /** 0: any free port. */
  port: number;
}

export interface ViewServer {
  server: Server;
  /** http://127.0.0.1:PORT/ */
  origin: string;
  /** Each file's URL path, relative to the site root (what goes into `#src=`). */
  filePaths: string[];
  /** The page URL that opens the files (the second one as a comparison). */
  pageUrl: string;
  close(): Promise<void>;
}

export const HOST = "127.0.0.1";

/** encodeURIComponent, keeping `/` and `:` readable (as the page writes its own links). */
function hashValue(v: string): string {
  return encodeURIComponent(v).replace(/%2F/gi, "/").replace(/%3A/gi, ":");
}

/** The page's hash that opens `src` (and `src2` to compare): `#v=1&src=…&src2=…`. */
export function viewHash(src: string, src2?: string): string {
  return `#v=1&src=${hashValue(src)}${src2 ? `&src2=${hashValue(src2)}` : ""}`;
}

function send(res: ServerResponse, status: number, text: string, extra: Record<string, string> = {}) {
  res
    .writeHead(status, {
      "Content-Type": "text/plain; charset=utf-8",
      "X-Content-Type-Options": "nosniff",
      ...extra,
    })
    .end(`${text}\n`);
}

async function sendFile(
  req: IncomingMessage,
  res: ServerResponse,
  file: string,
  type: string,
  headers: Record<string, string> = {},
): Promise<boolean> {
  let st: Stats;
  try {
    st = await stat(file);
  } catch {
    return false;
  }
  if (!st.isFile()) return false;
  const stream = createReadStream(file);
  await new Promise<void>((resolve) => {
    stream.once("open", () => resolve());
    stream.once("error", () => resolve());
  });
  if (stream.destroyed || stream.errored) {
    stream.destroy();
    send(res, 403, `${basename(file)} cannot be read (permission denied?): try chmod 600 on it.`);
    return true;
  }
  res.writeHead(200, {
    "Content-Type": type,
    "Content-Length": String(st.size),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cross-Origin-Resource-Policy": "same-origin",
    // cross-origin isolated, as scripts/serve.mjs serves it: the page's threads may share memory
    "Cross-Origin-Opener-Policy": "same-origin",
    "Cross-Origin-Embedder-Policy": "require-corp",
    ...headers,
  });
  if (req.method === "HEAD") {
    stream.destroy();
    res.end();
  } else stream.pipe(res);
  return true;
}

/** Starts the server; resolves once it listens. Rejects with the listen error (EADDRINUSE, …). */
export async function startViewServer(opts: ViewServerOptions): Promise<ViewServer> {
  const token = randomBytes(12).toString("hex");
  const siteDir = normalize(opts.siteDir);
  const prefix = `/_peakscope/${token}/`;
  const filePaths = opts.files.map(
    (f, i) => `_peakscope/${token}/${i}/${encodeURIComponent(basename(f.path))}`,
  );
  let allowedHosts = new Set<string>();

  const server = createServer(async (req, res) => {
    if (!allowedHosts.has((req.headers.host ?? "").toLowerCase())) {
      send(res, 403, "peakscope view answers only to http://127.0.0.1 and http://localhost on its own port.");
      return;
    }
    if (req.method !== "GET" && req.method !== "HEAD") {
      send(res, 405, "method not allowed", { Allow: "GET, HEAD" });
      return;
    }
    let pathname: string;
    try {
      pathname = new URL(req.url ?? "/", "http://x").pathname;
    } catch {
      send(res, 400, "bad request");
      return;
    }
    // The snapshot files, by exact path only.
    if (pathname.startsWith(prefix)) {
      for (let i = 0; i < opts.files.length; i++) {
        const p = `/${filePaths[i]}`;
        const f = opts.files[i].path;
        if (pathname === p) {
          if (await sendFile(req, res, f, "application/octet-stream", { "Cache-Control": "no-store" }))
            return;
        } else if (pathname === `${p}.counters.json`) {
          if (await sendFile(req, res, `${f}.counters.json`, MIME[".json"], { "Cache-Control": "no-store" }))
            return;
        }
      }
      send(res, 404, "not found");
      return;
    }
    let decoded: string;
    try {
      decoded = decodeURIComponent(pathname);
    } catch {
      send(res, 400, "bad request");
      return;
    }
    if (decoded.includes("\0")) {
      send(res, 400, "bad request");
      return;
    }
    let file = normalize(join(siteDir, decoded));
    if (file !== siteDir && !file.startsWith(siteDir.endsWith(sep) ? siteDir : siteDir + sep)) {
      send(res, 403, "forbidden");
      return;
    }
    try {
      if ((await stat(file)).isDirectory()) file = join(file, "index.html");
    } catch {
      // not there: 404 below
    }
    const type = MIME[extname(file).toLowerCase()] ?? "application/octet-stream";
    if (!(await sendFile(req, res, file, type, { "Cache-Control": "no-cache" }))) send(res, 404, "not found");
  });

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port, HOST, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  allowedHosts = new Set([`127.0.0.1:${port}`, `localhost:${port}`]);
  const origin = `http://${HOST}:${port}/`;
  return {
    server,
    origin,
    filePaths,
    pageUrl: `${origin}${viewHash(filePaths[0], filePaths[1])}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
