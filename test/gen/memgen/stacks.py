"""Realistic stacks, innermost first, copied from the shapes of real snapshot files.

Layouts:
  cuda-all     stacks="all": C++ frames interleaved with Python frames. Innermost torch::unwind::unwind(),
               torch::CapturedTraceback::gather, gather_with_cpp, the caching allocator, ATen/dispatcher
               frames, the Python binding, then each Python frame followed by the CPython eval frame and the
               call glue that invoked it, then the interpreter's bottom (Py_RunMain ... _start). Work done in
               the autograd engine's device thread has NO Python frame: it ends in Engine::thread_main and
               __clone (as in real files with AccumulateGrad).
  cuda-python  stacks="python": only the Python frames; engine-thread allocations get an EMPTY list.
  npu          torch_npu on aarch64: native frames named like torch_npu's (torch_npu::unwind::unwind(),
               torch_npu::CapturedTraceback::gather, c10_npu::NPUCachingAllocator ...), filename = the shared
               library's basename (libtorch_npu.so, libtorch_cpu.so, ...) or "??", line 0.

Frames are (name, filename, line) tuples; layout.py renders them as dicts in each torch version's key order.
C++ frames have line 0 and a filename of "??", "" or a bare source file name, as real symbolized frames do.
"""

from .allocator import Ctx

PATH_STYLES = {
    "linux": ("/home/u/.local/lib/python3.11/site-packages", "/home/u/proj", "/"),
    "conda": ("/opt/conda/envs/x/lib/python3.10/site-packages", "/home/u/proj", "/"),
    "venv": ("/home/u/proj/.venv/lib/python3.12/site-packages", "/home/u/proj", "/"),
    "dist": ("/usr/local/lib/python3.10/dist-packages", "/home/u/proj", "/"),
    "windows": ("C:\\Users\\u\\miniconda3\\Lib\\site-packages", "C:\\Users\\u\\proj", "\\"),
}

# CPython's eval frame and the C glue a Python function was called through.
EVAL = ("_PyEval_EvalFrameDefault", "??")
GLUE = {
    "func": [("_PyFunction_Vectorcall", "??")],
    "method": [("method_vectorcall", "")],
    "call": [("_PyObject_Call_Prepend", "??"), ("slot_tp_call", ""), ("_PyObject_MakeTpCall", "")],
    "pycall": [("_PyFunction_Vectorcall", "??"), ("PyObject_Call", "??")],
    "top": [],
}
MAIN_BOTTOM = [("PyEval_EvalCode", "??"), ("run_eval_code_obj", ""), ("run_mod", ""),
               ("pyrun_file", ""), ("_PyRun_SimpleFileObject", ""), ("_PyRun_AnyFileObject", ""),
               ("Py_RunMain", ""), ("Py_BytesMain", "??"), ("__libc_start_call_main", "??"),
               ("__libc_start_main_impl", "??"), ("_start", "??")]
ENGINE_BOTTOM = [
    ("torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&)", "??"),
    ("torch::autograd::Engine::thread_init(int, std::shared_ptr<torch::autograd::ReadyQueue> const&, bool)",
     "??"),
    ("torch::autograd::python::PythonEngine::thread_init(int, std::shared_ptr<torch::autograd::ReadyQueue> "
     "const&, bool)", ""),
    ("std::error_code::default_error_condition() const", "??"),
    ("start_thread", "??"),
    ("__clone3", "??"),
]

HEAD = [("torch::unwind::unwind()", "??"),
        ("torch::CapturedTraceback::gather(bool, bool, bool)", "??"),
        ("torch::cuda::(anonymous namespace)::gather_with_cpp()", "memory_snapshot.cpp")]
