// What one frame is: a Python frame of the user's own code, of an installed package, of generated code;
// a native frame of the snapshot machinery, of the allocator/dispatcher plumbing, of the interpreter, or a
// native frame worth naming. Pure string tests on (filename, name); the attribution caches them per frame.

/** Back-slashes to slashes, so Windows paths (`D:\…\Lib\site-packages\torch\…`) test like POSIX ones. */
export function slashPath(filename: string): string {
  return filename.indexOf("\\") >= 0 ? filename.replace(/\\/g, "/") : filename;
}

/**
 * A Python frame: the filename ends in `.py` (Jupyter's `/tmp/ipykernel_…/….py` included), or is one of
 * the pseudo-files Python uses for code without a file: `<ipython-input-…>`, `<string>`, `<stdin>`,
 * `<frozen …>`, `<eval_with_key>.N` (torch.fx generated code). C++ frames have "", "??", a .so/.cpp/.h path.
 */
export function isPythonFile(filename: string): boolean {
  if (filename.length < 3) return false;
  const lower = filename.toLowerCase();
  if (lower.endsWith(".py")) return true;
  if (filename[0] !== "<") return false;
  return (
    filename.startsWith("<ipython-input-") ||
    filename === "<string>" ||
    filename === "<stdin>" ||
    filename.startsWith("<frozen ") ||
    filename.startsWith("<eval_with_key>")
  );
}

/**
 * Installed code: site-packages / dist-packages (pip, conda, venv, uv, Debian), and the standard library
 * of any interpreter install: `…/lib/pythonX.Y/…` (conda, venv, pyenv, /usr/lib, macOS frameworks) and
 * Windows `…\Lib\…` (`C:\Python311\Lib\threading.py`, `.venv\Lib\site-packages\…`).
 */
const INSTALLED = /\/(?:site|dist)-packages\/|\/lib(?:64)?\/python\d+(?:\.\d+)*t?\/|(?:^|\/)Lib\//;
/** Windows installs whose `Lib` was written lower-case: `…\Python310\lib\…`, `…\anaconda3\envs\x\lib\…`. */
const WINDOWS_STDLIB = /^[A-Za-z]:\/(?:.*\/)?(?:python\d*|(?:ana|mini)conda\d*(?:\/envs\/[^/]+)?)\/lib\//i;
export function isInstalledPath(path: string): boolean {
  return INSTALLED.test(path) || WINDOWS_STDLIB.test(path);
}

/** torch (and torch_npu) itself, wherever it is installed. */
const TORCH_PACKAGE = /\/(?:site|dist)-packages\/torch(?:_npu)?\//;
export function isTorchPath(path: string): boolean {
  return TORCH_PACKAGE.test(path);
}

/** Python code nobody wrote by hand: frozen modules, torch.fx `<eval_with_key>`, Inductor's output code. */
export function isGeneratedPython(filename: string, path: string): boolean {
  return (
    filename.startsWith("<frozen ") ||
    filename.startsWith("<eval_with_key>") ||
    path.includes("/torchinductor_")
  );
}

/** The user's own Python: a Python frame not under an install prefix and not generated. */
export function isOwnCode(filename: string): boolean {
  if (!isPythonFile(filename)) return false;
  const path = slashPath(filename);
  return !isInstalledPath(path) && !isGeneratedPython(filename, path);
}

/** The snapshot machinery: identical innermost frames of every stack (CUDA and torch_npu spellings). */
const MACHINERY = /unwind::unwind|CapturedTraceback::gather|gather_with_cpp/;
export function isMachineryFrame(name: string): boolean {
  return name === "??" || name === "" || MACHINERY.test(name);
}

/**
 * Frames that name nothing a reader can use, hidden wherever frames are shown (stack lists and tooltips,
 * the call tree's labels, call sites): MemoryViz's stack filter (the snapshot machinery, CPython's
 * `PyEval_` / `PyObject_` / `PyFunction_` calls, the dispatcher's boxing and Register / Redispatch files,
 * start-up), plus CPython's `PyType_*` (`PyType_GetModule ??` under every binding) and a `??` frame with no
 * name (an unsymbolised address). A `??` file with a real name is kept.
 */
const NOISE_NAMES =
  /unwind::unwind|CapturedTraceback::gather|gather_with_cpp|_start|__libc_start_main|PyEval_|PyObject_|PyFunction_|^_?PyType_/;
const NOISE_FILES =
  /core\/boxing|\/Register|\/Redispatch|pythonrun\.c|Modules\/main\.c|Objects\/call\.c|Objects\/methodobject\.c|pycore_ceval\.h|ceval\.c|cpython\/abstract\.h/;
