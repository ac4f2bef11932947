"""`ranks`: one known run per rank of a data-parallel job, with uneven batches and an optional outlier rank.

Rank r runs the known run (memgen/knownrun.py, cuda-all stacks, linux paths, dumped after step 2) with its
own input batch: BATCH(r) = 448 + 64 * ((3 * r) % 4) rows (448, 640, 576, 512, 448, ...; the known run's
512 x 2048 bf16 input is BATCH 512), so x, the activations and the activation gradients differ per rank
(x = BATCH * 4096 bytes; every batch here keeps them in the large pool). The outlier rank also allocates,
right after x, a 64 MiB buffer from its own code (train.py line 46, `cache = torch.empty(...)`: a device-side
copy of data kept for the whole run) that it never frees: category `input` (an own-code allocation outside
forward / backward / step, kind `input_cache`), alive at the peak and at the dump.

Everything in the truth comes from the simulation's bookkeeping (knownrun.make_truth), never from the files.
"""

import json
import os
import pickle

from . import knownrun
from .layout import render
from .stacks import NATIVE

MiB = 1 << 20
EXTRA_BYTES = 64 * MiB
EXTRA_LINE = 46
OUTLIER_CATEGORY = "input"


def batch_of(rank):
    return 448 + 64 * ((3 * rank) % 4)


class RankRun(knownrun.KnownRun):
    def __init__(self, rank, batch, extra):
        super().__init__("cuda-all", "linux", "step2")
        self.rank = rank
        self.batch = batch
        self.extra = extra
        self.act_bytes = batch * 2048 * 2
        self.f32_bytes = batch * 2048 * 4

    def ctx_extra(self):
        native = NATIVE["malloc"] + NATIVE["empty"] + [
            ("at::native::empty_cuda(c10::ArrayRef<long>, std::optional<c10::ScalarType>, "
             "std::optional<c10::Layout>, std::optional<c10::Device>, std::optional<bool>, "
             "std::optional<c10::MemoryFormat>)", "??"),
            ("at::_ops::empty_memory_format::call(c10::ArrayRef<c10::SymInt>, std::optional<c10::ScalarType>, "
             "std::optional<c10::Layout>, std::optional<c10::Device>, std::optional<bool>, "
             "std::optional<c10::MemoryFormat>)", "??"),
            ("torch::autograd::THPVariable_empty(_object*, _object*, _object*)", "python_torch_functions_0.cpp")]
        return self.S.ctx(native, self.py_main(EXTRA_LINE))

    def setup(self):
        super().setup()
        if self.extra:
            self.m("cache", EXTRA_BYTES, self.ctx_extra(), OUTLIER_CATEGORY, "input_cache")
            self.tick(50)


def write_all(outdir, ranks, outlier=None):
    """Writes OUTDIR/snapshot_rank{r}.pickle (+ .counters.json with rank / world_size, + .truth.json) for
    r in 0..ranks-1 and OUTDIR/ranks.truth.json; returns the latter."""
    if ranks < 1:
        raise ValueError("--ranks must be at least 1")
    if outlier is not None and not 0 <= outlier < ranks:
        raise ValueError(f"--outlier {outlier} is not a rank of 0..{ranks - 1}")
    os.makedirs(outdir, exist_ok=True)
    files = []
    for r in range(ranks):
        run = RankRun(r, batch_of(r), r == outlier).run()
        snap, tally = render([run.A], "cuda", annotations=run.annotations)
        truth = knownrun.make_truth(run, tally, None)
        counters = knownrun.make_counters(run, "step2")
        counters["rank"] = r
        counters["world_size"] = ranks
        truth["generator"] = "test/gen/generate.py ranks"
        truth.update({"rank": r, "worldSize": ranks, "batch": run.batch,
                      "extraBytes": EXTRA_BYTES if run.extra else 0, "tally": tally})
        name = f"snapshot_rank{r}.pickle"
        path = os.path.join(outdir, name)
        with open(path, "wb") as f:
            pickle.dump(snap, f, protocol=4)
        for suffix, obj in ((".counters.json", counters), (".truth.json", truth)):
            with open(path + suffix, "w") as f:
                json.dump(obj, f, indent=1)
                f.write("\n")
        files.append({"file": name, "rank": r, "batch": run.batch, "peakBytes": truth["peak"]["allocatedBytes"],
                      "maxMemoryAllocated": truth["maxMemoryAllocated"],
                      "peakCategories": truth["peak"]["categories"],
                      "snapshotCategories": truth["snapshot"]["categories"],
                      "allocatedBytes": truth["snapshot"]["allocatedBytes"],
                      "reservedBytes": truth["snapshot"]["reservedBytes"]})
    peaks = sorted(f["peakBytes"] for f in files)
    mid = len(peaks) // 2
    median = peaks[mid] if len(peaks) % 2 else (peaks[mid - 1] + peaks[mid]) / 2
    summary = {
        "generator": "test/gen/generate.py ranks",
        "ranks": ranks,
        "outlier": outlier,
        "outlierCategory": OUTLIER_CATEGORY if outlier is not None else None,
        "extraBytes": EXTRA_BYTES if outlier is not None else 0,
        "medianPeakBytes": median,
        "outlierAboveMedianBytes": files[outlier]["peakBytes"] - median if outlier is not None else None,
        "files": files,
    }
    with open(os.path.join(outdir, "ranks.truth.json"), "w") as f:
        json.dump(summary, f, indent=1)
        f.write("\n")
    return summary
