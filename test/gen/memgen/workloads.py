"""Workloads that drive the allocator simulation: a random mix (random-trace and several variants) and a
training-like transformer loop (big).

Every workload only calls Allocator methods, so the snapshot's final `segments` state is by construction what
the recorded trace leaves behind.
"""

import json
import random

from .allocator import Allocator, AddressSpace, Clock, GiB
from .layout import render
from .stacks import Stacks, NATIVE, op, node

MiB = 1 << 20
SIZE_PALETTE = [4, 512, 1000, 3072, 12288, 65536, 262144, 786432, 1048576,  # small pool
                1048577, 2 * MiB, 3 * MiB + 4096, 6 * MiB, 8 * MiB, 9 * MiB + 512, 12 * MiB, 16 * MiB,
                25 * MiB + 1234, 40 * MiB, 64 * MiB]
POINTER_STREAMS = [94367872345600, 94367872411136, 94367872476672]


def random_sites(S):
    """A handful of allocation / free call sites for random workloads."""
    sites = []
    for i, (fn, line) in enumerate([("load_batch", 31), ("forward", 77), ("forward", 112), ("loss_fn", 18),
                                    ("train_step", 145), ("evaluate", 203)]):
        py = [S.U(line, fn, "method", rel=f"pkg/mod{i % 3}.py"),
              S.T("nn/modules/module.py", 1773, "_call_impl", "method"),
              S.T("nn/modules/module.py", 1762, "_wrapped_call_impl", "call"),
              S.U(40 + i, "main"), S.U(88, "<module>", "top")]
        sites.append(py)
    return sites


class RandomWorkload:
    """Random allocs/frees with address reuse, deferred (cross-stream) frees, empty_cache() calls
    (segment_free / segment_unmap) and snapshot markers, over one or more allocators."""

    def __init__(self, allocators, rng, stacks, streams=(0,), pools=((0, 0),), p_defer=0.08,
                 p_empty_cache=0.002, p_marker=0.003, max_live=60):
        self.As = allocators
        self.rng = rng
        self.S = stacks
        self.streams = list(streams)
        self.pools = list(pools)
        self.p_defer = p_defer
        self.p_empty = p_empty_cache
        self.p_marker = p_marker
        self.max_live = max_live
        self.live = {id(a): [] for a in allocators}
        self.pending = {id(a): [] for a in allocators}
        self.py_sites = random_sites(stacks)

    def ctx(self, kind):
        py = self.rng.choice(self.py_sites)
        if kind == "alloc":
            return self.S.ctx(NATIVE["malloc"] + NATIVE["empty"] + op("add_Tensor", "THPVariable_add"), py)
        return self.S.ctx(NATIVE["free"] + NATIVE["py_dealloc"], py)

    def events(self):
        return sum(len(a.trace) for a in self.As)

    def step(self):
        r = self.rng
        A = r.choice(self.As)
        live, pending = self.live[id(A)], self.pending[id(A)]
        x = r.random()
        A.clock.tick(r.randint(1, 400))
        p_alloc = min(0.9, max(0.1, 1.0 - len(live) / self.max_live))
        p_done = min(0.5, 0.03 * len(pending))
        if pending and x < p_done:
            a = pending.pop(r.randrange(len(pending)))
            A.complete_free(a, self.ctx("free") if r.random() < 0.5 else None)
        elif x < p_done + self.p_empty:
            A.release_cached(self.ctx("free"))
        elif x < p_done + self.p_empty + self.p_marker:
            A.snapshot_marker()
        elif live and r.random() > p_alloc:
            a = live.pop(r.randrange(len(live)))
            p = self.p_defer * 4 if a.stream != 0 else self.p_defer
            deferred = r.random() < p
            A.free(a, self.ctx("free"), deferred=deferred)
            if deferred:
                pending.append(a)
        else:
            n = r.choice(SIZE_PALETTE)
            if r.random() < 0.3:
                n = max(1, int(n * r.uniform(0.5, 1.5)))
            stream = r.choice(self.streams)
            pool = r.choice(self.pools)
            a = A.malloc(n, self.ctx("alloc"), stream, pool_id=pool, category="unknown", kind="random")
            live.append(a)

    def run(self, n_events):
        while self.events() < n_events:
            self.step()
        return self


