// peakscope's name and version. The compiled CLI (scripts/build-cli.mjs) has the version baked in at build
// time, so an installed copy never looks for files; in a clone (tsx, vitest) it is read from package.json.

import { readFileSync } from "node:fs";
import { resolve } from "node:path";
import { packageRoot } from "./paths";

/** Replaced by esbuild's `define` in the compiled CLI; undeclared (typeof "undefined") under tsx. */
declare const __PEAKSCOPE_VERSION__: string | undefined;

let cached: string | null = null;

/** The version in package.json ("" when it cannot be read). */
export function peakscopeVersion(): string {
  if (typeof __PEAKSCOPE_VERSION__ === "string") return __PEAKSCOPE_VERSION__;
  if (cached === null) cached = versionFromPackageJson();
  return cached;
}

function versionFromPackageJson(): string {
  try {
    const pkg = JSON.parse(readFileSync(resolve(packageRoot(), "package.json"), "utf8"));
    return typeof pkg.version === "string" ? pkg.version : "";
  } catch {
    return "";
  }
}

/** Which tool wrote a report (`report --json`'s `tool`). */
export function toolInfo(): { name: "peakscope"; version: string } {
  return { name: "peakscope", version: peakscopeVersion() };
}
