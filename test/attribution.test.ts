// Each attribution rule alone, on stacks copied from real snapshot files (test/attribution-real-stacks.ts).
// Expected categories, rules and sites are read off the stacks by hand (the comments say why), never
// computed by the code under test.

import { describe, expect, it } from "vitest";
import { attribute, CATEGORY_NAMES, NO_STACK_SITE, RULES } from "../src/core/attribution";
import {
  isInstalledPath,
  isOwnCode,
  isPlumbingFrame,
  isPythonFile,
  portableFilename,
  slashPath,
} from "../src/core/attribution/frames";
import { ModelBuilder } from "../src/core/model/builder";
import { REAL_STACKS } from "./attribution-real-stacks";
import { buildModel, type Frames, internStack } from "./report-fixtures";

const S = REAL_STACKS;

type StackName = keyof typeof REAL_STACKS;

function attributeOne(frames: Frames) {
  const model = buildModel([{ blocks: [{ size: 512, frames }] }]);
  const a = attribute(model);
  const site = a.sites[a.blockSite[0]];
  return {
    category: a.categoryNames[a.blockCategory[0]],
    rule: a.rules[a.blockRule[0]].id,
    site,
  };
}

/** Index of the first frame whose filename ends with `file` and whose line is `line` (read from the data). */
function frameAt(frames: Frames, file: string, line: number): number {
  const i = frames.findIndex(([f, l]) => slashPath(f).endsWith(file) && l === line);
  if (i < 0) throw new Error(`no frame ${file}:${line}`);
  return i;
}

interface Case {
  stack: StackName;
  category: string;
  rule: string;
  /** Expected site: own/library Python frame by file suffix + line, or a native name. */
  site: { file: string; line: number; name: string } | { native: string };
  via: string;
  why: string;
}

