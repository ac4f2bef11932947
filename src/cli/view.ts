// `peakscope view FILE [FILE2] [--port N] [--no-open] [--build]`: serves the built site and the file(s) on
// 127.0.0.1, opens the browser at the page with `#src=` (and `&src2=` to compare) pointing at them, and
// prints the URL. The files are read in place, never copied. The site is the one shipped in the package
// (dist/, built at pack time); view never builds it on its own. In a clone, `npm run build` (or
// `--build`, which needs the dev dependencies) makes dist/. Runs until Ctrl-C (or the abort signal).

import { spawn, spawnSync } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { resolve } from "node:path";
import type { CliIo } from "./main";
import { packageRoot } from "./paths";
import { withFileSource } from "./read-file";
import { startViewServer, type ViewServer } from "./server";

export const VIEW_USAGE =
  "usage: peakscope view FILE [FILE2] [--port N] [--no-open] [--build] [--site DIR]\n";

export interface ViewDeps {
  /** The built site; default the package's dist/. */
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

/** In a clone with the dev dependencies: builds the site into dist/ with the project's vite (`--build`). */
function buildSite(root: string, io: CliIo): boolean {
  let viteBin: string;
  try {
    // An installed package has no sources to build (and a vite found beside it would be someone else's).
    if (!existsSync(resolve(root, "src"))) throw new Error("not a clone");
    const req = createRequire(resolve(root, "package.json"));
    viteBin = resolve(req.resolve("vite/package.json"), "../bin/vite.js");
  } catch {
    io.stderr(
      "peakscope view: --build needs a clone of peakscope with its dev dependencies (`npm ci`); an installed peakscope ships its site already built.\n",
    );
    return false;
  }
  io.stderr("peakscope view: building the site (vite build)…\n");
  const r = spawnSync(process.execPath, [viteBin, "build", "--logLevel", "warn"], {
    cwd: root,
    stdio: ["ignore", "ignore", "inherit"],
  });
  if (r.status !== 0) {
    io.stderr(`peakscope view: vite build failed (exit ${r.status ?? r.signal}).\n`);
    return false;
  }
  return true;
}

/** The site folder; null (after saying why and what to run) when there is none. */
function findSite(args: ViewArgs, deps: ViewDeps, io: CliIo): string | null {
  const given = deps.siteDir ?? args.site;
  if (given) {
    if (existsSync(resolve(given, "index.html"))) return resolve(given);
    io.stderr(`peakscope view: ${given} has no index.html (not a built site).\n`);
    return null;
  }
  const root = packageRoot();
  const dist = resolve(root, "dist");
  const index = resolve(dist, "index.html");
  if (args.build && !buildSite(root, io)) return null;
  if (!existsSync(index)) {
    io.stderr(
      `peakscope view: the site is not built (no ${index}). In a clone of peakscope run \`npm run build\` there (after \`npm ci\`), or \`peakscope view --build FILE\`; an installed peakscope ships it, so reinstall it if this is one.\n`,
    );
    return null;
  }
  // In a clone, say when the sources are newer than the build (an installed package has no src/).
  const src = resolve(root, "src");
  if (!args.build && existsSync(src)) {
    const built = statSync(index).mtimeMs;
    const sources = Math.max(
      newestMtime(src),
      newestMtime(resolve(root, "workers")),
      existsSync(resolve(root, "index.html")) ? statSync(resolve(root, "index.html")).mtimeMs : 0,
    );
    if (sources > built) {
      io.stderr(
        "peakscope view: note: dist/ is older than the sources; `peakscope view --build …` (or `npm run build`) rebuilds it.\n",
      );
    }
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

  const siteDir = findSite(args, deps, io);
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
