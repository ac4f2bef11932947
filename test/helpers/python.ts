// Runs Python (the independent source of truth for pickles) from tests.
import { execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { resolve } from "node:path";

export const REPO = resolve(import.meta.dirname, "../..");
export const REAL_DIR = resolve(REPO, "../shared/fixtures/real");
export const HAVE_REAL = existsSync(REAL_DIR);

export function python(args: string[], input?: string): string {
  return execFileSync("python3", args, { input, encoding: "utf8", maxBuffer: 1 << 30, cwd: REPO });
}

export function pythonBytes(code: string): Buffer {
  return execFileSync("python3", ["-c", code], { maxBuffer: 1 << 30, cwd: REPO });
}

/**
 * Grows the real fixture `fixture` (a name in REAL_DIR) to `targetMb` MB at `out` with the generator
 * (`generate.py grow-real`, more of its options in `extra`); returns what it prints (its ground truth).
 */
export function growReal(fixture: string, targetMb: number, out: string, extra: string[] = []): string {
  return python([
    "test/gen/generate.py",
    "grow-real",
    "--from",
    resolve(REAL_DIR, fixture),
    "--target-mb",
    String(targetMb),
    ...extra,
    out,
  ]);
}

/** What Python makes of a pickle: `expr` (over `d`, the unpickled file) as JSON, parsed. */
export function pythonPickleJson<T>(path: string, expr: string): T {
  const code = `import json,pickle,sys; d=pickle.load(open(sys.argv[1],'rb')); print(json.dumps(${expr}))`;
  return JSON.parse(python(["-c", code, path])) as T;
}

/** Python's reading of the first oom entry of device 0's trace: [entry index, size, device_free]. */
export function pythonFirstOom(path: string): [number, number, number] {
  return pythonPickleJson<[number, number, number]>(
    path,
    "[(i,e['size'],e['device_free']) for i,e in enumerate(d['device_traces'][0]) if e['action']=='oom'][0]",
  );
}
