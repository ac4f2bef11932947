// Attribution: for every block and every trace entry, a category, a call site and the rule that decided.
// Both are functions of the stack (except a profiler-made snapshot's own per-entry category), so they are
// computed once per distinct frame and once per distinct stack, then looked up per row.

import { BlockState, EMPTY_STACK, type IdColumn, idAt, NO_STRING, type SnapshotModel } from "../model/types";
import { tracePairing } from "../replay/pairing";
import {
  type BeforeInferred,
  type BlockAttribution,
  inferBeforeTrace,
  type TraceAttribution,
} from "./before-trace";
import {
  isAutogradNodeApply,
  isGeneratedPython,
  isInstalledPath,
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
} from "./frames";
import {
  CATEGORY_NAMES,
  Category,
  type FrameFacts,
  frameFacts,
  profilerCategory,
  RULES,
  RuleId,
  spanCategory,
} from "./rules";
import { entriesFromStacks, Kind, refineFromTrace } from "./trace-rules";

export { type BeforeInferred, isInferredRule } from "./before-trace";
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
  /** The rule infers a category from sizes and lifetimes (no stack says it). */
  inferred: boolean;
}

/** Why memory is "unknown" (JSON keys of `unknownBytesByReason`). */
export const UNKNOWN_REASONS = [
  "before-recording",
  "ring-buffer-evicted",
  "no-stacks-recorded",
  "reconstructed",
] as const;
export type UnknownReason = (typeof UNKNOWN_REASONS)[number];

export interface Attribution {
  /** The category names (CATEGORY_NAMES); index = category id. */
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
  /**
   * Per stack, for stacks whose site is the user's own code: the library function that line called (the
   * Python frame just inside it) and the innermost meaningful library frame (site ids; -1 none).
   */
  stackLibrary: Int32Array;
  stackLibraryInnermost: Int32Array;
  blockCategory: Uint8Array;
  blockSite: Int32Array;
  blockRule: Uint8Array;
  /** One array per model.traces entry (device trace), one value per trace entry. */
  traceCategory: Uint8Array[];
  traceSite: Int32Array[];
  traceRule: Uint8Array[];
  /**
   * Per trace, for the free entries that close an allocation made before the trace: what was inferred of
   * that allocation (its category, rule and site). The replay reads them.
   */
  traceBefore: BeforeInferred[];
  /** Per block: 1 when its allocation is in the trace (same address, same stack). */
  blockInTrace: Uint8Array;
  /** Per block: 1 when it belongs to a torch_npu workspace segment. */
  blockWorkspace: Uint8Array;
  /** Blocks and trace entries with no stack: why (UNKNOWN_REASONS) for an active block, from what the file shows. */
  unknownReasonOfBlock: (block: number) => UnknownReason;
}

export const NO_STACK_SITE = 0;
/** A frame-less allocation that the trace shows came from the autograd engine (stacks='python' files). */
export const ENGINE_NO_STACK_SITE = 1;
/** Memory allocated before recording began whose category was inferred (sizes and lifetimes). */
export const BEFORE_RECORDING_SITE = 2;

const RULE_PROFILER = RuleId["profiler-category"];
const RULE_PROFILER_SPAN = RuleId["profiler-span"];
const RULE_PROFILER_SPAN_NONE = RuleId["profiler-span-none"];
const RULE_NO_STACK = RuleId["no-stack"];
const RULE_OWN_CONSTRUCTOR = RuleId["own-constructor"];
const RULE_OWN_CODE = RuleId["own-code"];
const RULE_NO_RULE = RuleId["no-rule"];
const RULE_AUTOGRAD_ENGINE = RuleId["autograd-engine"];
const RULE_BACKWARD_CALL = RuleId["backward-call"];
const RULE_WORKSPACE = RuleId["npu-workspace"];
const RULE_MEGATRON_PARAM = RuleId["megatron-param-buffer"];
const RULE_MEGATRON_GRAD = RuleId["megatron-grad-buffer"];

