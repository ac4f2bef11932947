// Frames as people read them, once per distinct frame and once per distinct stack: every stack becomes a
// path of display items (outermost first), interned in one item table so that a tree build only walks
// small integer arrays. Views: "stack" (own frames + collapsed library runs), "hide" (own frames only when
// there are any), "module" (forward/backward frames of own code and torch.nn).

import {
  isInterpreterFrame,
  isMachineryFrame,
  isNoiseFrame,
  isOwnCode,
  isPlumbingFrame,
  isPythonFile,
  pathTail,
  portableFilename,
  shortNativeName,
  slashPath,
} from "../attribution/frames";
import type { Attribution } from "../attribution/index";
import type { SnapshotModel } from "../model/types";
import { combine, hashString, SEED1, SEED2 } from "./hash";
import type { TreeFrameRef, TreeNodeKind } from "./types";

/** Frame kinds. */
const K_UNSET = 0;
/** Snapshot machinery and allocator / dispatcher plumbing: dropped. */
export const K_DROP = 1;
/** The user's own Python. */
export const K_OWN = 2;
/** Python outside the user's code (packages, standard library, generated code). */
export const K_LIB_PY = 3;
/** A native frame worth counting in a library run. */
export const K_NATIVE = 4;
/** CPython / thread start-up glue: counted inside a library run, a run of nothing else is dropped. */
export const K_GLUE = 5;

/** CPython internals the attribution's interpreter test leaves to "native" (they name nothing). */
const MORE_GLUE =
  /^(?:slot_|run_eval_code_obj$|run_mod$|pyrun_|binary_op1?$|thread_run$|pythread_wrapper$|__libc_|clone3?$|\w*dealloc$|builtin_|function_code_fastcall|object_vacall|property_descr_get|wrapper_call|wrap_\w+$|pybind11::cpp_function::dispatcher)/;
const PACKAGE = /\/(?:site|dist)-packages\/([^/]+)/;
const TORCH_NN = /\/torch\/nn\//;

export type View = "stack" | "hide" | "module";

export interface Item {
  id: number;
  h1: number;
  h2: number;
  kind: TreeNodeKind;
  name: string;
  detail: string | null;
  own: boolean;
  frame: TreeFrameRef | null;
  collapsedFrames: string[] | null;
  /** Frames the item shows (for search); null for synthetic items. */
  frames: Int32Array | null;
}

export class PathTable {
  readonly items: Item[] = [];
  private readonly itemIds = new Map<string, number>();
  private readonly kind: Uint8Array;
  private readonly label: (string | undefined)[];
  private readonly pkg: (string | undefined)[];
  private readonly fh1: Int32Array;
  private readonly fh2: Int32Array;
  private readonly frameItem: Int32Array;
  private readonly isModuleFrame: Uint8Array; // 0 unknown, 1 no, 2 yes
  private readonly paths: Record<View, (Int32Array | undefined)[]>;
  /** Per stack: 0 unknown, 1 no own-code frame, 2 has one. */
  private readonly ownStack: Uint8Array;
  private readonly siteItems = new Map<number, number>();

  constructor(
    private readonly model: SnapshotModel,
    private readonly attribution: Attribution,
  ) {
    const nf = model.frames.length;
    this.kind = new Uint8Array(nf);
    this.label = new Array(nf);
    this.pkg = new Array(nf);
    this.fh1 = new Int32Array(nf);
    this.fh2 = new Int32Array(nf);
    this.frameItem = new Int32Array(nf).fill(-1);
    this.isModuleFrame = new Uint8Array(nf);
    const ns = model.stacks.length;
    this.paths = { stack: new Array(ns), hide: new Array(ns), module: new Array(ns) };
    this.ownStack = new Uint8Array(ns);
  }

  // ---- frames ----

