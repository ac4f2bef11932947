// The category rules: one ordered table, data not scattered ifs. How the table is read (index.ts):
//   1. `profiler-category` and `no-stack` are looked at first, in that order.
//   2. The frame rules (`scope: "frame"`) are markers: the stack is walked innermost → outermost and the
//      FIRST frame that matches any marker decides; when one frame matches two markers, table order wins.
//      Nearest-wins is what keeps Lightning right: its forward runs inside `optimizer.step(closure)`, so a
//      `torch/optim` frame sits far outside the `forward` that made the activation.
//   3. If no frame is a marker, the fallbacks (`scope: "innermost"`, then `"any"`) are tried in order.
//   4. The trace refines three cases the stack cannot decide (`scope: "trace"`): engine-made buffers that
//      outlive their backward (.grad) vs. ones in flight; frame-less allocations of a stacks='python' file;
//      the user's own computation between a forward and its backward (the loss).
// README.md lists what each rule catches in the real files.

import { isInstalledPath, isTorchPath } from "./frames";

export const CATEGORY_NAMES = [
  "parameters",
  "gradients",
  "optimizer_state",
  "activations",
  "input",
  "temporary",
  "workspace",
  "kv_cache",
  "other",
  "unknown",
] as const;
export type CategoryName = (typeof CATEGORY_NAMES)[number];

export const Category = {
  parameters: 0,
  gradients: 1,
  optimizer_state: 2,
  activations: 3,
  input: 4,
  temporary: 5,
  workspace: 6,
  kv_cache: 7,
  other: 8,
  unknown: 9,
} as const satisfies Record<CategoryName, number>;

/** What a frame rule looks at, computed once per distinct frame. */
export interface FrameFacts {
  /** Filename with `/` separators. */
  path: string;
  name: string;
  isPython: boolean;
  isOwn: boolean;
  isInstalled: boolean;
  isTorch: boolean;
}

export interface Rule {
  id: string;
  category: number;
  /** The category is inferred from sizes and lifetimes, not read from the allocation's own stack. */
  inferred?: boolean;
  /**
   * "frame": a marker (nearest frame wins); "innermost": tests the innermost Python frame outside torch and
   * the standard library; "any": always; "special": decided before the stack walk; "trace": a refinement of
   * one allocation from the order of events in the trace.
   */
  scope: "special" | "frame" | "innermost" | "any" | "trace";
  description: string;
  match?: (f: FrameFacts) => boolean;
}

const inTorch = (f: FrameFacts, sub: string) => f.isTorch && f.path.includes(`/torch/${sub}`);

/** Directories / files of installed optimizer libraries: `…/optim/`, `…/optimizer/`, `optimization.py`, `distrib_optimizer.py`. */
const OPTIMIZER_PATH = /\/(?:optim|optimizers?|optimization)(?:\/|\.py$)|_optim(?:izer)?\.py$/;
const MODULE_TO_NAMES = new Set(["_apply", "to", "cuda", "npu", "xpu", "to_empty"]);
const LOAD_NAMES = new Set([
  "load_state_dict",
  "_load_from_state_dict",
  "from_pretrained",
  "_load_pretrained_model",
  "load_checkpoint_in_model",
  "set_module_tensor_to_device",
]);
const INIT_WEIGHTS =
  /^_?(?:reset|init|initiali[sz]e|create)_?(?:all_)?(?:weights?|params|parameters)(?:_list)?$/;