/**
 * Megatron's _ParamAndGradBuffer.__init__ allocates param_data (only with the distributed optimizer) and then
 * grad_data, always in that order in the source: per file, the stacks at the last allocating line of that
 * __init__ are grad_data (gradients), the earlier lines param_data (parameters). One line only: grad_data.
 */
function splitMegatronBuffers(
  model: SnapshotModel,
  pairs: number[],
  stackRule: Uint8Array,
  stackCategory: Uint8Array,
): void {
  if (pairs.length === 0) return;
  const lastLine = new Map<number, number>();
  for (let k = 0; k < pairs.length; k += 2) {
    const f = pairs[k + 1];
    const file = model.frames.filename[f];
    const line = model.frames.line[f];
    if (line > (lastLine.get(file) ?? -1)) lastLine.set(file, line);
  }
  for (let k = 0; k < pairs.length; k += 2) {
    const f = pairs[k + 1];
    if (model.frames.line[f] !== lastLine.get(model.frames.filename[f])) continue;
    stackRule[pairs[k]] = RULE_MEGATRON_GRAD;
    stackCategory[pairs[k]] = RULES[RULE_MEGATRON_GRAD].category;
  }
}

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
  /** 1 for library frames that only pass a call on (Module.__call__, decorators): never named as the library. */
  wrapper: Uint8Array;
  /** Some Python frame is Adam's (adam.py, adamw.py, _multi_tensor_adam, FusedAdam…). */
  adamLike: boolean;
}

/** Library frames that only forward a call: skipped when naming the library function a line called. */
const WRAPPER_FRAME =
  /\/torch\/nn\/modules\/module\.py$|\/torch\/utils\/_contextlib\.py$|\/torch\/autograd\/grad_mode\.py$|\/torch\/_dynamo\/eval_frame\.py$|\/(?:functools|contextlib)\.py$/;
/** Decorator-made functions that only pass a call on (vLLM's deprecate_kwargs `inner`, functools wraps). */
const WRAPPER_NAME = /^(?:inner|wrapper|_wrapper|wrapped|wrapped_fn|decorate_context|_fn)$/;
const ADAM = /adam/i;