  private classify(f: number): number {
    const { frames, strings } = this.model;
    const filename = strings[frames.filename[f]] ?? "";
    const name = strings[frames.name[f]] ?? "";
    const line = frames.line[f];
    let k: number;
    let key: string;
    if (isPythonFile(filename)) {
      const path = slashPath(filename);
      k = isOwnCode(filename) ? K_OWN : K_LIB_PY;
      this.label[f] = `${pathTail(path, 1)}:${line} ${name}`;
      key = `py:${portableFilename(filename)}:${line}:${name}`;
      if (k === K_LIB_PY) {
        const m = PACKAGE.exec(path);
        this.pkg[f] = filename.startsWith("<eval_with_key>")
          ? "torch.fx"
          : path.includes("/torchinductor_")
            ? "inductor"
            : m
              ? m[1].replace(/\.py$/, "")
              : "python"; // standard library, frozen modules
      }
    } else {
      // Noise (isNoiseFrame: PyType_*, unnamed ??, MemoryViz's list) is hidden here as in stack lists.
      if (isMachineryFrame(name) || isPlumbingFrame(name) || isNoiseFrame(filename, name)) k = K_DROP;
      else if (isInterpreterFrame(filename, name) || MORE_GLUE.test(name)) k = K_GLUE;
      else k = K_NATIVE;
      let short = shortNativeName(name);
      // A template argument list cut by the argument list's "(": `accumulateGrad<std::function<void `.
      if (short.split("<").length !== short.split(">").length) short = short.slice(0, short.indexOf("<"));
      this.label[f] = short || filename || "??";
      key = `c:${short}`;
      if (k === K_NATIVE) {
        this.pkg[f] =
          /torch_npu/.test(name) || /torch_npu/.test(filename)
            ? "torch_npu"
            : /torch|THP|caffe2|c10/.test(name) || /torch/.test(filename)
              ? "torch"
              : "native";
      }
    }
    this.fh1[f] = hashString(key, SEED1);
    this.fh2[f] = hashString(key, SEED2);
    this.kind[f] = k;
    return k;
  }

  frameKind(f: number): number {
    const k = this.kind[f];
    return k === K_UNSET ? this.classify(f) : k;
  }

  frameLabel(f: number): string {
    this.frameKind(f);
    return this.label[f] as string;
  }

  /** Text tested by search and groups: `filename:line:name` as written in the file. */
  frameText(f: number): string {
    const { frames, strings } = this.model;
    return `${strings[frames.filename[f]] ?? ""}:${frames.line[f]}:${strings[frames.name[f]] ?? ""}`;
  }

  private moduleFrame(f: number): boolean {
    let m = this.isModuleFrame[f];
    if (m === 0) {
      const k = this.frameKind(f);
      const { frames, strings } = this.model;
      const name = strings[frames.name[f]] ?? "";
      let yes = false;
      if ((k === K_OWN || k === K_LIB_PY) && (name === "forward" || name === "backward")) {
        yes = k === K_OWN || TORCH_NN.test(slashPath(strings[frames.filename[f]] ?? ""));
      }
      m = yes ? 2 : 1;
      this.isModuleFrame[f] = m;
    }
    return m === 2;
  }

  // ---- items ----

  private intern(h1: number, h2: number, make: () => Omit<Item, "id" | "h1" | "h2">): number {
    const k = `${h1}:${h2}`;
    let id = this.itemIds.get(k);
    if (id === undefined) {
      id = this.items.length;
      this.items.push({ id, h1, h2, ...make() });
      this.itemIds.set(k, id);
    }
    return id;
  }

  /** A synthetic item (no-stack reason, category, group, outside): keyed by its key text. */
  synthetic(kind: TreeNodeKind, key: string, name: string, detail: string | null = null): number {
    const text = `${kind}:${key}`;
    return this.intern(hashString(text, SEED1), hashString(text, SEED2), () => ({
      kind,
      name,
      detail,
      own: false,
      frame: null,
      collapsedFrames: null,
      frames: null,
    }));
  }

  private frameRef(f: number): TreeFrameRef {
    const { frames, strings } = this.model;
    return {
      filename: strings[frames.filename[f]] ?? "",
      line: frames.line[f],
      name: strings[frames.name[f]] ?? "",
    };
  }

