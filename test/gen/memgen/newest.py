"""What PyTorch 2.10-2.14 adds to a snapshot, written over the known run (see ../README.md "newest").

The known run (memgen/knownrun.py) is simulated as it is; this module keeps, beside the simulation, what
the newest torch would stamp on each recorded event, and renders it:

- user_metadata (`torch.cuda.memory._set_memory_metadata({"phase": ..., "step": N})`, a dict since 2.14,
  stored as compact JSON): "fwd" during each forward, "opt" during each optimizer step, nothing else. It is
  thread-local: the autograd engine's thread never carries it, and the main thread sets it back to "" before
  backward(), so backward entries carry none;
- forward_frames (anomaly mode on during the forward): every entry recorded while a backward node runs
  carries the forward stack that made the node (traceback.format_stack() strings, OUTERMOST first, as
  anomaly mode stores them); the model is the user's own `model.py`, one line per layer (31, 32, 33) over
  torch's linear.py; the loss's nodes (Mean/Pow/ToCopy backward) point at train.py:59. Blocks allocated
  during backward carry the same forward_frames;
- annotate (`_annotate_tensor(x, "input batch (pinned copy)")`): one entry right after x is allocated;
- pool_id on every entry (a fresh (0, 0) tuple), internal_metadata on the snapshot markers only;
- an `oom` entry at the end: the program asks for 80 GiB while NCCL, the CUDA context and another process
  hold OUTSIDE_BYTES outside the caching allocator: device_free = total - reserved - OUTSIDE_BYTES;
  the counters sidecar carries `device_total_bytes`;
- pinned host memory (record_pinned_host_memory=True): a data loader's pinned batches and an offload
  buffer, simulated by HostAllocator below (CachingHostAllocator: power-of-two blocks, one segment each,
  reuse by size, segment_free on empty_cache);
- the six top-level keys and 2.14's allocator_settings.

Shapes (each its own file): skip_actions (no free_requested, segment_alloc, segment_free),
include_traces=False (empty device_traces and external_annotations), no `frames` key where no stack was
captured (cuda-python: the engine's entries), a second device listed in device_traces with no segments.
"""

import json

from .allocator import GiB
from .knownrun import KnownRun, make_counters, make_truth
from .layout import CUDA_ALLOCATOR_SETTINGS, render

MiB = 1 << 20
OUTSIDE_BYTES = 3 * GiB + 512 * MiB  # what NCCL, the CUDA context and another process hold at the OOM
DEVICE_TOTAL = 80 * GiB
OOM_REQUEST = 80 * GiB
MODEL_FILE = "model.py"
LAYER_LINES = (31, 32, 33)
HOST_BASE = 0x7F5E40000000
ANNOTATION = "input batch (pinned copy)"
SETTINGS_214 = dict(CUDA_ALLOCATOR_SETTINGS, graph_capture_record_stream_reuse=False, max_round_threshold=0,
                    max_cached_size=0)


def frame_line(path, line, func, code):
    return f'  File "{path}", line {line}, in {func}\n    {code}\n'


