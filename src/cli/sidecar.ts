// The counters sidecar for a snapshot on disk: named with --counters, else `FILE.counters.json` beside it.

import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import type { CountersSidecar } from "../core/model/types";
import { CountersParseError, parseCounters } from "../core/report/counters";

export async function readCounters(path: string): Promise<CountersSidecar> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new CountersParseError(
      code === "ENOENT" ? `${path}: no such file.` : `${path} could not be read: ${(e as Error).message}`,
    );
  }
  return parseCounters(text, path);
}

/** The sidecar named on the command line, else `FILE.counters.json` beside the file, else none. */
export async function sidecarFor(file: string, explicit: string | null): Promise<CountersSidecar | null> {
  if (explicit) return readCounters(explicit);
  const beside = `${file}.counters.json`;
  return existsSync(beside) ? readCounters(beside) : null;
}