MALLOC = [
    ("c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(signed char, unsigned long, "
     "CUstream_st*)", "CUDACachingAllocator.cpp"),
    ("c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::malloc(void**, signed char, "
     "unsigned long, CUstream_st*)", ""),
    ("c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator::allocate(unsigned long)", ""),
]
FREE = [
    ("c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::free(c10::cuda::CUDACachingAllocator"
     "::Native::(anonymous namespace)::Block*)", "CUDACachingAllocator.cpp"),
    ("c10::cuda::CUDACachingAllocator::Native::local_raw_delete(void*)", ""),
    ("c10::StorageImpl::~StorageImpl()", ""),
    ("c10::intrusive_ptr<c10::StorageImpl, c10::detail::intrusive_target_default_null_type<c10::StorageImpl>"
     " >::reset_()", ""),
    ("c10::TensorImpl::~TensorImpl()", "??"),
    ("c10::TensorImpl::~TensorImpl() [clone .localalias]", "TensorImpl.cpp"),
]
PY_DEALLOC = [("THPVariable_clear(THPVariable*)", "python_variable.cpp"),
              ("THPVariable_subclass_dealloc(_object*)", "??")]
EMPTY = [
    ("at::detail::empty_generic(c10::ArrayRef<long>, c10::Allocator*, c10::DispatchKeySet, c10::ScalarType, "
     "std::optional<c10::MemoryFormat>)", "??"),
    ("at::detail::empty_cuda(c10::ArrayRef<long>, c10::ScalarType, std::optional<c10::Device>, "
     "std::optional<c10::MemoryFormat>)", "??"),
    ("at::detail::empty_cuda(c10::ArrayRef<long>, std::optional<c10::ScalarType>, std::optional<c10::Layout>, "
     "std::optional<c10::Device>, std::optional<bool>, std::optional<c10::MemoryFormat>)", "??"),
    ("at::detail::empty_cuda(c10::ArrayRef<long>, c10::TensorOptions const&)", "??"),
]
EMPTY_STRIDED = [
    ("at::detail::empty_strided_generic(c10::ArrayRef<long>, c10::ArrayRef<long>, c10::Allocator*, "
     "c10::DispatchKeySet, c10::ScalarType)", "??"),
    ("at::detail::empty_strided_cuda(c10::ArrayRef<long>, c10::ArrayRef<long>, c10::ScalarType, "
     "std::optional<c10::Device>)", "??"),
    ("at::native::empty_strided_cuda(c10::ArrayRef<long>, c10::ArrayRef<long>, std::optional<c10::ScalarType>,"
     " std::optional<c10::Layout>, std::optional<c10::Device>, std::optional<bool>)", "??"),
    ("at::(anonymous namespace)::(anonymous namespace)::wrapper_CUDA__empty_strided(c10::ArrayRef<c10::SymInt>"
     ", c10::ArrayRef<c10::SymInt>, std::optional<c10::ScalarType>, std::optional<c10::Layout>, "
     "std::optional<c10::Device>, std::optional<bool>)", "RegisterCUDA_0.cpp"),
    ("at::_ops::empty_strided::redispatch(c10::DispatchKeySet, c10::ArrayRef<c10::SymInt>, "
     "c10::ArrayRef<c10::SymInt>, std::optional<c10::ScalarType>, std::optional<c10::Layout>, "
     "std::optional<c10::Device>, std::optional<bool>)", "??"),
    ("at::_ops::empty_strided::call(c10::ArrayRef<c10::SymInt>, c10::ArrayRef<c10::SymInt>, "
     "std::optional<c10::ScalarType>, std::optional<c10::Layout>, std::optional<c10::Device>, "
     "std::optional<bool>)", "??"),
]
TO_COPY = [
    ("at::native::_to_copy(at::Tensor const&, std::optional<c10::ScalarType>, std::optional<c10::Layout>, "
     "std::optional<c10::Device>, std::optional<bool>, bool, std::optional<c10::MemoryFormat>)", "??"),
    ("at::_ops::_to_copy::redispatch(c10::DispatchKeySet, at::Tensor const&, std::optional<c10::ScalarType>, "
     "std::optional<c10::Layout>, std::optional<c10::Device>, std::optional<bool>, bool, "
     "std::optional<c10::MemoryFormat>)", "??"),
    ("torch::autograd::VariableType::(anonymous namespace)::_to_copy(c10::DispatchKeySet, at::Tensor const&, "
     "std::optional<c10::ScalarType>, std::optional<c10::Layout>, std::optional<c10::Device>, "
     "std::optional<bool>, bool, std::optional<c10::MemoryFormat>)", "VariableType_2.cpp"),
    ("at::_ops::_to_copy::call(at::Tensor const&, std::optional<c10::ScalarType>, std::optional<c10::Layout>, "
     "std::optional<c10::Device>, std::optional<bool>, bool, std::optional<c10::MemoryFormat>)", "??"),
    ("at::native::to(at::Tensor const&, std::optional<c10::ScalarType>, std::optional<c10::Layout>, "
     "std::optional<c10::Device>, std::optional<bool>, bool, bool, std::optional<c10::MemoryFormat>)", ""),
]
MM = [
    ("at::(anonymous namespace)::structured_mm_out_cuda_functional::set_output_raw_strided(long, "
     "c10::ArrayRef<long>, c10::ArrayRef<long>, c10::TensorOptions, c10::ArrayRef<at::Dimname>)",
     "RegisterCUDA_0.cpp"),
    ("at::meta::structured_mm::meta(at::Tensor const&, at::Tensor const&)", "??"),
    ("at::(anonymous namespace)::wrapper_CUDA_mm(at::Tensor const&, at::Tensor const&)", "RegisterCUDA_0.cpp"),
    ("at::_ops::mm::redispatch(c10::DispatchKeySet, at::Tensor const&, at::Tensor const&)", "??"),
    ("torch::autograd::VariableType::(anonymous namespace)::mm(c10::DispatchKeySet, at::Tensor const&, "
     "at::Tensor const&)", "VariableType_3.cpp"),
    ("at::_ops::mm::call(at::Tensor const&, at::Tensor const&)", "??"),
]
LINEAR = [
    ("at::native::_matmul_impl(at::Tensor&, at::Tensor const&, at::Tensor const&)", "??"),
    ("at::native::matmul(at::Tensor const&, at::Tensor const&)", "??"),
    ("at::_ops::matmul::call(at::Tensor const&, at::Tensor const&)", "??"),
    ("at::native::linear(at::Tensor const&, at::Tensor const&, std::optional<at::Tensor> const&)", "??"),
    ("at::_ops::linear::call(at::Tensor const&, at::Tensor const&, std::optional<at::Tensor> const&)", "??"),
    ("torch::autograd::THPVariable_linear(_object*, _object*, _object*)", "python_nn_functions.cpp"),
]
ELEMENTWISE = [
    ("at::TensorIteratorBase::allocate_or_resize_outputs()", "??"),
    ("at::TensorIteratorBase::build(at::TensorIteratorConfig&)", "??"),
]


