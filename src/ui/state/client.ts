// The page's handle on the worker: one comlink-wrapped MemscopeApi. Every request is counted as work
// for the idle signal, and fails (instead of hanging) if the worker is ended while it is in flight.

import * as Comlink from "comlink";
import type { MemscopeApi } from "../../../workers/api";
import { beginWork, endWork } from "./idle";

interface Instance {
  worker: Worker;
  api: Comlink.Remote<MemscopeApi>;
  /** Rejects when the worker is ended or crashes. */
  ended: Promise<never>;
  end: (reason: Error) => void;
}

let current: Instance | null = null;

function spawn(): Instance {
  const worker = new Worker(new URL("../../../workers/memscope.worker.ts", import.meta.url), {
    type: "module",
    name: "memscope",
  });
  let end: (reason: Error) => void = () => {};
  const ended = new Promise<never>((_, reject) => {
    end = reject;
  });
  ended.catch(() => {});
  const inst: Instance = { worker, api: Comlink.wrap<MemscopeApi>(worker), ended, end };
  worker.addEventListener("error", (e) => {
    e.preventDefault();
    inst.end(new Error(e.message || "the worker crashed"));
    if (current === inst) current = null;
  });
  current = inst;
  return inst;
}

export function getApi(): Comlink.Remote<MemscopeApi> {
  return (current ?? spawn()).api;
}

/** Ends the worker (a cancel that did not take effect in time); requests in flight fail. */
export function restartWorker(): void {
  const inst = current;
  current = null;
  if (!inst) return;
  inst.end(new Error("the worker was stopped"));
  inst.api[Comlink.releaseProxy]();
  inst.worker.terminate();
}

/** Runs a worker request, counted for the idle signal. */
export async function ask<T>(fn: (api: Comlink.Remote<MemscopeApi>) => Promise<T>): Promise<T> {
  beginWork();
  try {
    const inst = current ?? spawn();
    return await Promise.race([fn(inst.api), inst.ended]);
  } finally {
    endWork();
  }
}
