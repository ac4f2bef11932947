"""`variants`: the same small content written every way a reader must handle, and other real-world shapes.

Each file's expected counts in manifest.json come from the simulation's bookkeeping (Allocator.tally and the
recorded trace), never from reading the written file back. The schema of each manifest entry is
py_inspect.py's output (with --blocks) plus "file" and "what".
"""

import copy
import gzip
import io
import json
import os
import pickle
import random
import zipfile

from . import knownrun
from .allocator import Allocator, AddressSpace, Clock, GiB, OutOfMemory
from .layout import CUDA_ALLOCATOR_SETTINGS, render, render_segment_list
from .stacks import Stacks
from .workloads import RandomWorkload, POINTER_STREAMS

MiB = 1 << 20


def entry_of(tally, file, what, fmt, proto):
    e = {"file": file, "what": what, "format": fmt, "pickleProtocol": proto}
    for k in ("segments", "blocks", "traceEntries", "actions", "devices", "totals"):
        e[k] = copy.deepcopy(tally[k])
    return e


def base():
    """The shared small content: the known run after step 2, cuda-all stacks, linux paths."""
    run = knownrun.simulate("cuda-all", "linux", "step2")
    snap, tally = render([run.A], "cuda", annotations=run.annotations)
    return run, snap, tally


def dumps(obj, protocol=4):
    return pickle.dumps(obj, protocol=protocol)


def write(outdir, name, data):
    with open(os.path.join(outdir, name), "wb") as f:
        f.write(data)


def random_snapshot(seed, *, devices=1, expandable=False, streams=(0,), pools=((0, 0),),
                    capacity=80 * GiB, p_empty=0.002, layout="cuda-python"):
    rng = random.Random(seed)
    S = Stacks(layout, "conda", "train.py")
    clock = Clock(1763324225770003 + seed)
    As = [Allocator(d, "cuda", clock, capacity, AddressSpace(0x7F3A2C000000 + d * (1 << 40)), expandable)
          for d in range(devices)]
    W = RandomWorkload(As, rng, S, streams=streams, pools=pools, p_empty_cache=p_empty)
    return As, W


