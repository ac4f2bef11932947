// Attribution: for every block and every trace entry, a category, a call site and the rule that decided.
// Both are functions of the stack (except a profiler-made snapshot's own per-entry category), so they are
// computed once per distinct frame and once per distinct stack, then looked up per row.

import { BlockState, EMPTY_STACK, NO_STRING, type SnapshotModel } from "../model/types";
import {
  isAutogradNodeApply,
  isGeneratedPython,
  isInstalledPath,
  isInterpreterFrame,
  isMachineryFrame,
  isOwnCode,
  isPlumbingFrame,
  isPythonFile,
  pathTail,
  portableFilename,
  shortNativeName,
  slashPath,
} from "./frames";
import {
  CATEGORY_NAMES,
  Category,
  type FrameFacts,
  frameFacts,
  profilerCategory,
  RULES,
  RuleId,
} from "./rules";

export { CATEGORY_NAMES, Category, type CategoryName, RULES } from "./rules";

/** How a call site was chosen. */
export type SiteVia =
  | "own-code" // the innermost Python frame of the user's own code
  | "python-library" // no own code: the innermost Python frame outside torch (or torch's own)
  | "native" // no Python frame: the innermost native frame past machinery and plumbing
  | "innermost-frame" // only machinery/plumbing: the innermost frame that is not machinery
  | "no-stack"; // nothing recorded

export interface Site {
  /** `path:line:function` as written in the file; the special site's key is "no stack recorded". */
  key: string;
  filename: string;
  line: number;
  name: string;
  /** Depth of the frame (0 = innermost) in the first stack whose site it is; -1 for the special sites. */
  frameIndex: number;
  via: SiteVia;
  /** Short form for display: `train.py:57 forward`, `torch::autograd::AccumulateGrad::apply`. */
  label: string;
  /** `file:line:function` independent of install prefix and OS (compare matches on it). */
  portableKey: string;
}

export interface RuleInfo {
  id: string;
  name: string;
  description: string;
  category: string | null;
}

export interface Attribution {
  /** The 7 category names; index = category id. */
  categoryNames: readonly string[];
  rules: RuleInfo[];
  /**
   * sites[0] is the special "no stack recorded" site; sites[1] "autograd engine (no stack recorded)", for
   * frame-less allocations of a stacks='python' file that the trace places on the autograd engine.
   */
  sites: Site[];
  /** Why stacks are missing in this file, most likely first (for the "no stack recorded" site). */
  noStackReasons: string[];
  /** Per-stack cache, indexed by stack id. */
  stackCategory: Uint8Array;
  stackSite: Int32Array;
  stackRule: Uint8Array;
  blockCategory: Uint8Array;
  blockSite: Int32Array;
  blockRule: Uint8Array;
  /** One array per model.traces entry (device trace), one value per trace entry. */
  traceCategory: Uint8Array[];
  traceSite: Int32Array[];
  traceRule: Uint8Array[];
}

export const NO_STACK_SITE = 0;
/** A frame-less allocation that the trace shows came from the autograd engine (stacks='python' files). */
export const ENGINE_NO_STACK_SITE = 1;

const RULE_PROFILER = RuleId["profiler-category"];
const RULE_NO_STACK = RuleId["no-stack"];
const RULE_OWN_CONSTRUCTOR = RuleId["own-constructor"];
const RULE_OWN_CODE = RuleId["own-code"];
const RULE_NO_RULE = RuleId["no-rule"];
const RULE_AUTOGRAD_ENGINE = RuleId["autograd-engine"];
const RULE_ACCUMULATE_GRAD = RuleId["accumulate-grad"];
const RULE_IN_FLIGHT = RuleId["backward-in-flight"];
const RULE_ENGINE_NO_STACK = RuleId["engine-no-stack"];
const RULE_LOSS = RuleId["loss-computation"];