const CASES: Case[] = [
  {
    stack: "lightningForwardInsideOptimizerStep",
    category: "activations",
    rule: "forward",
    site: { file: "transformers/dit.py", line: 126, name: "forward" },
    via: "own-code",
    why: "Lightning runs forward inside optimizer.step(closure): the nearest marker is timm's activation forward, not adam.py",
  },
  {
    stack: "accumulateGrad",
    category: "gradients",
    rule: "accumulate-grad",
    site: { native: "torch::autograd::AccumulateGrad::apply" },
    via: "native",
    why: "autograd engine thread, no Python frame; AccumulateGrad::apply is the node past clone_obey_contract",
  },
  {
    stack: "bmmBackwardEngine",
    category: "gradients",
    rule: "autograd-engine",
    site: { native: "torch::autograd::generated::BmmBackward0::apply" },
    via: "native",
    why: "a backward node's output on the engine thread (AccumulateGrad steals it as .grad)",
  },
  {
    stack: "adamInitGroup",
    category: "optimizer_state",
    rule: "optimizer",
    site: { file: "FourierNN/counterfactuals.py", line: 127, name: "generate_counterfactuals" },
    via: "own-code",
    why: "torch/optim/adam.py _init_group creating exp_avg; the site is the user's optimizer.step() line",
  },
  {
    stack: "customOptimizerThroughWrapper",
    category: "optimizer_state",
    rule: "optimizer",
    site: { file: "cs336_basics/optimizers.py", line: 82, name: "step" },
    via: "own-code",
    why: "the user's own optimizer class; torch/optim/optimizer.py's step wrapper is on the stack",
  },
  {
    stack: "moduleToPythonOnly",
    category: "parameters",
    rule: "module-to",
    site: { file: "cezo_fl/client.py", line: 176, name: "reset_model" },
    via: "own-code",
    why: "stacks='python' file: module.py convert/_apply/to under the user's model.to()",
  },
  {
    stack: "moduleToWindows",
    category: "parameters",
    rule: "module-to",
    site: { file: "joel/model.py", line: 7, name: "__init__" },
    via: "own-code",
    why: "Windows back-slash paths (lower-case lib\\site-packages): module.py _apply",
  },
  {
    stack: "moduleCudaNative",
    category: "parameters",
    rule: "module-to",
    site: { file: "verl/workers/megatron_workers.py", line: 188, name: "megatron_actor_model_provider" },
    via: "own-code",
    why: "module.cuda() with C++ frames interleaved (dispatch_to)",
  },
  {
    stack: "dataParallelReplicate",
    category: "parameters",
    rule: "data-parallel-replicate",
    site: { file: "train/trainers.py", line: 444, name: "train" },
    via: "own-code",
    why: "nn.DataParallel broadcasting parameters to the replicas (its Broadcast.forward does not count as a forward)",
  },
  {
    stack: "dataParallelScatter",
    category: "input",
    rule: "input-transfer",
    site: { file: "train/trainers.py", line: 444, name: "train" },
    via: "own-code",
    why: "DataParallel scattering the batch (torch_geometric data.to) before the replicas' forward",
  },
  {
    stack: "lightningBatchTransfer",
    category: "input",
    rule: "input-transfer",
    site: { file: "src/train.py", line: 95, name: "train" },
    via: "own-code",
    why: "Lightning's transfer_batch_to_device",
  },
  {
    stack: "flexgenInitWeights",
    category: "parameters",
    rule: "init-weights",
    site: { file: "flexgen/pytorch_backend.py", line: 190, name: "allocate" },
    via: "own-code",
    why: "torch 2.0 history layout: FlexGen's init_weight_list allocating the weights",
  },
  {
    stack: "vllmCreateWeights",
    category: "parameters",
    rule: "init-weights",
    site: { file: "vllm_rollout/vllm_rollout_spmd.py", line: 114, name: "__init__" },
    via: "own-code",
    why: "vLLM's LinearMethod.create_weights under a torch.device context",
  },
  {
    stack: "ownConstructor",
    category: "parameters",
    rule: "own-constructor",
    site: { file: "LayoutEditing/guide_utils.py", line: 9, name: "__init__" },
    via: "own-code",
    why: "the user's own __init__ is the innermost Python frame",
  },
  {
    stack: "jupyterCell",
    category: "input",
    rule: "own-code",
    site: { file: "ipykernel_137282/1784485557.py", line: 6, name: "<module>" },
    via: "own-code",
    why: "a Jupyter cell (/tmp/ipykernel_…/….py) under ~90 frames of ipykernel/tornado/asyncio",
  },
  {
    stack: "ownCodeTransfer",
    category: "input",
    rule: "own-code",
    site: { file: "FourierNN/counterfactuals.py", line: 102, name: "generate_counterfactuals" },
    via: "own-code",
    why: "the user's own .to(device) outside any forward/backward/step",
  },
  {
    stack: "vllmKvCache",
    category: "kv_cache",
    rule: "kv-cache",
    site: { file: "vllm_rollout/vllm_rollout_spmd.py", line: 114, name: "__init__" },
    via: "own-code",
    why: "vLLM's KV cache: cache_engine.py _allocate_kv_cache (the own __init__ is far outside, not the innermost)",
  },
  {
    stack: "makeGrads",
    category: "gradients",
    rule: "backward-call",
    site: { file: "FourierNN/counterfactuals.py", line: 125, name: "generate_counterfactuals" },
    via: "own-code",
    why: "torch.autograd.backward's _make_grads (the seed gradient of loss.backward())",
  },
  {
    stack: "inductorCompiled",
    category: "activations",
    rule: "forward",
    site: { file: "misc/attention.py", line: 285, name: "get_input" },
    via: "own-code",
    why: "torch.compile: Inductor's /tmp/torchinductor_… output code is generated, not own code; AOTAutograd forward",
  },
  {
    stack: "windowsPythonOnlyForward",
    category: "activations",
    rule: "forward",
    site: { file: "cs336_basics/model.py", line: 39, name: "forward" },
    via: "own-code",
    why: "Windows D:\\…\\.venv\\Lib\\site-packages paths, stacks='python': einsum inside the user's forward",
  },
  {
    stack: "windowsPythonOnlyLoss",
    category: "input",
    rule: "own-code",
    site: { file: "cs336_basics/nn_utils.py", line: 18, name: "cross_entropy" },
    via: "own-code",
    why: "a loss computed by the user's own function outside a forward lands in input (documented limitation)",
  },
  {
    stack: "megatronDistribOptimizer",
    category: "optimizer_state",
    rule: "optimizer",
    site: { file: "verl/utils/megatron/optimizer.py", line: 37, name: "get_megatron_optimizer" },
    via: "own-code",
    why: "Megatron's distributed optimizer building fp32 main params (…/megatron/core/optimizer/)",
  },
  {
    stack: "libraryOnlyFree",
    category: "activations",
    rule: "forward",
    site: { file: "torch/nn/modules/module.py", line: 1784, name: "_call_impl" },
    via: "python-library",
    why: "a free inside a DataParallel worker thread with no own frame: the innermost torch Python frame",
  },
];