class NewestRun(KnownRun):
    """The known run, remembering per recorded event the metadata and forward stack the newest torch adds."""

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.meta = ""          # the main thread's current user_metadata
        self.fwd = None         # forward_frames of the backward node running now (None outside backward)
        self.extra = []         # per recorded event: (user_metadata, forward_frames or None)
        self.alloc_extra = {}   # Alloc uid -> (user_metadata, forward_frames or None) of its alloc
        self.fwd_series = []    # per recorded event: {forward site: rounded bytes live}
        self._fwd_live = {}
        self.annotate_after = None  # index in A.trace after which the annotate entry goes
        self.step = 0

    def _observe(self, rec, block):
        super()._observe(rec, block)
        a = block.alloc if block is not None else None
        engine = self.fwd is not None
        meta = "" if engine else self.meta
        if rec.action == "alloc" and a is not None:
            self.alloc_extra[a.uid] = (meta, self.fwd)
        if rec.action in ("alloc", "free_requested") and a is not None:
            fwd = self.alloc_extra.get(a.uid, ("", None))[1]
            if fwd is not None:
                site = fwd[1]
                sign = 1 if rec.action == "alloc" else -1
                self._fwd_live[site] = self._fwd_live.get(site, 0) + sign * block.size
        if self.A.record_history:
            self.extra.append((meta, None if self.fwd is None else self.fwd[0]))
            self.fwd_series.append({k: v for k, v in self._fwd_live.items() if v})

    def set_meta(self, phase):
        self.meta = "" if phase is None else json.dumps({"phase": phase, "step": self.step}, separators=(",", ":"))

    def forward_stack(self, layer):
        """(traceback strings outermost first, the innermost own-code frame 'path:line:forward')."""
        S = self.S
        top = [frame_line(S.user_path(), 80, "<module>", "main()"),
               frame_line(S.user_path(), 59, "main", "loss = model(x).float().pow(2).mean()")]
        if layer is None:
            return top, f"{S.user_path()}:59:main"
        mod = S.torch_path("nn/modules/module.py")
        line = LAYER_LINES[layer]
        own = [frame_line(mod, 1773, "_call_impl", "return forward_call(*args, **kwargs)"),
               frame_line(S.user_path(MODEL_FILE), line, "forward", f"h = self.l{layer + 1}(h)"),
               frame_line(mod, 1773, "_call_impl", "return forward_call(*args, **kwargs)"),
               frame_line(S.torch_path("nn/modules/linear.py"), 125, "forward",
                          "return F.linear(input, self.weight, self.bias)")]
        return top + own, f"{S.user_path(MODEL_FILE)}:{line}:forward"

    def setup(self):
        super().setup()
        if "x" in self.t and self.A.record_history:
            self.annotate_after = len(self.A.trace) - 1

    def train_step(self, step):
        self.step = step
        super().train_step(step)

    def forward(self, step):
        self.set_meta("fwd")
        super().forward(step)
        self.set_meta(None)

    def backward(self, step):
        self.fwd = None
        orig = self.mm_backward

        def mm_backward(step_, layer):
            self.fwd = self.forward_stack(layer)
            orig(step_, layer)
            self.fwd = self.forward_stack(None)

        self.mm_backward = mm_backward
        try:
            # the root gradient comes from the main thread (no node yet); the loss's nodes follow
            first = [True]
            orig_m = self.m

            def m(name, *a, **kw):
                orig_m(name, *a, **kw)
                if first[0] and name == "root":
                    first[0] = False
                    self.fwd = self.forward_stack(None)

            self.m = m
            super().backward(step)
        finally:
            self.mm_backward = orig
            self.__dict__.pop("m", None)
            self.fwd = None

    def optimizer_step(self, step):
        self.set_meta("opt")
        super().optimizer_step(step)
        self.set_meta(None)


class HostAllocator:
    """The pinned host caching allocator (CachingHostAllocator.h), as far as its trace shows: a request is
    rounded up to the next power of two; a free cached block of that size is reused, else a new pinned
    block (its own segment) is made; a freed block is cached until empty_cache releases it."""

    def __init__(self, clock):
        self.clock = clock
        self.next_addr = HOST_BASE
        self.blocks = {}   # addr -> {"size", "allocated", "requested", "frames"}
        self.trace = []
        self.allocated = 0
        self.peak = 0

    @staticmethod
    def round(n):
        size = 1
        while size < n:
            size <<= 1
        return size

    def _rec(self, action, addr, size, frames):
        e = {"action": action, "addr": addr, "size": size, "stream": 0, "time_us": self.clock.tick(2),
             "compile_context": "", "user_metadata": "", "pool_id": (0, 0)}
        if frames is not None:
            e["frames"] = frames
        self.trace.append(e)

    def malloc(self, n, frames):
        size = self.round(n)
        addr = next((a for a, b in sorted(self.blocks.items()) if not b["allocated"] and b["size"] == size), None)
        if addr is None:
            addr = self.next_addr
            self.next_addr += max(size, 4096)
            self.blocks[addr] = {"size": size, "allocated": False, "requested": 0, "frames": frames}
            self._rec("segment_alloc", addr, size, frames)
        b = self.blocks[addr]
        b.update(allocated=True, requested=n, frames=frames)
        self.allocated += size
        self.peak = max(self.peak, self.allocated)
        self._rec("alloc", addr, size, frames)
        return addr

    def free(self, addr, frames):
        b = self.blocks[addr]
        b["allocated"] = False
        self.allocated -= b["size"]
        self._rec("free_requested", addr, b["size"], frames)
        self._rec("free_completed", addr, b["size"], frames)

    def empty_cache(self):
        for addr in sorted(self.blocks):
            b = self.blocks[addr]
            if not b["allocated"]:
                self._rec("segment_free", addr, b["size"], None)
                del self.blocks[addr]

    def segments(self):
        out = []
        for addr in sorted(self.blocks):
            b = self.blocks[addr]
            size = b["size"]
            alloc = size if b["allocated"] else 0
            req = b["requested"] if b["allocated"] else 0
            out.append({"device": -1, "address": addr, "total_size": size, "allocated_size": alloc,
                        "active_size": alloc, "requested_size": req, "stream": 0, "segment_type": "small",
                        "segment_pool_id": (0, 0), "is_expandable": False, "frames": b["frames"] or [],
                        "blocks": [{"address": addr, "size": size, "requested_size": req,
                                    "state": "active_allocated" if b["allocated"] else "inactive",
                                    "frames": b["frames"] if b["allocated"] else []}]})
        return out