/** Phase of a trace entry, from its stack's rule: what the program was doing. */
const Phase = { none: 0, forward: 1, backward: 2, optimizer: 3, parameters: 4 } as const;
const PHASE_OF_RULE: Record<string, number> = {
  forward: Phase.forward,
  "accumulate-grad": Phase.backward,
  "autograd-engine": Phase.backward,
  "backward-call": Phase.backward,
  optimizer: Phase.optimizer,
  "module-to": Phase.parameters,
  "load-weights": Phase.parameters,
  "init-weights": Phase.parameters,
  "data-parallel-replicate": Phase.parameters,
  "own-constructor": Phase.parameters,
};
const RULE_PHASE = RULES.map((r) => PHASE_OF_RULE[r.id] ?? Phase.none);
const FRAME_RULES = RULES.map((r, i) => ({ r, i })).filter(({ r }) => r.scope === "frame");

// Per-frame classification bits.
const F_PYTHON = 1;
const F_OWN = 2;
const F_TORCH = 4; // Python frame inside the torch package
const F_GENERATED = 8; // frozen / fx / inductor output code
const F_NATIVE_SITE = 16; // native frame worth naming as a site
const F_NODE_APPLY = 32; // torch::autograd::…::apply(
const F_MACHINERY = 64;
const F_STDLIB = 128; // Python standard library (installed, not a site/dist-packages package)

interface FrameClass {
  bits: Uint8Array;
  /** Frame rule index of the first matching marker, or -1. */
  marker: Int16Array;
}

function classifyFrames(model: SnapshotModel): FrameClass {
  const { frames, strings } = model;
  const bits = new Uint8Array(frames.length);
  const marker = new Int16Array(frames.length).fill(-1);
  const fileCache = new Map<
    number,
    { isPython: boolean; isOwn: boolean; path: string; generated: boolean; stdlib: boolean }
  >();
  for (let f = 0; f < frames.length; f++) {
    const fid = frames.filename[f];
    let file = fileCache.get(fid);
    if (!file) {
      const filename = strings[fid] ?? "";
      const path = slashPath(filename);
      const isPython = isPythonFile(filename);
      file = {
        isPython,
        isOwn: isPython && isOwnCode(filename),
        path,
        generated: isPython && isGeneratedPython(filename, path),
        stdlib: isPython && isInstalledPath(path) && !/\/(?:site|dist)-packages\//.test(path),
      };
      fileCache.set(fid, file);
    }
    const name = strings[frames.name[f]] ?? "";
    const facts: FrameFacts = frameFacts(name, file.isPython, file.isOwn, file.path);
    let b = 0;
    if (file.isPython) {
      b |= F_PYTHON;
      if (file.isOwn) b |= F_OWN;
      if (facts.isTorch) b |= F_TORCH;
      if (file.generated) b |= F_GENERATED;
      if (file.stdlib) b |= F_STDLIB;
    } else {
      const filename = strings[fid] ?? "";
      if (isMachineryFrame(name)) b |= F_MACHINERY;
      else if (!isPlumbingFrame(name) && !isInterpreterFrame(filename, name)) b |= F_NATIVE_SITE;
      if (isAutogradNodeApply(name)) b |= F_NODE_APPLY;
    }
    bits[f] = b;
    for (const { r, i } of FRAME_RULES) {
      if (r.match?.(facts)) {
        marker[f] = i;
        break;
      }
    }
  }
  return { bits, marker };
}

class SiteTable {
  readonly sites: Site[] = [
    {
      key: "no stack recorded",
      filename: "",
      line: 0,
      name: "no stack recorded",
      frameIndex: -1,
      via: "no-stack",
      label: "no stack recorded",
      portableKey: "no stack recorded",
    },
    {
      key: "autograd engine (no stack recorded)",
      filename: "",
      line: 0,
      name: "autograd engine (no stack recorded)",
      frameIndex: -1,
      via: "no-stack",
      label: "autograd engine (no stack recorded)",
      portableKey: "autograd engine (no stack recorded)",
    },
  ];
  private readonly ids = new Map<number, number>();

  constructor(private readonly model: SnapshotModel) {}