const INPUT_TRANSFER_NAMES = new Set(["transfer_batch_to_device", "move_data_to_device"]);
/** The engine itself, or a generated backward node running (not its destructor / release_variables). */
const ENGINE_NATIVE =
  /torch::autograd::Engine::|torch::autograd::generated::\w+(?:::apply\(|_apply_functional\()/;
/** Inference engines' KV caches: vLLM's cache engine (v0 worker/cache_engine.py, v1 model runners'
 * `_allocate_kv_cache_tensors` / `initialize_kv_cache`), SGLang's mem_cache pools, Hugging Face caches. */
const KV_CACHE_FILE =
  /\/vllm\/(?:.*\/)?cache_engine\.py$|\/sglang\/srt\/mem_cache\/|\/transformers\/cache_utils\.py$/;
const KV_CACHE_NAME = /kv_cache/;
/** FSDP1's FlatParamHandle (torch/distributed/fsdp/_flat_param.py): functions that make gradient buffers;
 * every other allocation there is the flat parameter (sharded, padded unsharded for all-gather). */
const FLAT_PARAM_GRAD_NAMES = new Set([
  "prepare_gradient_for_backward",
  "prepare_gradient_for_optim",
  "_use_unsharded_grad_views",
  "_use_sharded_grad_views",
  "to_cpu_grad",
]);
const FSDP_FILE = /\/torch\/distributed\/(?:fsdp\/|_composable\/fsdp\/)/;
const DATA_PARALLEL_FILE = /\/(?:data_parallel|scatter_gather)\.py$/;

export const RULES: readonly Rule[] = [
  {
    id: "profiler-category",
    category: -1,
    scope: "special",
    description:
      "A snapshot made from the profiler (_profile_to_snapshot) carries its own category per trace entry; it wins " +
      "(a block takes it from the last alloc at its address). parameter→parameters, gradient→gradients, " +
      "optimizer_state, activation→activations, input, temporary/autograd_detail→temporary; the profiler's " +
      "'unknown' falls through to the stack rules.",
  },
  {
    id: "no-stack",
    category: Category.unknown,
    scope: "special",
    description:
      "No frames were recorded for this allocation (see the likely reason given with the site): unknown.",
  },
  {
    id: "npu-workspace",
    category: Category.workspace,
    scope: "special",
    description:
      "A block of torch_npu's workspace allocator (its segment is one of the workspace entries torch_npu " +
      "prepends to the trace at dump time). Not part of memory_allocated() / max_memory_allocated(), and its " +
      "timing is not recorded: kept out of the caching allocator's peak and of the snapshot-vs-peak check.",
  },
  {
    id: "accumulate-grad",
    category: Category.gradients,
    scope: "frame",
    description:
      "A native torch::autograd::AccumulateGrad frame: the autograd engine writing a parameter's .grad.",
    match: (f) => !f.isPython && f.name.includes("AccumulateGrad"),
  },
  {
    id: "optimizer",
    category: Category.optimizer_state,
    scope: "frame",
    description:
      "A torch/optim frame (any torch optimizer, custom ones through Optimizer's step wrapper; AdamW " +
      "allocates through adam.py), or a file of an installed optimizer library (…/optim/, …/optimizer/, " +
      "optimization.py, *_optimizer.py, e.g. Megatron's distrib_optimizer.py master weights).",
    match: (f) =>
      f.isPython &&
      (inTorch(f, "optim/") ||
        inTorch(f, "distributed/optim/") ||
        (f.isInstalled && OPTIMIZER_PATH.test(f.path))),
  },
  {
    id: "backward-call",
    category: Category.gradients,
    scope: "frame",
    description:
      "torch's Python backward (Tensor.backward, torch.autograd.backward / grad, _make_grads: the seed " +
      "gradient of loss.backward()).",
    match: (f) =>
      f.isPython &&
      f.isTorch &&
      ((f.path.endsWith("/torch/_tensor.py") && f.name === "backward") ||
        (f.path.endsWith("/torch/autograd/__init__.py") &&
          (f.name === "backward" || f.name === "grad" || f.name === "_make_grads"))),
  },
  {
    id: "autograd-engine",
    category: Category.gradients,
    scope: "frame",
    description:
      "Made by the autograd engine (native torch::autograd::Engine:: / generated XxxBackward::apply frames) " +
      "and outliving the backward that made it: AccumulateGrad kept it as the parameter's .grad (it steals " +
      "the buffer instead of copying). Also the default when the trace cannot tell (see backward-in-flight).",
    match: (f) => !f.isPython && ENGINE_NATIVE.test(f.name),
  },
  {
    id: "data-parallel-replicate",
    category: Category.parameters,
    scope: "frame",
    description: "nn.DataParallel copying the parameters to each device (torch/nn/parallel/replicate.py).",
    match: (f) => f.isPython && inTorch(f, "nn/parallel/replicate.py"),
  },
  {
    id: "input-transfer",
    category: Category.input,
    scope: "frame",
    description:
      "A framework moving the batch to the device: DataParallel's scatter (data_parallel.py / " +
      "scatter_gather.py), Lightning's transfer_batch_to_device / move_data_to_device.",
    match: (f) =>
      f.isPython &&
      ((f.name === "scatter" && DATA_PARALLEL_FILE.test(f.path)) || INPUT_TRANSFER_NAMES.has(f.name)),
  },
  {
    id: "kv-cache",
    category: Category.kv_cache,
    scope: "frame",
    description:
      "An inference engine's KV cache: vLLM's cache engine (worker/cache_engine.py _allocate_kv_cache) or a " +
      "vLLM function named …kv_cache… (v1 model runners' _allocate_kv_cache_tensors), SGLang's " +
      "srt/mem_cache pools (memory_pool.py), Hugging Face transformers' cache_utils.py (DynamicCache " +
      "growing by torch.cat each step, StaticCache's preallocated layers).",
    match: (f) =>
      f.isPython &&
      f.isInstalled &&
      (KV_CACHE_FILE.test(f.path) || (f.path.includes("/vllm/") && KV_CACHE_NAME.test(f.name))),
  },
  {
    id: "megatron-param-buffer",
    category: Category.parameters,
    scope: "frame",
    description:
      "Megatron's fused parameter buffer (megatron/core/distributed/param_and_grad_buffer.py, the buffer's " +
      "__init__): param_data, one contiguous bf16/fp16 tensor the model's parameters are views of (made " +
      "with the distributed optimizer). Told from grad_data by the source line: Megatron allocates " +
      "param_data before grad_data, so every allocating line of that __init__ but the last is param_data.",
    match: (f) =>
      f.isPython &&
      f.isInstalled &&
      /\/megatron\/.*param_and_grad_buffer\.py$/.test(f.path) &&
      f.name === "__init__",
  },
  {
    id: "megatron-grad-buffer",
    category: Category.gradients,
    scope: "frame",
    description:
      "Megatron's fused gradient buffer: grad_data in param_and_grad_buffer.py's __init__ (the last allocating " +
      "line there), or grad_buffer.py (older Megatron's GradBuffer): one contiguous tensor every " +
      "parameter's main_grad is a view of, kept for the whole run.",
    match: (f) => f.isPython && f.isInstalled && /\/megatron\/.*\/grad_buffer\.py$/.test(f.path),
  },
  {
    id: "fsdp-flat-param",
    category: Category.parameters,
    scope: "frame",
    description:
      "FSDP's flat parameters: torch/distributed/fsdp/_flat_param.py (FlatParamHandle: flattening, the " +
      "padded unsharded flat parameter all-gathered for forward/backward) outside its gradient functions, " +
      "or FSDP2's foreach_all_gather (fully_shard). Nearest wins, so an unshard inside a Module call is " +
      "parameters, not activations.",
    match: (f) =>
      f.isPython &&
      f.isTorch &&
      FSDP_FILE.test(f.path) &&
      ((f.path.endsWith("/_flat_param.py") && !FLAT_PARAM_GRAD_NAMES.has(f.name)) ||
        (f.path.endsWith("/_fsdp_collectives.py") && f.name.startsWith("foreach_all_gather"))),
  },
  {
    id: "fsdp-flat-grad",
    category: Category.gradients,
    scope: "frame",
    description:
      "FSDP's gradient buffers: FlatParamHandle's gradient functions (prepare_gradient_for_backward / " +
      "_for_optim, the grad views), the post-backward reduce-scatter (_runtime_utils.py _post_backward_hook / " +
      "_reduce_grad) or FSDP2's foreach_reduce: the sharded .grad of the flat parameter.",
    match: (f) =>
      f.isPython &&
      f.isTorch &&
      FSDP_FILE.test(f.path) &&
      ((f.path.endsWith("/_flat_param.py") && FLAT_PARAM_GRAD_NAMES.has(f.name)) ||
        (f.path.endsWith("/_runtime_utils.py") &&
          (f.name === "_post_backward_hook" ||
            f.name === "_reduce_grad" ||
            f.name.startsWith("_reduce_grad"))) ||
        (f.path.endsWith("/_fsdp_collectives.py") && f.name.startsWith("foreach_reduce"))),
  },
  {
    id: "forward",
    category: Category.activations,
    scope: "frame",
    description:
      "Inside a forward: a Python frame named forward (a module's, a torch.autograd.Function's, AOTAutograd's " +
      "compiled forward under torch.compile) or a Module call (_call_impl / _wrapped_call_impl). Frames of " +
      "torch/nn/parallel and data_parallel.py do not count: DataParallel's own forward only dispatches.",
    match: (f) =>
      f.isPython &&
      !inTorch(f, "nn/parallel/") &&
      !DATA_PARALLEL_FILE.test(f.path) &&
      (f.name === "forward" ||
        (inTorch(f, "nn/modules/module.py") && (f.name === "_call_impl" || f.name === "_wrapped_call_impl"))),
  },
  {
    id: "module-to",
    category: Category.parameters,
    scope: "frame",
    description:
      "Module.to() / .cuda() / .npu() / _apply() (torch/nn/modules/module.py) converting a module's " +
      "parameters and buffers onto the device.",
    match: (f) => f.isPython && inTorch(f, "nn/modules/module.py") && MODULE_TO_NAMES.has(f.name),
  },
  {
    id: "load-weights",
    category: Category.parameters,
    scope: "frame",
    description:
      "Weights loaded onto the device: load_state_dict / _load_from_state_dict, from_pretrained, accelerate's " +
      "set_module_tensor_to_device, safetensors, torch/serialization.py (torch.load with map_location).",
    match: (f) =>
      f.isPython &&
      (LOAD_NAMES.has(f.name) ||
        (f.isInstalled && f.path.includes("/safetensors/")) ||
        inTorch(f, "serialization.py")),
  },
  {
    id: "init-weights",
    category: Category.parameters,
    scope: "frame",
    description:
      "Parameters made on the device at construction: a torch.nn module's __init__ (factory kwargs " +
      "device=…), or a function named like reset_parameters / init_weights / create_weights / " +
      "init_weight_list / initialize_parameters.",
    match: (f) =>
      f.isPython && ((f.name === "__init__" && inTorch(f, "nn/modules/")) || INIT_WEIGHTS.test(f.name)),
  },
  {
    id: "own-constructor",
    category: Category.parameters,
    scope: "innermost",
    description:
      "The innermost Python frame outside torch and the standard library is the user's own __init__ (self.w = nn.Parameter(torch." +
      "randn(…, device=…))): a constructor putting its state on the device.",
    match: (f) => f.isOwn && f.name === "__init__",
  },
  {
    id: "own-code",
    category: Category.input,
    scope: "innermost",
    description:
      "The innermost Python frame outside torch and the standard library is the user's own code, outside any forward, backward, " +
      "optimizer step, load or construction: data the user put on the device (batches, targets, buffers).",
    match: (f) => f.isOwn,
  },
  {
    id: "no-rule",
    category: Category.other,
    scope: "any",
    description:
      "A stack, but no rule matched: library code outside a forward/backward/step (KV caches, communication " +
      "buffers, workspaces) or a native-only stack outside the autograd engine.",
  },
  // ---- Refinements from the trace: they change the stack's category for one allocation, because the
  // order of events tells what the stack cannot (index.ts, refineFromTrace).
  {
    id: "backward-in-flight",
    category: Category.temporary,
    scope: "trace",
    description:
      "Made by the autograd engine (or by torch's backward() itself: the root gradient) and freed before the " +
      "backward that made it ended, or still alive at a snapshot taken during that backward (no main-thread " +
      "event after it in the trace): the gradient of an activation, a backward temporary, or a weight gradient " +
      "not yet accumulated. The profiler's AUTOGRAD_DETAIL. Checkpointing does not remove it.",
  },
  {
    id: "engine-no-stack",
    category: Category.gradients,
    scope: "trace",
    description:
      "stacks='python' file: recorded in the trace with no frames, so made on a thread without Python — the " +
      "autograd engine's — and outliving that backward: a .grad. (In flight instead: backward-in-flight.)",
  },
  {
    id: "loss-computation",
    category: Category.other,
    scope: "trace",
    description:
      "The user's own code computing on the model's output between a forward and the backward that follows " +
      "(the loss, e.g. model(x).float().pow(2).mean()), outliving that backward: the loss itself.",
  },
  {
    id: "loss-intermediate",
    category: Category.temporary,
    scope: "trace",
    description:
      "The user's own code between a forward and its backward (the loss computation), freed before the " +
      "backward began: an intermediate of the loss.",
  },
  {
    id: "loss-saved",
    category: Category.activations,
    scope: "trace",
    description:
      "The user's own code between a forward and its backward (the loss computation), freed during that " +
      "backward: saved by the loss's ops for backward, like a module's activation.",
  },
  {
    id: "forward-transient",
    category: Category.temporary,
    scope: "trace",
    description:
      "Made inside a forward and freed before any backward or optimizer step came after it: an intermediate " +
      "that no backward kept (all of inference's intermediates are). Checkpointing does not remove it.",
  },
  {
    id: "optimizer-scratch",
    category: Category.temporary,
    scope: "trace",
    description:
      "Made by the optimizer and freed before the program left that optimizer step (no forward or backward " +
      "between its allocation and its free): scratch such as AdamW-foreach's sqrt buffers, not state. " +
      "Sharding the optimizer does not shrink it; foreach=False does.",
  },
  // ---- Inferred: memory with no stack (allocated before recording began), named from sizes and lifetimes
  // (index.ts, inferBeforeTrace). Marked as inferred everywhere it is shown.
  {
    id: "replaced-in-phase",
    category: -1,
    inferred: true,
    scope: "trace",
    description:
      "Inferred. Allocated before recording began (no stack), and freed in the same phase as an allocation " +
      "of exactly the same size from a known site, which replaces it one for one (a functional optimizer " +
      "replacing last step's exp_avg): it takes that allocation's category and call site.",
  },
  {
    id: "released-by-backward",
    category: Category.activations,
    inferred: true,
    scope: "trace",
    description:
      "Inferred. Allocated before recording began (no stack), and freed by the autograd engine during a " +
      "backward: a tensor the forward saved for that backward (an activation).",
  },
  {
    id: "matches-gradient",
    category: Category.parameters,
    inferred: true,
    scope: "trace",
    description:
      "Inferred. Allocated before recording began (no stack), never replaced in the trace, and its size " +
      "matches a gradient one for one (per size, as many as the most gradients of that size alive at once): " +
      "the parameter of that gradient. Record from before the model is built to see its own stack.",
  },
  {
    id: "adam-state",
    category: Category.optimizer_state,
    inferred: true,
    scope: "trace",
    description:
      "Inferred. Allocated before recording began (no stack), and the optimizer is Adam-like (adam/adamw " +
      "frames): past the parameters a size's gradients account for, up to two more blocks per parameter of " +
      "that size are its exp_avg and exp_avg_sq.",
  },
  {
    id: "pairs-traced-moments",
    category: -1,
    inferred: true,
    scope: "trace",
    description:
      "Inferred. Allocated before recording began (no stack), no gradient of this size is in the file, and the " +
      "optimizer's step made, in the trace, state of exactly this size that it kept (two moments per " +
      "parameter): the pre-recording blocks of this size are exactly as many as those moments, so they are " +
      "the parameters and their .grad (kept across steps): ½ parameters, ½ gradients. Any other count: no answer.",
  },
  {
    id: "engine-gradient",
    category: Category.gradients,
    inferred: true,
    scope: "trace",
    description:
      "Inferred. A stacks='python' file (the autograd engine's threads record no frames): a frame-less block " +
      "whose allocation is not in the trace, whose size matches a parameter that has no gradient of its size " +
      "yet (one for one): that parameter's .grad.",
  },
  {
    id: "adam-quartet",
    category: -1,
    inferred: true,
    scope: "trace",
    description:
      "Inferred. Allocated before recording began (no stack), no gradient of this size is in the file, the " +
      "Adam-like optimizer allocates tensors of this size in the trace, and the pre-recording blocks of this " +
      "size come in fours: per parameter its weight, its .grad (kept across steps, zero_grad(set_to_none=" +
      "False)) and two Adam moments: ¼ parameters, ¼ gradients, ½ optimizer state.",
  },
  {
    id: "profiler-span",
    category: -1,
    scope: "special",
    inferred: true,
    description:
      "Inferred from a profiler trace's spans (no tensor identity says it): made inside an AccumulateGrad node → " +
      "gradients; inside Optimizer.step#… → optimizer state when it outlives the step, temporary when freed " +
      "within it; made outside backward and freed inside autograd::engine::evaluate_function → activations; " +
      "made and freed inside backward → temporary.",
  },
  {
    id: "profiler-span-none",
    category: Category.unknown,
    scope: "special",
    description:
      "A profiler trace's allocation that no span names and no Python frame explains (recorded without " +
      "with_stack=True, or outside any rule): unknown.",
  },
];

export const RuleId: Record<string, number> = Object.fromEntries(RULES.map((r, i) => [r.id, i]));

export function frameFacts(name: string, isPython: boolean, isOwn: boolean, path: string): FrameFacts {
  const installed = isPython && isInstalledPath(path);
  return { path, name, isPython, isOwn, isInstalled: installed, isTorch: installed && isTorchPath(path) };
}

/** A profiler trace's span category ("span:<name>"): the profiler's names, "unknown" → unknown. */
export function spanCategory(name: string): number {
  return name === "unknown" ? Category.unknown : profilerCategory(name);
}

/** Profiler category names (torch.profiler._memory_profiler.Category, lower-cased) → our category; -1: use the stack. */
export function profilerCategory(name: string): number {
  switch (name.toLowerCase()) {
    case "parameter":
    case "parameters":
      return Category.parameters;
    case "gradient":
    case "gradients":
      return Category.gradients;
    case "optimizer_state":
      return Category.optimizer_state;
    case "activation":
    case "activations":
      return Category.activations;
    case "input":
      return Category.input;
    case "temporary":
    case "autograd_detail":
      return Category.temporary;
    default:
      return -1;
  }
}
