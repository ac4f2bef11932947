"""peakscope_hook: capture PyTorch / torch_npu memory snapshots that peakscope can fully explain.

One file, the standard library plus torch (or torch_npu). Import it by path or copy it next to your script:

    import peakscope_hook as ms
    ms.start()                    # 1. before the model is built, so the weights carry a stack
    ms.dump_on_oom()              # 2. a snapshot when the allocator runs out of memory
    ...build the model, the optimizer...
    for batch in loader:
        ...forward, backward, optimizer step...
        ms.step()                 # 3. dumps after the steps named in PEAKSCOPE_STEPS (e.g. 3,5)
    ms.dump("end")                # 4. or dump at any moment, by tag

Every dump writes two files, both mode 0600 (owner read/write only):

    $PEAKSCOPE_DIR/peakscope-rank<R>-<tag>.pickle                 the snapshot (torch's _snapshot() pickled)
    $PEAKSCOPE_DIR/peakscope-rank<R>-<tag>.pickle.counters.json   the allocator counters the snapshot lacks

`dump_in_backward(tensor, tag)` dumps from inside the backward pass (activations still alive).

Environment: PEAKSCOPE_DIR (where dumps go; default ./peakscope-dumps), PEAKSCOPE_STEPS (steps after which
`step()` dumps: "3,5", ranges "3-5"; steps count from 1; unset: `step()` only counts).

Open the result with `npx peakscope view FILE` or `npx peakscope report FILE`.
"""

import datetime
import json
import os
import pickle
import re
import socket
import sys
import threading
import time
import warnings

# The release this file belongs to; the same as peakscope's package.json (test/pack.test.ts checks it).
__version__ = "0.1.0"

__all__ = [
    "PeakscopeWarning",
    "__version__",
    "dump",
    "dump_in_backward",
    "dump_on_oom",
    "start",
    "step",
    "stop",
]

MIB = 1 << 20


class PeakscopeWarning(UserWarning):
    """What peakscope_hook tells you about a capture that will be less useful than it could be."""


_lock = threading.RLock()
_state = {
    "backend": None,  # "cuda" or "npu", once chosen
    "recording": False,
    "max_entries": None,
    "stacks": None,
    "allocated_at_start": None,
    "warned": set(),  # warning keys already shown (each is said once)
    "oom_installed": False,
    "step": 0,
    "steps": None,  # parsed PEAKSCOPE_STEPS (a set), or None before the first step()
}


def _say_once(key, message):
    """Warns once per key for the life of the process."""
    with _lock:
        if key in _state["warned"]:
            return
        _state["warned"].add(key)
    warnings.warn(message, PeakscopeWarning, stacklevel=3)


def _mib(n):
    return "%.2f MiB" % (n / MIB)


def _exact(n):
    return "{:,} B".format(int(n))


# ---------------------------------------------------------------------------------------------- backend


class _Backend:
    """The functions of torch.cuda or torch_npu.npu that a capture needs, looked up once."""

    def __init__(self, name):
        import torch

        self.name = name
        self.torch = torch
        if name == "npu":
            import torch_npu  # noqa: F401  (registers torch.npu)

            self.mod = torch_npu.npu
            self.memory = torch_npu.npu.memory
            c = getattr(torch_npu, "_C", None)
            self.oom_attach = getattr(c, "_npu_attach_out_of_memory_observer", None)
        else:
            self.mod = torch.cuda
            self.memory = torch.cuda.memory
            self.oom_attach = getattr(torch._C, "_cuda_attach_out_of_memory_observer", None)

    def device(self):
        return int(self.mod.current_device())

    def counters(self, device):
        m = self.mod
        stats = m.memory_stats(device)
        out = {
            "memory_allocated": int(m.memory_allocated(device)),
            "memory_reserved": int(m.memory_reserved(device)),
            "max_memory_allocated": int(m.max_memory_allocated(device)),
            "max_memory_reserved": int(m.max_memory_reserved(device)),
            "memory_stats": {str(k): v for k, v in dict(stats).items()},
        }
        # The device's total (cudaMemGetInfo / aclrtGetMemInfo): with an oom entry's device_free it tells
        # the memory held outside the caching allocator (NCCL, the context, other processes).
        get_info = getattr(m, "mem_get_info", None)
        if get_info is not None:
            try:
                out["device_total_bytes"] = int(get_info(device)[1])
            except Exception:  # an old build or a driver that refuses: the sidecar goes without it
                pass
        return out

    def record(self, max_entries, stacks):
        f = self.memory._record_memory_history
        try:
            f(enabled="all", context="all", stacks=stacks, max_entries=max_entries)
            return "current"
        except TypeError:
            # torch 2.0 (and torch_npu builds on it): no `stacks`, the ring buffer is trace_alloc_max_entries.
            f(True, record_context=True, trace_alloc_max_entries=max_entries, trace_alloc_record_context=True)
            return "legacy"

    def stop(self):
        f = self.memory._record_memory_history
        try:
            f(enabled=None)
        except TypeError:
            f(False)

    def write_snapshot(self, out):
        """Pickles the snapshot (as _dump_snapshot does) into the open binary file `out`; returns it."""
        s = self.memory._snapshot()
        pickle.dump(s, out)
        return s