describe("attribution rules on real stacks", () => {
  for (const c of CASES) {
    it(`${c.stack}: ${c.category} by ${c.rule} (${c.why})`, () => {
      const frames = REAL_STACKS[c.stack].frames;
      const got = attributeOne(frames);
      expect(got.category).toBe(c.category);
      expect(got.rule).toBe(c.rule);
      expect(got.site.via).toBe(c.via);
      if ("native" in c.site) {
        expect(got.site.label).toBe(c.site.native);
        expect(frames[got.site.frameIndex][2].includes(c.site.native)).toBe(true);
      } else {
        const at = frameAt(frames, c.site.file, c.site.line);
        expect(got.site.frameIndex).toBe(at);
        expect(got.site.name).toBe(c.site.name);
        expect(got.site.key).toBe(`${frames[at][0]}:${frames[at][1]}:${frames[at][2]}`);
      }
      // Never frames[0] by position: with C++ frames the innermost frames are the snapshot machinery.
      if (frames.some(([f]) => f === "??" || f === "")) expect(got.site.frameIndex).toBeGreaterThan(0);
    });
  }

  it("the Lightning stack really has torch/optim outside the forward (the reason for nearest-wins)", () => {
    const frames = REAL_STACKS.lightningForwardInsideOptimizerStep.frames;
    const optim = frames.findIndex(([f]) => f.includes("/torch/optim/"));
    const fwd = frames.findIndex(([, , n]) => n === "forward");
    expect(fwd).toBeGreaterThan(0);
    expect(optim).toBeGreaterThan(fwd);
  });

  it("an empty stack is unknown with the special no-stack site and reasons", () => {
    const model = buildModel([{ blocks: [{ size: 1024 }] }]);
    const a = attribute(model);
    expect(a.categoryNames[a.blockCategory[0]]).toBe("unknown");
    expect(a.rules[a.blockRule[0]].id).toBe("no-stack");
    expect(a.blockSite[0]).toBe(NO_STACK_SITE);
    expect(a.sites[NO_STACK_SITE].key).toBe("no stack recorded");
    expect(a.noStackReasons[0]).toMatch(/no stacks at all/);
  });

  it("a Python-only file names stacks='python' as the likely reason for an empty stack", () => {
    const model = buildModel([
      { blocks: [{ size: 1024 }, { size: 512, frames: REAL_STACKS.windowsPythonOnlyForward.frames }] },
    ]);
    const a = attribute(model);
    expect(a.noStackReasons[0]).toMatch(/stacks='python'/);
  });

  it("profiler-made snapshots: the entry's own category wins, for trace entries and for the block at that address", () => {
    const frames = REAL_STACKS.adamInitGroup.frames; // optimizer by its stack
    const model = buildModel(
      [{ address: 0x1000, blocks: [{ size: 512, frames }] }],
      [
        {
          device: 0,
          entries: [
            { action: "alloc", addr: 0x1000, size: 500, frames, category: "parameter" },
            { action: "alloc", addr: 0x9000, size: 500, frames, category: "unknown" },
          ],
        },
      ],
    );
    const a = attribute(model);
    expect(a.categoryNames[a.traceCategory[0][0]]).toBe("parameters");
    expect(a.rules[a.traceRule[0][0]].id).toBe("profiler-category");
    // The profiler's own "unknown" falls through to the stack rules.
    expect(a.categoryNames[a.traceCategory[0][1]]).toBe("optimizer_state");
    expect(a.categoryNames[a.blockCategory[0]]).toBe("parameters");
    expect(a.rules[a.blockRule[0]].id).toBe("profiler-category");
  });

  // (No timing: tests check behaviour; bench/ prints the times. A hang ends at vitest's test timeout.)
  it("categorises each distinct stack, and 1M trace entries by their stack's category", () => {
    const b = new ModelBuilder();
    const fwd = internStack(b, REAL_STACKS.lightningForwardInsideOptimizerStep.frames);
    const grad = internStack(b, REAL_STACKS.accumulateGrad.frames);
    const n = 1_000_000;
    for (let i = 0; i < n; i++)
      b.addTraceEntry(0, { action: "alloc", addr: i * 512, sizeBytes: 512, stack: i % 2 ? fwd : grad });
    const model = b.finish({ fileName: "x", byteLength: 0, format: "pickle", pickleProtocol: 4, notes: [] });
    const a = attribute(model);
    expect(a.stackCategory.length).toBe(model.stacks.length);
    expect(a.traceCategory[0].length).toBe(n);
    expect(a.categoryNames[a.traceCategory[0][1]]).toBe("activations");
    expect(a.categoryNames[a.traceCategory[0][2]]).toBe("gradients");
    // Every entry carries its stack's category: odd entries the forward stack's, even ones AccumulateGrad's.
    const t = a.traceCategory[0];
    const [odd, even] = [a.stackCategory[fwd], a.stackCategory[grad]];
    expect(odd).not.toBe(even);
    let wrong = 0;
    for (let i = 0; i < n; i++) if (t[i] !== (i % 2 ? odd : even)) wrong++;
    expect(wrong).toBe(0);
  });

  it("the rule table and category names keep their documented order", () => {
    expect([...CATEGORY_NAMES]).toEqual([
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
    ]);
    expect(RULES.map((r) => r.id)).toEqual([
      "profiler-category",
      "no-stack",
      "npu-workspace",
      "accumulate-grad",
      "optimizer",
      "backward-call",
      "autograd-engine",
      "data-parallel-replicate",
      "input-transfer",
      "kv-cache",
      "megatron-param-buffer",
      "megatron-grad-buffer",
      "fsdp-flat-param",
      "fsdp-flat-grad",
      "forward",
      "module-to",
      "load-weights",
      "init-weights",
      "own-constructor",
      "own-code",
      "no-rule",
      "backward-in-flight",
      "engine-no-stack",
      "loss-computation",
      "loss-intermediate",
      "loss-saved",
      "forward-transient",
      "optimizer-scratch",
      "replaced-in-phase",
      "released-by-backward",
      "matches-gradient",
      "adam-state",
      "pairs-traced-moments",
      "engine-gradient",
      "adam-quartet",
      "profiler-span",
      "profiler-span-none",
    ]);
    for (const r of RULES) expect(r.description.length).toBeGreaterThan(20);
  });
});

