#!/usr/bin/env python3
"""peakscope fixture generator: writes PyTorch memory snapshots in the shapes real files have.

Python 3 standard library only. Run `python3 test/gen/generate.py -h`; see test/gen/README.md.
Importable too: `import generate` (with test/gen on sys.path) exposes one function per subcommand:
known(), demo(), variants(), hostile(), truncate(), big(), random_trace(), memo_overwrite(), ranks(),
leaks().
"""

import argparse
import json
import os
import pickle
import sys

sys.dont_write_bytecode = True  # keep __pycache__ out of the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from memgen import knownrun  # noqa: E402


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=1)
        f.write("\n")


def write_pickle(path, obj, protocol=4):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "wb") as f:
        pickle.dump(obj, f, protocol=protocol)


def known(out, layout="cuda-all", paths="linux", moment="step2", protocol=4, truncate_trace=None,
          record_from="start", streams=1, workspace="inactive"):
    """The known-composition run (3 x bf16 Linear(2048, 2048) + AdamW + 512x2048 input) at one moment.
    Writes OUT, OUT.counters.json and OUT.truth.json; returns the truth dict."""
    snap, tally, truth, counters = knownrun.build(layout, paths, moment, truncate_trace, record_from, streams,
                                                  workspace)
    write_pickle(out, snap, protocol)
    truth["protocol"] = protocol
    truth["tally"] = tally
    write_json(out + ".counters.json", counters)
    write_json(out + ".truth.json", truth)
    return truth


def demo(out):
    """The app's demo snapshot: the known run mid-backward, cuda-all stacks, linux paths (OUT only: no
    sidecars, so public/ holds nothing but the pickle)."""
    snap, _tally, truth, _counters = knownrun.build("cuda-all", "linux", "mid_backward")
    write_pickle(out, snap, 4)
    return truth


def truncate(src, n, out):
    """Copy the first n bytes of src to out (a truncated download / interrupted write)."""
    with open(src, "rb") as f:
        data = f.read(n)
    with open(out, "wb") as f:
        f.write(data)
    return out


def variants(outdir):
    """The same small content written every way a reader must handle, plus manifest.json."""
    from memgen import variants as v
    return v.write_all(outdir)


def hostile(outdir):
    """Malicious and broken inputs that a reader must refuse cleanly (never execute, never hang)."""
    from memgen import hostile as h
    return h.write_all(outdir)


def big(out, target_mb, devices=1, seed=1):
    """A large training-like snapshot of about target_mb MB, streamed to disk; returns its counts."""
    from memgen import bigpickle
    return bigpickle.write_big(out, target_mb, devices, seed)


def random_trace(out, seed, events):
    """A random but consistent trace whose final segments equal what the trace leaves."""
    from memgen import workloads
    return workloads.write_random_trace(out, seed, events)


def ranks(outdir, n, outlier=None):
    """N rank files of the known run with uneven batches; the outlier rank holds one extra 64 MiB buffer."""
    from memgen import ranks as rk
    return rk.write_all(outdir, n, outlier)


def leaks(out, leak=None, record_from="start", series=False, steps=8, annotations=True, extra_parameter=False):
    """A run with a planted leak (list, graph, cache) or none: one trace (OUT) or a series of dumps (OUT a folder)."""
    from memgen import leakrun
    if series:
        return leakrun.write_series(out, leak, range(2, steps), steps, extra_parameter)
    return leakrun.write_trace(out, leak, record_from, steps, annotations)


def newest(outdir):
    """What torch 2.10-2.14 adds (host memory, forward stacks, tags, an OOM with device_free) in full.pickle,
    and the newer recording options' shapes, each with OUT.counters.json and OUT.truth.json."""
    from memgen import newest as nw
    os.makedirs(outdir, exist_ok=True)
    files = [("full", nw.full())] + [(k, nw.shape(k)) for k in nw.SHAPES]
    for name, (snap, truth, counters) in files:
        out = os.path.join(outdir, name + ".pickle")
        write_pickle(out, snap, 4)
        truth["protocol"] = 4
        write_json(out + ".counters.json", counters)
        write_json(out + ".truth.json", truth)
    return [name for name, _ in files]


def libraries(outdir):
    """Library call sites (vLLM/SGLang/HF KV caches, Megatron and FSDP fused buffers) in serving.pickle, and a
    hand-written optimizer's traced moments against pre-trace weights and .grad in handopt.pickle, with truth."""
    from memgen import libraries as lib
    os.makedirs(outdir, exist_ok=True)
    runs = {"serving": lib.serving, "handopt": lib.handopt, "handopt-unpaired": lambda: lib.handopt(True)}
    for name, make in runs.items():
        snap, truth = make()
        out = os.path.join(outdir, name + ".pickle")
        write_pickle(out, snap, 4)
        write_json(out + ".truth.json", truth)
    return list(runs)