def _op(name, binding=None):
    """Dispatcher frames of one structured elementwise/reduction op, optionally with its Python binding."""
    frames = [
        (f"at::meta::structured_{name}::meta(at::Tensor const&, c10::Scalar const&)", "??"),
        (f"at::(anonymous namespace)::wrapper_CUDA_{name}(at::Tensor const&, c10::Scalar const&)",
         "RegisterCUDA_0.cpp"),
        (f"at::_ops::{name}::redispatch(c10::DispatchKeySet, at::Tensor const&, c10::Scalar const&)", "??"),
        (f"torch::autograd::VariableType::(anonymous namespace)::{name}(c10::DispatchKeySet, at::Tensor const&,"
         " c10::Scalar const&)", "VariableType_0.cpp"),
        (f"at::_ops::{name}::call(at::Tensor const&, c10::Scalar const&)", "??"),
    ]
    if binding:
        frames.append((f"torch::autograd::{binding}(_object*, _object*, _object*)",
                       "python_variable_methods.cpp"))
    return frames


def _node(node):
    """The engine frames that run one autograd Node in the device thread."""
    return [
        (f"torch::autograd::generated::{node}::apply(std::vector<at::Tensor, std::allocator<at::Tensor> >&&)",
         "Functions.cpp"),
        ("torch::autograd::Node::operator()(std::vector<at::Tensor, std::allocator<at::Tensor> >&&)", ""),
        ("torch::autograd::call_function(std::shared_ptr<torch::autograd::GraphTask>&, torch::autograd::Node*, "
         "torch::autograd::InputBuffer&)", "engine.cpp"),
        ("torch::autograd::Engine::evaluate_function(std::shared_ptr<torch::autograd::GraphTask>&, "
         "torch::autograd::Node*, torch::autograd::InputBuffer&, std::shared_ptr<torch::autograd::ReadyQueue> "
         "const&)", "??"),
    ]


