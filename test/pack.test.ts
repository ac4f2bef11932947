// The installable package, as a new user gets it: `npm pack` (prepack builds the site and compiles the CLI),
// the tarball installed into a temporary prefix with an empty npm cache and --offline (so nothing outside
// the tarball can be fetched), then the installed `peakscope` run outside the clone: --version, report --json
// (totals checked against Python's reading of the file), ranks (worker threads from the bundle), report's
// attribution thread (from the bundle, against the clone's one-thread answer) and view
// (the shipped page and the file served). And the capture helper: `pip install ./python` into a temporary
// target imports with its __version__. Slow (it runs vite build): one file, generous timeouts.

import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, resolve } from "node:path";
import { Worker } from "node:worker_threads";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readSnapshotFile } from "../src/cli/read-file";
import { type HelperReply, helperClient } from "../src/core/attribution/handoff";
import { attribute } from "../src/core/attribution/index";
import { attributedReplays } from "../src/core/report/index";
import { python, REAL_DIR, REPO } from "./helpers/python";
import { withSharedColumns } from "./helpers/shared-columns";

const PKG = JSON.parse(readFileSync(resolve(REPO, "package.json"), "utf8"));
const FILE = join(REAL_DIR, "JasperSolt__EoR_NN__snapshot.pickle");
const FILE2 = join(REAL_DIR, "MAGMA27__assignment2-systems__memory_snapshot.pickle");
const TRAINING = join(REAL_DIR, "Wedsonlin__assignment2-systems__medium_256_training_memory_snapshot.pickle");

let tmp = "";
let tarball = "";
let installed = ""; // the installed package folder
let bin = ""; // the installed `peakscope` command

/** No loader or module path inherited from the test run; this Node first on PATH (the bin's shebang). */
function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    PATH: `${dirname(process.execPath)}:${process.env.PATH ?? ""}`,
  };
  for (const k of ["NODE_OPTIONS", "NODE_PATH", "VITEST", "VITEST_POOL_ID", "VITEST_WORKER_ID"])
    delete env[k];
  return env;
}

function run(cmd: string, args: string[], cwd: string) {
  const r = spawnSync(cmd, args, { cwd, env: cleanEnv(), encoding: "utf8", maxBuffer: 1 << 28 });
  return { code: r.status, out: r.stdout ?? "", err: `${r.stderr ?? ""}${r.error ? String(r.error) : ""}` };
}

const sha = (b: Buffer) => createHash("sha256").update(b).digest("hex");

beforeAll(() => {
  tmp = mkdtempSync(join(tmpdir(), "peakscope-pack-"));
  const packDir = join(tmp, "pack");
  mkdirSync(packDir);
  const npm = join(dirname(process.execPath), "npm");
  const packed = run(npm, ["pack", "--pack-destination", packDir, "--cache", join(tmp, "pack-cache")], REPO);
  expect(packed.code, packed.err).toBe(0);
  const tgz = readdirSync(packDir).filter((f) => f.endsWith(".tgz"));
  expect(tgz).toEqual([`peakscope-${PKG.version}.tgz`]);
  tarball = join(packDir, tgz[0]);

  const prefix = join(tmp, "prefix");
  const emptyCache = join(tmp, "empty-cache");
  mkdirSync(emptyCache);
  const inst = run(
    npm,
    ["i", "-g", "--prefix", prefix, "--cache", emptyCache, "--offline", "--no-audit", "--no-fund", tarball],
    tmp,
  );
  expect(inst.code, inst.err).toBe(0);
  installed = join(prefix, "lib", "node_modules", "peakscope");
  bin = join(prefix, "bin", "peakscope");
}, 900_000);