  private itemOfFrame(f: number): number {
    let id = this.frameItem[f];
    if (id < 0) {
      this.frameKind(f);
      id = this.intern(this.fh1[f] >>> 0, this.fh2[f] >>> 0, () => ({
        kind: "frame",
        name: this.label[f] as string,
        detail: null,
        own: this.kind[f] === K_OWN,
        frame: this.frameRef(f),
        collapsedFrames: null,
        frames: Int32Array.of(f),
      }));
      this.frameItem[f] = id;
    }
    return id;
  }

  /**
   * A library run. One that leads to an own-code frame is keyed by that frame alone: every run of library
   * frames between the same caller and the same own-code line is one node (`torch · 10–17 frames`), so one
   * line is never split across branches by how many torch frames happened to sit above it. A run at the
   * end of a stack (into the allocator) is keyed by its frames.
   */
  private itemOfRun(run: number[], leadsTo = -1): number {
    let h1 = 0x72756e31;
    let h2 = 0x72756e32;
    if (leadsTo >= 0) {
      h1 = combine(0x6c656164, this.fh1[leadsTo], SEED1);
      h2 = combine(0x6c656132, this.fh2[leadsTo], SEED2);
    } else {
      for (const f of run) {
        h1 = combine(h1, this.fh1[f], SEED1);
        h2 = combine(h2, this.fh2[f], SEED2);
      }
    }
    const id = this.intern(h1, h2, () => this.runItem(run));
    if (leadsTo >= 0) this.mergeRun(id, run);
    return id;
  }

  /** Merged runs: the frames seen (a key per distinct run) and the shortest and longest run. */
  private readonly runVariants = new Map<number, { runs: Set<string>; all: number[][] }>();

  private mergeRun(id: number, run: number[]): void {
    let v = this.runVariants.get(id);
    if (!v) {
      v = { runs: new Set(), all: [] };
      this.runVariants.set(id, v);
    }
    const key = run.join(",");
    if (v.runs.has(key)) return;
    v.runs.add(key);
    v.all.push(run);
    if (v.all.length === 1) return;
    // Named from all its runs: packages of any, frame counts as a range, frames (for search) of all, the
    // longest run's labels to expand.
    const merged = this.runItem(v.all.flat());
    let lo = Number.POSITIVE_INFINITY;
    let hi = 0;
    let longest = v.all[0];
    for (const r of v.all) {
      lo = Math.min(lo, r.length);
      hi = Math.max(hi, r.length);
      if (r.length > longest.length) longest = r;
    }
    const item = this.items[id];
    const pkgs = merged.name.slice(0, merged.name.lastIndexOf(" · "));
    item.name = `${pkgs} · ${lo === hi ? lo : `${lo}–${hi}`} frames`;
    item.detail = this.runItem(longest).detail;
    item.collapsedFrames = longest.map((f) => this.label[f] as string);
    item.frames = Int32Array.from(new Set(v.all.flat()));
  }

  private runItem(run: number[]): Omit<Item, "id" | "h1" | "h2"> {
    {
      const py: string[] = [];
      const native: string[] = [];
      let detailPy: string | null = null;
      let detailNative: string | null = null;
      for (const f of run) {
        const k = this.kind[f];
        const p = this.pkg[f];
        if (k === K_LIB_PY) {
          if (p && !py.includes(p)) py.push(p);
          detailPy = this.label[f] as string;
        } else if (k === K_NATIVE) {
          if (p && !native.includes(p)) native.push(p);
          detailNative = this.label[f] as string;
        }
      }
      // Unnamed native code (libc, mis-symbolised frames) only names a run when nothing else does.
      const named = native.filter((p) => p !== "native");
      const pkgs = py.length > 0 ? py : named.length > 0 ? named : native;
      const shown = pkgs.length > 3 ? `${pkgs.slice(0, 3).join(" › ")} › …` : pkgs.join(" › ");
      return {
        kind: "library",
        name: `${shown || "native"} · ${run.length} frame${run.length === 1 ? "" : "s"}`,
        detail: detailPy ?? detailNative,
        own: false,
        frame: null,
        collapsedFrames: run.map((f) => this.label[f] as string),
        frames: Int32Array.from(run),
      };
    }
  }