def _pick_backend():
    if _state["backend"] is not None:
        return _state["backend"]
    name = "cuda"
    try:
        import torch

        cuda_ok = bool(torch.cuda.is_available())
    except Exception:
        cuda_ok = False
    if not cuda_ok:
        try:
            import torch_npu

            if torch_npu.npu.is_available():
                name = "npu"
        except ImportError:
            pass
        if name == "cuda":
            raise RuntimeError(
                "peakscope_hook: no CUDA device (torch.cuda.is_available() is False) and no torch_npu device: "
                "there is no device memory to record"
            )
    _state["backend"] = _Backend(name)
    return _state["backend"]


# ------------------------------------------------------------------------------------------------ start


def start(max_entries=100_000, stacks="python"):
    """Starts recording the allocator's history (every alloc and free, with its stack).

    max_entries: the ring buffer's size in trace entries; it must hold everything from the moment you
    care about (the peak) to the dump, or the oldest entries are dropped. stacks: "python" (Python frames
    only: cheap to record and ~100x cheaper to dump on big runs) or "all" (C++ frames too: names the
    autograd engine's allocations, such as gradients, which have no Python frame).

    Call it before the model is built: memory allocated before it has no stack in the snapshot (peakscope
    then infers what it can from sizes and lifetimes). Returns the backend ("cuda" or "npu").
    """
    if stacks not in ("python", "all"):
        raise ValueError('stacks must be "python" or "all", not %r' % (stacks,))
    if not isinstance(max_entries, int) or isinstance(max_entries, bool) or max_entries <= 0:
        raise ValueError("max_entries must be a whole number > 0, not %r" % (max_entries,))
    b = _pick_backend()
    device = b.device()
    already = int(b.mod.memory_allocated(device))
    with _lock:
        b.record(max_entries, stacks)
        first = not _state["recording"]
        _state.update(recording=True, max_entries=max_entries, stacks=stacks)
        if first:
            _state["allocated_at_start"] = already
    if already > 0:
        _say_once(
            "late",
            "peakscope_hook.start(): recording started with %s (%s) already allocated on %s:%d. Those blocks "
            "(usually the model's weights) have no stack in the snapshot; peakscope will infer what it can "
            "from sizes and lifetimes. Call start() before the model is built."
            % (_mib(already), _exact(already), b.name, device),
        )
    return b.name


def stop():
    """Stops recording (the ring buffer is freed); dumps after this have no trace."""
    b = _pick_backend()
    with _lock:
        b.stop()
        _state["recording"] = False


# ------------------------------------------------------------------------------------------------- dump


def _rank():
    """(rank, world_size) when distributed (initialised, or launched by torchrun), else (None, None)."""
    try:
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized():
            return int(dist.get_rank()), int(dist.get_world_size())
    except Exception:
        pass
    r, w = os.environ.get("RANK", ""), os.environ.get("WORLD_SIZE", "")
    if r.isdigit():
        return int(r), (int(w) if w.isdigit() else None)
    return None, None


def _safe_tag(tag):
    t = re.sub(r"[^A-Za-z0-9._-]+", "_", str(tag)).strip("._")
    return (t or "dump")[:80]