ACCUMULATE_GRAD = [
    ("at::_ops::new_empty_strided::call(at::Tensor const&, c10::ArrayRef<c10::SymInt>, "
     "c10::ArrayRef<c10::SymInt>, std::optional<c10::ScalarType>, std::optional<c10::Layout>, "
     "std::optional<c10::Device>, std::optional<bool>)", "??"),
    ("torch::autograd::utils::clone_obey_contract(at::Tensor const&, at::Tensor const&)", ""),
    ("void torch::autograd::AccumulateGrad::accumulateGrad<std::function<void (at::Tensor&&)> >(at::Tensor "
     "const&, at::Tensor&, at::Tensor const&, unsigned long, std::function<void (at::Tensor&&)> const&)", ""),
    ("torch::autograd::(anonymous namespace)::AccumulateGrad_apply_impl(std::vector<at::Tensor, "
     "std::allocator<at::Tensor> >&&, at::Tensor&, at::Tensor&, long, bool)", "accumulate_grad.cpp"),
    ("torch::autograd::AccumulateGrad::apply(std::vector<at::Tensor, std::allocator<at::Tensor> >&&)", "??"),
    ("torch::autograd::Node::operator()(std::vector<at::Tensor, std::allocator<at::Tensor> >&&)", ""),
    ("torch::autograd::call_function(std::shared_ptr<torch::autograd::GraphTask>&, torch::autograd::Node*, "
     "torch::autograd::InputBuffer&)", "engine.cpp"),
    ("torch::autograd::Engine::evaluate_function(std::shared_ptr<torch::autograd::GraphTask>&, "
     "torch::autograd::Node*, torch::autograd::InputBuffer&, std::shared_ptr<torch::autograd::ReadyQueue> "
     "const&)", "??"),
]

# ---- torch_npu renaming -----------------------------------------------------------------------------
NPU_NAMES = {
    "torch::unwind::unwind()": "torch_npu::unwind::unwind()",
    "torch::CapturedTraceback::gather(bool, bool, bool)": "torch_npu::CapturedTraceback::gather(bool, bool, bool)",
    "torch::cuda::(anonymous namespace)::gather_with_cpp()": "torch_npu::gather_with_cpp()",
}


def _npu_name(name):
    if name in NPU_NAMES:
        return NPU_NAMES[name]
    name = name.replace("c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator",
                        "c10_npu::NPUCachingAllocator::DeviceCachingAllocator")
    name = name.replace("c10::cuda::CUDACachingAllocator::Native::NativeCachingAllocator",
                        "c10_npu::NPUCachingAllocator::NpuCachingAllocator")
    name = name.replace("c10::cuda::CUDACachingAllocator::Native::", "c10_npu::NPUCachingAllocator::")
    name = name.replace("CUstream_st*", "void*").replace("signed char", "int")
    name = name.replace("at::detail::empty_cuda", "at_npu::native::OpPreparation::apply_tensor_without_format")
    name = name.replace("at::detail::empty_strided_cuda", "at_npu::native::empty_strided_npu")
    name = name.replace("at::native::empty_strided_cuda", "at_npu::native::NPUNativeFunctions::empty_strided")
    name = name.replace("wrapper_CUDA_", "wrapper_PrivateUse1_")
    if "structured_mm_out_cuda_functional" in name:
        return "op_plugin::mm(at::Tensor const&, at::Tensor const&)"
    return name