  get(frame: number, depth: number, via: SiteVia): number {
    // One site per distinct frame (so a site id is a call site for every consumer); frameIndex is the
    // depth in the first stack that chose it.
    const k = frame;
    let id = this.ids.get(k);
    if (id === undefined) {
      const { frames, strings } = this.model;
      const filename = strings[frames.filename[frame]] ?? "";
      const line = frames.line[frame];
      const name = strings[frames.name[frame]] ?? "";
      const python = via === "own-code" || via === "python-library";
      id = this.sites.length;
      this.sites.push({
        key: `${filename}:${line}:${name}`,
        filename,
        line,
        name,
        frameIndex: depth,
        via,
        label: python
          ? `${pathTail(slashPath(filename), 1)}:${line} ${name}`
          : shortNativeName(name) || filename,
        portableKey: python ? `${portableFilename(filename)}:${line}:${name}` : `${shortNativeName(name)}`,
      });
      this.ids.set(k, id);
    }
    return id;
  }
}

/** Attributes every distinct stack of the model, then every block and trace entry by lookup. */
export function attribute(model: SnapshotModel): Attribution {
  const { bits, marker } = classifyFrames(model);
  const siteTable = new SiteTable(model);
  const { offsets, frameIds } = model.stacks;
  const nStacks = model.stacks.length;
  const stackCategory = new Uint8Array(nStacks);
  const stackSite = new Int32Array(nStacks);
  const stackRule = new Uint8Array(nStacks);

  for (let s = 0; s < nStacks; s++) {
    const start = offsets[s];
    const end = offsets[s + 1];
    if (s === EMPTY_STACK || end <= start) {
      stackCategory[s] = Category.unknown;
      stackSite[s] = NO_STACK_SITE;
      stackRule[s] = RULE_NO_STACK;
      continue;
    }
    // One walk, innermost → outermost, collecting what every rule needs.
    let markerRule = -1;
    let ownAt = -1; // innermost own-code frame
    let codeAt = -1; // innermost Python frame of own code or a third-party package (not torch, stdlib, generated)
    let libAt = -1; // innermost third-party package frame
    let torchPyAt = -1; // innermost torch Python frame
    let stdAt = -1; // innermost standard-library frame
    let nativeAt = -1; // innermost native frame worth naming
    let nodeAt = -1; // innermost autograd node apply
    let notMachineryAt = -1;
    for (let i = start; i < end; i++) {
      const f = frameIds[i];
      const b = bits[f];
      if (markerRule < 0 && marker[f] >= 0) markerRule = marker[f];
      if (b & F_PYTHON) {
        if (b & F_GENERATED) continue;
        if (b & F_OWN) {
          if (ownAt < 0) ownAt = i;
          if (codeAt < 0) codeAt = i;
        } else if (b & F_TORCH) {
          if (torchPyAt < 0) torchPyAt = i;
        } else if (b & F_STDLIB) {
          if (stdAt < 0) stdAt = i;
        } else {
          if (libAt < 0) libAt = i;
          if (codeAt < 0) codeAt = i;
        }
      } else {
        if (nativeAt < 0 && b & F_NATIVE_SITE) nativeAt = i;
        if (nodeAt < 0 && b & F_NODE_APPLY) nodeAt = i;
      }
      if (notMachineryAt < 0 && !(b & F_MACHINERY)) notMachineryAt = i;
    }

    // Category.
    let rule: number;
    if (markerRule >= 0) rule = markerRule;
    else if (codeAt >= 0 && bits[frameIds[codeAt]] & F_OWN) {
      const name = model.strings[model.frames.name[frameIds[codeAt]]];
      rule = name === "__init__" ? RULE_OWN_CONSTRUCTOR : RULE_OWN_CODE;
    } else rule = RULE_NO_RULE;
    stackRule[s] = rule;
    stackCategory[s] = RULES[rule].category;

    // Call site.
    let at: number;
    let via: SiteVia;
    if (ownAt >= 0) [at, via] = [ownAt, "own-code"];
    else if (libAt >= 0) [at, via] = [libAt, "python-library"];
    else if (torchPyAt >= 0) [at, via] = [torchPyAt, "python-library"];
    else if (stdAt >= 0) [at, via] = [stdAt, "python-library"];
    else if (nodeAt >= 0) [at, via] = [nodeAt, "native"];
    else if (nativeAt >= 0) [at, via] = [nativeAt, "native"];
    else if (notMachineryAt >= 0) [at, via] = [notMachineryAt, "innermost-frame"];
    else [at, via] = [start, "innermost-frame"];
    stackSite[s] = siteTable.get(frameIds[at], at - start, via);
  }

  const pythonOnly = isPythonOnly(model, bits);

  // Profiler categories, when the file has them.
  const profiler = model.traces.map((t) => {
    let out: Int8Array | null = null;
    for (let i = 0; i < t.length; i++) {
      const c = t.category[i];
      if (c === NO_STRING) continue;
      const cat = profilerCategory(model.strings[c] ?? "");
      if (cat < 0) continue;
      out ??= new Int8Array(t.length).fill(-1);
      out[i] = cat;
    }
    return out;
  });

  const kinds = actionKinds(model);
  /** Addresses of live blocks per device: the allocations worth finding in the trace. */
  const blockAddresses = new Map<number, Set<number>>();
  for (let b = 0; b < model.blocks.length; b++) {
    if (model.blocks.state[b] === BlockState.inactive) continue;
    const dev = model.segments.device[model.blocks.segment[b]];
    let set = blockAddresses.get(dev);
    if (!set) blockAddresses.set(dev, (set = new Set()));
    set.add(model.blocks.address[b]);
  }
  const traceCategory: Uint8Array[] = [];
  const traceSite: Int32Array[] = [];
  const traceRule: Uint8Array[] = [];
  /** Per device: address → index of the last alloc there (where a live block's allocation is). */
  const lastAllocByDevice = new Map<number, { trace: number; at: Map<number, number> }>();
  for (let d = 0; d < model.traces.length; d++) {
    const t = model.traces[d];
    const cat = new Uint8Array(t.length);
    const site = new Int32Array(t.length);
    const rule = new Uint8Array(t.length);
    for (let i = 0; i < t.length; i++) {
      const s = t.stack[i];
      site[i] = stackSite[s];
      cat[i] = stackCategory[s];
      rule[i] = stackRule[s];
    }
    const lastAlloc = refineFromTrace(
      t,
      kinds,
      pythonOnly,
      stackRule,
      cat,
      rule,
      blockAddresses.get(t.device),
    );
    for (let i = 0; i < t.length; i++) {
      if (t.stack[i] === EMPTY_STACK && (rule[i] === RULE_ENGINE_NO_STACK || rule[i] === RULE_IN_FLIGHT)) {
        site[i] = ENGINE_NO_STACK_SITE;
      }
    }
    const prof = profiler[d];
    if (prof) {
      for (let i = 0; i < t.length; i++) {
        if (prof[i] >= 0) {
          cat[i] = prof[i];
          rule[i] = RULE_PROFILER;
        }
      }
    }
    traceCategory.push(cat);
    traceSite.push(site);
    traceRule.push(rule);
    if (!lastAllocByDevice.has(t.device)) lastAllocByDevice.set(t.device, { trace: d, at: lastAlloc });
  }

  const anyProfiler = profiler.some((p) => p !== null);
  const nBlocks = model.blocks.length;
  const blockCategory = new Uint8Array(nBlocks);
  const blockSite = new Int32Array(nBlocks);
  const blockRule = new Uint8Array(nBlocks);
  for (let b = 0; b < nBlocks; b++) {
    const s = model.blocks.stack[b];
    blockSite[b] = stackSite[s];
    blockCategory[b] = stackCategory[s];
    blockRule[b] = stackRule[s];
    // The block's own allocation in the trace, when there is one, carries the refined category (trace
    // rules, profiler category); the same stack guards against a stale address match.
    const base = stackRule[s];
    const refinable =
      base === RULE_AUTOGRAD_ENGINE || base === RULE_OWN_CODE || (s === EMPTY_STACK && pythonOnly);
    if ((!refinable && !anyProfiler) || model.blocks.state[b] === BlockState.inactive) continue;
    const dev = model.segments.device[model.blocks.segment[b]];
    const entry = lastAllocByDevice.get(dev);
    const i = entry?.at.get(model.blocks.address[b]);
    if (entry === undefined || i === undefined) continue;
    if (model.traces[entry.trace].stack[i] !== s) continue;
    blockCategory[b] = traceCategory[entry.trace][i];
    blockRule[b] = traceRule[entry.trace][i];
    blockSite[b] = traceSite[entry.trace][i];
  }

  return {
    categoryNames: CATEGORY_NAMES,
    rules: RULES.map((r) => ({
      id: r.id,
      name: r.id,
      description: r.description,
      category: r.category >= 0 ? CATEGORY_NAMES[r.category] : null,
    })),
    sites: siteTable.sites,
    noStackReasons: noStackReasons(model, bits),
    stackCategory,
    stackSite,
    stackRule,
    blockCategory,
    blockSite,
    blockRule,
    traceCategory,
    traceSite,
    traceRule,
  };
}