def _out_dir(directory):
    d = directory or os.environ.get("PEAKSCOPE_DIR") or "peakscope-dumps"
    os.makedirs(d, mode=0o700, exist_ok=True)
    return d


def _tmp_name(directory, n=0):
    return os.path.join(directory, ".peakscope-%d-%d-%d.tmp" % (os.getpid(), threading.get_ident(), n))


def _private_tmp(directory):
    """A new file only the owner can read and write, opened for binary writing: (path, file)."""
    for n in range(1000):
        tmp = _tmp_name(directory, n)
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o600)
        except FileExistsError:
            continue
        os.chmod(tmp, 0o600)  # the umask can only take bits away; make it exactly owner read/write
        return tmp, os.fdopen(fd, "wb")
    raise OSError("peakscope_hook: could not create a temporary file in %s" % directory)


def _place(tmp, base):
    """Moves tmp to `base` (`base-2`, `base-3`, … when taken: another rank's file is never replaced)."""
    root, ext = os.path.splitext(base)
    for n in range(1, 10_000):
        path = base if n == 1 else "%s-%d%s" % (root, n, ext)
        if os.path.exists(path) or os.path.exists(path + ".counters.json"):
            continue
        try:
            os.link(tmp, path)  # atomic, and fails when the name is taken (a racing process)
            os.unlink(tmp)
            return path
        except FileExistsError:
            continue
        except OSError:
            os.replace(tmp, path)  # a file system without hard links
            return path
    raise OSError("peakscope_hook: no free file name for %s" % base)


def _write_json_private(path, obj):
    d = os.path.dirname(path) or "."
    tmp, f = _private_tmp(d)
    try:
        with f:
            f.write(json.dumps(obj, indent=1, default=str).encode("utf-8"))
        os.replace(tmp, path)
    except BaseException:
        _unlink(tmp)
        raise


def _unlink(p):
    try:
        os.unlink(p)
    except OSError:
        pass


def _trace_lengths(snapshot):
    traces = snapshot.get("device_traces") if isinstance(snapshot, dict) else None
    return [len(t) for t in traces] if isinstance(traces, list) else None


def dump(tag="snapshot", directory=None, device=None, _extra=None):
    """Writes the snapshot and its counters sidecar now; returns the snapshot's path.

    Safe to call from anywhere, an autograd hook included. The file name carries the rank and the tag
    (peakscope-rank<R>-<tag>.pickle), so the ranks of a job never collide; a taken name gets -2, -3, ….
    """
    b = _pick_backend()
    d = _out_dir(directory)
    rank, world = _rank()
    base = os.path.join(d, "peakscope-rank%d-%s.pickle" % (rank or 0, _safe_tag(tag)))
    if device is None:
        device = b.device()
    with _lock:
        snapshot = None
        if getattr(b.memory, "_snapshot", None) is not None:
            tmp, f = _private_tmp(d)
            try:
                with f:
                    snapshot = b.write_snapshot(f)
            except BaseException:
                _unlink(tmp)
                raise
        else:
            # No _snapshot(): the library writes the file (torch_npu creates it mode 0200, write-only),
            # then the owner gets read/write back.
            tmp = _tmp_name(d)
            _unlink(tmp)  # a stale one (torch_npu opens without O_TRUNC)
            try:
                b.memory._dump_snapshot(tmp)
                os.chmod(tmp, 0o600)
            except BaseException:
                _unlink(tmp)
                raise
        try:
            counters = b.counters(device)
            path = _place(tmp, base)
        except BaseException:
            _unlink(tmp)
            raise
    now = time.time()
    side = {
        "tag": str(tag),
        "device": int(device),
        "backend": b.name,
        **counters,
        "time": datetime.datetime.fromtimestamp(now, datetime.timezone.utc).isoformat(),
        "unix_time": now,
        "pid": os.getpid(),
        "host": socket.gethostname(),
        "torch_version": str(getattr(b.torch, "__version__", "")),
        "recording": {
            "on": _state["recording"],
            "max_entries": _state["max_entries"],
            "stacks": _state["stacks"],
            "allocated_at_start": _state["allocated_at_start"],
        },
    }
    if rank is not None:
        side["rank"] = rank
        if world is not None:
            side["world_size"] = world
    if _state["step"]:
        side["step"] = _state["step"]
    lengths = _trace_lengths(snapshot) if snapshot is not None else None
    if not _state["recording"] and not (lengths and any(lengths)):
        _say_once(
            "not-recording",
            "peakscope_hook.dump(%r): history is not being recorded (call start() first), so the snapshot has "
            "no trace and no stacks: peakscope can show what is allocated, not where it came from." % (tag,),
        )
    if lengths is not None:
        side["trace_entries"] = lengths
        cap = _state["max_entries"]
        if cap and any(n >= cap for n in lengths):
            _say_once(
                "ring-full",
                "peakscope_hook.dump(%r): the trace holds max_entries=%d entries: the ring buffer is full and "
                "the oldest events were dropped, so the peak may be outside the recorded window. Pass a "
                "larger max_entries to start()." % (tag, cap),
            )
    if _extra:
        side.update(_extra)
    _write_json_private(path + ".counters.json", side)
    return path


