"""A fake `torch` for testing python/peakscope_hook.py without PyTorch or a GPU.

It records every call the hook makes (torch._fake.calls) and simulates a tiny caching allocator whose
snapshot (`torch.cuda.memory._snapshot()`) has the layout of real torch 2.x snapshots: segments with
blocks, device_traces with alloc / free / segment entries (a ring buffer of max_entries), frames only for
what was allocated while history was recorded. Each allocation gets a segment of its rounded size; a freed
block stays cached (reserved) and is reused by the next allocation of the same rounded size.

The counters (memory_allocated, memory_reserved, their peaks, memory_stats) come from the same bookkeeping,
so a dump's sidecar and its snapshot agree as they do in real torch.

FAKE_TORCH=cuda (default) | legacy (torch 2.0's _record_memory_history signature) | nocuda (no CUDA: with
test/capture/fake_npu on the path, torch_npu is the backend).
"""

import os
import sys
import types

__version__ = "2.5.0+fake"
VARIANT = os.environ.get("FAKE_TORCH", "cuda")


def _jsonable(v):
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if callable(v):
        return "<callable>"
    return repr(v)


class _Fake:
    def __init__(self, devices=2):
        self.calls = []
        self.devices = devices
        self.current = 0
        self.segments = [[] for _ in range(devices)]  # per device: [seg dict], seg has one block
        self.traces = [[] for _ in range(devices)]
        self.peak_allocated = [0] * devices
        self.peak_reserved = [0] * devices
        self.num_ooms = [0] * devices
        self.history = None  # {"stacks":..., "max_entries":...} while recording
        self.time_us = 1_700_000_000_000_000
        self.next_addr = [0x7F0000000000 + d * 0x1000000000 for d in range(devices)]
        self.observers = []
        self.snapshots = []  # every snapshot _snapshot() returned, in order
        self.rank = None
        self.world = None

    def call(self, name, *args, **kwargs):
        self.calls.append([name, _jsonable(list(args)), _jsonable(kwargs)])

    # --- allocator
    def _frames(self, frames):
        if not self.history:
            return []
        out = [{"name": n, "filename": f, "line": line} for (f, line, n) in frames]
        if self.history["stacks"] == "all":
            out = [{"name": "torch::unwind::unwind()", "filename": "??", "line": 0}] + out
        return out

    def _trace(self, device, entry):
        if not self.history:
            return
        self.time_us += 10
        e = {"action": entry["action"]}
        for k in ("addr", "device_free"):
            if k in entry:
                e[k] = entry[k]
        e.update(size=entry["size"], stream=0, time_us=self.time_us, compile_context="N/A")
        e["frames"] = entry.get("frames", [])
        t = self.traces[device]
        t.append(e)
        cap = self.history["max_entries"]
        if cap is not None and len(t) > cap:
            del t[: len(t) - cap]

    def allocated(self, device):
        return sum(s["blocks"][0]["size"] for s in self.segments[device] if s["blocks"][0]["state"] != "inactive")

    def reserved(self, device):
        return sum(s["total_size"] for s in self.segments[device])

    def alloc(self, nbytes, frames=(("/home/u/proj/train.py", 10, "main"),), device=None):
        d = self.current if device is None else device
        size = max(512, (nbytes + 511) // 512 * 512)
        fr = self._frames(frames)
        seg = next(
            (s for s in self.segments[d] if s["total_size"] == size and s["blocks"][0]["state"] == "inactive"),
            None,
        )
        if seg is None:
            addr = self.next_addr[d]
            self.next_addr[d] += (size + 0xFFFFF) // 0x100000 * 0x100000 + 0x200000
            seg = {
                "device": d,
                "address": addr,
                "total_size": size,
                "allocated_size": 0,
                "active_size": 0,
                "requested_size": 0,
                "stream": 0,
                "segment_type": "small" if size <= 1 << 20 else "large",
                "segment_pool_id": (0, 0),
                "is_expandable": False,
                "frames": fr,
                "blocks": [{"address": addr, "size": size, "requested_size": 0, "state": "inactive", "frames": []}],
            }
            self.segments[d].append(seg)
            self._trace(d, {"action": "segment_alloc", "addr": addr, "size": size, "frames": fr})
        b = seg["blocks"][0]
        b.update(requested_size=nbytes, state="active_allocated", frames=fr)
        seg.update(allocated_size=size, active_size=size, requested_size=nbytes)
        self._trace(d, {"action": "alloc", "addr": b["address"], "size": nbytes, "frames": fr})
        self.peak_allocated[d] = max(self.peak_allocated[d], self.allocated(d))
        self.peak_reserved[d] = max(self.peak_reserved[d], self.reserved(d))
        return Tensor(d, b["address"], nbytes)

    def free(self, t, frames=(("/home/u/proj/train.py", 20, "main"),)):
        for seg in self.segments[t.device]:
            b = seg["blocks"][0]
            if b["address"] == t.addr and b["state"] == "active_allocated":
                fr = self._frames(frames)
                self._trace(t.device, {"action": "free_requested", "addr": t.addr, "size": b["requested_size"], "frames": fr})
                self._trace(t.device, {"action": "free_completed", "addr": t.addr, "size": b["requested_size"], "frames": fr})
                b["state"] = "inactive"
                b["frames"] = []
                seg.update(allocated_size=0, active_size=0, requested_size=0)
                return
        raise RuntimeError("fake torch: free of a tensor that is not allocated")

    def oom(self, nbytes, device=None, device_free=1 << 20):
        """An allocation that fails: the trace gets an oom entry, the observers run, then it raises."""
        d = self.current if device is None else device
        self.num_ooms[d] += 1
        self._trace(d, {"action": "oom", "device_free": device_free, "size": nbytes, "frames": self._frames((("/home/u/proj/train.py", 30, "main"),))})
        for obs in list(self.observers):
            obs(d, nbytes, self.allocated(d), device_free)
        raise OutOfMemoryError("CUDA out of memory. Tried to allocate %d bytes" % nbytes)

    def backward(self, tensors):
        """Runs the gradient hooks of `tensors` in order, as autograd would reach them."""
        for t in tensors:
            for h in list(t._hooks.values()):
                h(Tensor(t.device, 0, t.nbytes))

    def snapshot(self):
        snap = {
            "segments": [s for dev in self.segments for s in dev],
            "device_traces": [list(t) for t in self.traces],
            "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": -1},
        }
        # A deep copy through the same types pickle will see (tuples stay tuples).
        import copy

        snap = copy.deepcopy(snap)
        self.snapshots.append(snap)
        return snap

    def stats(self, d):
        return {
            "active_bytes.all.current": self.allocated(d),
            "allocated_bytes.all.current": self.allocated(d),
            "allocated_bytes.all.peak": self.peak_allocated[d],
            "num_alloc_retries": 0,
            "num_ooms": self.num_ooms[d],
            "reserved_bytes.all.current": self.reserved(d),
            "reserved_bytes.all.peak": self.peak_reserved[d],
            "segment.all.current": len(self.segments[d]),
        }


