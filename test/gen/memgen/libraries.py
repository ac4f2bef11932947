"""`libraries`: memory named by library call sites and the pairing rule (issue 24, items 6 and 7).

Two files, each with its truth from the simulation's bookkeeping (bytes per category of live blocks,
rounded block sizes), never from reading the file back:

- `serving.pickle`: an inference + training process like verl's: vLLM's cache engine allocating the KV
  cache (vllm/worker/cache_engine.py _allocate_kv_cache under CacheEngine.__init__), SGLang's token pool
  (sglang/srt/mem_cache/memory_pool.py _create_buffers), a Hugging Face DynamicCache growing by torch.cat in
  transformers/cache_utils.py update during generate()'s forwards (the old tensor freed each step), the
  model's weights (vLLM create_weights), Megatron's fused buffers (megatron/core/distributed/
  param_and_grad_buffer.py __init__: param_data at line 586, then grad_data at line 592) and FSDP's flat
  parameter (torch/distributed/fsdp/_flat_param.py flatten_tensors_into_flat_param) with its sharded
  gradient (_runtime_utils.py _reduce_grad). cuda-all stacks, dist-packages paths.
- `handopt.pickle`: a hand-written optimizer (my_optim.py, a torch.optim.Optimizer subclass: its step runs
  through Optimizer's step wrapper) whose two moments per parameter are allocated lazily in its first step,
  inside the trace; the parameters and their .grad (kept across steps, zero_grad(set_to_none=False)) were
  allocated before recording began (no stacks). Three steps are recorded. Truth: parameters = gradients =
  the weights' bytes, optimizer_state = 2 x that.
"""

from .allocator import Allocator
from .layout import render
from .stacks import NATIVE, Stacks

MiB = 1 << 20
KV_LAYERS = 4
KV_BLOCK_BYTES = 64 * MiB       # one layer's K (or V) cache: vLLM allocates [2, num_blocks, ...] per layer
SGLANG_POOL_BYTES = 48 * MiB
HF_STEP_BYTES = 2 * MiB         # DynamicCache grows by one token's K/V per layer and step (simplified: per step)
HF_STEPS = 5
WEIGHTS = (24 * MiB, 8 * MiB, 8 * MiB)
MEGATRON_NUMEL_BYTES = (96 * MiB, 40 * MiB)  # param_data (bf16) per buffer; grad_data is fp32: twice that
FSDP_FLAT_BYTES = 32 * MiB
HANDOPT_PARAMS = (16 * MiB, 16 * MiB, 4 * MiB, 2 * MiB)
HANDOPT_STEPS = 3


def _native():
    return NATIVE["malloc"] + NATIVE["empty"]