/** Frames were recorded, but not one native frame: `_record_memory_history(stacks="python")`. */
function isPythonOnly(model: SnapshotModel, bits: Uint8Array): boolean {
  if (model.stacks.length <= 1) return false;
  for (let f = 0; f < bits.length; f++) if (!(bits[f] & F_PYTHON)) return false;
  return true;
}

const MEMORY_ACTIONS = new Set([
  "alloc",
  "free_requested",
  "free_completed",
  "segment_alloc",
  "segment_free",
  "segment_map",
  "segment_unmap",
]);

/** Per action id: 2 alloc, 3 free_requested / free_completed, 4 another memory action, 0 the rest. */
function actionKinds(model: SnapshotModel): Uint8Array {
  return Uint8Array.from(model.actionNames, (a) =>
    a === "alloc" ? 2 : a === "free_requested" || a === "free_completed" ? 3 : MEMORY_ACTIONS.has(a) ? 4 : 0,
  );
}

/**
 * The trace refinements (rules.ts, scope "trace"), applied to the alloc entries of one device trace in
 * place. Returns, for the addresses in `blockAddresses`, the index of the last alloc there (a live block's
 * allocation).
 *  - An engine-made allocation (autograd-engine frames; in a stacks='python' file, an alloc with no frames)
 *    is a gradient if some main-thread event (a non-engine entry with a stack) happened between it and its
 *    free — it outlived its backward, AccumulateGrad kept it as .grad — and in flight otherwise.
 *  - The user's own allocation whose previous phase entry is a forward and whose next one is a backward is
 *    the loss computation.
 * torch_npu workspace entries (prepended, out of time order) take no part.
 */
