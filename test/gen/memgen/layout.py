"""Render simulated allocators as the dict that `torch.cuda.memory._snapshot()` (or torch_npu's) returns,
in the key order and object-sharing pattern of each torch version, and tally it from the simulation.

Layouts (key orders copied from real files and from torch / torch_npu Module.cpp):
  cuda     torch ~2.8: top level segments, device_traces, allocator_settings, external_annotations.
           segment: device address total_size allocated_size active_size requested_size stream segment_type
           segment_pool_id is_expandable [frames] blocks [frames]   (frames last when the segment has a
           context; an empty shared list before blocks otherwise). block: address size requested_size state
           frames. entry: action addr|device_free size stream time_us compile_context [frames] (frames only
           when a context was recorded). frame: name filename line.
  npu      torch_npu (Module.cpp THNPModule_memorySnapshot): top level segments, device_traces only;
           segment: ... stream segment_pool_id segment_type is_expandable ...; entry: action addr size stream
           [frames] (no time_us); the workspace allocator's segments are appended and its trace entries
           (workspace_snapshot, segment_alloc, alloc per workspace block) PREPENDED to the device trace.
  torch20  torch 2.0: segment: device address total_size allocated_size active_size requested_size stream
           segment_type blocks; block: size requested_size state [history: [{addr, real_size, frames}]]
           (no block address); entry: action addr size stream [frames]; frame: filename name line.

Sharing: one dict per distinct frame, one list per context (Ctx) shared by every record that captured it
(segment_alloc + alloc + the live block; free_requested + free_completed), one shared empty list for
segments/blocks without a context; compile_context is a fresh "N/A" string per entry (as in real pickles).
"""

CUDA_ALLOCATOR_SETTINGS = {
    "PYTORCH_CUDA_ALLOC_CONF": "",
    "max_split_size": -1,
    "garbage_collection_threshold": 0.0,
    "expandable_segments": False,
    "pinned_num_register_threads": 1,
    "release_lock_on_cudamalloc": False,
    "pinned_use_cuda_host_register": False,
    "roundup_power2_divisions": {str(1 << i): 0 for i in range(16)},
}


def fresh(s):
    """A new str object equal to s (so pickle memoises each occurrence separately, like C++-made strings)."""
    return "".join([s[:1], s[1:]])


class Workspace:
    """One torch_npu workspace-allocator block (NPUWorkspaceAllocator: one per stream). `allocated`: the
    block is in use at the dump (get_segm then reports it allocated and active, and its segment's
    allocated_size / active_size = its size, requested_size = the request). ctx None: allocated while
    history was off (no frames anywhere)."""

    def __init__(self, device, addr, size, requested, stream, ctx, allocated=False):
        self.device, self.addr, self.size, self.requested, self.stream, self.ctx = (
            device, addr, size, requested, stream, ctx)
        self.allocated = allocated


class Renderer:
    def __init__(self, layout):
        if layout not in ("cuda", "npu", "torch20"):
            raise ValueError(layout)
        self.layout = layout
        self._frame_dicts = {}
        self._lists = {}
        self.empty = []

    def frame(self, f):
        d = self._frame_dicts.get(f)
        if d is None:
            name, filename, line = f
            if self.layout == "torch20":
                d = {"filename": filename, "name": name, "line": line}
            else:
                d = {"name": name, "filename": filename, "line": line}
            self._frame_dicts[f] = d
        return d

    def frames(self, ctx):
        if ctx is None:
            return self.empty
        lst = self._lists.get(ctx.uid)
        if lst is None:
            lst = [self.frame(f) for f in ctx.frames]
            self._lists[ctx.uid] = lst
        return lst

    # ---- segments -------------------------------------------------------------------------------------
    def segment(self, seg):
        blocks = list(seg.blocks())
        alloc = sum(b.size for b in blocks if b.allocated)
        active = sum(b.size for b in blocks if b.allocated or b.pending)
        req = sum(b.requested for b in blocks if b.allocated or b.pending)
        d = {"device": seg.device, "address": seg.addr, "total_size": seg.size, "allocated_size": alloc,
             "active_size": active, "requested_size": req, "stream": seg.stream}
        if self.layout == "torch20":
            d["segment_type"] = "small" if seg.small else "large"
            d["blocks"] = [self.block20(b) for b in blocks]
            return d
        pool_id = (seg.pool_id[0], seg.pool_id[1])  # a new tuple per segment, as torch makes them
        if self.layout == "npu":
            d["segment_pool_id"] = pool_id
            d["segment_type"] = "small" if seg.small else "large"
        else:
            d["segment_type"] = "small" if seg.small else "large"
            d["segment_pool_id"] = pool_id
        d["is_expandable"] = seg.expandable
        seg_ctx = seg.head.seg_ctx if seg.head is not None else None
        if seg_ctx is None:
            d["frames"] = self.empty
        d["blocks"] = [self.block(b) for b in blocks]
        if seg_ctx is not None:
            d["frames"] = self.frames(seg_ctx)
        return d

    def block(self, b):
        return {"address": b.addr, "size": b.size, "requested_size": b.requested, "state": b.state,
                "frames": self.frames(b.ctx) if b.allocated else self.empty}

    def block20(self, b):
        d = {"size": b.size, "requested_size": b.requested, "state": b.state}
        if b.allocated and b.ctx is not None:
            d["history"] = [{"addr": b.addr, "real_size": b.requested, "frames": self.frames(b.ctx)}]
        return d

    def workspace_segment(self, w):
        blk = {"address": w.addr, "size": w.size, "requested_size": w.requested,
               "state": "active_allocated" if w.allocated else "inactive", "frames": self.frames(w.ctx)}
        used = w.size if w.allocated else 0
        d = {"device": w.device, "address": w.addr, "total_size": w.size, "allocated_size": used,
             "active_size": used, "requested_size": w.requested if w.allocated else 0, "stream": w.stream,
             "segment_pool_id": (0, 0),
             "segment_type": "large", "is_expandable": False}
        if w.ctx is None:
            d["frames"] = self.empty
        d["blocks"] = [blk]
        if w.ctx is not None:
            d["frames"] = self.frames(w.ctx)
        return d

    # ---- trace entries ---------------------------------------------------------------------------------
    def entry(self, r):
        d = {"action": r.action}
        d["device_free" if r.action == "oom" else "addr"] = r.addr
        d["size"] = r.size
        d["stream"] = r.stream
        if self.layout == "cuda":
            d["time_us"] = r.time_us
            d["compile_context"] = fresh("N/A")
        if r.ctx is not None:
            d["frames"] = self.frames(r.ctx)
        return d

    def workspace_entries(self, w):
        out = []
        for action in ("workspace_snapshot", "segment_alloc", "alloc"):
            d = {"action": action, "addr": w.addr, "size": w.size, "stream": w.stream}
            if w.ctx is not None:
                d["frames"] = self.frames(w.ctx)
            out.append(d)
        return out


