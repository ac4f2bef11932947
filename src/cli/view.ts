// `peakscope view FILE [FILE2] [--port N] [--no-open] [--build]`: serves the built site and the file(s) on
// 127.0.0.1, opens the browser at the page with `#src=` (and `&src2=` to compare) pointing at them, and
// prints the URL. The files are read in place, never copied. Builds the site with vite when dist/ is
// missing (a fresh `npm ci`). Runs until Ctrl-C (or the abort signal).

import { spawn, spawnSync } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { CliIo } from "./main";
import { withFileSource } from "./read-file";
import { startViewServer, type ViewServer } from "./server";

export const VIEW_USAGE =
  "usage: peakscope view FILE [FILE2] [--port N] [--no-open] [--build] [--site DIR]\n";

/** The project root (this file is src/cli/view.ts). */
export const PROJECT_ROOT = fileURLToPath(new URL("../..", import.meta.url));

export interface ViewDeps {
  /** The built site; default PROJECT_ROOT/dist (built when missing). */
  siteDir?: string;
  /** Opens the URL in a browser; default the platform's opener. */
  open?: (url: string) => void;
  /** Stops the server when aborted (default: SIGINT / SIGTERM). */
  signal?: AbortSignal;
  /** Called once the server listens. */
  onListening?: (server: ViewServer) => void;
}

interface ViewArgs {
  files: string[];
  port: number;
  open: boolean;
  build: boolean;
  /** --site DIR: serve another build of the site. */
  site: string | null;
}

class UsageError extends Error {}

function parseArgs(args: string[]): ViewArgs {
  const out: ViewArgs = { files: [], port: 0, open: true, build: false, site: null };
  for (let i = 0; i < args.length; i++) {
    let a = args[i];
    let value: string | undefined;
    const eq = a.indexOf("=");
    if (a.startsWith("--") && eq > 0) {
      value = a.slice(eq + 1);
      a = a.slice(0, eq);
    }
    if (a === "--no-open" || a === "--build") {
      if (value !== undefined) throw new UsageError(`${a} takes no value`);
      if (a === "--no-open") out.open = false;
      else out.build = true;
    } else if (a === "--port" || a === "-p") {
      value ??= args[++i];
      const n = Number(value);
      if (value === undefined || !/^\d+$/.test(value) || n > 65535)
        throw new UsageError(
          `--port takes a port number 0–65535 (0: any free port), not ${value ?? "nothing"}`,
        );
      out.port = n;
    } else if (a === "--site") {
      value ??= args[++i];
      if (value === undefined || value.startsWith("--"))
        throw new UsageError("--site needs a folder (a built site)");
      out.site = value;
    } else if (a.startsWith("-") && a !== "-") throw new UsageError(`unknown option ${a}`);
    else out.files.push(args[i]);
  }
  if (out.files.length === 0) throw new UsageError("no snapshot file given");
  if (out.files.length > 2) throw new UsageError("give one file, or two to compare");
  return out;
}

/** Newest modification time of the files under `dir` (0 when it does not exist). */
function newestMtime(dir: string): number {
  if (!existsSync(dir)) return 0;
  let newest = 0;
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!e.isFile()) continue;
    const m = statSync(resolve(e.parentPath ?? dir, e.name)).mtimeMs;
    if (m > newest) newest = m;
  }
  return newest;
}

/** Builds the site into dist/ with the project's vite (a devDependency: present after `npm ci`). */
function buildSite(io: CliIo): boolean {
  let viteBin: string;
  try {
    const req = createRequire(resolve(PROJECT_ROOT, "package.json"));
    viteBin = resolve(req.resolve("vite/package.json"), "../bin/vite.js");
  } catch {
    io.stderr(
      "peakscope view: the site is not built (no dist/) and vite is not installed: run `npm ci && npm run build` in the peakscope folder.\n",
    );
    return false;
  }
  io.stderr("peakscope view: building the site (vite build)…\n");
  const r = spawnSync(process.execPath, [viteBin, "build", "--logLevel", "warn"], {
    cwd: PROJECT_ROOT,
    stdio: ["ignore", "ignore", "inherit"],
  });
  if (r.status !== 0) {
    io.stderr(`peakscope view: vite build failed (exit ${r.status ?? r.signal}).\n`);
    return false;
  }
  return true;
}

