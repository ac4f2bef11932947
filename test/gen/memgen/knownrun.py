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

Options (defaults = the run above):
- record_from: when `_record_memory_history` is called: "start", "after-build" (right after model.to()),
  "after-step1" (after step 1's opt.step() and synchronize). Before it nothing is recorded (trace entries,
  snapshot markers, annotations) and allocations carry no frames (their blocks and segments); their later
  frees are recorded with the free's own stack.
- streams=2: x is made fresh each step on a side stream (a data-loader copy stream) and used on the main
  stream (record_stream): at the start of each step a new x (line 45) is allocated on the side stream and the
  previous one freed (line 45): free_requested at once, free_completed when the allocator processes the main
  stream's event at the third malloc after it (h3's; that malloc's context).
- workspace="active" (npu): the workspace block is in use at the dump.

Truth categories (what each tensor is, known by the simulation): parameters (the .to() copies), gradients
(.grad), optimizer_state (exp_avg, exp_avg_sq), activations (forward outputs saved for backward: h1, h2, the
.float() output), input (x), temporary (allocated and freed within one phase: the foreach sqrt temporaries,
every engine allocation other than AccumulateGrad's .grad, the root gradient, h3 and the pow output),
workspace (torch_npu's workspace block), other (the loss scalar), unknown (never).
"""

from .allocator import Allocator, Clock, AddressSpace, GiB
from .layout import Workspace, render
from .stacks import Stacks, NATIVE, op, node

MiB = 1 << 20
CATEGORIES = ("parameters", "gradients", "optimizer_state", "activations", "input", "temporary", "workspace", "kv_cache",
              "other", "unknown")
NPU_STREAM = 0xAAAB0F3C2D00  # torch_npu streams are aclrtStream pointers
SIDE_STREAM = {"cuda": 94367872345600, "npu": 0xAAAB0F3E8A00}  # the data loader's copy stream (streams=2)
MOMENTS = ("step2", "step3", "mid_backward")
RECORD_FROM = ("start", "after-build", "after-step1")
STREAMS = (1, 2)
WORKSPACE = ("inactive", "active")
X_COMPLETE_AFTER = 3  # streams=2: the old x's free_completed comes with the 3rd malloc after its free

W_BYTES = 2048 * 2048 * 2     # bf16 weight
ACT_BYTES = 512 * 2048 * 2    # bf16 activation
F32_BYTES = 512 * 2048 * 4    # fp32 activation
SCALAR = 4


class _Moment(Exception):
    """Raised inside the run when the requested dump moment is reached."""


class KnownRun:
    def __init__(self, layout="cuda-all", paths="linux", moment="step2", record_from="start", streams=1,
                 workspace="inactive"):
        if moment not in MOMENTS:
            raise ValueError(moment)
        if record_from not in RECORD_FROM:
            raise ValueError(record_from)
        if streams not in STREAMS:
            raise ValueError(streams)
        if workspace not in WORKSPACE or (workspace == "active" and layout != "npu"):
            raise ValueError(f"workspace={workspace!r} (active needs the npu layout)")
        self.layout = layout
        self.paths = paths
        self.moment = moment
        self.record_from = record_from
        self.streams = streams
        self.workspace = workspace
        self.act_bytes = ACT_BYTES  # the batch's bf16 activation (memgen/ranks.py varies the batch)
        self.f32_bytes = F32_BYTES
        self.S = Stacks(layout, paths, "train.py")
        self.npu = layout == "npu"
        self.stream = NPU_STREAM if self.npu else 0
        self.side_stream = SIDE_STREAM["npu" if self.npu else "cuda"]
        self.clock = Clock(1763324225770003)
        space = AddressSpace(0xFFFF2C000000 if self.npu else 0x7F3A2C000000)
        self.A = Allocator(0, "npu" if self.npu else "cuda", self.clock, 80 * GiB, space)
        self.A.observer = self._observe
        self.recording = record_from == "start"
        self.A.record_history = self.recording
        self.t = {}              # live tensors by name
        self.pending_x = None    # streams=2: [old x, mallocs left before its free_completed]
        self.annotations = []    # recorded ones only
        self.workspaces = []
        # per RECORDED trace record: (allocated, requested, {category: bytes}, {kind: bytes},
        # {category: bytes of blocks allocated before recording}, {kind: same}) after that record
        self.series = []
        self._cat = dict.fromkeys(CATEGORIES, 0)
        self._kind = {}
        self._ucat = dict.fromkeys(CATEGORIES, 0)
        self._ukind = {}
        self._allocated = 0
        self._requested = 0

    # ---- bookkeeping ------------------------------------------------------------------------------------
    def _observe(self, rec, block):
        a = block.alloc if block is not None else None
        sign = 1 if rec.action == "alloc" else -1 if rec.action == "free_requested" else 0
        if sign:
            self._allocated += sign * block.size
            self._requested += sign * block.requested
            self._cat[a.category] += sign * block.size
            self._kind[a.kind] = self._kind.get(a.kind, 0) + sign * block.size
            if not a.recorded:
                self._ucat[a.category] += sign * block.size
                self._ukind[a.kind] = self._ukind.get(a.kind, 0) + sign * block.size
        if self.A.record_history:
            self.series.append((self._allocated, self._requested, dict(self._cat),
                                {k: v for k, v in self._kind.items() if v}, dict(self._ucat),
                                {k: v for k, v in self._ukind.items() if v}))

    def start_recording(self):
        """torch.cuda.memory._record_memory_history(enabled="all", context="all", stacks=...)."""
        self.recording = True
        self.A.record_history = True

    def tick(self, us):
        self.clock.tick(us)

    def m(self, name, nbytes, ctx, category, kind, stream=None):
        if self.pending_x is not None:
            self.pending_x[1] -= 1
            if self.pending_x[1] == 0:  # process_events() at the start of this malloc, with its context
                self.A.complete_free(self.pending_x[0], ctx)
                self.pending_x = None
        self.t[name] = self.A.malloc(nbytes, ctx, self.stream if stream is None else stream, category=category,
                                     kind=kind, label=name)
        self.tick(7)

    def f(self, name, ctx):
        self.A.free(self.t.pop(name), ctx)
        self.tick(3)

    def annotate(self, stage, name):
        if not self.npu:
            t = self.clock.tick(1)
            if self.recording:
                self.annotations.append({"stage": stage, "name": name, "device": 0, "time_us": t})

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
        if self.record_from == "after-build":
            self.start_recording()
        if self.streams == 1:
            self.m("x", self.act_bytes, self.ctx_randn(), "input", "input")
        self.tick(2000)

    def new_batch(self):
        """streams=2: the loader's copy stream makes this step's x; the previous x is freed (record_stream on
        the main stream defers its free_completed)."""
        old = self.t.pop("x", None)
        self.m("x", self.act_bytes, self.ctx_randn(), "input", "input", stream=self.side_stream)
        if old is not None:
            self.A.free(old, self.ctx_free_py(self.py_main(45)), deferred=True)
            self.pending_x = [old, X_COMPLETE_AFTER]
            self.tick(3)

    def train_step(self, step):
        if self.streams == 2:
            self.new_batch()
        self.annotate("START", "Optimizer.zero_grad#AdamW.zero_grad")
        self.tick(40)
        self.annotate("END", "Optimizer.zero_grad#AdamW.zero_grad")
        self.forward(step)
        self.backward(step)
        self.optimizer_step(step)
        self.tick(900)  # torch.cuda.synchronize()
        if step == 1 and self.record_from == "after-step1":
            self.start_recording()
        if step in (2, 3):
            if self.moment == f"step{step}":
                raise _Moment()
            self.A.snapshot_marker()
            self.tick(25000)

    def forward(self, step):
        if self.npu and step == 1:
            self.npu_workspace()
        for k in range(3):  # h1, h2 are saved by the next Linear; h3 dies at .float()
            self.m(f"h{k + 1}", self.act_bytes, self.ctx_linear(), *(("activations", "activation") if k < 2 else
                                                                ("temporary", "forward_temp")))
        self.m("f", self.f32_bytes, self.ctx_method(NATIVE["to_copy"] + [
            ("at::_ops::to_dtype::call(at::Tensor const&, c10::ScalarType, bool, bool, "
             "std::optional<c10::MemoryFormat>)", "??"),
            ("torch::autograd::THPVariable_float(_object*, _object*, _object*)", "python_variable_methods.cpp")]),
            "activations", "activation")
        self.f("h3", self.ctx_free_py(self.py_main(59)))
        self.m("p", self.f32_bytes, self.ctx_method(NATIVE["elementwise"] + op("pow_Tensor_Scalar", "THPVariable_pow")),
               "temporary", "forward_temp")
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
        ctx = self.ctx_linear() if self.recording else None  # context gathered only while recording
        self.workspaces.append(Workspace(0, addr, size, req, self.stream, ctx, self.workspace == "active"))

    def backward(self, step):
        S = self.S
        self.m("root", SCALAR, S.ctx(NATIVE["malloc"] + NATIVE["empty"] + [
            ("at::native::ones_like(at::Tensor const&, std::optional<c10::ScalarType>, std::optional<c10::Layout>, "
             "std::optional<c10::Device>, std::optional<bool>, std::optional<c10::MemoryFormat>)", "??"),
            ("at::_ops::ones_like::call(at::Tensor const&, std::optional<c10::ScalarType>, "
             "std::optional<c10::Layout>, std::optional<c10::Device>, std::optional<bool>, "
             "std::optional<c10::MemoryFormat>)", "??"),
            ("torch::autograd::THPVariable_ones_like(_object*, _object*, _object*)", "python_torch_functions_1.cpp")],
            self.py_backward()), "temporary", "autograd_root")
        self.tick(30)
        # MeanBackward0: grad.expand(sizes) / numel
        self.m("g_p", self.f32_bytes, self.ctx_engine(NATIVE["elementwise"] + op("div_Scalar") + [
            ("torch::autograd::generated::details::mean_backward(at::Tensor const&, c10::ArrayRef<c10::SymInt>, "
             "c10::OptionalArrayRef<long>, c10::SymInt, bool)", "??")] + node("MeanBackward0")),
            "temporary", "activation_grad")
        self.f("root", self.ctx_engine_free("input", "MeanBackward0"))
        # PowBackward0: grad * (2 * self.pow(1))
        pb = [("torch::autograd::generated::details::pow_backward(at::Tensor, at::Tensor const&, "
               "c10::Scalar const&)", "??")] + node("PowBackward0")
        self.m("t1", self.f32_bytes, self.ctx_engine(NATIVE["elementwise"] + op("pow_Tensor_Scalar") + pb),
               "temporary", "autograd_temp")
        self.m("t2", self.f32_bytes, self.ctx_engine(NATIVE["elementwise"] + op("mul_Scalar") + pb),
               "temporary", "autograd_temp")
        self.f("t1", self.ctx_engine_free("temp", "PowBackward0"))
        self.m("g_f", self.f32_bytes, self.ctx_engine(NATIVE["elementwise"] + op("mul_Tensor") + pb),
               "temporary", "activation_grad")
        self.f("t2", self.ctx_engine_free("temp", "PowBackward0"))
        self.f("g_p", self.ctx_engine_free("input", "PowBackward0"))
        self.f("f", self.ctx_engine_free("saved", "PowBackward0"))
        # ToCopyBackward0: grad.to(bfloat16)
        self.m("g_h3", self.act_bytes, self.ctx_engine(NATIVE["to_copy"] + node("ToCopyBackward0")),
               "temporary", "activation_grad")
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
            self.m(f"g_h{layer}", self.act_bytes, self.ctx_engine(NATIVE["mm"] + mm1), "temporary", "activation_grad")
        self.m(f"gW{layer}", W_BYTES, self.ctx_engine(NATIVE["mm"] + mm2), "temporary", "weight_grad_in_flight")
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
                   "temporary", "optimizer_temp")
        self.tick(120)
        free = self.ctx_free_py(self.py_multi_tensor(700))
        for k in (2, 1, 0):
            self.f(f"sqrt{k}", free)
        self.annotate("END", "Optimizer.step#AdamW.step")


def simulate(layout="cuda-all", paths="linux", moment="step2", record_from="start", streams=1,
             workspace="inactive"):
    """Run the simulation up to the moment; returns the KnownRun (allocator in .A)."""
    return KnownRun(layout, paths, moment, record_from, streams, workspace).run()


def build(layout="cuda-all", paths="linux", moment="step2", truncate=None, record_from="start", streams=1,
          workspace="inactive"):
    """Simulate the run; returns (snapshot_dict, tally, truth, counters)."""
    run = simulate(layout, paths, moment, record_from, streams, workspace)
    A = run.A
    rlayout = "npu" if run.npu else "cuda"
    snap, tally = render([A], rlayout, keep_last=truncate, workspaces=run.workspaces,
                         annotations=run.annotations)
    truth = make_truth(run, tally, truncate)
    counters = make_counters(run, moment)
    return snap, tally, truth, counters


def make_counters(run, tag):
    """torch.cuda / torch_npu counters at the dump. torch_npu's caching-allocator counters do not see the
    workspace allocator, so memory_allocated / max_memory_allocated never include the workspace (in use or
    not); memory_reserved counts it."""
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
    late = run.record_from != "start"  # the record-from fields appear only then (default truth unchanged)
    n_all = len(A.trace)  # recorded records only
    start = n_all - truncate if truncate is not None and truncate < n_all else 0
    offset = 3 * len(run.workspaces)  # torch_npu prepends its workspace entries
    window = run.series[start:]
    if window:
        peak_i = max(range(len(window)), key=lambda i: (window[i][0], -i))
        peak_r = max(range(len(window)), key=lambda i: (window[i][1], -i))
        alloc_at, req_at, cats, kinds, ucats, ukinds = window[peak_i]
        peak = {"allocatedBytes": alloc_at, "requestedBytes": req_at, "eventIndex": offset + peak_i,
                "categories": cats, "kinds": dict(sorted(kinds.items()))}
        if late:
            peak["unrecordedCategories"] = ucats
            peak["unrecordedKinds"] = dict(sorted(ukinds.items()))
        peak_req = {"bytes": window[peak_r][1], "eventIndex": offset + peak_r}
    else:
        peak, peak_req = None, None
    # every active_allocated block: (address, size, requested, category, kind, site, label, recorded)
    live = [(a.block.addr, a.block.size, a.nbytes, a.category, a.kind, a.site, a.label, a.recorded)
            for a in A.live.values() if a.block.allocated]
    live += [(w.addr, w.size, w.requested, "workspace", "workspace", w.ctx.site if w.ctx else None, "workspace",
              w.ctx is not None) for w in run.workspaces if w.allocated]
    live.sort()
    cat = dict.fromkeys(CATEGORIES, 0)
    cat_req = dict.fromkeys(CATEGORIES, 0)
    ucat = dict.fromkeys(CATEGORIES, 0)
    kind, ukind = {}, {}
    sites = {}
    for addr, size, req, category, k, site, label, recorded in live:
        cat[category] += size
        cat_req[category] += req
        kind[k] = kind.get(k, 0) + size
        if not recorded:
            ucat[category] += size
            ukind[k] = ukind.get(k, 0) + size
        s = sites.setdefault((site, category), {"site": site, "category": category, "bytes": 0,
                                                "requestedBytes": 0, "blocks": 0})
        s["bytes"] += size
        s["requestedBytes"] += req
        s["blocks"] += 1
    t = tally["devices"][0]
    assert sum(cat.values()) == t["allocatedBytes"], (cat, t)
    truth = {
        "generator": "test/gen/generate.py known",
        "layout": run.layout,
        "paths": run.paths,
        "moment": run.moment,
        "truncateTrace": truncate,
    }
    if late:
        truth["recordFrom"] = run.record_from
    if run.streams != 1:
        truth["streams"] = run.streams
    if run.workspace != "inactive":
        truth["workspace"] = run.workspace
    truth["userFile"] = run.S.user_path()
    truth["sizeRule"] = "npu: (n + 32) rounded up to 512" if run.npu else "cuda: n rounded up to 512 (min 512)"
    snap = {
        "categories": cat,
        "categoriesRequested": cat_req,
        "kinds": dict(sorted(kind.items())),
    }
    if late:
        snap["unrecordedCategories"] = ucat
        snap["unrecordedKinds"] = dict(sorted(ukind.items()))
    snap.update({
        "reservedBytes": t["reservedBytes"],
        "allocatedBytes": t["allocatedBytes"],
        "activeBytes": t["activeBytes"],
        "requestedBytes": t["requestedBytes"],
        "segments": t["segments"],
        "blocks": t["blocks"],
        "liveBlocks": len(live),
    })
    if run.workspace != "inactive":
        snap["workspaceBytes"] = sum(w.size for w in run.workspaces if w.allocated)
    blocks = []
    for addr, size, req, category, k, site, label, recorded in live:
        b = {"address": addr, "size": size, "requestedSize": req, "category": category, "kind": k, "site": site,
             "label": label}
        if late:
            b["recorded"] = recorded
        blocks.append(b)
    truth.update({
        "snapshot": snap,
        "peak": peak,
        "peakRequested": peak_req,
        "maxMemoryAllocated": A.stats["allocated_bytes"]["all"].peak,
        "traceEntries": t["traceEntries"],
        "actions": t["actions"],
        "callSites": sorted(sites.values(), key=lambda s: (-s["bytes"], s["site"] or "", s["category"])),
        "liveBlocks": blocks,
    })
    return truth