def host_run(run):
    """A data loader pins each step's batch (3,000,000 B -> 4 MiB) and labels (100,000 B -> 128 KiB); the
    previous step's are freed once copied; an optimizer offload buffer (20,000,000 B -> 32 MiB) lives
    throughout; empty_cache before the dump releases the cached blocks. Returns (segments, traces, truth)."""
    S = run.S
    H = HostAllocator(run.clock)

    def fr(line, func):
        return [{"name": "pin_memory", "filename": S.torch_path("utils/data/_utils/pin_memory.py"), "line": 69},
                {"name": func, "filename": S.user_path(), "line": line},
                {"name": "<module>", "filename": S.user_path(), "line": 80}]

    offload = fr(50, "main")
    H.malloc(20_000_000, offload)
    prev = None
    for _step in range(1, 5):
        cur = (H.malloc(3_000_000, fr(55, "main")), H.malloc(100_000, fr(56, "main")))
        if prev is not None:
            for addr in prev:
                H.free(addr, fr(57, "main"))
        prev = cur
    H.empty_cache()
    segs = H.segments()
    truth = {"segments": len(segs), "reservedBytes": sum(s["total_size"] for s in segs),
             "allocatedBytes": H.allocated, "peakAllocatedBytes": H.peak, "traceEntries": len(H.trace),
             "sizeRule": "next power of two"}
    return segs, H.trace, truth


def decorate(snap, run, pool_ids=True):
    """Stamps what NewestRun remembered onto the rendered entries (device 0's list is A.trace, in order)."""
    trace = snap["device_traces"][0]
    assert len(trace) == len(run.extra) == len(run.A.trace)
    fwd_lists = {}
    for e, (meta, fwd) in zip(trace, run.extra):
        if meta:
            e["user_metadata"] = meta
        if fwd is not None:
            key = tuple(fwd)
            e["forward_frames"] = fwd_lists.setdefault(key, list(fwd))
        if pool_ids:
            e["pool_id"] = (0, 0)
        if e["action"] == "snapshot":
            e["internal_metadata"] = "{}"
    # live blocks allocated during backward carry the forward stack too
    by_addr = {a.block.addr: a for a in run.A.live.values() if a.block.allocated}
    for seg in snap["segments"]:
        for b in seg["blocks"]:
            a = by_addr.get(b["address"]) if b["state"] == "active_allocated" else None
            fwd = run.alloc_extra.get(a.uid, ("", None))[1] if a is not None else None
            if fwd is not None:
                b["forward_frames"] = fwd_lists.setdefault(tuple(fwd[0]), list(fwd[0]))
    # the annotate entry, right after x's alloc
    if run.annotate_after is not None:
        x = run.A.trace[run.annotate_after]
        note = {"action": "annotate", "addr": x.addr, "size": 0, "stream": 0,
                "time_us": x.time_us, "compile_context": "N/A", "user_metadata": ANNOTATION,
                "frames": trace[run.annotate_after].get("frames", [])}
        if pool_ids:
            note["pool_id"] = (0, 0)
        trace.insert(run.annotate_after + 1, note)