# ------------------------------------------------------------------------------------------------ hooks


def dump_on_oom(tag="oom", once=True):
    """Installs the allocator's out-of-memory observer: it dumps when an allocation fails.

    The snapshot is taken inside the failing allocation, so it holds everything alive at that moment
    (the sidecar's "oom" says how much was asked for and how much the device had free). once=True dumps
    the first OOM only (a retry loop would otherwise fill the disk). Installing twice does nothing.
    """
    b = _pick_backend()
    if b.oom_attach is None:
        raise RuntimeError(
            "peakscope_hook.dump_on_oom(): this %s build has no out-of-memory observer "
            "(torch._C._cuda_attach_out_of_memory_observer / torch_npu._C._npu_attach_out_of_memory_observer)"
            % b.name
        )
    fired = {"n": 0}

    def observer(device, alloc, device_alloc, device_free):
        if once and fired["n"] > 0:
            return
        fired["n"] += 1
        try:
            dump(
                tag,
                device=int(device),
                _extra={
                    "oom": {
                        "device": int(device),
                        "requested_bytes": int(alloc),
                        "device_allocated_bytes": int(device_alloc),
                        "device_free_bytes": int(device_free),
                    }
                },
            )
        except Exception as e:  # never raise into the allocator
            sys.stderr.write("peakscope_hook: the out-of-memory dump failed: %r\n" % (e,))

    with _lock:
        if _state["oom_installed"]:
            return
        b.oom_attach(observer)
        _state["oom_installed"] = True


def dump_in_backward(tensor, tag="backward"):
    """Dumps once, from inside the backward pass, when the gradient of `tensor` is computed.

    Give it an activation (an intermediate output) or a parameter of an early layer: at that moment the
    activations saved for the rest of the backward are still alive. Returns the hook's handle
    (`handle.remove()` to cancel).
    """
    if not getattr(tensor, "requires_grad", False):
        raise ValueError(
            "peakscope_hook.dump_in_backward(): the tensor does not require grad, so backward never reaches "
            "it; give an activation or a parameter"
        )
    done = {"fired": False}

    def hook(grad):
        if not done["fired"]:
            done["fired"] = True
            dump(tag)
        return None

    return tensor.register_hook(hook)


# ------------------------------------------------------------------------------------------------- step


def _parse_steps(text):
    out = set()
    for part in text.replace(" ", "").split(","):
        if not part:
            continue
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        if not m:
            raise ValueError('PEAKSCOPE_STEPS=%r: expected step numbers like "3,5" or "3-5"' % text)
        lo = int(m.group(1))
        hi = int(m.group(2) or lo)
        if hi < lo or hi - lo > 1_000_000:
            raise ValueError("PEAKSCOPE_STEPS=%r: %r is not a range" % (text, part))
        out.update(range(lo, hi + 1))
    return out


def step(tag_prefix="step"):
    """Marks the end of a training step (steps count from 1). Dumps `<tag_prefix><N>` after each step N
    named in PEAKSCOPE_STEPS; returns that path, else None."""
    with _lock:
        if _state["steps"] is None:
            _state["steps"] = _parse_steps(os.environ.get("PEAKSCOPE_STEPS", ""))
        _state["step"] += 1
        n = _state["step"]
        wanted = n in _state["steps"]
    return dump("%s%d" % (tag_prefix, n)) if wanted else None