def write_all(outdir):
    os.makedirs(outdir, exist_ok=True)
    manifest = []
    run, snap, tally = base()
    p4 = dumps(snap, 4)

    # the same content, every container and protocol
    for proto in range(6):
        name = f"proto{proto}.pickle"
        write(outdir, name, dumps(snap, proto))
        manifest.append(entry_of(tally, name, f"base content, pickle protocol {proto}", "pickle",
                                 proto if proto >= 2 else None))
    write(outdir, "gzip.pickle.gz", gzip.compress(p4, mtime=0))
    manifest.append(entry_of(tally, "gzip.pickle.gz", "base content, gzip'd protocol-4 pickle", "pickle+gzip", 4))
    zbuf = io.BytesIO()
    with zipfile.ZipFile(zbuf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(zipfile.ZipInfo("snapshot.pickle", (2024, 1, 1, 0, 0, 0)), p4)
    write(outdir, "zip.zip", zbuf.getvalue())
    manifest.append(entry_of(tally, "zip.zip", "base content in a zip (one member snapshot.pickle)", "zip", 4))
    write(outdir, "json.json", json.dumps(snap).encode())
    manifest.append(entry_of(tally, "json.json", "base content as JSON (tuples became lists)", "json", None))
    write(outdir, "trailing-bytes.pickle", p4 + random.Random(100).randbytes(100))
    manifest.append(entry_of(tally, "trailing-bytes.pickle", "base content + 100 junk bytes after STOP",
                             "pickle", 4))

    # a bare list of segments (torch.cuda.memory_snapshot())
    segs, st = render_segment_list([run.A])
    write(outdir, "segment-list.pickle", dumps(segs))
    manifest.append(entry_of(st, "segment-list.pickle", "bare list of segments, no traces", "segment-list", 4))

    # torch 2.0: blocks carry history, no block address; python-only stacks
    run20 = knownrun.simulate("cuda-python", "linux", "step2")
    s20, t20 = render([run20.A], "torch20")
    write(outdir, "torch20-history.pickle", dumps(s20))
    manifest.append(entry_of(t20, "torch20-history.pickle",
                             "torch 2.0 layout: block history [{addr, real_size, frames}], no block address",
                             "pickle", 4))

    # an unknown action in the trace
    pos = len(snap["device_traces"][0]) // 2
    e = {"action": "future_thing", "addr": snap["device_traces"][0][pos]["addr"], "size": 4096, "stream": 0,
         "time_us": snap["device_traces"][0][pos]["time_us"], "compile_context": "N/A"}
    su, tu = render([run.A], "cuda", annotations=run.annotations, extra_entries={0: [(pos, e)]})
    write(outdir, "unknown-action.pickle", dumps(su))
    manifest.append(entry_of(tu, "unknown-action.pickle", "an entry with action 'future_thing'", "pickle", 4))

    # an int > 2**53 in allocator_settings (sys.maxsize, the default max_entries)
    settings = dict(CUDA_ALLOCATOR_SETTINGS)
    settings["trace_alloc_max_entries"] = 9223372036854775807
    settings["trace_alloc_overflowed"] = False
    sb, tb = render([run.A], "cuda", annotations=run.annotations, settings=settings)
    write(outdir, "bigint.pickle", dumps(sb))
    manifest.append(entry_of(tb, "bigint.pickle", "allocator_settings.trace_alloc_max_entries = 2**63-1", "pickle", 4))

    # torch_npu
    sn, tn, _truth, _c = knownrun.build("npu", "linux", "step2")
    write(outdir, "npu.pickle", dumps(sn))
    manifest.append(entry_of(tn, "npu.pickle", "torch_npu layout (known run step2): workspace_snapshot entries "
                             "prepended, no time_us, only segments + device_traces", "pickle", 4))

    # OOM
    As, W = random_snapshot(11, capacity=512 * MiB)
    try:
        while True:
            W.step()
    except OutOfMemory:
        pass
    so, to = render(As, "cuda")
    write(outdir, "oom.pickle", dumps(so))
    manifest.append(entry_of(to, "oom.pickle", "an oom entry (device_free, no addr) after cached segments were "
                             "released (segment_free)", "pickle", 4))

    # two devices, pointer-like streams, deferred frees
    As, W = random_snapshot(12, devices=2, streams=[0] + POINTER_STREAMS)
    W.run(700)
    sm, tm = render(As, "cuda")
    write(outdir, "multi-device.pickle", dumps(sm))
    manifest.append(entry_of(tm, "multi-device.pickle", "2 devices, streams 0 and pointer-like ids, "
                             "free_requested/free_completed gaps", "pickle", 4))

    # expandable segments
    As, W = random_snapshot(13, expandable=True, p_empty=0.02)
    W.run(700)
    es = dict(CUDA_ALLOCATOR_SETTINGS)
    es["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"
    es["expandable_segments"] = True
    se, te = render(As, "cuda", settings=es)
    write(outdir, "expandable.pickle", dumps(se))
    manifest.append(entry_of(te, "expandable.pickle", "is_expandable segments grown by segment_map, shrunk by "
                             "segment_unmap", "pickle", 4))

    # private pools (CUDA graphs) with blocks pending free
    As, W = random_snapshot(14, streams=(0, POINTER_STREAMS[1]), pools=((0, 0), (0, 1)))
    W.run(600)
    A = As[0]
    for a in [a for a in W.live[id(A)] if a.stream != 0][:3]:
        A.free(a, W.ctx("free"), deferred=True)
    sp, tp = render(As, "cuda")
    write(outdir, "private-pools.pickle", dumps(sp))
    manifest.append(entry_of(tp, "private-pools.pickle", "segment_pool_id (0, 1) segments and "
                             "active_pending_free blocks", "pickle", 4))

    with open(os.path.join(outdir, "manifest.json"), "w") as f:
        json.dump({"generator": "test/gen/generate.py variants", "files": manifest}, f, indent=1)
        f.write("\n")
    return manifest
