// `peakscope view`: the server serves the site and exactly the files named, in place, on 127.0.0.1 only,
// to requests for its own host; the page URL's hash is one the page's own link parser reads back as the
// files; usage errors, unreadable files and a busy port exit 1.

import { spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { main } from "../src/cli/main";
import type { ViewServer } from "../src/cli/server";
import { viewCommand } from "../src/cli/view";
import { parseLink } from "../src/ui/state/link";
import { REPO } from "./helpers/python";

const dir = mkdtempSync(join(tmpdir(), "peakscope-view-"));
const site = join(dir, "site");
mkdirSync(join(site, "assets"), { recursive: true });
writeFileSync(join(site, "index.html"), "<!doctype html><title>fake site</title>");
writeFileSync(join(site, "assets", "app.js"), "console.log(1)");
writeFileSync(join(dir, "secret.txt"), "not for the page");
const fileA = join(dir, "a b#1.pickle");
const fileB = join(dir, "other.pickle");
writeFileSync(fileA, Buffer.from(Array.from({ length: 70_000 }, (_, i) => (i * 7) % 256)));
writeFileSync(`${fileA}.counters.json`, '{"memory_allocated": 1}');
writeFileSync(fileB, Buffer.from("second file"));

const sha = (b: Buffer) => createHash("sha256").update(b).digest("hex");

function io() {
  const out: string[] = [];
  const err: string[] = [];
  return { out, err, io: { stdout: (s: string) => out.push(s), stderr: (s: string) => err.push(s) } };
}

/** A raw GET with a chosen Host header and path (fetch would normalise both). */
function get(
  port: number,
  path: string,
  host = `127.0.0.1:${port}`,
  method = "GET",
): Promise<{ status: number; body: Buffer; headers: Record<string, unknown> }> {
  return new Promise((done, fail) => {
    const req = request({ host: "127.0.0.1", port, path, method, headers: { host } }, (res) => {
      const parts: Buffer[] = [];
      res.on("data", (d) => parts.push(d));
      res.on("end", () =>
        done({ status: res.statusCode ?? 0, body: Buffer.concat(parts), headers: res.headers }),
      );
    });
    req.on("error", fail);
    req.end();
  });
}

/** Starts `viewCommand` in-process; resolves once it listens. */
async function startView(args: string[]) {
  const c = new AbortController();
  const opened: string[] = [];
  const o = io();
  let server!: ViewServer;
  const listening = new Promise<void>((done) => {
    const exit = viewCommand(args, o.io, {
      siteDir: site,
      open: (u) => opened.push(u),
      signal: c.signal,
      onListening: (s) => {
        server = s;
        done();
      },
    });
    void exit.then((code) => {
      if (code !== 0) done();
    });
    running.push({ c, exit });
  });
  await listening;
  return { server, opened, o, stop: () => c.abort() };
}
const running: { c: AbortController; exit: Promise<number> }[] = [];
afterAll(async () => {
  for (const r of running) r.c.abort();
  await Promise.all(running.map((r) => r.exit));
});

describe("peakscope view: the server", () => {
  it("serves the site and the files in place, on 127.0.0.1, with a page URL the page reads back", async () => {
    const { server, opened, o } = await startView([fileA, fileB, "--port", "0"]);
    const port = Number(new URL(server.origin).port);
    expect(server.server.address()).toMatchObject({ address: "127.0.0.1", port });
    expect(opened).toEqual([server.pageUrl]);
    expect(o.out.join("")).toContain(server.pageUrl);

    // the hash, as the page parses it, names the two served paths
    const link = parseLink(new URL(server.pageUrl).hash);
    expect(link.notices).toEqual([]);
    const a = new URL(link.state.a.src!, server.origin);
    const b = new URL(link.state.b!.src!, server.origin);
    expect(decodeURIComponent(a.pathname.split("/").pop()!)).toBe("a b#1.pickle");
    expect(a.origin).toBe(new URL(server.origin).origin);

    const fa = await get(port, a.pathname);
    expect(fa.status).toBe(200);
    expect(sha(fa.body)).toBe(sha(readFileSync(fileA)));
    expect(Number(fa.headers["content-length"])).toBe(70_000);
    const fb = await get(port, b.pathname);
    expect(fb.body.toString()).toBe("second file");
    // the sidecar beside the file, at the file's URL + .counters.json
    expect((await get(port, `${a.pathname}.counters.json`)).body.toString()).toBe('{"memory_allocated": 1}');
    expect((await get(port, `${b.pathname}.counters.json`)).status).toBe(404);
    // HEAD: headers only
    const head = await get(port, a.pathname, undefined, "HEAD");
    expect([head.status, head.body.length]).toEqual([200, 0]);

    // the site
    const index = await get(port, "/");
    expect(index.body.toString()).toContain("fake site");
    expect(index.headers["content-type"]).toContain("text/html");
    expect((await get(port, "/assets/app.js")).headers["content-type"]).toContain("javascript");
    // localhost is this server too
    expect((await get(port, "/", `localhost:${port}`)).status).toBe(200);
  });

  it("serves nothing else: other paths, another token, traversal, another Host, other methods", async () => {
    const { server } = await startView([fileA, "--no-open"]);
    const port = Number(new URL(server.origin).port);
    const p = `/${server.filePaths[0]}`;
    const other = p.replace(/_peakscope\/[0-9a-f]+\//, "_peakscope/000000000000000000000000/");
    expect((await get(port, other)).status).toBe(404);
    expect((await get(port, p.replace(/\/0\//, "/1/"))).status).toBe(404);
    expect((await get(port, "/../secret.txt")).status).not.toBe(200);
    expect((await get(port, "/%2e%2e/secret.txt")).status).not.toBe(200);
    expect((await get(port, "/assets/%2e%2e/%2e%2e/secret.txt")).status).not.toBe(200);
    expect((await get(port, "/nothing-here")).status).toBe(404);
    // DNS rebinding: a page on another name that resolves to 127.0.0.1 gets nothing
    expect((await get(port, p, `evil.example:${port}`)).status).toBe(403);
    expect((await get(port, "/", "127.0.0.1:1")).status).toBe(403);
    expect((await get(port, p, undefined, "POST")).status).toBe(405);
    expect((await get(port, p, undefined, "DELETE")).status).toBe(405);
  });

  it("a busy port, a missing file and bad usage exit 1 with a message", async () => {
    const blocker = createServer();
    await new Promise<void>((d) => blocker.listen(0, "127.0.0.1", d));
    const busy = (blocker.address() as { port: number }).port;
    const r1 = io();
    expect(await viewCommand([fileA, "--port", String(busy), "--no-open"], r1.io, { siteDir: site })).toBe(1);
    expect(r1.err.join("")).toContain(`port ${busy} is in use`);
    blocker.close();

    for (const args of [
      [],
      [fileA, fileB, fileA],
      [fileA, "--port", "x"],
      [fileA, "--port", "70000"],
      [fileA, "--frob"],
    ]) {
      const r = io();
      expect(await main(["view", ...args], r.io), args.join(" ")).toBe(1);
      expect(r.err.join(""), args.join(" ")).toMatch(/peakscope view: .+\nusage: peakscope view FILE/);
      expect(r.out).toEqual([]);
    }
    const r2 = io();
    expect(await main(["view", join(dir, "missing.pickle"), "--no-open"], r2.io)).toBe(1);
    expect(r2.err.join("")).toContain("no such file");
    const r3 = io();
    expect(await main(["view", dir, "--no-open"], r3.io)).toBe(1);
    expect(r3.err.join("")).toContain("is a directory");
  });
});

describe("npx peakscope view (the bin, with the real site)", () => {
  it("prints the URL, serves the file, and exits 0 on SIGTERM", async () => {
    const child = spawn(
      process.execPath,
      [resolve(REPO, "bin/peakscope.mjs"), "view", fileA, "--no-open", "--port", "0", "--site", site],
      { cwd: REPO, stdio: ["ignore", "pipe", "pipe"] },
    );
    let out = "";
    const url = await new Promise<string>((done, fail) => {
      child.stdout.on("data", (d) => {
        out += String(d);
        const m = /peakscope view: (http:\/\/127\.0\.0\.1:\d+\/\S+)\r?\n/.exec(out);
        if (m) done(m[1]);
      });
      child.on("exit", (code) => fail(new Error(`exited ${code}: ${out}`)));
    });
    const link = parseLink(new URL(url).hash);
    const res = await fetch(new URL(link.state.a.src!, url));
    expect(res.status).toBe(200);
    expect(sha(Buffer.from(await res.arrayBuffer()))).toBe(sha(readFileSync(fileA)));
    const code = await new Promise<number | null>((done) => {
      child.on("exit", (c) => done(c));
      child.kill("SIGTERM");
    });
    expect(code).toBe(0);
  });
});