def live_blocks(allocators):
    out = []
    for A in allocators:
        for s in A.all_segments():
            for b in s.blocks():
                if b.state != "inactive":
                    out.append({"device": A.device, "address": b.addr, "size": b.size,
                                "requestedSize": b.requested, "state": b.state, "stream": s.stream,
                                "segmentAddress": s.addr, "site": b.alloc.site if b.alloc else None})
    return out


def attach_series(A):
    """Record allocated (rounded) and requested bytes after every trace record into A._series."""
    A._series = []
    state = {"alloc": 0, "req": 0}

    def obs(rec, block):
        if rec.action == "alloc":
            state["alloc"] += block.size
            state["req"] += block.requested
        elif rec.action == "free_requested":
            state["alloc"] -= block.size
            state["req"] -= block.requested
        A._series.append((state["alloc"], state["req"]))

    A.observer = obs


def write_random_trace(out, seed, events):
    """random-trace: one device, two streams, every action but oom; writes OUT and OUT.truth.json."""
    import pickle
    rng = random.Random(seed)
    S = Stacks("cuda-python", "linux", "train.py")
    A = Allocator(0, "cuda", Clock(1763324225770003 + seed), 80 * GiB, AddressSpace())
    attach_series(A)
    W = RandomWorkload([A], rng, S, streams=(0, POINTER_STREAMS[0]))
    W.run(events)
    snap, tally = render([A], "cuda")
    with open(out, "wb") as f:
        pickle.dump(snap, f, protocol=4)
    series = A._series
    peak_i = max(range(len(series)), key=lambda i: (series[i][0], -i)) if series else None
    truth = {
        "generator": "test/gen/generate.py random-trace",
        "seed": seed,
        "events": events,
        "traceEntries": tally["traceEntries"],
        "actions": tally["actions"],
        "tally": tally,
        "peak": {"allocatedBytes": series[peak_i][0] if series else 0,
                 "requestedBytes": series[peak_i][1] if series else 0, "eventIndex": peak_i},
        "finalAllocatedBytes": A.allocated_bytes(),
        "finalActiveBytes": A.active_bytes(),
        "liveBlocks": live_blocks([A]),
    }
    with open(out + ".truth.json", "w") as f:
        json.dump(truth, f, indent=1)
        f.write("\n")
    return truth


# ---- training-like transformer workload (big) ---------------------------------------------------------------

class BigCtx:
    """A gathered context in big mode: template id (the stack) + instance id (one list in the pickle)."""

    __slots__ = ("tid", "iid", "site")

    def __init__(self, tid, iid):
        self.tid = tid
        self.iid = iid
        self.site = None