describe("trace refinements (real stacks, planted event order)", () => {
  const engine = S.bmmBackwardEngine.frames;
  const opt = S.adamInitGroup.frames;
  const at = (a: ReturnType<typeof attribute>, i: number) => [
    a.categoryNames[a.traceCategory[0][i]],
    a.rules[a.traceRule[0][i]].id,
  ];

  it("an engine-made block that outlived its backward is a gradient; one still in flight is a temporary", () => {
    const kept = buildModel(
      [{ address: 0x1000, blocks: [{ size: 512, frames: engine }] }],
      [
        {
          device: 0,
          entries: [
            { action: "alloc", addr: 0x1000, size: 512, frames: engine },
            { action: "alloc", addr: 0x9000, size: 512, frames: opt },
          ],
        },
      ],
    );
    const a = attribute(kept);
    expect(at(a, 0)).toEqual(["gradients", "autograd-engine"]);
    expect(a.categoryNames[a.blockCategory[0]]).toBe("gradients");
    const inFlight = buildModel(
      [{ address: 0x1000, blocks: [{ size: 512, frames: engine }] }],
      [
        {
          device: 0,
          entries: [
            { action: "alloc", addr: 0x9000, size: 512, frames: opt },
            { action: "alloc", addr: 0x1000, size: 512, frames: engine },
          ],
        },
      ],
    );
    const b = attribute(inFlight);
    expect(at(b, 1)).toEqual(["temporary", "backward-in-flight"]);
    expect(b.categoryNames[b.blockCategory[0]]).toBe("temporary");
    expect(b.rules[b.blockRule[0]].id).toBe("backward-in-flight");
  });

  it("an engine temporary freed inside its backward is in flight", () => {
    const m = buildModel(
      [],
      [
        {
          device: 0,
          entries: [
            { action: "alloc", addr: 0x1000, size: 512, frames: engine },
            { action: "free_requested", addr: 0x1000, size: 512, frames: engine },
            { action: "alloc", addr: 0x9000, size: 512, frames: opt },
          ],
        },
      ],
    );
    expect(at(attribute(m), 0)).toEqual(["temporary", "backward-in-flight"]);
  });

  it("stacks='python': a frame-less alloc in the trace is the autograd engine's", () => {
    const fwd = S.windowsPythonOnlyForward.frames;
    const m = buildModel(
      [
        { address: 0x1000, blocks: [{ size: 512 }, { size: 512, frames: fwd }] },
        { address: 0x5000, blocks: [{ size: 1024 }] },
      ],
      [
        {
          device: 0,
          entries: [
            { action: "alloc", addr: 0x1000, size: 512 },
            { action: "alloc", addr: 0x1200, size: 512, frames: fwd },
          ],
        },
      ],
    );
    const a = attribute(m);
    expect(at(a, 0)).toEqual(["gradients", "engine-no-stack"]);
    expect(a.categoryNames[a.blockCategory[0]]).toBe("gradients");
    expect(a.sites[a.blockSite[0]].key).toBe("autograd engine (no stack recorded)");
    // Not in the trace: allocated before recording, and no gradient of its size — unknown.
    expect(a.categoryNames[a.blockCategory[2]]).toBe("unknown");
    expect(a.blockSite[2]).toBe(NO_STACK_SITE);
    expect(a.unknownReasonOfBlock(2)).toBe("before-recording");
  });

  it("the user's own computation between a forward and its backward is the loss; before a forward it is input", () => {
    const loss = S.windowsPythonOnlyLoss.frames;
    const m = buildModel(
      [],
      [
        {
          device: 0,
          entries: [
            { action: "alloc", addr: 0x1000, size: 512, frames: S.ownCodeTransfer.frames },
            { action: "alloc", addr: 0x2000, size: 512, frames: S.windowsPythonOnlyForward.frames },
            { action: "alloc", addr: 0x3000, size: 512, frames: loss },
            { action: "alloc", addr: 0x4000, size: 512, frames: S.makeGrads.frames },
          ],
        },
      ],
    );
    const a = attribute(m);
    expect(at(a, 0)).toEqual(["input", "own-code"]);
    expect(at(a, 2)).toEqual(["other", "loss-computation"]);
  });
});

