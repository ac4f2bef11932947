"""`leaks`: the known run for more steps, with a planted leak or none, as one trace and as a series of dumps.

The known run (memgen/knownrun.py: 3 x Linear(2048, 2048) bf16, AdamW foreach, cuda-all stacks, linux paths)
runs STEPS steps. Every run, leaking or steady, also has the one-off state a real run has:
- step 1: the gradients (AccumulateGrad) and AdamW's exp_avg / exp_avg_sq (adam.py _init_group): 72 MiB;
- step 3 (after its opt.step()): a lazily made 4 MiB buffer (train.py line 64, `buf = torch.empty(...)` on
  first use), kept.
Those grow once and stay flat: warm-up, never a leak.

The planted leaks (`leak`), each from step 1 on:
- "list": `history.append(out.detach().clone())` after opt.step() (train.py line 62): a 2 MiB bf16 tensor per
  step, never freed. Category input (peakscope's own-code rule: an own-code allocation outside forward,
  backward and step).
- "graph": `total_loss += loss` keeps each step's graph and its saved tensors alive: h1, h2 (2 MiB each,
  the Linear forward, train.py:59: activations) and the .float() output (4 MiB, train.py:59, made by the
  user's line between forward and backward and outliving the backward: category other, peakscope's
  loss-computation rule) are never released by the backward: 8 MiB per step, two (site, category) leaks.
- "cache": a cache that never evicts (train.py line 63, `cache[key] = torch.empty(...)`): 1 MiB per step
  (exactly the default threshold), category input.
- None: the steady run (the same run without the leak).
`annotations=False` leaves out the external_annotations (steps only from the trace's repetition);
`extra_parameter=True` is another model (one more 4 MiB parameter): a different run, for the refusals.

`record_from`: "start" or "after-build" (recording begins right after model.to(): the parameters are not in
the trace). The trace file is dumped after the last step; the series are dumps after each of `dump_steps`
(named peakscope-rank0-step{N}.pickle, as python/peakscope_hook.py names them, with its counters sidecar).

Truth (from the simulation's bookkeeping, never from the files): per step, the live bytes per (site,
category) at the end of the step (right after opt.step()'s last free: where the Optimizer.step END annotation
is) and at each dump; the trace event of each step's end; the planted leak's site, category and bytes per
step (`leakBytes`: per leak site, in the order of `leakSites`).
"""

import json
import os
import pickle

from . import knownrun
from .layout import render
from .stacks import NATIVE

MiB = 1 << 20
STEPS = 8
LEAKS = ("list", "graph", "cache")
LIST_LINE, CACHE_LINE, LAZY_LINE = 62, 63, 64
CACHE_BYTES = 1 * MiB
LAZY_BYTES = 4 * MiB
GRAPH_KEPT = ("h1", "h2", "f")  # the saved activations the backward would have released


class LeakRun(knownrun.KnownRun):
    def __init__(self, leak=None, record_from="start", steps=STEPS, dump_steps=(), on_dump=None, annotations=True,
                 extra_parameter=False):
        if leak is not None and leak not in LEAKS:
            raise ValueError(f"leak {leak!r}: one of {', '.join(LEAKS)}")
        super().__init__("cuda-all", "linux", "step2", record_from)
        self.leak = leak
        self.steps = steps
        self.dump_steps = set(dump_steps)
        self.on_dump = on_dump
        self.kept = []          # leaked tensors (the list, the cache, the graph's activations)
        self.step_end = []      # per step: {step, event (last trace event of the step, -1: none), live}
        self.in_backward = False
        self.annotations_on = annotations
        self.extra_parameter = extra_parameter

    def annotate(self, stage, name):
        if self.annotations_on:
            super().annotate(stage, name)

    def setup(self):
        super().setup()
        if self.extra_parameter:  # another model: one more parameter (a 4 MiB embedding), so another run
            self.m("E", 4 * MiB, self.ctx_param(), "parameters", "parameter")
            self.tick(150)

    def own_ctx(self, line):
        native = NATIVE["malloc"] + NATIVE["empty"] + [
            ("at::native::empty_cuda(c10::ArrayRef<long>, std::optional<c10::ScalarType>, "
             "std::optional<c10::Layout>, std::optional<c10::Device>, std::optional<bool>, "
             "std::optional<c10::MemoryFormat>)", "??"),
            ("torch::autograd::THPVariable_empty(_object*, _object*, _object*)", "python_torch_functions_0.cpp")]
        return self.S.ctx(native, self.py_main(line))

    def keep(self, name, nbytes, line, category, kind):
        self.m(name, nbytes, self.own_ctx(line), category, kind)
        self.kept.append(self.t.pop(name))
        self.tick(5)

    def f(self, name, ctx):
        # The graph leak: the backward does not release the saved activations (the graph is referenced).
        if self.leak == "graph" and self.in_backward and name in GRAPH_KEPT:
            a = self.t.pop(name)
            if name == "f":
                # The .float() output is made by the user's line between the forward and the backward; once it
                # outlives the backward it is the loss computation's (peakscope's rule 17): category other.
                a.category, a.kind = "other", "loss_kept"
            self.kept.append(a)
            return
        super().f(name, ctx)

    def live_by_site(self):
        """(site, category) -> rounded bytes of every active_allocated block, from the bookkeeping."""
        out = {}
        for a in self.A.live.values():
            if a.block.allocated:
                k = (a.site, a.category)
                out[k] = out.get(k, 0) + a.block.size
        return out

    def run(self):
        self.setup()
        for step in range(1, self.steps + 1):
            self.train_step(step)
        return self

    def train_step(self, step):
        self.annotate("START", "Optimizer.zero_grad#AdamW.zero_grad")
        self.tick(40)
        self.annotate("END", "Optimizer.zero_grad#AdamW.zero_grad")
        self.forward(step)
        self.in_backward = True
        self.backward(step)
        self.in_backward = False
        self.optimizer_step(step)  # ends with the Optimizer.step END annotation
        self.step_end.append({"step": step, "event": len(self.A.trace) - 1, "live": self.live_by_site(),
                              "allocated": self.A.allocated_bytes()})
        self.tick(10)
        if step == 3:
            self.keep(f"lazy{step}", LAZY_BYTES, LAZY_LINE, "input", "lazy_buffer")
        if self.leak == "list":
            self.keep(f"history{step}", self.act_bytes, LIST_LINE, "input", "kept_list")
        elif self.leak == "cache":
            self.keep(f"cache{step}", CACHE_BYTES, CACHE_LINE, "input", "cache")
        self.tick(900)  # torch.cuda.synchronize()
        if step in self.dump_steps:
            self.on_dump(self, step)
            self.A.snapshot_marker()
            self.tick(25000)