class TransformerWorkload:
    """A GPT-like training loop: L blocks (attention + MLP) with bf16 weights, AdamW (foreach), forward
    activations saved for backward, backward temporaries, gradient accumulation into persistent .grad, and the
    optimizer's temporaries; the sequence length changes now and then (new segments, empty_cache())."""

    def __init__(self, allocator, stacks, rng, layers=12, hidden=1024, tokens=4096, heads=16, seq=512,
                 new_ctx=None):
        self.A = allocator
        self.S = stacks
        self.r = rng
        self.L = layers
        self.H = hidden
        self.tokens = tokens
        self.heads = heads
        self.seq = seq
        self.new_ctx = new_ctx
        self.templates = []
        self.tid = {}
        self.params = []
        self.grads = {}
        self.states = []
        self.step_no = 0
        self._build_sites()

    # -- stacks -----------------------------------------------------------------------------------------------
    def _py_trainer(self):
        S = self.S
        return [S.P("lightning/pytorch/loops/optimization/automatic.py", 319, "_training_step", "method"),
                S.P("lightning/pytorch/loops/optimization/automatic.py", 131, "closure", "method"),
                S.P("torch/utils/_contextlib.py", 116, "decorate_context"),
                S.P("lightning/pytorch/loops/optimization/automatic.py", 146, "__call__", "call"),
                S.P("lightning/pytorch/loops/optimization/automatic.py", 192, "run", "method"),
                S.P("lightning/pytorch/loops/training_epoch_loop.py", 320, "advance", "method"),
                S.P("lightning/pytorch/loops/training_epoch_loop.py", 150, "run", "method"),
                S.P("lightning/pytorch/loops/fit_loop.py", 455, "advance", "method"),
                S.P("lightning/pytorch/loops/fit_loop.py", 216, "run", "method"),
                S.P("lightning/pytorch/trainer/trainer.py", 1026, "_run_stage", "method"),
                S.P("lightning/pytorch/trainer/trainer.py", 982, "_run", "method"),
                S.P("lightning/pytorch/trainer/trainer.py", 575, "_fit_impl", "method"),
                S.P("lightning/pytorch/trainer/call.py", 47, "_call_and_handle_interrupt"),
                S.P("lightning/pytorch/trainer/trainer.py", 539, "fit", "method"),
                S.U(95, "train", rel="train.py"), S.U(143, "main", rel="train.py"),
                S.U(155, "<module>", "top", rel="train.py")]

    def _py_model(self, depth_frames):
        S = self.S
        out = []
        for rel, line, fn in depth_frames:
            if rel.startswith("torch/"):
                out.append(S.T(rel[6:], line, fn, "method"))
            else:
                out.append(S.U(line, fn, "method", rel=rel))
            out.append(S.T("nn/modules/module.py", 1773, "_call_impl", "method"))
            out.append(S.T("nn/modules/module.py", 1762, "_wrapped_call_impl", "call"))
        out.append(S.U(105, "training_step", rel="model/lit.py"))
        return out + self._py_trainer()

    def _add(self, key, ctx):
        self.tid[key] = len(self.templates)
        self.templates.append(ctx)

    def _build_sites(self):
        S = self.S
        attn = [("model/attention.py", 48, "forward"), ("model/block.py", 31, "forward"),
                ("model/gpt.py", 77, "forward")]
        mlp = [("model/mlp.py", 22, "forward"), ("model/block.py", 33, "forward"), ("model/gpt.py", 77, "forward")]
        lin = [("torch/nn/modules/linear.py", 125, "forward")]
        alloc = NATIVE["malloc"] + NATIVE["empty"]
        fwd_ops = {
            "qkv": (alloc + NATIVE["mm"] + NATIVE["linear"], lin + attn),
            "scores": (alloc + NATIVE["mm"] + [("at::native::matmul(at::Tensor const&, at::Tensor const&)", "??"),
                                              ("torch::autograd::THPVariable_matmul(_object*, _object*, _object*)",
                                               "python_torch_functions_2.cpp")], attn),
            "softmax": (alloc + op("_softmax", "THPVariable_softmax"), attn),
            "attn_out": (alloc + NATIVE["mm"] + NATIVE["linear"], lin + attn),
            "ln": (alloc + op("native_layer_norm", "THPVariable_layer_norm"),
                   [("torch/nn/modules/normalization.py", 217, "forward"), ("model/block.py", 30, "forward"),
                    ("model/gpt.py", 77, "forward")]),
            "ln_stats": (alloc + op("native_layer_norm"),
                         [("torch/nn/modules/normalization.py", 217, "forward"), ("model/block.py", 30, "forward"),
                          ("model/gpt.py", 77, "forward")]),
            "up": (alloc + NATIVE["mm"] + NATIVE["linear"], lin + mlp),
            "gelu": (alloc + op("gelu", "THPVariable_gelu"), mlp),
            "down": (alloc + NATIVE["mm"] + NATIVE["linear"], lin + mlp),
            "logits": (alloc + NATIVE["mm"] + NATIVE["linear"], lin + [("model/gpt.py", 81, "forward")]),
            "loss": (alloc + op("nll_loss_forward", "THPVariable_cross_entropy"),
                     [("torch/nn/functional.py", 3479, "cross_entropy"), ("model/gpt.py", 84, "forward")]),
        }
        for k, (native, py) in fwd_ops.items():
            self._add("fwd:" + k, S.ctx(native, self._py_model(py)))
            self._add("freefwd:" + k, S.ctx(NATIVE["free"] + NATIVE["py_dealloc"], self._py_model(py)))
        for nd, o in (("MmBackward0", "mm"), ("SoftmaxBackward0", "_softmax_backward_data"),
                      ("GeluBackward0", "gelu_backward"), ("NativeLayerNormBackward0", "native_layer_norm_backward"),
                      ("NllLossBackward0", "nll_loss_backward")):
            tail = NATIVE["mm"] if o == "mm" else op(o)
            self._add("bwd:" + nd, S.ctx(alloc + tail + node(nd), thread="engine"))
            self._add("freebwd:" + nd, S.ctx(NATIVE["free"] + [
                ("torch::autograd::SavedVariable::reset_data()", "??"),
                (f"torch::autograd::generated::{nd}::release_variables()", "Functions.h")] + node(nd)[3:],
                thread="engine"))
        self._add("grad", S.ctx(NATIVE["malloc"] + NATIVE["empty_strided"] + NATIVE["accumulate_grad"],
                                thread="engine"))
        opt_py = [S.T("optim/adamw.py", 209, "step", "pycall"), S.T("optim/optimizer.py", 79, "_use_grad", "pycall"),
                  S.T("optim/optimizer.py", 493, "wrapper", "method"),
                  S.P("lightning/pytorch/core/optimizer.py", 154, "step", "method")] + self._py_trainer()[4:]
        self._add("param", S.ctx(alloc + NATIVE["to_copy"], [S.T("nn/modules/module.py", 1341, "convert"),
                                                               S.T("nn/modules/module.py", 942, "_apply")]
                                 + self._py_trainer()[9:]))
        self._add("state", S.ctx(alloc + op("zeros_like"), [S.T("optim/adam.py", 172, "_init_group")] + opt_py))
        self._add("opt_tmp", S.ctx(alloc + op("_foreach_sqrt"), [S.T("optim/adam.py", 647, "_multi_tensor_adam"),
                                                                 S.T("optim/adam.py", 932, "adam")] + opt_py))
        self._add("free_opt", S.ctx(NATIVE["free"] + NATIVE["py_dealloc"],
                                    [S.T("optim/adam.py", 700, "_multi_tensor_adam")] + opt_py))
        self._add("empty_cache", S.ctx([("c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::"
                                         "emptyCache()", "")],
                                       [S.T("cuda/memory.py", 222, "empty_cache")] + self._py_trainer()[5:]))

    def ctx(self, key):
        return self.new_ctx(self.tid[key])

    # -- the model ---------------------------------------------------------------------------------------------
    def m(self, n, key, category="activations"):
        return self.A.malloc(n, self.ctx(key), 0, category=category)

    def f(self, a, key):
        self.A.free(a, self.ctx(key))

    def setup(self):
        H = self.H
        shapes = [3 * H * H * 2, H * H * 2, 4 * H * H * 2, 4 * H * H * 2, H * 2, H * 2, H * 4, H * 2]
        for _ in range(self.L):
            for n in shapes:
                self.params.append(self.m(n, "param", "parameters"))
        self.params.append(self.m(50304 * H * 2, "param", "parameters"))  # embedding / lm head

    def train_step(self):
        r = self.r
        self.step_no += 1
        if self.step_no % 40 == 0:
            self.seq = r.choice([448, 480, 512, 544, 576])
            self.A.release_cached(self.ctx("empty_cache"))
        T = self.tokens * self.seq // 512
        H = self.H
        saved = []
        self.A.clock.tick(800)
        for _layer in range(self.L):
            ln = self.m(T * H * 2, "fwd:ln")
            stats = self.m(T * 4, "fwd:ln_stats")
            qkv = self.m(T * 3 * H * 2, "fwd:qkv")
            sc = self.m(self.heads * T * self.seq * 2, "fwd:scores")
            sm = self.m(self.heads * T * self.seq * 2, "fwd:softmax")
            self.f(sc, "freefwd:scores")
            ao = self.m(T * H * 2, "fwd:attn_out")
            up = self.m(T * 4 * H * 2, "fwd:up")
            ge = self.m(T * 4 * H * 2, "fwd:gelu")
            dn = self.m(T * H * 2, "fwd:down")
            saved.append([ln, stats, qkv, sm, ao, up, ge, dn])
            self.A.clock.tick(r.randint(150, 400))
        logits = self.m(T * 50304 * 2 // 8, "fwd:logits")
        loss = self.m(4, "fwd:loss")
        g = self.m(T * 50304 * 2 // 8, "bwd:NllLossBackward0")
        self.f(logits, "freebwd:NllLossBackward0")
        for li in range(self.L - 1, -1, -1):
            ln, stats, qkv, sm, ao, up, ge, dn = saved[li]
            g2 = self.m(T * 4 * H * 2, "bwd:MmBackward0")
            gw = self.m(4 * H * H * 2, "bwd:MmBackward0")
            self.accumulate(li, 3, gw)
            self.f(g, "freebwd:MmBackward0")
            self.f(dn, "freebwd:MmBackward0")
            g3 = self.m(T * 4 * H * 2, "bwd:GeluBackward0")
            self.f(g2, "freebwd:GeluBackward0")
            self.f(ge, "freebwd:GeluBackward0")
            g4 = self.m(T * H * 2, "bwd:MmBackward0")
            gw = self.m(4 * H * H * 2, "bwd:MmBackward0")
            self.accumulate(li, 2, gw)
            self.f(g3, "freebwd:MmBackward0")
            self.f(up, "freebwd:MmBackward0")
            self.f(ao, "freebwd:MmBackward0")
            g5 = self.m(self.heads * T * self.seq * 2, "bwd:SoftmaxBackward0")
            self.f(sm, "freebwd:SoftmaxBackward0")
            g6 = self.m(T * 3 * H * 2, "bwd:MmBackward0")
            self.f(g5, "freebwd:MmBackward0")
            gw = self.m(3 * H * H * 2, "bwd:MmBackward0")
            self.accumulate(li, 0, gw)
            self.f(qkv, "freebwd:MmBackward0")
            g = self.m(T * H * 2, "bwd:NativeLayerNormBackward0")
            self.f(g6, "freebwd:NativeLayerNormBackward0")
            self.f(g4, "freebwd:NativeLayerNormBackward0")
            self.f(ln, "freebwd:NativeLayerNormBackward0")
            self.f(stats, "freebwd:NativeLayerNormBackward0")
            self.A.clock.tick(r.randint(200, 500))
        self.f(g, "freebwd:MmBackward0")
        self.optimizer_step()
        self.f(loss, "freefwd:loss")
        self.A.clock.tick(r.randint(20000, 60000))  # data loading, logging, synchronize

    def accumulate(self, layer, idx, gw):
        key = (layer, idx)
        if key not in self.grads:
            self.grads[key] = self.m(gw.nbytes, "grad", "gradients")
        self.f(gw, "freebwd:MmBackward0")

    def optimizer_step(self):
        if not self.states:
            for p in self.params:
                self.states.append(self.m(p.nbytes, "state", "optimizer_state"))
                self.states.append(self.m(p.nbytes, "state", "optimizer_state"))
        chunk = 8
        ps = self.params[:-1]
        for i in range(0, len(ps), chunk):
            tmps = [self.m(p.nbytes, "opt_tmp", "optimizer_state") for p in ps[i:i + chunk]]
            for t in reversed(tmps):
                self.f(t, "free_opt")
        self.A.clock.tick(3000)