function refineFromTrace(
  t: SnapshotModel["traces"][number],
  kinds: Uint8Array,
  pythonOnly: boolean,
  stackRule: Uint8Array,
  cat: Uint8Array,
  rule: Uint8Array,
  blockAddresses: Set<number> | undefined,
): Map<number, number> {
  const n = t.length;
  const engine = new Uint8Array(n);
  const mainPrefix = new Int32Array(n + 1);
  const phase = new Uint8Array(n);
  let anyEngine = false;
  for (let i = 0; i < n; i++) {
    const k = kinds[t.action[i]];
    let main = 0;
    if (k !== 0 && !t.isWorkspace[i]) {
      const s = t.stack[i];
      if (s === EMPTY_STACK) {
        if (pythonOnly && k !== 4) {
          engine[i] = 1;
          phase[i] = Phase.backward;
          anyEngine = true;
        }
      } else {
        const r = stackRule[s];
        if (r === RULE_ACCUMULATE_GRAD)
          engine[i] = 2; // a gradient whatever happens next
        else if (r === RULE_AUTOGRAD_ENGINE) {
          engine[i] = 1;
          anyEngine = true;
        } else main = 1;
        phase[i] = RULE_PHASE[r];
      }
    }
    mainPrefix[i + 1] = mainPrefix[i] + main;
  }
  // Where each engine-made allocation ends: its free_requested (the program's free), else free_completed.
  const end = new Int32Array(n).fill(n);
  const lastAlloc = new Map<number, number>();
  const open = new Map<number, number>();
  for (let i = 0; i < n; i++) {
    const k = kinds[t.action[i]];
    if ((k !== 2 && k !== 3) || t.isWorkspace[i]) continue;
    const addr = t.addr[i];
    if (k === 2) {
      if (blockAddresses?.has(addr)) lastAlloc.set(addr, i);
      if (anyEngine) {
        if (engine[i] === 1) open.set(addr, i);
        else if (open.size > 0) open.delete(addr);
      }
    } else if (open.size > 0) {
      const a = open.get(addr);
      if (a !== undefined) {
        end[a] = i;
        open.delete(addr);
      }
    }
  }
  // Nearest phase entry before / after each entry.
  const prev = new Uint8Array(n);
  const next = new Uint8Array(n);
  for (let i = 0, p = 0; i < n; i++) {
    prev[i] = p;
    if (phase[i]) p = phase[i];
  }
  for (let i = n - 1, p = 0; i >= 0; i--) {
    next[i] = p;
    if (phase[i]) p = phase[i];
  }
  for (let i = 0; i < n; i++) {
    if (kinds[t.action[i]] !== 2) continue;
    const s = t.stack[i];
    const r = s === EMPTY_STACK ? -1 : stackRule[s];
    if (engine[i] === 1) {
      const outlived = mainPrefix[end[i]] - mainPrefix[i + 1] > 0;
      const fired = outlived
        ? s === EMPTY_STACK
          ? RULE_ENGINE_NO_STACK
          : RULE_AUTOGRAD_ENGINE
        : RULE_IN_FLIGHT;
      rule[i] = fired;
      cat[i] = RULES[fired].category;
    } else if (r === RULE_OWN_CODE && prev[i] === Phase.forward && next[i] === Phase.backward) {
      rule[i] = RULE_LOSS;
      cat[i] = RULES[RULE_LOSS].category;
    }
  }
  return lastAlloc;
}