export function isNoiseFrame(filename: string, name: string): boolean {
  return name === "??" || name === "" || NOISE_NAMES.test(name) || NOISE_FILES.test(filename);
}

/**
 * Allocator and dispatcher plumbing that sits between the op and the allocator in every native stack:
 * `at::`, `c10::` (and torch_npu's `at_npu::`, `c10_npu::`), possibly behind a return type
 * (`at::TensorBase at::detail::_empty_generic<long>(…)`, `void at::meta::…`), plus the autograd dispatch
 * kernels (`torch::autograd::VariableType::…`, `torch::ADInplaceOrView::…`) and autograd helper functions
 * (`torch::autograd::utils::…`, `torch::autograd::generated::details::…`).
 */
const PLUMBING =
  /^(?:[\w:]+(?:<[^()]*>)?[\s*&]+)?(?:(?:at|c10|at_npu|c10_npu)::|torch::autograd::VariableType::|torch::ADInplaceOrView::|torch::autograd::utils::|torch::autograd::generated::details::)/;
export function isPlumbingFrame(name: string): boolean {
  return PLUMBING.test(name);
}

/** CPython's interpreter and the thread/process start-up frames around it. */
const INTERPRETER =
  /^(?:_?Py[A-Z_]|_?PyEval|cfunction_|method_vectorcall|slot_tp_|vectorcall|_start$|__libc_start|start_thread|__?clone|pthread_|execute_native_thread_routine|std::)/;
const INTERPRETER_FILES =
  /(?:^|\/)(?:ceval\.c|pythonrun\.c|main\.c|call\.c|methodobject\.c|pycore_ceval\.h|abstract\.h)$/;
export function isInterpreterFrame(filename: string, name: string): boolean {
  return INTERPRETER.test(name) || INTERPRETER_FILES.test(filename);
}

/** An autograd graph node's entry point (`torch::autograd::AccumulateGrad::apply(…)`, `…::MmBackward0::apply(…)`). */
const NODE_APPLY = /^(?:[\w:]+(?:<[^()]*>)?[\s*&]+)?torch::autograd::(?:[\w]+::)*[\w]+::apply\(/;
export function isAutogradNodeApply(name: string): boolean {
  return NODE_APPLY.test(name);
}

/** A demangled C++ name without its argument list and return type, for display. */
export function shortNativeName(name: string): string {
  let s = name.replace(/\(anonymous namespace\)/g, "{anon}");
  const paren = s.indexOf("(");
  if (paren > 0) s = s.slice(0, paren);
  // Drop a leading return type: the last top-level space outside template brackets.
  let depth = 0;
  let cut = -1;
  for (let i = 0; i < s.length; i++) {
    const c = s[i];
    if (c === "<") depth++;
    else if (c === ">") depth--;
    else if (c === " " && depth === 0) cut = i;
  }
  if (cut >= 0) s = s.slice(cut + 1);
  return s.replace(/\{anon\}/g, "(anonymous namespace)");
}

/** Last `count` components of a path. */
export function pathTail(path: string, count: number): string {
  const parts = path.split("/").filter((p) => p.length > 0);
  return parts.slice(Math.max(0, parts.length - count)).join("/");
}

/**
 * A filename that does not depend on where things were installed or which OS wrote it:
 * `…/site-packages/torch/nn/x.py` and `C:\…\Lib\site-packages\torch\nn\x.py` both become `torch/nn/x.py`;
 * standard-library files keep the path after `lib/pythonX.Y/` (or Windows `Lib/`); own files keep their
 * last two components (parent directory + basename), so `/home/a/proj/src/train.py` and
 * `D:\b\proj\src\train.py` match. Native frames keep their filename as written.
 */
export function portableFilename(filename: string): string {
  if (!isPythonFile(filename)) return filename;
  const path = slashPath(filename);
  const pkg = /\/(?:site|dist)-packages\/(.*)$/.exec(path);
  if (pkg) return pkg[1];
  const std =
    /\/lib(?:64)?\/python\d+(?:\.\d+)*t?\/(.*)$/.exec(path) ??
    /(?:^|\/)Lib\/(.*)$/.exec(path) ??
    (WINDOWS_STDLIB.test(path) ? /\/lib\/(.*)$/i.exec(path) : null);
  if (std) return std[1];
  if (filename[0] === "<") return filename.replace(/^<ipython-input-(\d+)-[0-9a-f]+>$/, "<ipython-input-$1>");
  if (path.includes("/ipykernel_")) return pathTail(path, 1);
  return pathTail(path, 2);
}
