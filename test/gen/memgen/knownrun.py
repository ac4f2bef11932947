"""The known-composition run of /work/shared/tools/capture_known_run.py, simulated op by op.

    model = Sequential(3 x Linear(2048, 2048, bias=False)).to(cuda, bfloat16)   # 3 x 8 MiB parameters
    opt = AdamW(model.parameters(), lr=1e-3)                                     # foreach implementation
    x = randn(512, 2048, bf16)                                                   # 2 MiB input
    for step in 1..4:
        opt.zero_grad(set_to_none=False); loss = model(x).float().pow(2).mean()
        loss.backward(); opt.step(); synchronize(); dump at steps 2 and 3
    a tensor hook on model[1].weight dumps "mid_backward" during step 4's backward.

The user's file is train.py with capture_known_run.py's line numbers (main() at line 40, the loop body at
58-61, `main()` at line 80). Every allocation and free follows what PyTorch does for these ops:
- forward: Linear outputs h1..h3 (2 MiB), .float() (4 MiB fp32), .pow(2) (4 MiB), .mean() (4 B -> 512 B);
  h3 and the pow output die at once, the previous step's loss when `loss` is rebound;
- backward (autograd device thread, no Python frames): MeanBackward0 (4 MiB), PowBackward0 (pow(1), 2*x,
  grad*... temporaries), ToCopyBackward0 (2 MiB), MmBackward0 per layer (grad of the input 2 MiB, then the
  weight's grad 8 MiB), AccumulateGrad: at step 1 it clones the weight grad into .grad (allocation under
  torch::autograd::AccumulateGrad::apply), later steps add in place; incoming grads and saved tensors are
  released after each node;
- opt.step() at step 1 allocates exp_avg and exp_avg_sq per parameter in adam.py _init_group (AdamW goes
  through adam.py); every step allocates the 3 x 8 MiB foreach sqrt temporaries in _multi_tensor_adam and
  frees them (in reverse order, as a list dies) at the end. AdamW's `step` tensors stay on the CPU
  (capturable=False, fused=False), so they are not in the snapshot.
- each dump records a `snapshot` marker that the NEXT dump's trace shows.
"""

from .allocator import Allocator, Clock, AddressSpace, GiB
from .layout import Workspace, render
from .stacks import Stacks, NATIVE, op, node

MiB = 1 << 20
CATEGORIES = ("parameters", "gradients", "optimizer_state", "activations", "input", "other", "unknown")
NPU_STREAM = 0xAAAB0F3C2D00  # torch_npu streams are aclrtStream pointers
MOMENTS = ("step2", "step3", "mid_backward")

W_BYTES = 2048 * 2048 * 2     # bf16 weight
ACT_BYTES = 512 * 2048 * 2    # bf16 activation
F32_BYTES = 512 * 2048 * 4    # fp32 activation
SCALAR = 4


class _Moment(Exception):
    """Raised inside the run when the requested dump moment is reached."""