def pool_ids(src, out, private_every=0):
    """A snapshot with a pool_id in every trace entry, as torch >= 2.10 writes them: a new tuple each time
    (py::make_tuple), so two ints, TUPLE2 and MEMOIZE in every entry; every Nth entry in a private pool
    (1, 5) with --private-every N. Written with Python's pickle; prints the entries."""
    with open(src, "rb") as f:
        snap = pickle.load(f)
    n = 0
    for t in snap["device_traces"]:
        for e in t:
            e["pool_id"] = tuple([1, 5] if private_every and n % private_every == 3 else [0, 0])
            n += 1
    with open(out, "wb") as f:
        pickle.dump(snap, f, protocol=4)
    return {"entries": n}


def memo_overwrite(out):
    """A hand-assembled pickle whose frame memo slot is overwritten by PUT between identical entries."""
    from memgen import handpickle
    with open(out, "wb") as f:
        f.write(handpickle.memo_overwrite())
    return out


def key_overwrite(out):
    """A hand-assembled pickle whose key memo slot ("size") is overwritten by PUT between identical entries."""
    from memgen import handpickle
    with open(out, "wb") as f:
        f.write(handpickle.key_overwrite())
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)

    k = sub.add_parser("known", help=known.__doc__.splitlines()[0])
    k.add_argument("--layout", choices=["cuda-all", "cuda-python", "npu"], default="cuda-all")
    k.add_argument("--paths", choices=["linux", "conda", "venv", "dist", "windows"], default="linux")
    k.add_argument("--moment", choices=list(knownrun.MOMENTS), default="step2")
    k.add_argument("--protocol", type=int, choices=range(0, 6), default=4)
    k.add_argument("--truncate-trace", type=int, default=None, metavar="N",
                   help="keep only the newest N trace entries (the allocator's ring buffer)")
    k.add_argument("--record-from", choices=list(knownrun.RECORD_FROM), default="start",
                   help="when _record_memory_history was called: at the start, right after model.to(), or "
                        "after step 1's opt.step() + synchronize")
    k.add_argument("--streams", type=int, choices=list(knownrun.STREAMS), default=1,
                   help="2: a fresh x each step on a side (copy) stream, record_stream'd onto the main stream")
    k.add_argument("--workspace", choices=list(knownrun.WORKSPACE), default="inactive",
                   help="npu only: whether torch_npu's workspace block is in use at the dump")
    k.add_argument("out")

    d = sub.add_parser("demo", help=demo.__doc__.splitlines()[0])
    d.add_argument("out")

    v = sub.add_parser("variants", help=variants.__doc__.splitlines()[0])
    v.add_argument("outdir")

    h = sub.add_parser("hostile", help=hostile.__doc__.splitlines()[0])
    h.add_argument("outdir")

    t = sub.add_parser("truncate", help=truncate.__doc__.splitlines()[0])
    t.add_argument("src")
    t.add_argument("n", type=int)
    t.add_argument("out")

    b = sub.add_parser("big", help=big.__doc__.splitlines()[0])
    b.add_argument("--target-mb", type=float, required=True)
    b.add_argument("--devices", type=int, default=1)
    b.add_argument("--seed", type=int, default=1)
    b.add_argument("out")

    r = sub.add_parser("random-trace", help=random_trace.__doc__.splitlines()[0])
    r.add_argument("--seed", type=int, required=True)
    r.add_argument("--events", type=int, required=True)
    r.add_argument("out")

    rk = sub.add_parser("ranks", help=ranks.__doc__.splitlines()[0])
    rk.add_argument("--ranks", type=int, required=True, metavar="N")
    rk.add_argument("--outlier", type=int, default=None, metavar="R",
                    help="this rank also keeps a 64 MiB own-code buffer (category input) alive")
    rk.add_argument("outdir")

    lk = sub.add_parser("leaks", help=leaks.__doc__.splitlines()[0])
    lk.add_argument("--leak", choices=["list", "graph", "cache", "none"], default="none")
    lk.add_argument("--record-from", choices=["start", "after-build"], default="start")
    lk.add_argument("--series", action="store_true",
                    help="OUT is a folder: dumps after steps 2..STEPS-1 (peakscope-rank0-stepN.pickle)")
    lk.add_argument("--steps", type=int, default=8)
    lk.add_argument("--no-annotations", action="store_true",
                    help="no external_annotations: steps only from the trace's repetition")
    lk.add_argument("--extra-parameter", action="store_true",
                    help="another model (one more 4 MiB parameter): a different run")
    lk.add_argument("out")

    pr = sub.add_parser("profiler", help="a known run as a torch.profiler trace (or a raw memory timeline); prints its truth")
    pr.add_argument("--rank", type=int, default=0)
    pr.add_argument("--no-stack", action="store_true", help="as recorded without with_stack=True")
    pr.add_argument("--raw", action="store_true", help="write export_memory_timeline's .raw.json.gz rows instead")
    pr.add_argument("out")

    bt = sub.add_parser("big-trace", help="a long run's profiler trace of about N MB (for the benchmarks)")
    bt.add_argument("--target-mb", type=float, required=True)
    bt.add_argument("out")

    gr = sub.add_parser("grow-real", help="a real snapshot's window repeated to about N MB (for the benchmarks)")
    gr.add_argument("--from", dest="src", required=True, help="a real snapshot pickle (../shared/fixtures/real/…)")
    gr.add_argument("--target-mb", type=float, required=True)
    gr.add_argument("--addresses", choices=["banks", "unique"], default="banks",
                    help="repetitions alternate two address banks (as a caching allocator reuses segments), "
                         "or each gets its own")
    gr.add_argument("--host-pins", type=int, default=0,
                    help="also record pinned host memory: each step pins N tensors, the step before's freed")
    gr.add_argument("out")

    nw = sub.add_parser("newest", help=newest.__doc__.splitlines()[0])
    nw.add_argument("outdir")

    lb = sub.add_parser("libraries", help=libraries.__doc__.splitlines()[0])
    lb.add_argument("outdir")
    pi = sub.add_parser("pool-ids", help=pool_ids.__doc__.splitlines()[0])
    pi.add_argument("src")
    pi.add_argument("out")
    pi.add_argument("--private-every", type=int, default=0)

    mo = sub.add_parser("memo-overwrite", help=memo_overwrite.__doc__.splitlines()[0])
    mo.add_argument("out")
    ko = sub.add_parser("key-overwrite", help=key_overwrite.__doc__.splitlines()[0])
    ko.add_argument("out")

    a = p.parse_args(argv)
    if a.cmd == "known":
        if a.workspace == "active" and a.layout != "npu":
            p.error("--workspace active needs --layout npu")
        known(a.out, a.layout, a.paths, a.moment, a.protocol, a.truncate_trace, a.record_from, a.streams,
              a.workspace)
    elif a.cmd == "pool-ids":
        print(json.dumps(pool_ids(a.src, a.out, a.private_every)))
    elif a.cmd == "demo":
        demo(a.out)
    elif a.cmd == "variants":
        variants(a.outdir)
    elif a.cmd == "hostile":
        hostile(a.outdir)
    elif a.cmd == "truncate":
        truncate(a.src, a.n, a.out)
    elif a.cmd == "big":
        print(json.dumps(big(a.out, a.target_mb, a.devices, a.seed)))
    elif a.cmd == "profiler":
        from memgen import profiler
        print(json.dumps(profiler.profiler_run(a.out, a.rank, not a.no_stack, "raw" if a.raw else "trace")))
    elif a.cmd == "big-trace":
        from memgen import profiler
        print(json.dumps(profiler.big_trace(a.out, a.target_mb)))
    elif a.cmd == "grow-real":
        from memgen import growreal
        print(json.dumps(growreal.write_grown(a.src, a.out, a.target_mb, a.addresses, a.host_pins)))

    elif a.cmd == "newest":
        newest(a.outdir)
    elif a.cmd == "libraries":
        print(json.dumps(libraries(a.outdir)))
    elif a.cmd == "memo-overwrite":
        memo_overwrite(a.out)
    elif a.cmd == "key-overwrite":
        key_overwrite(a.out)
    elif a.cmd == "ranks":
        if a.ranks < 1:
            p.error("--ranks must be at least 1")
        if a.outlier is not None and not 0 <= a.outlier < a.ranks:
            p.error(f"--outlier {a.outlier} is not one of the ranks 0..{a.ranks - 1}")
        ranks(a.outdir, a.ranks, a.outlier)
    elif a.cmd == "leaks":
        if a.series and a.record_from != "start":
            p.error("--series records from the start")
        leaks(a.out, None if a.leak == "none" else a.leak, a.record_from, a.series, a.steps, not a.no_annotations,
              a.extra_parameter)
    elif a.cmd == "random-trace":
        random_trace(a.out, a.seed, a.events)
    return 0


if __name__ == "__main__":
    sys.exit(main())