afterAll(() => {
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

describe("the tarball", () => {
  it("holds the built site and the compiled CLI, no TypeScript, no sources, and declares no dependencies", () => {
    const list = run("tar", ["tzf", tarball], tmp);
    expect(list.code, list.err).toBe(0);
    const files = list.out.split("\n").filter(Boolean);
    expect(files).toContain("package/bin/peakscope.mjs");
    expect(files).toContain("package/lib/peakscope.mjs");
    expect(files).toContain("package/lib/ranks-worker.mjs");
    expect(files).toContain("package/lib/attribution-worker.mjs");
    expect(files).toContain("package/dist/index.html");
    expect(files).toContain("package/python/peakscope_hook.py");
    expect(files.filter((f) => f.startsWith("package/src/") || f.startsWith("package/test/"))).toEqual([]);
    expect(files.filter((f) => /\.tsx?$/.test(f))).toEqual([]);
    const pkg = JSON.parse(readFileSync(join(installed, "package.json"), "utf8"));
    expect(pkg.dependencies ?? {}).toEqual({});
    // Installed offline from an empty cache: nothing besides the package itself.
    expect(existsSync(join(installed, "node_modules"))).toBe(false);
  });

  it("compiled code loads nothing but Node's modules and its own files", () => {
    const lib = join(installed, "lib");
    for (const f of readdirSync(lib)) {
      const text = readFileSync(join(lib, f), "utf8");
      const specifiers = [...text.matchAll(/(?:from|import)\s*\(?\s*"([^"]+)"/g)].map((m) => m[1]);
      const foreign = specifiers.filter((s) => !s.startsWith("node:") && !s.startsWith("./"));
      expect(foreign, f).toEqual([]);
    }
  });
});

describe("the installed peakscope (outside the clone, Node only)", () => {
  it("--version prints package.json's version", () => {
    const r = run(bin, ["--version"], tmp);
    expect(r.code, r.err).toBe(0);
    expect(r.out.trim()).toBe(PKG.version);
  });

  it("report --json: totals equal Python's reading of the file, and it says which tool wrote it", () => {
    const r = run(bin, ["report", FILE, "--json"], tmp);
    expect([0, 2], r.err).toContain(r.code);
    const report = JSON.parse(r.out);
    expect(report.tool).toEqual({ name: "peakscope", version: PKG.version });
    const py = JSON.parse(python(["test/tools/py_inspect.py", FILE]));
    expect(report.totals).toEqual(py.totals);
  });

  it("ranks reads the files in worker threads from the bundle", () => {
    const r = run(bin, ["ranks", FILE, FILE2, "--jobs", "2", "--json"], tmp);
    expect([0, 2], r.err).toContain(r.code);
    const out = JSON.parse(r.out);
    const rows = out.ranks as { file: string; allocatedBytes: number }[];
    expect(rows.map((x) => x.file).sort()).toEqual([FILE, FILE2].sort());
    for (const row of rows) {
      const py = JSON.parse(python(["test/tools/py_inspect.py", row.file]));
      expect(row.allocatedBytes, row.file).toBe(py.totals.allocatedBytes);
    }
  });

  it("report's attribution thread, from the bundle, attributes as the clone does on one thread", async () => {
    // (the thread is started for files of ≥ 128 MB; here a real file's model is handed to it directly)
    const model = withSharedColumns(await readSnapshotFile(TRAINING));
    const worker = new Worker(join(installed, "lib", "attribution-worker.mjs"), {
      execArgv: [],
      env: cleanEnv(),
    });
    try {
      const client = helperClient(
        (req) => worker.postMessage(req),
        () => void worker.terminate(),
      );
      worker.on("message", (m: HelperReply) => client.received(m));
      // (a thread that cannot load fails the test at once rather than at its timeout)
      const broke = new Promise<never>((_, reject) => {
        worker.on("error", (e) => reject(e));
        worker.on("exit", (code) => reject(new Error(`the thread exited (${code}) before it was up`)));
      });
      broke.catch(() => undefined); // (terminated at the end: no longer anyone's concern)
      await Promise.race([client.up, broke]);
      const threaded = await attributedReplays(model, client);
      expect(threaded.attributedBy).toBe("helper");
      const alone = attribute(model);
      const { unknownReasonOfBlock: _1, ...a } = alone;
      const { unknownReasonOfBlock: _2, ...b } = threaded.attribution;
      expect(b).toEqual(a);
      // Python's count of the trace's entries, all replayed
      const entries = Number(
        python([
          "-c",
          "import pickle,sys; d=pickle.load(open(sys.argv[1],'rb')); print(len(d['device_traces'][0]))",
          TRAINING,
        ]),
      );
      expect(threaded.replays.get(0)?.length).toBe(entries);
    } finally {
      await worker.terminate();
    }
  });

  it("view --no-open serves the shipped page and the file from the printed URL", async () => {
    const child: ChildProcess = spawn(bin, ["view", "--no-open", FILE, "--port", "0"], {
      cwd: tmp,
      env: cleanEnv(),
      stdio: ["ignore", "pipe", "pipe"],
    });
    try {
      let out = "";
      let err = "";
      child.stderr?.on("data", (d) => {
        err += String(d);
      });
      const url = await new Promise<string>((done, fail) => {
        child.stdout?.on("data", (d) => {
          out += String(d);
          // the URL and the "serving … from <site>" line are two writes: wait for both (a chunk may end
          // between them)
          const m = /peakscope view: (http:\/\/127\.0\.0\.1:\d+\/\S*)\r?\n/.exec(out);
          if (m && /Ctrl-C stops\.\r?\n/.test(out)) done(m[1]);
        });
        child.on("exit", (code) => fail(new Error(`view exited ${code}: ${out}${err}`)));
      });
      expect(out).toContain(join(installed, "dist"));
      const page = await fetch(new URL("./", url));
      expect(page.status).toBe(200);
      expect(await page.text()).toBe(readFileSync(join(installed, "dist", "index.html"), "utf8"));
      const src = new URL(url).hash
        .slice(1)
        .split("&")
        .map((kv) => kv.split("="))
        .find(([k]) => k === "src")?.[1];
      expect(src).toBeTruthy();
      const file = await fetch(new URL(decodeURIComponent(src as string), url));
      expect(file.status).toBe(200);
      expect(sha(Buffer.from(await file.arrayBuffer()))).toBe(sha(readFileSync(FILE)));
    } finally {
      const code = await new Promise<number | null>((done) => {
        if (child.exitCode !== null) return done(child.exitCode);
        child.on("exit", (c) => done(c));
        child.kill("SIGTERM");
      });
      expect(code).toBe(0);
    }
  });
});

describe("an installed copy whose site is missing", () => {
  it("view never builds: it exits 1 and says what to run", () => {
    const copy = join(tmp, "copy");
    const r0 = run("cp", ["-r", installed, copy], tmp);
    expect(r0.code, r0.err).toBe(0);
    rmSync(join(copy, "dist"), { recursive: true });
    const r = run(process.execPath, [join(copy, "bin", "peakscope.mjs"), "view", FILE, "--no-open"], tmp);
    expect(r.code).toBe(1);
    expect(r.err).toContain("npm run build");
    expect(existsSync(join(copy, "dist"))).toBe(false);
  });
});

describe("the capture helper as a Python package", () => {
  it("pip install --no-index --no-build-isolation --target TMP ./python imports with __version__", () => {
    const target = join(tmp, "py");
    const pip = run(
      "python3",
      ["-m", "pip", "install", "--no-index", "--no-build-isolation", "--target", target, "./python"],
      REPO,
    );
    expect(pip.code, pip.err).toBe(0);
    expect(existsSync(join(target, "peakscope_hook.py"))).toBe(true);
    const r = run("python3", ["-c", "import peakscope_hook; print(peakscope_hook.__version__)"], target);
    expect(r.code, r.err).toBe(0);
    expect(r.out.trim()).toBe(PKG.version);
  });
});