def _npu_file(name, fname):
    if fname.endswith(".py") or name == "??":
        return fname
    if name.startswith(("torch_npu::", "at_npu::", "c10_npu::", "op_plugin::")) or "PrivateUse1" in name:
        return "libtorch_npu.so"
    if name.startswith(("torch::autograd::THP", "THP", "torch::autograd::python::",
                        "torch::autograd::utils::wrap")):
        return "libtorch_python.so"
    if name.startswith(("c10::", "void c10::")):
        return "libc10.so"
    if name.startswith(("at::", "torch::", "void torch::")):
        return "libtorch_cpu.so"
    return "??"


class Stacks:
    """Builds Ctx objects (stacks) for one layout and install style."""

    def __init__(self, layout="cuda-all", paths="linux", user_file="train.py"):
        if layout not in ("cuda-all", "cuda-python", "npu"):
            raise ValueError(layout)
        self.layout = layout
        self.site_packages, self.user_root, self.sep = PATH_STYLES[paths]
        self.user_file = user_file

    # ---- paths ---------------------------------------------------------------------------------------
    def torch_path(self, rel):
        return self.sep.join([self.site_packages, "torch"] + rel.split("/"))

    def pkg_path(self, rel):
        return self.sep.join([self.site_packages] + rel.split("/"))

    def user_path(self, rel=None):
        return self.sep.join([self.user_root] + (rel or self.user_file).split("/"))

    # ---- building ------------------------------------------------------------------------------------
    def ctx(self, native, py=(), thread="main"):
        """native: list of (name, file) innermost first, WITHOUT the unwind/gather head.
        py: list of (kind, path, line, function, glue) innermost first; kind "U" marks the user's code.
        thread: "main" (ends in the interpreter's bottom frames) or "engine" (autograd device thread)."""
        site = None
        for kind, path, line, func, _glue in py:
            if kind == "U":
                site = f"{path}:{line}:{func}"
                break
        if self.layout == "cuda-python":
            return Ctx([(func, path, line) for _k, path, line, func, _g in py], site)
        frames = [(n, f, 0) for n, f in HEAD] + [(n, f, 0) for n, f in native]
        for i, (_kind, path, line, func, glue) in enumerate(py):
            frames.append((func, path, line))
            frames.append((EVAL[0], EVAL[1], 0))
            if i < len(py) - 1:
                frames.extend((n, f, 0) for n, f in GLUE[glue])
        bottom = MAIN_BOTTOM if thread == "main" else ENGINE_BOTTOM
        frames.extend((n, f, 0) for n, f in bottom)
        if self.layout == "npu":
            frames = [(_npu_name(n), _npu_file(_npu_name(n), f), ln) if not f.endswith(".py") else (n, f, ln)
                      for n, f, ln in frames]
            frames.insert(len(frames) - 3, ("??", "??", 0))  # unresolved frames are common on aarch64
        return Ctx(frames, site)

    # ---- python frame helpers -------------------------------------------------------------------------
    def T(self, rel, line, func, glue="func"):
        return ("T", self.torch_path(rel), line, func, glue)

    def P(self, rel, line, func, glue="func"):
        return ("T", self.pkg_path(rel), line, func, glue)

    def U(self, line, func, glue="func", rel=None):
        return ("U", self.user_path(rel), line, func, glue)


NATIVE = {
    "malloc": MALLOC, "free": FREE, "py_dealloc": PY_DEALLOC, "empty": EMPTY, "empty_strided": EMPTY_STRIDED,
    "to_copy": TO_COPY, "mm": MM, "linear": LINEAR, "elementwise": ELEMENTWISE,
    "accumulate_grad": ACCUMULATE_GRAD,
}


def op(name, binding=None):
    return _op(name, binding)


def node(name):
    return _node(name)