def serving():
    S = Stacks("cuda-all", "dist")
    A = Allocator()
    truth = {}
    live = []

    def m(nbytes, py, category):
        a = A.malloc(nbytes, S.ctx(_native(), py), category=category)
        live.append(a)
        A.clock.tick(10)
        return a

    main = [S.U(40, "main")]
    # The model's weights (vLLM linear create_weights) .
    for w in WEIGHTS:
        m(w, [S.P("vllm/model_executor/layers/linear.py", 190, "create_weights"),
              S.P("vllm/model_executor/layers/linear.py", 180, "__init__")] + main, "parameters")
    # vLLM's KV cache: one K and one V tensor per layer.
    for _ in range(KV_LAYERS * 2):
        m(KV_BLOCK_BYTES, [S.P("vllm/worker/cache_engine.py", 86, "_allocate_kv_cache"),
                           S.P("vllm/worker/cache_engine.py", 69, "__init__"),
                           S.P("vllm/worker/worker.py", 290, "_init_cache_engine")] + main, "kv_cache")
    # SGLang's token-to-KV pool.
    m(SGLANG_POOL_BYTES, [S.P("sglang/srt/mem_cache/memory_pool.py", 211, "_create_buffers"),
                          S.P("sglang/srt/mem_cache/memory_pool.py", 190, "__init__")] + main, "kv_cache")
    # Hugging Face DynamicCache: each step torch.cat makes a bigger tensor inside the forward, the old is freed.
    prev = None
    for step in range(1, HF_STEPS + 1):
        a = A.malloc(step * HF_STEP_BYTES, S.ctx(_native(), [
            S.P("transformers/cache_utils.py", 450, "update"),
            S.P("transformers/models/llama/modeling_llama.py", 270, "forward"),
            S.T("nn/modules/module.py", 1750, "_call_impl"),
            S.P("transformers/generation/utils.py", 3200, "_sample")] + main), category="kv_cache")
        A.clock.tick(5)
        if prev is not None:
            A.free(prev)
        prev = a
    live.append(prev)
    # Megatron's fused buffers: param_data (line 586) then grad_data (line 592, fp32: twice the bytes).
    for p in MEGATRON_NUMEL_BYTES:
        ddp = [S.P("megatron/core/distributed/distributed_data_parallel.py", 180, "_allocate_buffers_for_parameters"),
               S.P("megatron/core/distributed/distributed_data_parallel.py", 90, "__init__")] + main
        m(p, [S.P("megatron/core/distributed/param_and_grad_buffer.py", 586, "__init__")] + ddp, "parameters")
        m(2 * p, [S.P("megatron/core/distributed/param_and_grad_buffer.py", 592, "__init__")] + ddp, "gradients")
    # FSDP: the flat parameter, and its sharded gradient from the post-backward reduce-scatter.
    m(FSDP_FLAT_BYTES, [S.T("distributed/fsdp/_flat_param.py", 780, "flatten_tensors_into_flat_param"),
                        S.T("distributed/fsdp/_flat_param.py", 620, "_init_flat_param_and_metadata"),
                        S.T("distributed/fsdp/_flat_param.py", 560, "__init__")] + main, "parameters")
    m(FSDP_FLAT_BYTES, [S.T("distributed/fsdp/_runtime_utils.py", 1010, "_reduce_grad"),
                        S.T("distributed/fsdp/_runtime_utils.py", 900, "_post_backward_hook")] + main, "gradients")
    snap, _tally = render([A], "cuda")
    for a in A.live.values():
        if a.block.allocated:
            truth[a.category] = truth.get(a.category, 0) + a.block.size
    return snap, {"categories": truth, "allocatedBytes": A.allocated_bytes()}


def handopt(extra_block=False):
    """extra_block: one more pre-recording block of the first parameter's size (a buffer the pairing cannot
    account for): that size's pre-trace blocks no longer pair one for one with its moments, so none of them
    may be named (truth `unpairedBytes`)."""
    S = Stacks("cuda-all", "linux")
    A = Allocator()
    main = [S.U(70, "main")]
    # Before recording: the weights and, after the first backward, their .grad (kept across steps).
    A.record_history = False
    for p in HANDOPT_PARAMS:
        A.malloc(p, None, category="parameters")
        A.clock.tick(10)
    for p in HANDOPT_PARAMS:
        A.malloc(p, None, category="gradients")
        A.clock.tick(10)
    if extra_block:
        A.malloc(HANDOPT_PARAMS[0], None, category="input")
    A.record_history = True
    for step in range(1, HANDOPT_STEPS + 1):
        # forward: an activation per parameter, freed in the backward (which accumulates into .grad in place).
        acts = [A.malloc(MiB, S.ctx(_native(), [S.U(12, "forward", rel="model.py"),
                                                S.T("nn/modules/module.py", 1750, "_call_impl"),
                                                S.U(66, "main")]), category="activations")
                for _ in HANDOPT_PARAMS]
        A.clock.tick(20)
        for a in acts:
            A.free(a)
        A.clock.tick(20)
        if step == 1:  # lazy state: exp_avg and exp_avg_sq of each parameter, in the hand-written step
            for p in HANDOPT_PARAMS:
                for line in (31, 32):
                    A.malloc(p, S.ctx(_native(), [S.U(line, "step", rel="my_optim.py"),
                                                  S.T("optim/optimizer.py", 493, "wrapper"),
                                                  S.U(68, "main")]), category="optimizer_state")
                    A.clock.tick(5)
    snap, _tally = render([A], "cuda")
    truth = {}
    unpaired = 0
    for a in A.live.values():
        if a.block.allocated:
            truth[a.category] = truth.get(a.category, 0) + a.block.size
            if extra_block and not a.recorded and a.nbytes == HANDOPT_PARAMS[0]:
                unpaired += a.block.size
    return snap, {"categories": truth, "allocatedBytes": A.allocated_bytes(), "unpairedBytes": unpaired}