  private itemOfRepeat(base: number, n: number): number {
    const b = this.items[base];
    return this.intern(combine(b.h1, n, 0x52455031), combine(b.h2, n, 0x52455032), () => ({
      kind: "repeat",
      name: `${b.name} <repeats ${n} times>`,
      detail: null,
      own: b.own,
      frame: b.frame,
      collapsedFrames: null,
      frames: b.frames,
    }));
  }

  /** The attribution's call site of a stack, as an item. */
  siteItem(stack: number): number {
    const site = this.attribution.stackSite[stack];
    let id = this.siteItems.get(site);
    if (id === undefined) {
      const s = this.attribution.sites[site];
      id = this.synthetic("site", s?.portableKey ?? String(site), s?.label ?? `site ${site}`);
      this.siteItems.set(site, id);
    }
    return id;
  }

  // ---- stacks ----

  /** Whether the stack has a frame of the user's own code. */
  hasOwn(s: number): boolean {
    if (this.ownStack[s] === 0) this.path(s, "stack");
    return this.ownStack[s] === 2;
  }

  /** Display items of a non-empty stack, outermost first (cached). */
  path(s: number, view: View): Int32Array {
    const cached = this.paths[view][s];
    if (cached) return cached;
    const { offsets, frameIds } = this.model.stacks;
    const start = offsets[s];
    const end = offsets[s + 1];
    const items: number[] = [];
    let own = false;
    if (view === "module") {
      for (let i = end - 1; i >= start; i--) {
        const f = frameIds[i];
        if (this.moduleFrame(f)) items.push(this.itemOfFrame(f));
      }
    } else if (view === "hide" && this.hasOwn(s)) {
      for (let i = end - 1; i >= start; i--) {
        const f = frameIds[i];
        if (this.frameKind(f) === K_OWN) items.push(this.itemOfFrame(f));
      }
      own = true;
    } else {
      let run: number[] = [];
      let content = false;
      const flush = (leadsTo = -1) => {
        if (content) items.push(this.itemOfRun(run, leadsTo));
        run = [];
        content = false;
      };
      for (let i = end - 1; i >= start; i--) {
        const f = frameIds[i];
        const k = this.frameKind(f);
        if (k === K_DROP) continue;
        if (k === K_OWN) {
          flush(f);
          items.push(this.itemOfFrame(f));
          own = true;
        } else {
          run.push(f);
          if (k !== K_GLUE) content = true;
        }
      }
      flush();
      this.ownStack[s] = own ? 2 : 1;
    }
    let out = foldRepeats(items, (base, n) => this.itemOfRepeat(base, n));
    if (out.length === 0) {
      // Module view: memory allocated outside every forward/backward; stack view: a stack of nothing but
      // allocator machinery / CPython glue. Either way the attribution's call site says where it came from.
      out =
        view === "module"
          ? [this.synthetic("outside", "outside", "(outside any forward/backward)"), this.siteItem(s)]
          : [this.siteItem(s)];
    }
    const arr = Int32Array.from(out);
    this.paths[view][s] = arr;
    return arr;
  }
}

/** ≥ 3 identical consecutive items become one "repeats N times" item. */
function foldRepeats(items: number[], repeat: (base: number, n: number) => number): number[] {
  const out: number[] = [];
  for (let i = 0; i < items.length; ) {
    let j = i + 1;
    while (j < items.length && items[j] === items[i]) j++;
    const n = j - i;
    if (n >= 3) out.push(repeat(items[i], n));
    else for (let r = 0; r < n; r++) out.push(items[i]);
    i = j;
  }
  return out;
}
