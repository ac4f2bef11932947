// Where the peakscope package lies on disk. The CLI runs from src/cli (a clone, through tsx) or from lib/
// (the compiled bundle, in a clone or installed), so the root is found by walking up to peakscope's
// package.json rather than by a fixed "../..".

import { existsSync, readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

let root: string | null = null;

/** The folder holding peakscope's package.json (the clone, or the installed package). */
export function packageRoot(): string {
  if (root !== null) return root;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const pkg = resolve(dir, "package.json");
    if (existsSync(pkg)) {
      try {
        if (JSON.parse(readFileSync(pkg, "utf8")).name === "peakscope") return (root = dir);
      } catch {
        // not JSON: keep walking
      }
    }
    const up = dirname(dir);
    if (up === dir) break;
    dir = up;
  }
  // Not found (a copied bundle): the folder above this file's, as laid out in the package.
  return (root = resolve(dirname(fileURLToPath(import.meta.url)), ".."));
}