/** The site folder, built if needed; null (after saying why) when there is none. */
function ensureSite(args: ViewArgs, deps: ViewDeps, io: CliIo): string | null {
  const given = deps.siteDir ?? args.site;
  if (given) {
    if (existsSync(resolve(given, "index.html"))) return resolve(given);
    io.stderr(`peakscope view: ${given} has no index.html (not a built site).\n`);
    return null;
  }
  const dist = resolve(PROJECT_ROOT, "dist");
  const index = resolve(dist, "index.html");
  if (args.build || !existsSync(index)) {
    if (!buildSite(io)) return null;
    if (!existsSync(index)) {
      io.stderr("peakscope view: vite build wrote no dist/index.html.\n");
      return null;
    }
    return dist;
  }
  const built = statSync(index).mtimeMs;
  const sources = Math.max(
    newestMtime(resolve(PROJECT_ROOT, "src")),
    newestMtime(resolve(PROJECT_ROOT, "workers")),
    existsSync(resolve(PROJECT_ROOT, "index.html"))
      ? statSync(resolve(PROJECT_ROOT, "index.html")).mtimeMs
      : 0,
  );
  if (sources > built) {
    io.stderr(
      "peakscope view: note: dist/ is older than the sources; `peakscope view --build …` (or `npm run build`) rebuilds it.\n",
    );
  }
  return dist;
}

/** The platform's "open this URL" command ($BROWSER first). */
export function openInBrowser(url: string, io: CliIo): void {
  const browser = process.env.BROWSER;
  const [cmd, args] = browser
    ? [browser, [url]]
    : process.platform === "darwin"
      ? ["open", [url]]
      : process.platform === "win32"
        ? ["cmd", ["/c", "start", '""', url.replace(/&/g, "^&")]]
        : ["xdg-open", [url]];
  try {
    const child = spawn(cmd, args, { stdio: "ignore", detached: true });
    child.on("error", () =>
      io.stderr(`peakscope view: could not start ${cmd}; open the URL above yourself.\n`),
    );
    child.unref();
  } catch {
    io.stderr(`peakscope view: could not start ${cmd}; open the URL above yourself.\n`);
  }
}

export async function viewCommand(argv: string[], io: CliIo, deps: ViewDeps = {}): Promise<number> {
  let args: ViewArgs;
  try {
    args = parseArgs(argv);
  } catch (e) {
    io.stderr(`peakscope view: ${(e as Error).message}\n${VIEW_USAGE}`);
    return 1;
  }
  // Each file must be readable now (the page would only say "HTTP 404/403" later).
  const files = args.files.map((f) => resolve(f));
  for (const [i, f] of files.entries()) {
    await withFileSource(f, async () => undefined);
    if (!statSync(f).isFile()) {
      io.stderr(
        `peakscope view: ${args.files[i]} is ${statSync(f).isDirectory() ? "a directory; give the snapshot file inside it" : "not a regular file"}.\n`,
      );
      return 1;
    }
  }

  const siteDir = ensureSite(args, deps, io);
  if (!siteDir) return 1;

  let view: ViewServer;
  try {
    view = await startViewServer({ siteDir, files: files.map((path) => ({ path })), port: args.port });
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    io.stderr(
      code === "EADDRINUSE"
        ? `peakscope view: port ${args.port} is in use: pick another with --port N, or leave --port out for any free port.\n`
        : `peakscope view: could not listen on 127.0.0.1:${args.port}: ${(e as Error).message}\n`,
    );
    return 1;
  }
  io.stdout(`peakscope view: ${view.pageUrl}\n`);
  io.stdout(
    `  serving ${args.files.join(" and ")} in place, and the site from ${siteDir}, on 127.0.0.1 only; Ctrl-C stops.\n`,
  );
  deps.onListening?.(view);
  if (args.open) (deps.open ?? ((u: string) => openInBrowser(u, io)))(view.pageUrl);

  await new Promise<void>((done) => {
    const stop = () => {
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
      deps.signal?.removeEventListener("abort", stop);
      void view.close().then(done);
    };
    if (deps.signal) {
      if (deps.signal.aborted) return stop();
      deps.signal.addEventListener("abort", stop);
    }
    process.on("SIGINT", stop);
    process.on("SIGTERM", stop);
  });
  return 0;
}