class KnownRun:
    def __init__(self, layout="cuda-all", paths="linux", moment="step2"):
        if moment not in MOMENTS:
            raise ValueError(moment)
        self.layout = layout
        self.paths = paths
        self.moment = moment
        self.S = Stacks(layout, paths, "train.py")
        self.npu = layout == "npu"
        self.stream = NPU_STREAM if self.npu else 0
        self.clock = Clock(1763324225770003)
        space = AddressSpace(0xFFFF2C000000 if self.npu else 0x7F3A2C000000)
        self.A = Allocator(0, "npu" if self.npu else "cuda", self.clock, 80 * GiB, space)
        self.A.observer = self._observe
        self.t = {}              # live tensors by name
        self.annotations = []
        self.workspaces = []
        # per trace record: (allocated, requested, {category: bytes}, {kind: bytes}) after that record
        self.series = []
        self._cat = dict.fromkeys(CATEGORIES, 0)
        self._kind = {}
        self._allocated = 0
        self._requested = 0

    # ---- bookkeeping ------------------------------------------------------------------------------------
    def _observe(self, rec, block):
        a = block.alloc if block is not None else None
        if rec.action == "alloc":
            self._allocated += block.size
            self._requested += block.requested
            self._cat[a.category] += block.size
            self._kind[a.kind] = self._kind.get(a.kind, 0) + block.size
        elif rec.action == "free_requested":
            self._allocated -= block.size
            self._requested -= block.requested
            self._cat[a.category] -= block.size
            self._kind[a.kind] -= block.size
        self.series.append((self._allocated, self._requested, dict(self._cat),
                            {k: v for k, v in self._kind.items() if v}))

    def tick(self, us):
        self.clock.tick(us)

    def m(self, name, nbytes, ctx, category, kind):
        self.t[name] = self.A.malloc(nbytes, ctx, self.stream, category=category, kind=kind, label=name)
        self.tick(7)

    def f(self, name, ctx):
        self.A.free(self.t.pop(name), ctx)
        self.tick(3)

    def annotate(self, stage, name):
        if not self.npu:
            self.annotations.append({"stage": stage, "name": name, "device": 0, "time_us": self.clock.tick(1)})

    # ---- stacks ---------------------------------------------------------------------------------------------
    def py_main(self, line):
        S = self.S
        return [S.U(line, "main"), S.U(80, "<module>", "top")]

    def ctx_param(self):
        S = self.S
        native = (NATIVE["malloc"] + NATIVE["empty"] + [
            ("at::native::empty_cuda(c10::ArrayRef<long>, std::optional<c10::ScalarType>, "
             "std::optional<c10::Layout>, std::optional<c10::Device>, std::optional<bool>, "
             "std::optional<c10::MemoryFormat>)", "??"),
            ("at::_ops::empty_memory_format::call(c10::ArrayRef<c10::SymInt>, std::optional<c10::ScalarType>, "
             "std::optional<c10::Layout>, std::optional<c10::Device>, std::optional<bool>, "
             "std::optional<c10::MemoryFormat>)", "??")] + NATIVE["to_copy"] + [
            ("at::_ops::to_dtype_layout::call(at::Tensor const&, std::optional<c10::ScalarType>, "
             "std::optional<c10::Layout>, std::optional<c10::Device>, std::optional<bool>, bool, bool, "
             "std::optional<c10::MemoryFormat>)", "??"),
            ("torch::autograd::dispatch_to(at::Tensor const&, c10::Device, c10::ScalarType, bool, bool, "
             "std::optional<c10::MemoryFormat>)", ""),
            ("torch::autograd::THPVariable_to(_object*, _object*, _object*)", "python_variable_methods.cpp")])
        py = [S.T("nn/modules/module.py", 1341, "convert"), S.T("nn/modules/module.py", 942, "_apply"),
              S.T("nn/modules/module.py", 915, "_apply", "method"),
              S.T("nn/modules/module.py", 1355, "to", "method"), S.U(43, "main", "method"),
              S.U(80, "<module>", "top")]
        return S.ctx(native, py)

    def ctx_randn(self):
        native = NATIVE["malloc"] + NATIVE["empty"] + [
            ("at::native::randn(c10::ArrayRef<long>, std::optional<at::Generator>, std::optional<c10::ScalarType>,"
             " std::optional<c10::Layout>, std::optional<c10::Device>, std::optional<bool>)", "??"),
            ("at::_ops::randn_generator::call(c10::ArrayRef<c10::SymInt>, std::optional<at::Generator>, "
             "std::optional<c10::ScalarType>, std::optional<c10::Layout>, std::optional<c10::Device>, "
             "std::optional<bool>)", "??"),
            ("at::_ops::randn::call(c10::ArrayRef<c10::SymInt>, std::optional<c10::ScalarType>, "
             "std::optional<c10::Layout>, std::optional<c10::Device>, std::optional<bool>)", "??"),
            ("torch::autograd::THPVariable_randn(_object*, _object*, _object*)", "python_torch_functions_0.cpp")]
        return self.S.ctx(native, self.py_main(45))

    def ctx_linear(self):
        S = self.S
        native = NATIVE["malloc"] + NATIVE["empty"] + NATIVE["mm"] + NATIVE["linear"]
        py = [S.T("nn/modules/linear.py", 125, "forward", "method"),
              S.T("nn/modules/module.py", 1773, "_call_impl", "method"),
              S.T("nn/modules/module.py", 1762, "_wrapped_call_impl", "call"),
              S.T("nn/modules/container.py", 240, "forward", "method"),
              S.T("nn/modules/module.py", 1773, "_call_impl", "method"),
              S.T("nn/modules/module.py", 1762, "_wrapped_call_impl", "call"),
              S.U(59, "main"), S.U(80, "<module>", "top")]
        return S.ctx(native, py)

    def ctx_method(self, native_tail):
        return self.S.ctx(NATIVE["malloc"] + NATIVE["empty"] + native_tail, self.py_main(59))

    def ctx_free_py(self, py):
        return self.S.ctx(NATIVE["free"] + NATIVE["py_dealloc"], py)

    def ctx_engine(self, native_tail):
        return self.S.ctx(NATIVE["malloc"] + NATIVE["empty"] + native_tail, thread="engine")

    def ctx_engine_free(self, what, nodename):
        if what == "saved":
            mid = [("torch::autograd::SavedVariable::reset_data()", "??"),
                   (f"torch::autograd::generated::{nodename}::release_variables()", "Functions.h")]
        elif what == "temp":
            mid = [(f"torch::autograd::generated::{nodename}::apply(std::vector<at::Tensor, "
                    "std::allocator<at::Tensor> >&&)", "Functions.cpp")]
        else:
            mid = [("std::vector<at::Tensor, std::allocator<at::Tensor> >::~vector()", "??")]
        tail = [("torch::autograd::call_function(std::shared_ptr<torch::autograd::GraphTask>&, "
                 "torch::autograd::Node*, torch::autograd::InputBuffer&)", "engine.cpp"),
                ("torch::autograd::Engine::evaluate_function(std::shared_ptr<torch::autograd::GraphTask>&, "
                 "torch::autograd::Node*, torch::autograd::InputBuffer&, std::shared_ptr<torch::autograd::"
                 "ReadyQueue> const&)", "??")]
        if what == "saved":
            tail = tail[1:]
        return self.S.ctx(NATIVE["free"] + mid + tail, thread="engine")

    def py_backward(self):
        S = self.S
        return [S.T("autograd/__init__.py", 214, "_make_grads"),
                S.T("autograd/__init__.py", 340, "backward"),
                S.T("_tensor.py", 626, "backward", "method"),
                S.U(60, "main", "method"), S.U(80, "<module>", "top")]

    def py_opt(self, inner):
        S = self.S
        return inner + [S.T("optim/adam.py", 247, "step", "pycall"),
                        S.T("optim/optimizer.py", 79, "_use_grad", "pycall"),
                        S.T("optim/optimizer.py", 493, "wrapper", "method"),
                        S.U(61, "main", "method"), S.U(80, "<module>", "top")]

    def py_multi_tensor(self, line):
        S = self.S
        return self.py_opt([S.T("optim/adam.py", line, "_multi_tensor_adam"),
                            S.T("optim/optimizer.py", 154, "maybe_fallback", "pycall"),
                            S.T("optim/adam.py", 932, "adam")])

    # ---- the run ----------------------------------------------------------------------------------------------
    def run(self):
        try:
            self.setup()
            for step in range(1, 5):
                self.train_step(step)
        except _Moment:
            pass
        return self

    def setup(self):
        for k in range(3):
            self.m(f"W{k}", W_BYTES, self.ctx_param(), "parameters", "parameter")
            self.tick(150)
        self.m("x", ACT_BYTES, self.ctx_randn(), "input", "input")
        self.tick(2000)

    def train_step(self, step):
        self.annotate("START", "Optimizer.zero_grad#AdamW.zero_grad")
        self.tick(40)
        self.annotate("END", "Optimizer.zero_grad#AdamW.zero_grad")
        self.forward(step)
        self.backward(step)
        self.optimizer_step(step)
        self.tick(900)  # torch.cuda.synchronize()
        if step in (2, 3):
            if self.moment == f"step{step}":
                raise _Moment()
            self.A.snapshot_marker()
            self.tick(25000)

    def forward(self, step):
        if self.npu and step == 1:
            self.npu_workspace()
        for k in range(3):
            self.m(f"h{k + 1}", ACT_BYTES, self.ctx_linear(), "activations", "activation")
        self.m("f", F32_BYTES, self.ctx_method(NATIVE["to_copy"] + [
            ("at::_ops::to_dtype::call(at::Tensor const&, c10::ScalarType, bool, bool, "
             "std::optional<c10::MemoryFormat>)", "??"),
            ("torch::autograd::THPVariable_float(_object*, _object*, _object*)", "python_variable_methods.cpp")]),
            "activations", "activation")
        self.f("h3", self.ctx_free_py(self.py_main(59)))
        self.m("p", F32_BYTES, self.ctx_method(NATIVE["elementwise"] + op("pow_Tensor_Scalar", "THPVariable_pow")),
               "activations", "activation")
        self.m("loss_new", SCALAR, self.ctx_method(
            [("at::native::mean_out(at::Tensor const&, c10::OptionalArrayRef<long>, bool, "
              "std::optional<c10::ScalarType>, at::Tensor&)", "??")] + op("mean", "THPVariable_mean")),
            "other", "loss")
        self.f("p", self.ctx_free_py(self.py_main(59)))
        if "loss" in self.t:
            self.f("loss", self.ctx_free_py(self.py_main(59)))
        self.t["loss"] = self.t.pop("loss_new")
        self.tick(60)

    def npu_workspace(self):
        """torch_npu's workspace allocator: the first aclnn matmul asks for a workspace (kept per stream)."""
        req = 6 * MiB
        size = -(-(req + 32) // (2 * MiB)) * (2 * MiB)
        addr = self.A.space.take(size)
        ctx = self.ctx_linear()
        self.workspaces.append(Workspace(0, addr, size, req, self.stream, ctx))

    def backward(self, step):
        S = self.S
        self.m("root", SCALAR, S.ctx(NATIVE["malloc"] + NATIVE["empty"] + [
            ("at::native::ones_like(at::Tensor const&, std::optional<c10::ScalarType>, std::optional<c10::Layout>, "
             "std::optional<c10::Device>, std::optional<bool>, std::optional<c10::MemoryFormat>)", "??"),
            ("at::_ops::ones_like::call(at::Tensor const&, std::optional<c10::ScalarType>, "
             "std::optional<c10::Layout>, std::optional<c10::Device>, std::optional<bool>, "
             "std::optional<c10::MemoryFormat>)", "??"),
            ("torch::autograd::THPVariable_ones_like(_object*, _object*, _object*)", "python_torch_functions_1.cpp")],
            self.py_backward()), "other", "autograd_root")
        self.tick(30)
        # MeanBackward0: grad.expand(sizes) / numel
        self.m("g_p", F32_BYTES, self.ctx_engine(NATIVE["elementwise"] + op("div_Scalar") + [
            ("torch::autograd::generated::details::mean_backward(at::Tensor const&, c10::ArrayRef<c10::SymInt>, "
             "c10::OptionalArrayRef<long>, c10::SymInt, bool)", "??")] + node("MeanBackward0")),
            "activations", "activation_grad")
        self.f("root", self.ctx_engine_free("input", "MeanBackward0"))
        # PowBackward0: grad * (2 * self.pow(1))
        pb = [("torch::autograd::generated::details::pow_backward(at::Tensor, at::Tensor const&, "
               "c10::Scalar const&)", "??")] + node("PowBackward0")
        self.m("t1", F32_BYTES, self.ctx_engine(NATIVE["elementwise"] + op("pow_Tensor_Scalar") + pb),
               "activations", "autograd_temp")
        self.m("t2", F32_BYTES, self.ctx_engine(NATIVE["elementwise"] + op("mul_Scalar") + pb),
               "activations", "autograd_temp")
        self.f("t1", self.ctx_engine_free("temp", "PowBackward0"))
        self.m("g_f", F32_BYTES, self.ctx_engine(NATIVE["elementwise"] + op("mul_Tensor") + pb),
               "activations", "activation_grad")
        self.f("t2", self.ctx_engine_free("temp", "PowBackward0"))
        self.f("g_p", self.ctx_engine_free("input", "PowBackward0"))
        self.f("f", self.ctx_engine_free("saved", "PowBackward0"))
        # ToCopyBackward0: grad.to(bfloat16)
        self.m("g_h3", ACT_BYTES, self.ctx_engine(NATIVE["to_copy"] + node("ToCopyBackward0")),
               "activations", "activation_grad")
        self.f("g_f", self.ctx_engine_free("input", "ToCopyBackward0"))
        for layer in (2, 1, 0):
            self.mm_backward(step, layer)

    def mm_backward(self, step, layer):
        mm1 = [("at::native::mm_mat1_backward(at::Tensor const&, at::Tensor const&, c10::ArrayRef<c10::SymInt>, "
                "c10::ArrayRef<c10::SymInt>, c10::Layout, c10::Scalar const&)", "??")] + node("MmBackward0")
        mm2 = [("at::native::mm_mat2_backward(at::Tensor const&, at::Tensor const&, c10::ArrayRef<c10::SymInt>, "
                "c10::ArrayRef<c10::SymInt>, c10::Layout, c10::Scalar const&)", "??")] + node("MmBackward0")
        grad_in = f"g_h{layer + 1}"
        if layer > 0:
            self.m(f"g_h{layer}", ACT_BYTES, self.ctx_engine(NATIVE["mm"] + mm1), "activations", "activation_grad")
        self.m(f"gW{layer}", W_BYTES, self.ctx_engine(NATIVE["mm"] + mm2), "activations", "weight_grad_in_flight")
        self.f(grad_in, self.ctx_engine_free("input", "MmBackward0"))
        if layer > 0:
            self.f(f"h{layer}", self.ctx_engine_free("saved", "MmBackward0"))
        self.tick(20)
        # TBackward0 (a view), then AccumulateGrad for model[layer].weight; the tensor hook runs first.
        if layer == 1 and step == 4 and self.moment == "mid_backward":
            raise _Moment()
        if step == 1:
            self.m(f"G{layer}", W_BYTES, self.ctx_engine(NATIVE["empty_strided"] + NATIVE["accumulate_grad"]),
                   "gradients", "gradient")
        self.f(f"gW{layer}", self.ctx_engine_free("input", "AccumulateGrad"))

    def optimizer_step(self, step):
        S = self.S
        self.annotate("START", "Optimizer.step#AdamW.step")
        zeros = NATIVE["malloc"] + NATIVE["empty_strided"] + [
            ("at::native::empty_like(at::Tensor const&, std::optional<c10::ScalarType>, std::optional<c10::Layout>, "
             "std::optional<c10::Device>, std::optional<bool>, std::optional<c10::MemoryFormat>)", "??"),
            ("at::_ops::empty_like::call(at::Tensor const&, std::optional<c10::ScalarType>, "
             "std::optional<c10::Layout>, std::optional<c10::Device>, std::optional<bool>, "
             "std::optional<c10::MemoryFormat>)", "??"),
            ("at::native::zeros_like(at::Tensor const&, std::optional<c10::ScalarType>, std::optional<c10::Layout>, "
             "std::optional<c10::Device>, std::optional<bool>, std::optional<c10::MemoryFormat>)", "??"),
            ("at::_ops::zeros_like::call(at::Tensor const&, std::optional<c10::ScalarType>, "
             "std::optional<c10::Layout>, std::optional<c10::Device>, std::optional<bool>, "
             "std::optional<c10::MemoryFormat>)", "??"),
            ("torch::autograd::THPVariable_zeros_like(_object*, _object*, _object*)",
             "python_torch_functions_0.cpp")]
        if step == 1:
            for k in range(3):
                for name, line in (("exp_avg", 172), ("exp_avg_sq", 175)):
                    ctx = S.ctx(zeros, self.py_opt([S.T("optim/adam.py", line, "_init_group")]))
                    self.m(f"{name}{k}", W_BYTES, ctx, "optimizer_state", name)
        sqrt = NATIVE["malloc"] + NATIVE["empty"] + [
            ("at::native::foreach_tensor_sqrt_cuda(c10::ArrayRef<at::Tensor>)", "??"),
            ("at::(anonymous namespace)::(anonymous namespace)::wrapper_CUDA___foreach_sqrt(c10::ArrayRef<at::Tensor>)",
             "RegisterCUDA_0.cpp"),
            ("at::_ops::_foreach_sqrt::call(c10::ArrayRef<at::Tensor>)", "??"),
            ("torch::autograd::THPVariable__foreach_sqrt(_object*, _object*, _object*)", "python_torch_functions_2.cpp")]
        ctx = S.ctx(sqrt, self.py_multi_tensor(647))
        for k in range(3):
            self.m(f"sqrt{k}", W_BYTES, ctx if k == 0 else S.ctx(sqrt, self.py_multi_tensor(647)),
                   "optimizer_state", "optimizer_temp")
        self.tick(120)
        free = self.ctx_free_py(self.py_multi_tensor(700))
        for k in (2, 1, 0):
            self.f(f"sqrt{k}", free)
        self.annotate("END", "Optimizer.step#AdamW.step")


def simulate(layout="cuda-all", paths="linux", moment="step2"):
    """Run the simulation up to the moment; returns the KnownRun (allocator in .A)."""
    return KnownRun(layout, paths, moment).run()


def build(layout="cuda-all", paths="linux", moment="step2", truncate=None):
    """Simulate the run; returns (snapshot_dict, tally, truth, counters)."""
    run = simulate(layout, paths, moment)
    A = run.A
    rlayout = "npu" if run.npu else "cuda"
    snap, tally = render([A], rlayout, keep_last=truncate, workspaces=run.workspaces,
                         annotations=run.annotations)
    truth = make_truth(run, tally, truncate)
    counters = make_counters(run, moment)
    return snap, tally, truth, counters


def make_counters(run, tag):
    A = run.A
    ws = sum(w.size for w in run.workspaces)
    st = A.memory_stats()
    return {
        "tag": tag,
        "device": 0,
        "memory_allocated": st["allocated_bytes.all.current"],
        "memory_reserved": st["reserved_bytes.all.current"] + ws,
        "max_memory_allocated": st["allocated_bytes.all.peak"],
        "max_memory_reserved": st["reserved_bytes.all.peak"] + ws,
        "memory_stats": st,
    }


def make_truth(run, tally, truncate):
    A = run.A
    n_all = len(A.trace)
    start = n_all - truncate if truncate is not None and truncate < n_all else 0
    offset = 3 * len(run.workspaces)  # torch_npu prepends its workspace entries
    window = run.series[start:]
    if window:
        peak_i = max(range(len(window)), key=lambda i: (window[i][0], -i))
        peak_r = max(range(len(window)), key=lambda i: (window[i][1], -i))
        alloc_at, req_at, cats, kinds = window[peak_i]
        peak = {"allocatedBytes": alloc_at, "requestedBytes": req_at, "eventIndex": offset + peak_i,
                "categories": cats, "kinds": dict(sorted(kinds.items()))}
        peak_req = {"bytes": window[peak_r][1], "eventIndex": offset + peak_r}
    else:
        peak, peak_req = None, None
    live = [a for a in A.live.values() if a.block.allocated]
    live.sort(key=lambda a: a.block.addr)
    cat = dict.fromkeys(CATEGORIES, 0)
    cat_req = dict.fromkeys(CATEGORIES, 0)
    kind = {}
    sites = {}
    for a in live:
        cat[a.category] += a.block.size
        cat_req[a.category] += a.nbytes
        kind[a.kind] = kind.get(a.kind, 0) + a.block.size
        key = (a.site, a.category)
        s = sites.setdefault(key, {"site": a.site, "category": a.category, "bytes": 0, "requestedBytes": 0,
                                   "blocks": 0})
        s["bytes"] += a.block.size
        s["requestedBytes"] += a.nbytes
        s["blocks"] += 1
    t = tally["devices"][0]
    assert sum(cat.values()) == t["allocatedBytes"], (cat, t)
    return {
        "generator": "test/gen/generate.py known",
        "layout": run.layout,
        "paths": run.paths,
        "moment": run.moment,
        "truncateTrace": truncate,
        "userFile": run.S.user_path(),
        "sizeRule": "npu: (n + 32) rounded up to 512" if run.npu else "cuda: n rounded up to 512 (min 512)",
        "snapshot": {
            "categories": cat,
            "categoriesRequested": cat_req,
            "kinds": dict(sorted(kind.items())),
            "reservedBytes": t["reservedBytes"],
            "allocatedBytes": t["allocatedBytes"],
            "activeBytes": t["activeBytes"],
            "requestedBytes": t["requestedBytes"],
            "segments": t["segments"],
            "blocks": t["blocks"],
            "liveBlocks": len(live),
        },
        "peak": peak,
        "peakRequested": peak_req,
        "maxMemoryAllocated": A.stats["allocated_bytes"]["all"].peak,
        "traceEntries": t["traceEntries"],
        "actions": t["actions"],
        "callSites": sorted(sites.values(), key=lambda s: (-s["bytes"], s["site"] or "", s["category"])),
        "liveBlocks": [{"address": a.block.addr, "size": a.block.size, "requestedSize": a.nbytes,
                        "category": a.category, "kind": a.kind, "site": a.site, "label": a.label}
                       for a in live],
    }
