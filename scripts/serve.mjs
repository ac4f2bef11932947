#!/usr/bin/env node
// A tiny static file server for the built site:
//   node scripts/serve.mjs [folder] [--port N] [--host H] [--base /sub/path/]
// Serves one folder on 127.0.0.1 (never on all interfaces unless asked), prints the URL, and sets the
// MIME types the app needs (.js/.mjs as JavaScript for module workers, .wasm, .pickle as binary).
// --base serves the folder under a sub-path (as a static host does for a project page), nothing else.
// Port 0 picks a free port; the URL printed says which.
import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import { createServer } from "node:http";
import { extname, join, normalize, resolve, sep } from "node:path";

const MIME = {
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
  ".md": "text/markdown; charset=utf-8",
  ".wasm": "application/wasm",
  ".pickle": "application/octet-stream",
  ".pkl": "application/octet-stream",
  ".gz": "application/gzip",
  ".zip": "application/zip",
  ".woff2": "font/woff2",
  ".webmanifest": "application/manifest+json",
};

// Cross-origin isolation: the page's threads may share memory (SharedArrayBuffer): a big file's trace
// columns are then read by the attribution helper as they are written, and its slices are read into the
// scanner's memory (src/core/model/warm-memory.ts, wasm-scanner.ts). The page loads
// nothing from other origins but the snapshot a link names, fetched with CORS, which COEP allows.
const ISOLATION = {
  "Cross-Origin-Opener-Policy": "same-origin",
  "Cross-Origin-Embedder-Policy": "require-corp",
};

function parseArgs(argv) {
  const out = { root: "dist", port: 8080, host: "127.0.0.1", base: "/" };
  const rest = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === "--port" || a === "-p") out.port = Number(argv[++i]);
    else if (a.startsWith("--port=")) out.port = Number(a.slice(7));
    else if (a === "--host") out.host = argv[++i];
    else if (a.startsWith("--host=")) out.host = a.slice(7);
    else if (a === "--base") out.base = argv[++i];
    else if (a.startsWith("--base=")) out.base = a.slice(7);
    else rest.push(a);
  }
  if (rest[0]) out.root = rest[0];
  out.base = `/${out.base.replace(/^\/+|\/+$/g, "")}/`.replace(/^\/\/$/, "/");
  if (process.env.PORT && !argv.some((a) => a.startsWith("--port") || a === "-p"))
    out.port = Number(process.env.PORT);
  return out;
}

const { root, port, host, base } = parseArgs(process.argv.slice(2));
const rootDir = resolve(root);

const server = createServer(async (req, res) => {
  if (req.method !== "GET" && req.method !== "HEAD") {
    res.writeHead(405, { Allow: "GET, HEAD" }).end();
    return;
  }
  let pathname;
  try {
    pathname = decodeURIComponent(new URL(req.url ?? "/", "http://x").pathname);
  } catch {
    res.writeHead(400).end("bad request");
    return;
  }
  if (pathname.includes("\0")) {
    res.writeHead(400).end("bad request");
    return;
  }
  if (base !== "/") {
    if (pathname === base.slice(0, -1)) {
      res.writeHead(301, { Location: base }).end();
      return;
    }
    if (!pathname.startsWith(base)) {
      res.writeHead(404, { "Content-Type": "text/plain; charset=utf-8" }).end("not found");
      return;
    }
    pathname = pathname.slice(base.length - 1);
  }
  let file = normalize(join(rootDir, pathname));
  if (file !== rootDir && !file.startsWith(rootDir + sep)) {
    res.writeHead(403).end("forbidden");
    return;
  }
  try {
    let st = await stat(file);
    if (st.isDirectory()) {
      file = join(file, "index.html");
      st = await stat(file);
    }
    const type = MIME[extname(file).toLowerCase()] ?? "application/octet-stream";
    res.writeHead(200, {
      "Content-Type": type,
      "Content-Length": st.size,
      "Cache-Control": "no-cache",
      "X-Content-Type-Options": "nosniff",
      ...ISOLATION,
    });
    if (req.method === "HEAD") res.end();
    // 1 MiB reads: a big snapshot is served with a sixteenth of the default 64 KiB reads' calls
    else createReadStream(file, { highWaterMark: 1 << 20 }).pipe(res);
  } catch {
    res.writeHead(404, { "Content-Type": "text/plain; charset=utf-8" }).end("not found");
  }
});

server.listen(port, host, () => {
  const addr = server.address();
  const shown = typeof addr === "object" && addr ? addr.port : port;
  console.log(`peakscope: serving ${rootDir} at http://${host}:${shown}${base}`);
});

for (const sig of ["SIGINT", "SIGTERM"]) process.on(sig, () => server.close(() => process.exit(0)));