function classifyFrames(model: SnapshotModel): FrameClass {
  const { frames, strings } = model;
  const bits = new Uint8Array(frames.length);
  const marker = new Int16Array(frames.length).fill(-1);
  const wrapper = new Uint8Array(frames.length);
  let adamLike = false;
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
      if (WRAPPER_FRAME.test(file.path) || WRAPPER_NAME.test(name)) wrapper[f] = 1;
      if (!adamLike && !file.isOwn && (ADAM.test(name) || ADAM.test(pathTail(file.path, 1)))) adamLike = true;
    } else {
      const filename = strings[fid] ?? "";
      if (isMachineryFrame(name)) b |= F_MACHINERY;
      else if (!isPlumbingFrame(name) && !isInterpreterFrame(filename, name) && !isNoiseFrame(filename, name))
        b |= F_NATIVE_SITE;
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
  return { bits, marker, wrapper, adamLike };
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
    {
      key: "allocated before recording (inferred)",
      filename: "",
      line: 0,
      name: "allocated before recording (inferred)",
      frameIndex: -1,
      via: "no-stack",
      label: "allocated before recording (inferred)",
      portableKey: "allocated before recording (inferred)",
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
  return withUnknownReasons(model, attributeData(model));
}

/** The attribution as data alone, no function in it: what a helper thread hands back (structured clone). */
export type AttributionData = Omit<Attribution, "unknownReasonOfBlock">;

/** The attribution from its data (attributeData's, here or on another thread) and the model it was made of. */
export function withUnknownReasons(model: SnapshotModel, data: AttributionData): Attribution {
  const anyFrames = model.stacks.length > 1;
  const blockInTrace = data.blockInTrace;
  const unknownReasonOfBlock = (b: number): UnknownReason => {
    if (!anyFrames || blockInTrace[b]) return "no-stacks-recorded";
    // torch 2.0 blocks have no address: rebuilt from their segment's layout, matched to nothing.
    if (model.legacyHistory && model.blocks.addressComputed[b]) return "reconstructed";
    return "before-recording";
  };
  return { ...data, unknownReasonOfBlock };
}

/** attribute() without the function: categories, sites and rules of every stack, block and trace entry. */
export function attributeData(model: SnapshotModel): AttributionData {
  const { bits, marker, wrapper, adamLike } = classifyFrames(model);
  const siteTable = new SiteTable(model);
  const { offsets, frameIds } = model.stacks;
  const nStacks = model.stacks.length;
  const stackCategory = new Uint8Array(nStacks);
  const stackSite = new Int32Array(nStacks);
  const stackRule = new Uint8Array(nStacks);
  const stackLibrary = new Int32Array(nStacks).fill(-1);
  const stackLibraryInnermost = new Int32Array(nStacks).fill(-1);
  /** (stack, marker frame) pairs of Megatron's buffer constructor: split into param_data / grad_data after. */
  const megatronBuffers: number[] = [];

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
    let markerFrame = -1;
    let ownAt = -1; // innermost own-code frame
    let codeAt = -1; // innermost Python frame of own code or a third-party package (not torch, stdlib, generated)
    let libAt = -1; // innermost third-party package frame
    let torchPyAt = -1; // innermost torch Python frame
    let stdAt = -1; // innermost standard-library frame
    let nativeAt = -1; // innermost native frame worth naming
    let nodeAt = -1; // innermost autograd node apply
    let notMachineryAt = -1;
    let calledAt = -1; // the library frame the own-code line called (outermost library frame inside it)
    let libMeaningfulAt = -1; // innermost library frame that is not a wrapper (third-party first)
    let torchMeaningfulAt = -1;
    for (let i = start; i < end; i++) {
      const f = frameIds[i];
      const b = bits[f];
      if (markerRule < 0 && marker[f] >= 0) {
        markerRule = marker[f];
        markerFrame = f;
      }
      if (b & F_PYTHON) {
        if (b & F_GENERATED) continue;
        if (b & F_OWN) {
          if (ownAt < 0) ownAt = i;
          if (codeAt < 0) codeAt = i;
        } else {
          if (ownAt < 0 && !wrapper[f] && !(b & F_STDLIB)) {
            calledAt = i;
            if (b & F_TORCH) {
              if (torchMeaningfulAt < 0) torchMeaningfulAt = i;
            } else if (libMeaningfulAt < 0) libMeaningfulAt = i;
          }
          if (b & F_TORCH) {
            if (torchPyAt < 0) torchPyAt = i;
          } else if (b & F_STDLIB) {
            if (stdAt < 0) stdAt = i;
          } else {
            if (libAt < 0) libAt = i;
            if (codeAt < 0) codeAt = i;
          }
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
    if (rule === RULE_MEGATRON_PARAM) megatronBuffers.push(s, markerFrame);

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
    if (ownAt >= 0 && calledAt >= 0) {
      stackLibrary[s] = siteTable.get(frameIds[calledAt], calledAt - start, "python-library");
      const inner = libMeaningfulAt >= 0 ? libMeaningfulAt : torchMeaningfulAt;
      if (inner >= 0 && inner !== calledAt) {
        stackLibraryInnermost[s] = siteTable.get(frameIds[inner], inner - start, "python-library");
      }
    }
  }

  splitMegatronBuffers(model, megatronBuffers, stackRule, stackCategory);
  const pythonOnly = isPythonOnly(model, bits);

  // Profiler categories, when the file has them.
  /** Per trace: 1 where the category came from a profiler trace's spans ("span:…"). */
  const spanRows: (Uint8Array | null)[] = [];
  const profiler = model.traces.map((t, d) => {
    spanRows[d] = null;
    let out: Int8Array | null = null;
    for (let i = nextWithCategory(t.category, 0); i >= 0; i = nextWithCategory(t.category, i + 1)) {
      const c = idAt(t.category, i);
      const name = model.strings[c] ?? "";
      // "span:<category>": decided from a profiler trace's spans (formats/artifacts/span-categories.ts)
      const span = name.startsWith("span:");
      const cat = span ? spanCategory(name.slice(5)) : profilerCategory(name);
      if (cat < 0) continue;
      out ??= new Int8Array(t.length).fill(-1);
      out[i] = cat;
      if (span) (spanRows[d] ??= new Uint8Array(t.length))[i] = 1;
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
  const traceBefore: BeforeInferred[] = [];
  /** Per device: the first trace of it (where a live block's allocation is), with its lifetimes. */
  const traceOfDevice = new Map<number, { trace: number; attr: TraceAttribution }>();
  for (let d = 0; d < model.traces.length; d++) {
    const t = model.traces[d];
    const entries = entriesFromStacks(t, stackCategory, stackSite, stackRule, kinds, pythonOnly);
    const { cat, site, rule } = entries;
    const lifetimes = refineFromTrace(
      t,
      kinds,
      stackRule,
      entries,
      blockAddresses.get(t.device),
      tracePairing(model, t),
      ENGINE_NO_STACK_SITE,
    );
    const prof = profiler[d];
    if (prof) {
      // (the rules' lifetimes by size read their categories, some of which this replaces)
      lifetimes.bySize = null;
      for (let i = 0; i < t.length; i++) {
        if (prof[i] >= 0) {
          cat[i] = prof[i];
          rule[i] =
            spanRows[d]?.[i] === 1
              ? prof[i] === Category.unknown
                ? RULE_PROFILER_SPAN_NONE
                : RULE_PROFILER_SPAN
              : RULE_PROFILER;
        }
      }
    }
    const before: BeforeInferred = new Map();
    traceCategory.push(cat);
    traceSite.push(site);
    traceRule.push(rule);
    traceBefore.push(before);
    if (!traceOfDevice.has(t.device)) {
      traceOfDevice.set(t.device, {
        trace: d,
        attr: { trace: t, lifetimes, category: cat, rule, site, before },
      });
    }
  }

  const anyProfiler = profiler.some((p) => p !== null);
  const nBlocks = model.blocks.length;
  const blockCategory = new Uint8Array(nBlocks);
  const blockSite = new Int32Array(nBlocks);
  const blockRule = new Uint8Array(nBlocks);
  const blockInTrace = new Uint8Array(nBlocks);
  const blockWorkspace = blockWorkspaceOf(model);
  for (let b = 0; b < nBlocks; b++) {
    const s = model.blocks.stack[b];
    blockSite[b] = stackSite[s];
    blockCategory[b] = stackCategory[s];
    blockRule[b] = stackRule[s];
    if (blockWorkspace[b]) {
      blockCategory[b] = Category.workspace;
      blockRule[b] = RULE_WORKSPACE;
      continue;
    }
    if (model.blocks.state[b] === BlockState.inactive) continue;
    // The block's own allocation in the trace, when there is one, carries the refined category (trace
    // rules, profiler category); the same stack guards against a stale address match.
    const dev = model.segments.device[model.blocks.segment[b]];
    const entry = traceOfDevice.get(dev);
    const i = entry?.attr.lifetimes.lastAlloc.get(model.blocks.address[b]);
    if (entry === undefined || i === undefined) continue;
    if (model.traces[entry.trace].stack[i] !== s) continue;
    blockInTrace[b] = 1;
    const base = stackRule[s];
    const refinable =
      base === RULE_AUTOGRAD_ENGINE ||
      base === RULE_OWN_CODE ||
      base === RULE_BACKWARD_CALL ||
      (s === EMPTY_STACK && pythonOnly);
    if (!refinable && !anyProfiler) continue;
    blockCategory[b] = traceCategory[entry.trace][i];
    blockRule[b] = traceRule[entry.trace][i];
    blockSite[b] = traceSite[entry.trace][i];
  }

  // Memory with no stack: inferred from sizes and lifetimes, per device.
  const blockAttr: BlockAttribution = {
    category: blockCategory,
    rule: blockRule,
    site: blockSite,
    inTrace: blockInTrace,
  };
  const devices = new Set<number>(traceOfDevice.keys());
  for (let s = 0; s < model.segments.length; s++) devices.add(model.segments.device[s]);
  for (const dev of devices) {
    inferBeforeTrace(
      model,
      dev,
      traceOfDevice.get(dev)?.attr ?? null,
      blockAttr,
      stackCategory,
      stackRule,
      kinds,
      adamLike,
      pythonOnly,
      BEFORE_RECORDING_SITE,
    );
  }

  return {
    categoryNames: CATEGORY_NAMES,
    rules: RULES.map((r) => ({
      id: r.id,
      name: r.id,
      description: r.description,
      category: r.category >= 0 ? CATEGORY_NAMES[r.category] : null,
      inferred: r.inferred === true,
    })),
    sites: siteTable.sites,
    noStackReasons: noStackReasons(model, bits),
    stackCategory,
    stackSite,
    stackRule,
    stackLibrary,
    stackLibraryInnermost,
    blockCategory,
    blockSite,
    blockRule,
    traceCategory,
    traceSite,
    traceRule,
    traceBefore,
    blockInTrace,
    blockWorkspace,
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

/** Per action id: the Kind the trace rules read (alloc, free, another memory action, the rest). */
function actionKinds(model: SnapshotModel): Uint8Array {
  return Uint8Array.from(model.actionNames, (a) =>
    a === "alloc"
      ? Kind.alloc
      : a === "free_requested" || a === "free_completed"
        ? Kind.free
        : MEMORY_ACTIONS.has(a)
          ? Kind.memory
          : Kind.other,
  );
}

// The per-entry passes below are small functions of their own: on a file opened cold, V8 compiles a
// small loop in a moment, while a loop inside attribute() waits for the whole function to be compiled
// (and recompiled for each of its loops) and runs unoptimised meanwhile.

/** The first entry at or after `from` with a category (a profiler-made snapshot's; most have none), or -1. */
function nextWithCategory(category: IdColumn, from: number): number {
  const { diff, base } = category;
  if (!category.varies) return base !== NO_STRING && from < diff.length ? from : -1;
  const none = NO_STRING - base; // the difference that stands for NO_STRING
  for (let i = from; i < diff.length; i++) if (diff[i] !== none) return i;
  return -1;
}

/** Per block: 1 when it belongs to a torch_npu workspace segment (Attribution.blockWorkspace). */
export function blockWorkspaceOf(model: SnapshotModel): Uint8Array {
  const workspaceSegments = workspaceSegmentsOf(model);
  const out = new Uint8Array(model.blocks.length);
  if (workspaceSegments.size === 0) return out;
  for (let b = 0; b < out.length; b++) if (workspaceSegments.has(model.blocks.segment[b])) out[b] = 1;
  return out;
}

/**
 * Segments of torch_npu's workspace allocator: those at an address that a prepended workspace entry
 * (`workspace_snapshot` / `segment_alloc` / `alloc` with isWorkspace) of the same device names.
 */
function workspaceSegmentsOf(model: SnapshotModel): Set<number> {
  const out = new Set<number>();
  const byDevice = new Map<number, Set<number>>();
  for (const t of model.traces) {
    // torch_npu's workspace entries only, found with indexOf: none in most files
    for (let i = t.isWorkspace.indexOf(1); i >= 0; i = t.isWorkspace.indexOf(1, i + 1)) {
      let set = byDevice.get(t.device);
      if (!set) byDevice.set(t.device, (set = new Set()));
      set.add(t.addr[i]);
    }
  }
  if (byDevice.size === 0) return out;
  const seg = model.segments;
  for (let s = 0; s < seg.length; s++) if (byDevice.get(seg.device[s])?.has(seg.address[s])) out.add(s);
  return out;
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
