// A snapshot converted with json.dump: same shape, tuples as lists. Parsed values are converted to the
// unpickler's value classes with the same hooks, so one assembler serves both.

import type { UnpickleHooks } from "../pickle/unpickler";
import { PyDict, PyList } from "../pickle/values";
import { SnapshotReadError } from "./errors";

const MAX_DEPTH = 512;

export function parseJsonText(text: string, fileName: string): unknown {
  try {
    return JSON.parse(text);
  } catch (e) {
    const m = /position (\d+)/.exec(String((e as Error).message));
    const offset = m ? Number(m[1]) : null;
    const where = offset === null ? "" : ` at character ${offset}`;
    throw new SnapshotReadError(
      offset !== null && offset >= text.length - 1 ? "truncated" : "corrupt",
      `${fileName} starts like JSON but is not valid JSON${where}: ${(e as Error).message}. If it was cut short, export it again.`,
      offset,
    );
  }
}

/** Converts parsed JSON into PyDict/PyList, applying the reader's hooks bottom-up. */
export function jsonToValues(v: unknown, hooks: UnpickleHooks, depth = 0): unknown {
  if (depth > MAX_DEPTH) {
    throw new SnapshotReadError(
      "corrupt",
      `JSON nested more than ${MAX_DEPTH} levels deep: not a memory snapshot.`,
    );
  }
  if (Array.isArray(v)) {
    const list = new PyList();
    for (const item of v) {
      const value = jsonToValues(item, hooks, depth + 1);
      if (!hooks.consume?.(list, value)) list.push(value);
    }
    return list;
  }
  if (v !== null && typeof v === "object") {
    const dict = new PyDict();
    for (const [key, item] of Object.entries(v)) {
      const value = jsonToValues(item, hooks, depth + 1);
      dict.set(key, hooks.onSetItem ? hooks.onSetItem(key, value) : value);
    }
    return dict;
  }
  return v;
}