def leak_sites(run):
    """(site, category) of each planted leak, from the contexts the run used."""
    if run.leak is None:
        return []
    line = {"list": LIST_LINE, "cache": CACHE_LINE, "graph": 59}[run.leak]
    site = run.S.ctx([], run.py_main(line)).site
    cats = ["activations", "other"] if run.leak == "graph" else ["input"]
    return [{"site": site, "category": c} for c in cats]


def live_rows(live):
    return sorted(({"site": s, "category": c, "bytes": b} for (s, c), b in live.items() if b),
                  key=lambda r: (-r["bytes"], r["site"] or "", r["category"]))


def bytes_of(live, sites):
    return [live.get((s["site"], s["category"]), 0) for s in sites]


def write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=1)
        f.write("\n")


def write_trace(out, leak=None, record_from="start", steps=STEPS, annotations=True):
    """The whole run in one file, dumped after the last step. Writes OUT, OUT.counters.json, OUT.truth.json.
    annotations=False: no external_annotations (the steps only from the trace's own repetition)."""
    run = LeakRun(leak, record_from, steps, annotations=annotations).run()
    snap, _tally = render([run.A], "cuda", annotations=run.annotations)
    with open(out, "wb") as f:
        pickle.dump(snap, f, protocol=4)
    write_json(out + ".counters.json", knownrun.make_counters(run, "end"))
    site = leak_sites(run)
    truth = {
        "generator": "test/gen/generate.py leaks",
        "mode": "trace",
        "leak": leak,
        "recordFrom": record_from,
        "annotations": annotations,
        "leakSites": site,
        "steps": [{"step": e["step"], "endEvent": e["event"], "allocatedBytes": e["allocated"],
                   "leakBytes": bytes_of(e["live"], site), "live": live_rows(e["live"])}
                  for e in run.step_end],
        "maxMemoryAllocated": run.A.stats["allocated_bytes"]["all"].peak,
    }
    write_json(out + ".truth.json", truth)
    return truth


def write_series(outdir, leak=None, dump_steps=range(2, 8), steps=STEPS, extra_parameter=False):
    """Dumps after each of dump_steps, as the capture helper names them; OUTDIR/series.truth.json.
    extra_parameter: another model (one more 4 MiB parameter): a different run."""
    os.makedirs(outdir, exist_ok=True)
    dumps = []

    def on_dump(run, step):
        snap, _tally = render([run.A], "cuda", annotations=run.annotations)
        name = f"peakscope-rank0-step{step}.pickle"
        path = os.path.join(outdir, name)
        with open(path, "wb") as f:
            pickle.dump(snap, f, protocol=4)
        write_json(path + ".counters.json", knownrun.make_counters(run, f"step{step}"))
        live = run.live_by_site()
        dumps.append({"file": name, "step": step, "allocatedBytes": run.A.allocated_bytes(),
                      "leakBytes": None, "live": live})

    run = LeakRun(leak, "start", steps, dump_steps, on_dump, extra_parameter=extra_parameter).run()
    site = leak_sites(run)
    for d in dumps:
        d["leakBytes"] = bytes_of(d["live"], site)
        d["live"] = live_rows(d["live"])
    truth = {"generator": "test/gen/generate.py leaks --series", "mode": "series", "leak": leak,
             "leakSites": site, "dumps": dumps}
    write_json(os.path.join(outdir, "series.truth.json"), truth)
    return truth