def full(layout="cuda-all", paths="linux", moment="step2"):
    """Every newest field at once. Returns (snap, truth, counters)."""
    run = NewestRun(layout, paths, moment).run()
    snap, tally = render([run.A], "cuda", annotations=run.annotations, settings=dict(SETTINGS_214))
    truth = make_truth(run, tally, None)
    counters = make_counters(run, moment)
    decorate(snap, run)
    # the OOM: the last event, asking for OOM_REQUEST bytes
    reserved = tally["devices"][0]["reservedBytes"]
    device_free = DEVICE_TOTAL - reserved - OUTSIDE_BYTES
    snap["device_traces"][0].append({"action": "oom", "device_free": device_free, "size": OOM_REQUEST,
                                     "stream": 0, "time_us": run.clock.tick(5), "compile_context": "N/A",
                                     "pool_id": (0, 0)})
    counters["device_total_bytes"] = DEVICE_TOTAL
    host_segments, host_traces, host_truth = host_run(run)
    snap["host_segments"] = host_segments
    snap["host_traces"] = host_traces
    # the forward sites at the peak, from the simulation's own series (same window and choice as make_truth)
    window = run.series
    peak_i = max(range(len(window)), key=lambda i: (window[i][0], -i))
    live = [a for a in run.A.live.values() if a.block.allocated]
    meta_live = {}
    for a in live:
        meta = run.alloc_extra.get(a.uid, ("", None))[0]
        for key in ("phase", "step"):
            value = "(none)" if not meta else str(json.loads(meta)[key])
            d = meta_live.setdefault(key, {})
            d[value] = d.get(value, 0) + a.block.size
    truth["generator"] = "test/gen/generate.py newest"
    for key in ("peak", "peakRequested"):  # the annotate entry sits before the peak
        if truth[key] is not None and truth[key]["eventIndex"] > run.annotate_after:
            truth[key]["eventIndex"] += 1
    truth["traceEntries"] = len(snap["device_traces"][0])
    truth["newest"] = {
        "forwardSitesAtPeak": dict(sorted(run.fwd_series[peak_i].items())),
        "forwardSiteOf": "the innermost own-code frame of forward_frames (outermost first)",
        "metadataAtSnapshot": meta_live,
        "annotation": {"text": ANNOTATION, "addr": run.A.trace[run.annotate_after].addr},
        "oom": {"deviceTotalBytes": DEVICE_TOTAL, "deviceFreeBytes": device_free, "requestBytes": OOM_REQUEST,
                "reservedBytes": reserved, "outsideAllocatorBytes": OUTSIDE_BYTES},
        "host": host_truth,
    }
    return snap, truth, counters


def shape(kind):
    """One of the newer files' shapes over the plain known run (step2). Returns (snap, truth, counters)."""
    layout = "cuda-python" if kind == "no-frames-key" else "cuda-all"
    run = NewestRun(layout, "linux", "step2").run()
    snap, tally = render([run.A], "cuda", annotations=run.annotations, settings=dict(SETTINGS_214))
    truth = make_truth(run, tally, None)
    counters = make_counters(run, "step2")
    snap["host_segments"] = []
    snap["host_traces"] = []
    trace = snap["device_traces"][0]
    for e in trace:
        e["pool_id"] = (0, 0)
    if kind == "skip-actions":
        skipped = ("free_requested", "segment_alloc", "segment_free")
        snap["device_traces"][0] = [e for e in trace if e["action"] not in skipped]
        truth["skipActions"] = list(skipped)
    elif kind == "no-traces":
        snap["device_traces"] = [[]]
        snap["external_annotations"] = []
    elif kind == "no-frames-key":
        for e in trace:
            if not e.get("frames"):
                e.pop("frames", None)
        truth["entriesWithoutFrames"] = sum(1 for e in trace if "frames" not in e)
    elif kind == "empty-device":
        # device 0 is listed (an empty list) but holds nothing; the run is on device 1
        for s in snap["segments"]:
            s["device"] = 1
        snap["device_traces"] = [[], trace]
        counters["device"] = 1
        truth["emptyDevice"] = 0
    else:
        raise ValueError(kind)
    truth["generator"] = f"test/gen/generate.py newest ({kind})"
    truth["traceEntries"] = sum(len(t) for t in snap["device_traces"])
    truth["shape"] = kind
    return snap, truth, counters


SHAPES = ("skip-actions", "no-traces", "no-frames-key", "empty-device")