_fake = _Fake()


class OutOfMemoryError(RuntimeError):
    pass


class _Handle:
    def __init__(self, hooks, key):
        self.hooks, self.key = hooks, key

    def remove(self):
        _fake.call("RemovableHandle.remove")
        self.hooks.pop(self.key, None)


class Tensor:
    def __init__(self, device, addr, nbytes, requires_grad=False):
        self.device, self.addr, self.nbytes = device, addr, nbytes
        self.requires_grad = requires_grad
        self._hooks = {}

    def requires_grad_(self, v=True):
        self.requires_grad = v
        return self

    def register_hook(self, fn):
        _fake.call("Tensor.register_hook", fn)
        if not self.requires_grad:
            raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
        key = len(self._hooks)
        self._hooks[key] = fn
        return _Handle(self._hooks, key)


def _dev(device):
    if device is None:
        return _fake.current
    if isinstance(device, str):
        return int(device.split(":")[-1])
    return int(device)


def _module(name):
    m = types.ModuleType(name)
    sys.modules[name] = m
    return m


# --- torch.cuda and torch.cuda.memory
cuda = _module("torch.cuda")
memory = _module("torch.cuda.memory")
cuda.memory = memory


def _counter(name, fn):
    def f(device=None):
        _fake.call("cuda." + name, device)
        return fn(_dev(device))

    return f