describe("frame classification on real filenames", () => {
  const all = Object.values(REAL_STACKS).flatMap((s) => s.frames);
  it("C++ frames are not Python frames", () => {
    for (const [f] of all.filter(
      ([f]) => f === "" || f === "??" || f.endsWith(".cpp") || f.endsWith(".so"),
    )) {
      expect(isPythonFile(f)).toBe(false);
    }
  });
  it("installed prefixes: conda, venv (uv), lib64, Debian dist-packages, Windows", () => {
    const installed = [
      "/home/haoyangsun/anaconda3/envs/gnn/lib/python3.11/site-packages/torch/nn/modules/module.py",
      "/home/haoyangsun/anaconda3/envs/gnn/lib/python3.11/threading.py",
      "/oscar/home/jsolt/FourierNN/myenv/lib64/python3.9/site-packages/torch/optim/adam.py",
      "/usr/local/lib/python3.10/dist-packages/vllm/worker/cache_engine.py",
      "D:\\Dev\\assignment2-systems\\.venv\\Lib\\site-packages\\torch\\functional.py",
      "C:\\Users\\jgregoire\\AppData\\Local\\Programs\\Python\\Python310\\lib\\site-packages\\torch\\nn\\modules\\module.py",
      "C:\\research\\DeComFL\\.venv\\lib\\site-packages\\transformers\\modeling_utils.py",
    ];
    for (const f of installed) {
      expect(all.some(([g]) => g === f)).toBe(true); // really in the copied stacks
      expect(isInstalledPath(slashPath(f))).toBe(true);
      expect(isOwnCode(f)).toBe(false);
    }
    const own = [
      "/mnt/data3/haoyangsun/CurProject/src/train/trainers.py",
      "D:\\Dev\\assignment2-systems\\cs336-basics\\cs336_basics\\model.py",
      "/tmp/ipykernel_137282/1784485557.py",
      "/opt/tiger/verl/verl/workers/megatron_workers.py",
      "C:\\research\\DeComFL\\cezo_fl\\client.py",
    ];
    for (const f of own) {
      expect(all.some(([g]) => g === f)).toBe(true);
      expect(isOwnCode(f)).toBe(true);
    }
    expect(
      isOwnCode("/tmp/torchinductor_drisspg/nq/cnqtho2nij4af6swya42kmd2tvb2py3brmcdj3mike6uxkmojqam.py"),
    ).toBe(false);
  });
  it("allocator and dispatcher plumbing, with and without a return type", () => {
    expect(
      isPlumbingFrame(
        "at::TensorBase at::detail::_empty_generic<long>(c10::ArrayRef<long>, c10::Allocator*)",
      ),
    ).toBe(true);
    expect(
      isPlumbingFrame(
        "c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::allocate(unsigned long)",
      ),
    ).toBe(true);
    expect(
      isPlumbingFrame(
        "torch::autograd::AccumulateGrad::apply(std::vector<at::Tensor, std::allocator<at::Tensor> >&&)",
      ),
    ).toBe(false);
  });
  it("portable filenames match across install prefixes and separators", () => {
    expect(
      portableFilename("D:\\Dev\\assignment2-systems\\.venv\\Lib\\site-packages\\torch\\functional.py"),
    ).toBe("torch/functional.py");
    expect(
      portableFilename(
        "/home/lin/cs336/assignment2-systems/.venv/lib/python3.12/site-packages/torch/functional.py",
      ),
    ).toBe("torch/functional.py");
    expect(portableFilename("D:\\Dev\\assignment2-systems\\cs336-basics\\cs336_basics\\model.py")).toBe(
      "cs336_basics/model.py",
    );
    expect(portableFilename("/home/lin/cs336/assignment2-systems/cs336-basics/cs336_basics/model.py")).toBe(
      "cs336_basics/model.py",
    );
  });
});

describe("rules with no real frame to copy", () => {
  // No file in ../shared/fixtures/real loads weights through load_state_dict / from_pretrained /
  // safetensors, so there is no real stack to copy: this checks the rule's predicate on the frame fields
  // alone (the file torch/nn/modules/module.py and the function names do exist in torch).
  it("load-weights matches load_state_dict / from_pretrained frames, not a forward", () => {
    const rule = RULES.find((r) => r.id === "load-weights");
    const facts = (path: string, name: string) => ({
      path,
      name,
      isPython: true,
      isOwn: false,
      isInstalled: true,
      isTorch: path.includes("/site-packages/torch/"),
    });
    const mod = "/home/u/.venv/lib/python3.12/site-packages/torch/nn/modules/module.py";
    expect(rule?.match?.(facts(mod, "load_state_dict"))).toBe(true);
    expect(rule?.match?.(facts(mod, "_call_impl"))).toBe(false);
  });
});
