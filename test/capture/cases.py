"""Runs one scenario of python/peakscope_hook.py against the fake torch (test/capture/fake) and prints, as
JSON, what the fake recorded: the calls the hook made, the counters and snapshots the fake handed out,
the warnings raised and the paths the hook returned. test/capture-hook.test.ts checks the files on disk
against this record (and against Python's unpickler and peakscope's reader).

    PYTHONPATH=test/capture/fake python3 test/capture/cases.py CASE OUTDIR

The hook is imported by path, as a user who copied the file would.
"""

import importlib.util
import json
import os
import sys
import warnings

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
HOOK = os.path.join(HERE, "..", "..", "python", "peakscope_hook.py")

F = torch._fake
TRAIN = "/home/u/proj/train.py"


def load_hook():
    spec = importlib.util.spec_from_file_location("peakscope_hook", HOOK)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def counters(d=0):
    """What the fake's bookkeeping says right now (the independent expectation for a sidecar)."""
    return {
        "memory_allocated": F.allocated(d),
        "memory_reserved": F.reserved(d),
        "max_memory_allocated": F.peak_allocated[d],
        "max_memory_reserved": F.peak_reserved[d],
        "memory_stats": F.stats(d),
        "device_total_bytes": torch.DEVICE_TOTAL,
    }


def model(ms):
    """Weights, grads and one step's activations: a few tensors with the stacks a training script has."""
    w = [F.alloc(4 << 20, ((TRAIN, 43, "main"),)) for _ in range(3)]
    return w


def case_basic(ms, out, rec):
    rec["start"] = ms.start(max_entries=1000)
    w = model(ms)
    x = F.alloc(2 << 20, ((TRAIN, 45, "main"),))
    tmp = F.alloc(1 << 20, ((TRAIN, 59, "main"),))
    F.free(tmp)
    rec["expected"] = counters()
    rec["paths"] = [ms.dump("step2", directory=out)]
    rec["alive"] = [t.nbytes for t in w + [x]]


def case_late(ms, out, rec):
    w = model(ms)  # before recording: these blocks will have no stack
    rec["weights_bytes"] = sum(t.nbytes for t in w)
    rec["allocated_before"] = F.allocated(0)
    ms.start(stacks="all")
    ms.start(stacks="all")  # a second start: the warning is not repeated
    F.alloc(2 << 20, ((TRAIN, 45, "main"),))
    rec["expected"] = counters()
    rec["paths"] = [ms.dump("late", directory=out)]


def case_rank(ms, out, rec):
    F.rank, F.world = int(os.environ["CASE_RANK"]), int(os.environ["CASE_WORLD"])
    F.current = F.rank % F.devices
    ms.start()
    F.alloc((F.rank + 1) << 20, ((TRAIN, 43, "main"),))
    rec["expected"] = counters(F.current)
    rec["device"] = F.current
    rec["paths"] = [ms.dump("step3", directory=out), ms.dump("step3", directory=out)]


def case_oom(ms, out, rec):
    os.environ["PEAKSCOPE_DIR"] = out
    ms.start()
    ms.dump_on_oom()
    ms.dump_on_oom()  # installing twice attaches one observer
    model(ms)
    rec["expected"] = counters()
    try:
        F.oom(64 << 20, device_free=3 << 20)
    except torch.OutOfMemoryError as e:
        rec["raised"] = str(e)
    try:
        F.oom(64 << 20)  # a second OOM: once=True does not dump again
    except torch.OutOfMemoryError:
        pass
    rec["paths"] = sorted(os.path.join(out, n) for n in os.listdir(out) if n.endswith(".pickle"))


def case_backward(ms, out, rec):
    os.environ["PEAKSCOPE_DIR"] = out
    ms.start()
    model(ms)
    acts = [F.alloc(3 << 20, ((TRAIN, 59, "forward"),)) for _ in range(2)]
    h = acts[0].requires_grad_()
    handle = ms.dump_in_backward(h, "mid_backward")
    rec["handle"] = type(handle).__name__
    rec["expected"] = counters()
    rec["activations"] = [a.addr for a in acts]
    F.backward([acts[1], acts[0]])  # the hook fires mid-backward, activations alive
    for a in acts:
        F.free(a)
    F.backward([acts[0]])  # a second backward does not dump again
    try:
        ms.dump_in_backward(F.alloc(512), "x")
    except ValueError as e:
        rec["no_grad_error"] = str(e)
    rec["paths"] = sorted(os.path.join(out, n) for n in os.listdir(out) if n.endswith(".pickle"))


def case_steps(ms, out, rec):
    os.environ["PEAKSCOPE_DIR"] = out
    os.environ["PEAKSCOPE_STEPS"] = "2,4-5"
    ms.start()
    model(ms)
    returned = []
    rec["expected_by_step"] = {}
    for n in range(1, 7):
        x = F.alloc(n << 20, ((TRAIN, 45, "main"),))
        rec["expected_by_step"][n] = counters()
        returned.append(ms.step())
        F.free(x)
    rec["returned"] = returned
    rec["paths"] = sorted(os.path.join(out, n) for n in os.listdir(out) if n.endswith(".pickle"))


def case_npu(ms, out, rec):
    rec["start"] = ms.start(max_entries=500)
    ms.dump_on_oom()
    model(ms)
    rec["expected"] = counters()
    rec["paths"] = [ms.dump("npu", directory=out)]


def case_legacy(ms, out, rec):
    ms.start(max_entries=777)
    model(ms)
    rec["expected"] = counters()
    rec["paths"] = [ms.dump("legacy", directory=out)]


def case_ring(ms, out, rec):
    ms.start(max_entries=8)
    for _ in range(6):
        F.free(F.alloc(1 << 20))
    rec["paths"] = [ms.dump("ring", directory=out)]
    rec["expected"] = counters()


def case_bad_args(ms, out, rec):
    errs = []
    for kw in ({"stacks": "cpp"}, {"max_entries": 0}, {"max_entries": 1.5}):
        try:
            ms.start(**kw)
        except ValueError as e:
            errs.append(str(e))
    os.environ["PEAKSCOPE_STEPS"] = "3,x"
    try:
        ms.step()
    except ValueError as e:
        errs.append(str(e))
    rec["errors"] = errs
    rec["paths"] = []


def case_no_recording(ms, out, rec):
    model(ms)
    rec["paths"] = [ms.dump("plain", directory=out), ms.dump("plain", directory=out)]
    rec["expected"] = counters()


def case_no_device(ms, out, rec):
    try:
        ms.start()
    except RuntimeError as e:
        rec["error"] = str(e)
    rec["paths"] = []


def main():
    case, out = sys.argv[1], sys.argv[2]
    rec = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ms = load_hook()
        globals()["case_" + case](ms, out, rec)
    rec["warnings"] = [
        {"category": w.category.__name__, "message": str(w.message), "file": os.path.basename(w.filename)}
        for w in caught
    ]
    rec["calls"] = F.calls
    rec["snapshots"] = F.snapshots
    json.dump(rec, sys.stdout)


if __name__ == "__main__":
    main()