cuda.is_available = lambda: (_fake.call("cuda.is_available"), VARIANT != "nocuda")[1]
cuda.device_count = lambda: _fake.devices
cuda.current_device = lambda: (_fake.call("cuda.current_device"), _fake.current)[1]
cuda.memory_allocated = _counter("memory_allocated", _fake.allocated)
cuda.memory_reserved = _counter("memory_reserved", _fake.reserved)
cuda.max_memory_allocated = _counter("max_memory_allocated", lambda d: _fake.peak_allocated[d])
cuda.max_memory_reserved = _counter("max_memory_reserved", lambda d: _fake.peak_reserved[d])
cuda.memory_stats = _counter("memory_stats", _fake.stats)
DEVICE_TOTAL = 80 << 30  # the fake device's total memory (mem_get_info()[1])
OUTSIDE = 1 << 30  # what the fake's CUDA context and NCCL hold outside the caching allocator
cuda.mem_get_info = _counter("mem_get_info", lambda d: (DEVICE_TOTAL - OUTSIDE - _fake.reserved(d), DEVICE_TOTAL))


def _start_history(stacks, max_entries):
    _fake.history = {"stacks": stacks, "max_entries": max_entries}


if VARIANT == "legacy":

    def _record_memory_history(
        enabled=True, record_context=True, trace_alloc_max_entries=1, trace_alloc_record_context=False, device=None
    ):
        _fake.call(
            "cuda.memory._record_memory_history",
            enabled,
            record_context=record_context,
            trace_alloc_max_entries=trace_alloc_max_entries,
            trace_alloc_record_context=trace_alloc_record_context,
        )
        if enabled:
            _start_history("python", trace_alloc_max_entries)
        else:
            _fake.history = None

else:

    def _record_memory_history(enabled="all", context="all", stacks="all", max_entries=sys.maxsize, device=None):
        _fake.call(
            "cuda.memory._record_memory_history",
            enabled=enabled,
            context=context,
            stacks=stacks,
            max_entries=max_entries,
            device=device,
        )
        if enabled is None:
            _fake.history = None
        else:
            _start_history(stacks, max_entries)


def _snapshot(device=None):
    _fake.call("cuda.memory._snapshot")
    return _fake.snapshot()


def _dump_snapshot(filename="dump_snapshot.pickle"):
    _fake.call("cuda.memory._dump_snapshot", filename)
    import pickle

    with open(filename, "wb") as f:
        pickle.dump(_fake.snapshot(), f)


memory._record_memory_history = _record_memory_history
memory._snapshot = _snapshot
memory._dump_snapshot = _dump_snapshot
cuda.OutOfMemoryError = OutOfMemoryError

# --- torch._C
_C = _module("torch._C")


def _cuda_attach_out_of_memory_observer(fn):
    _fake.call("_C._cuda_attach_out_of_memory_observer", fn)
    _fake.observers.append(fn)


_C._cuda_attach_out_of_memory_observer = _cuda_attach_out_of_memory_observer

# --- torch.distributed
distributed = _module("torch.distributed")
distributed.is_available = lambda: True
distributed.is_initialized = lambda: _fake.rank is not None
distributed.get_rank = lambda: (_fake.call("distributed.get_rank"), _fake.rank)[1]
distributed.get_world_size = lambda: (_fake.call("distributed.get_world_size"), _fake.world)[1]