def kept_trace(alloc, keep_last=None):
    """The ring buffer: only the newest keep_last records survive."""
    tr = alloc.trace
    if keep_last is not None and keep_last < len(tr):
        return tr[len(tr) - keep_last:]
    return tr


def render(allocators, layout="cuda", keep_last=None, workspaces=(), annotations=None, settings=None,
           extra_entries=None):
    """Returns (snapshot_dict, tally). `allocators`: one per device index (device i = allocators[i]).
    extra_entries: {device: [(position, entry_dict)]} inserted verbatim (e.g. unknown actions)."""
    R = Renderer(layout)
    segments, traces = [], []
    tally = {"devices": []}
    for dev, al in enumerate(allocators):
        segs = al.all_segments()
        segments.extend(R.segment(s) for s in segs)
        ws = [w for w in workspaces if w.device == dev]
        trace = []
        for w in ws:
            trace.extend(R.workspace_entries(w))
        recs = kept_trace(al, keep_last)
        trace.extend(R.entry(r) for r in recs)
        for pos, e in sorted((extra_entries or {}).get(dev, []), key=lambda x: -x[0]):
            trace.insert(pos, e)
        traces.append(trace)
        t = al.tally()
        actions = {}
        for w in ws:
            for a in ("workspace_snapshot", "segment_alloc", "alloc"):
                actions[a] = actions.get(a, 0) + 1
        for r in recs:
            actions[r.action] = actions.get(r.action, 0) + 1
        for _pos, e in (extra_entries or {}).get(dev, []):
            actions[e["action"]] = actions.get(e["action"], 0) + 1
        t["segments"] += len(ws)
        t["blocks"] += len(ws)
        t["reservedBytes"] += sum(w.size for w in ws)
        for w in ws:
            st = "active_allocated" if w.allocated else "inactive"
            t["blockStates"][st] = t["blockStates"].get(st, 0) + 1
            if w.allocated:
                t["allocatedBytes"] += w.size
                t["activeBytes"] += w.size
                t["requestedBytes"] += w.requested
                t["liveBlockBytes"] += w.size
        t["traceEntries"] = len(trace)
        t["actions"] = actions
        t["device"] = dev
        tally["devices"].append(t)
    for w in workspaces:
        segments.append(R.workspace_segment(w))
    snap = {"segments": segments, "device_traces": traces}
    if layout == "cuda":
        snap["allocator_settings"] = settings if settings is not None else dict(CUDA_ALLOCATOR_SETTINGS)
        snap["external_annotations"] = list(annotations or [])
    finish_tally(tally)
    return snap, tally


def finish_tally(tally):
    """Top-level counts and totals from the per-device tallies (py_inspect.py's schema)."""
    devs = sorted(tally["devices"], key=lambda d: d["device"])
    tally["devices"] = devs
    tally["segments"] = sum(d["segments"] for d in devs)
    tally["blocks"] = sum(d["blocks"] for d in devs)
    tally["traceEntries"] = sum(d.get("traceEntries", 0) for d in devs)
    acts = {}
    for d in devs:
        for k, v in d.get("actions", {}).items():
            acts[k] = acts.get(k, 0) + v
    tally["actions"] = acts
    tally["totals"] = {k: sum(d[k] for d in devs)
                       for k in ("reservedBytes", "allocatedBytes", "activeBytes", "requestedBytes")}
    return tally


def render_segment_list(allocators):
    """torch.cuda.memory_snapshot(): a bare list of segments (no traces)."""
    snap, tally = render(allocators, "cuda")
    for d in tally["devices"]:
        d["traceEntries"] = 0
        d["actions"] = {}
    tally["devices"] = [d for d in tally["devices"] if d["segments"]]
    finish_tally(tally)
    return snap["segments"], tally
