"""A fake `torch_npu` on top of the fake torch (test/capture/fake): torch_npu.npu mirrors torch.cuda over
the same simulated allocator. Like real torch_npu, its `_dump_snapshot` creates the file with mode 0200
(write-only: its owner cannot read it back); this fake has no `_snapshot`, so the hook must let the
library write the file and then fix its mode."""

import os
import pickle
import sys
import types

import torch

_fake = torch._fake


def _module(name):
    m = types.ModuleType(name)
    sys.modules[name] = m
    return m


npu = _module("torch_npu.npu")
memory = _module("torch_npu.npu.memory")
npu.memory = memory
_C = _module("torch_npu._C")


def _dev(device):
    return _fake.current if device is None else int(str(device).split(":")[-1])


def _counter(name, fn):
    def f(device=None):
        _fake.call("npu." + name, device)
        return fn(_dev(device))

    return f


npu.is_available = lambda: (_fake.call("npu.is_available"), True)[1]
npu.current_device = lambda: (_fake.call("npu.current_device"), _fake.current)[1]
npu.memory_allocated = _counter("memory_allocated", _fake.allocated)
npu.memory_reserved = _counter("memory_reserved", _fake.reserved)
npu.max_memory_allocated = _counter("max_memory_allocated", lambda d: _fake.peak_allocated[d])
npu.max_memory_reserved = _counter("max_memory_reserved", lambda d: _fake.peak_reserved[d])
npu.memory_stats = _counter("memory_stats", _fake.stats)
npu.mem_get_info = _counter(
    "mem_get_info", lambda d: (torch.DEVICE_TOTAL - torch.OUTSIDE - _fake.reserved(d), torch.DEVICE_TOTAL)
)


def _record_memory_history(enabled="all", context="all", stacks="all", max_entries=sys.maxsize, device=None):
    _fake.call(
        "npu.memory._record_memory_history",
        enabled=enabled,
        context=context,
        stacks=stacks,
        max_entries=max_entries,
        device=device,
    )
    _fake.history = None if enabled is None else {"stacks": stacks, "max_entries": max_entries}


def _dump_snapshot(filename="dump_snapshot.pickle"):
    _fake.call("npu.memory._dump_snapshot", filename)
    # As torch_npu does: created write-only for the owner (and without O_TRUNC).
    fd = os.open(filename, os.O_WRONLY | os.O_CREAT, 0o200)
    with os.fdopen(fd, "wb") as f:
        pickle.dump(_fake.snapshot(), f)


memory._record_memory_history = _record_memory_history
memory._dump_snapshot = _dump_snapshot


def _npu_attach_out_of_memory_observer(fn):
    _fake.call("_C._npu_attach_out_of_memory_observer", fn)
    _fake.observers.append(fn)


_C._npu_attach_out_of_memory_observer = _npu_attach_out_of_memory_observer