/**
 * The five ways a stack goes missing (snapshot-format.md), ranked by what this file shows: no stacks at all
 * (history not recorded), Python-only stacks (backward on the autograd engine's threads), a trace that does
 * not reach back to the allocation (before recording / evicted from the ring buffer), the context setting.
 */
function noStackReasons(model: SnapshotModel, bits: Uint8Array): string[] {
  const reasons: string[] = [];
  const anyFrames = model.stacks.length > 1;
  let anyNative = false;
  for (let f = 0; f < bits.length && !anyNative; f++) if (!(bits[f] & F_PYTHON)) anyNative = true;
  const traceEntries = model.traces.reduce((n, t) => n + t.length, 0);
  if (!anyFrames) {
    reasons.push(
      "this file has no stacks at all: memory history was not being recorded (torch.cuda.memory." +
        "_record_memory_history was not enabled, or context=None) when these blocks were allocated",
    );
  }
  if (anyFrames && !anyNative) {
    reasons.push(
      "recorded with stacks='python': allocations made on the autograd engine's C++ threads (the gradients " +
        "of backward) carry no Python frame",
    );
  }
  reasons.push(
    "allocated before recording started (_record_memory_history was called after these tensors existed, " +
      "e.g. the model's parameters)",
  );
  if (traceEntries > 0) {
    reasons.push("evicted from the trace ring buffer (trace_alloc_max_entries) before the snapshot");
  }
  reasons.push("the context setting excluded it (context='state' keeps no stacks for trace entries)");
  if (anyFrames && anyNative) {
    reasons.push("reconstructed from the segments rather than recorded (no alloc of it in the trace)");
  }
  return reasons;
}

/** Category names in id order, as a record of zeros (for tallies). */
export function zeroCategories(): Record<string, number> {
  return Object.fromEntries(CATEGORY_NAMES.map((n) => [n, 0]));
}
