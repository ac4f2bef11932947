"""`big`: a large training-like snapshot written as a stream of pickle opcodes, never held in memory.

The simulation (workloads.TransformerWorkload over the caching-allocator model) records the trace into
compact typed arrays. The writer then emits exactly the opcodes CPython's pickle.dump(protocol=4) emits for
the equivalent object graph: EMPTY_DICT/EMPTY_LIST + MEMOIZE for every container, MARK ... SETITEMS /
APPENDS in batches of 1000 (single-item lists use APPEND), strings memoised by value (so repeated keys,
actions, file and function names are BINGET / LONG_BINGET), frame dicts shared across the file, one list per
gathered context shared by the records that captured it, a fresh "N/A" compile_context string per entry,
ints as BININT1/BININT2/BININT/LONG1. Only FRAME boundaries differ (ours are placed after whole entries
once a frame reaches 64 KiB; CPython checks before every object). `verify()` checks opcode-for-opcode
equality against pickle.dumps of the same object graph, ignoring FRAME.
"""

import io
import pickle
import pickletools
import random
import struct
import time
from array import array

from .allocator import Allocator, AddressSpace, Clock, GiB
from .layout import CUDA_ALLOCATOR_SETTINGS
from .stacks import Stacks
from .workloads import BigCtx, TransformerWorkload

ACTIONS = ["alloc", "free_requested", "free_completed", "segment_alloc", "segment_free", "segment_map",
           "segment_unmap", "snapshot", "oom"]
ACODE = {a: i for i, a in enumerate(ACTIONS)}
FRAME_TARGET = 64 * 1024
ENTRY_FIXED = 50  # bytes of an entry without its frames (dict, keys, ints, fresh "N/A")


class CompactTrace:
    """One device's trace as parallel typed arrays, plus a running estimate of its pickled size."""

    def __init__(self):
        self.action = array("b")
        self.addr = array("q")
        self.size = array("q")
        self.stream = array("q")
        self.time = array("q")
        self.tid = array("i")
        self.iid = array("i")
        self.est = 0
        self.max_iid = -1
        self.lengths = None  # template lengths, set by the driver

    def record(self, action, addr, size, stream, t, ctx):
        self.action.append(ACODE[action])
        self.addr.append(addr)
        self.size.append(size)
        self.stream.append(stream)
        self.time.append(t)
        if ctx is None:
            self.tid.append(-1)
            self.iid.append(-1)
            self.est += ENTRY_FIXED - 7
            return
        self.tid.append(ctx.tid)
        self.iid.append(ctx.iid)
        if ctx.iid > self.max_iid:
            self.max_iid = ctx.iid
            self.est += ENTRY_FIXED + 5 * self.lengths[ctx.tid] + 4
        else:
            self.est += ENTRY_FIXED + 5

    def __len__(self):
        return len(self.action)


def enc_int(v):
    if v >= 0:
        if v < 256:
            return b"K" + bytes((v,))
        if v < 65536:
            return b"M" + struct.pack("<H", v)
        if v < 0x80000000:
            return b"J" + struct.pack("<i", v)
        n = (v.bit_length() >> 3) + 1
        return b"\x8a" + bytes((n,)) + v.to_bytes(n, "little")
    if v >= -0x80000000:
        return b"J" + struct.pack("<i", v)
    b = pickle.encode_long(v)
    if len(b) < 256:
        return b"\x8a" + bytes((len(b),)) + b
    return b"\x8b" + struct.pack("<i", len(b)) + b


class StreamPickler:
    """Protocol-4 pickle opcodes written straight to a file, with CPython's memo numbering."""

    def __init__(self, f, templates, n_iids):
        self.f = f
        self.buf = []
        self.blen = 0
        self.memo_n = 0
        self.strs = {}
        self.frames = {}                # frame tuple -> memo index of its dict
        self.templates = templates      # tid -> tuple of frames
        self.bodies = {}                # tid -> bytes of the list's items (all gets)
        self.iid_memo = array("i", [-1]) * (n_iids + 1)
        self.empty_list = -1
        f.write(b"\x80\x04")

    # ---- low level ------------------------------------------------------------------------------------------
    def w(self, b):
        self.buf.append(b)
        self.blen += len(b)

    def boundary(self):
        if self.blen >= FRAME_TARGET:
            self.commit()

    def commit(self):
        if not self.buf:
            return
        data = b"".join(self.buf)
        self.f.write(b"\x95" + struct.pack("<Q", len(data)) + data)
        self.buf = []
        self.blen = 0

    def memoize(self):
        i = self.memo_n
        self.memo_n += 1
        return i

    @staticmethod
    def get(i):
        return b"h" + bytes((i,)) if i < 256 else b"j" + struct.pack("<I", i)

    def s(self, text):
        """A string shared by value: written once, then memo gets."""
        i = self.strs.get(text)
        if i is not None:
            return self.get(i)
        self.strs[text] = self.memoize()
        return self._str(text)

    def fresh(self, text):
        self.memoize()
        return self._str(text)

    @staticmethod
    def _str(text):
        b = text.encode("utf-8", "surrogatepass")
        if len(b) < 256:
            return b"\x8c" + bytes((len(b),)) + b + b"\x94"
        if len(b) < 1 << 32:
            return b"X" + struct.pack("<I", len(b)) + b + b"\x94"
        return b"\x8d" + struct.pack("<Q", len(b)) + b + b"\x94"

    # ---- generic objects (segments, settings) ---------------------------------------------------------------
    def save(self, obj):
        """Plain objects: dict / list / tuple / str / int / float / bool / None (no sharing but strings)."""
        if obj is None:
            self.w(b"N")
        elif obj is True or obj is False:
            self.w(b"\x88" if obj else b"\x89")
        elif isinstance(obj, int):
            self.w(enc_int(obj))
        elif isinstance(obj, float):
            self.w(b"G" + struct.pack(">d", obj))
        elif isinstance(obj, str):
            self.w(self.s(obj))
        elif isinstance(obj, tuple):
            if len(obj) == 0:
                self.w(b")")
                return
            if len(obj) <= 3:
                for x in obj:
                    self.save(x)
                self.w(b"\x85\x86\x87"[len(obj) - 1:len(obj)])
            else:
                self.w(b"(")
                for x in obj:
                    self.save(x)
                self.w(b"t")
            self.memoize()
            self.w(b"\x94")
        elif isinstance(obj, list):
            self.w(b"]\x94")
            self.memoize()
            self.items(obj, self.save, b"e", b"a")
        elif isinstance(obj, dict):
            self.w(b"}\x94")
            self.memoize()
            self.dict_items(list(obj.items()))
        else:
            raise TypeError(type(obj))

    def items(self, seq, save_one, many, one):
        if len(seq) == 1:
            save_one(seq[0])
            self.w(one)
            return
        for i in range(0, len(seq), 1000):
            self.w(b"(")
            for x in seq[i:i + 1000]:
                save_one(x)
            self.w(many)

    def dict_items(self, kvs):
        if len(kvs) == 1:
            self.save(kvs[0][0])
            self.save(kvs[0][1])
            self.w(b"s")
            return
        for i in range(0, len(kvs), 1000):
            self.w(b"(")
            for k, v in kvs[i:i + 1000]:
                self.save(k)
                if callable(v):
                    v()
                else:
                    self.save(v)
            self.w(b"u")

    # ---- frames ---------------------------------------------------------------------------------------------
    def empty(self):
        if self.empty_list >= 0:
            return self.get(self.empty_list)
        self.empty_list = self.memoize()
        return b"]\x94"

    def frame_list(self, tid, iid):
        if tid < 0:
            return self.empty()
        m = self.iid_memo[iid]
        if m >= 0:
            return self.get(m)
        self.iid_memo[iid] = self.memoize()
        body = self.bodies.get(tid)
        frames = self.templates[tid]
        n = len(frames)
        if body is None:
            parts = []
            for fr in frames:
                parts.append(self.frame_dict(fr))
            body = b"".join(parts)
            self.bodies[tid] = b"".join(self.get(self.frames[fr]) for fr in frames)
        if n == 0:
            return b"]\x94"
        if n == 1:
            return b"]\x94" + body + b"a"
        out = [b"]\x94"]
        if n <= 1000:
            return b"]\x94(" + body + b"e"
        # > 1000 frames: batches (rare)
        gets = [self.get(self.frames[fr]) for fr in frames]
        for i in range(0, n, 1000):
            out.append(b"(" + b"".join(gets[i:i + 1000]) + b"e")
        return b"".join(out)

    def frame_dict(self, fr):
        i = self.frames.get(fr)
        if i is not None:
            return self.get(i)
        self.frames[fr] = self.memoize()
        name, filename, line = fr
        return b"".join([b"}\x94(", self.s("name"), self.s(name), self.s("filename"), self.s(filename),
                         self.s("line"), enc_int(line), b"u"])

    def finish(self):
        self.w(b".")
        self.commit()


def write_segments(P, allocators):
    segs = [s for A in allocators for s in A.all_segments()]
    P.w(b"]\x94")
    P.memoize()

    def one(seg):
        blocks = list(seg.blocks())
        P.w(b"}\x94(")
        P.memoize()
        alloc = sum(b.size for b in blocks if b.allocated)
        active = sum(b.size for b in blocks if b.allocated or b.pending)
        req = sum(b.requested for b in blocks if b.allocated or b.pending)
        for k, v in (("device", seg.device), ("address", seg.addr), ("total_size", seg.size),
                     ("allocated_size", alloc), ("active_size", active), ("requested_size", req),
                     ("stream", seg.stream), ("segment_type", "small" if seg.small else "large")):
            P.w(P.s(k))
            P.save(v)
        P.w(P.s("segment_pool_id"))
        P.save((seg.pool_id[0], seg.pool_id[1]))
        P.w(P.s("is_expandable"))
        P.save(seg.expandable)
        sc = seg.head.seg_ctx if seg.head is not None else None
        if sc is None:
            P.w(P.s("frames"))
            P.w(P.empty())
        P.w(P.s("blocks"))
        P.w(b"]\x94")
        P.memoize()
        P.items(blocks, block, b"e", b"a")
        if sc is not None:
            P.w(P.s("frames"))
            P.w(P.frame_list(sc.tid, sc.iid))
        P.w(b"u")
        P.boundary()

    def block(b):
        P.w(b"}\x94(")
        P.memoize()
        for k, v in (("address", b.addr), ("size", b.size), ("requested_size", b.requested), ("state", b.state)):
            P.w(P.s(k))
            P.save(v)
        P.w(P.s("frames"))
        if b.allocated and b.ctx is not None:
            P.w(P.frame_list(b.ctx.tid, b.ctx.iid))
        else:
            P.w(P.empty())
        P.w(b"u")

    if segs:
        P.items(segs, one, b"e", b"a")


def write_trace(P, tr):
    n = len(tr)
    P.w(b"]\x94")
    P.memoize()
    if n == 0:
        return
    act, addr, size, stream, tim, tid, iid = tr.action, tr.addr, tr.size, tr.stream, tr.time, tr.tid, tr.iid
    s, frame_list, w, boundary = P.s, P.frame_list, P.w, P.boundary
    na = b"\x8c\x03N/A\x94"
    for start in range(0, n, 1000):
        end = min(n, start + 1000)
        if n > 1:
            w(b"(")
        for i in range(start, end):
            P.memo_n += 1  # the entry dict
            a = ACTIONS[act[i]]
            head = b"".join([b"}\x94(", s("action"), s(a), s("device_free" if a == "oom" else "addr"),
                             enc_int(addr[i]), s("size"), enc_int(size[i]), s("stream"), enc_int(stream[i]),
                             s("time_us"), enc_int(tim[i]), s("compile_context")])
            P.memo_n += 1  # the fresh "N/A"
            t = tid[i]
            if t >= 0:
                w(head + na + s("frames") + frame_list(t, iid[i]) + b"u")
            else:
                w(head + na + b"u")
            if P.blen >= FRAME_TARGET:
                P.commit()
        w(b"e" if n > 1 else b"a")


def simulate(target_bytes, devices=1, seed=1, layers=12):
    """Run the transformer workload on each device until the estimated pickle size is reached."""
    rng = random.Random(seed)
    S = Stacks("cuda-all", "linux", "train.py")
    clock = Clock(1763324225770003)
    counter = [0]

    def new_ctx(tid):
        counter[0] += 1
        return BigCtx(tid, counter[0])

    allocators, traces, workloads = [], [], []
    for dev in range(devices):
        tr = CompactTrace()
        A = Allocator(dev, "cuda", clock, 80 * GiB, AddressSpace(0x7F3A2C000000 + dev * (1 << 40)),
                      recorder=tr.record)
        A.track_stats = False
        W = TransformerWorkload(A, S, rng, layers=layers, new_ctx=new_ctx)
        tr.lengths = [len(c.frames) for c in W.templates]
        W.setup()
        allocators.append(A)
        traces.append(tr)
        workloads.append(W)
    per_dev = target_bytes / devices
    while True:  # devices step in turn, so their time_us ranges overlap as in a data-parallel job
        todo = [(W, tr) for W, tr in zip(workloads, traces) if tr.est < per_dev]
        if not todo:
            break
        for W, _tr in todo:
            W.train_step()
    templates = [c.frames for c in workloads[0].templates]
    return allocators, traces, templates, counter[0]


def write_stream(f, allocators, traces, templates, n_iids):
    P = StreamPickler(f, templates, n_iids)
    P.w(b"}\x94(")
    P.memoize()
    P.w(P.s("segments"))
    write_segments(P, allocators)
    P.w(P.s("device_traces"))
    P.w(b"]\x94")
    P.memoize()
    if len(traces) == 1:
        write_trace(P, traces[0])
        P.w(b"a")
    else:
        P.w(b"(")
        for tr in traces:
            write_trace(P, tr)
        P.w(b"e")
    P.w(P.s("allocator_settings"))
    P.save(dict(CUDA_ALLOCATOR_SETTINGS))
    P.w(P.s("external_annotations"))
    P.w(b"]\x94")
    P.memoize()
    P.w(b"u")
    P.finish()


def counts(allocators, traces):
    devs = []
    for A, tr in zip(allocators, traces):
        t = A.tally()
        acts = {}
        for code in tr.action:
            a = ACTIONS[code]
            acts[a] = acts.get(a, 0) + 1
        t["traceEntries"] = len(tr)
        t["actions"] = acts
        t["device"] = A.device
        devs.append(t)
    from .layout import finish_tally
    return finish_tally({"devices": devs})


class _Count:
    def __init__(self):
        self.n = 0

    def write(self, b):
        self.n += len(b)


def calibrate(devices, seed, probe=3e6):
    """Ratio of real pickled bytes to the simulation's running estimate, from a short run."""
    allocators, traces, templates, n_iids = simulate(probe, devices, seed)
    sink = _Count()
    write_stream(sink, allocators, traces, templates, n_iids)
    return sink.n / sum(t.est for t in traces)


def write_big(out, target_mb, devices=1, seed=1):
    """Simulate until about target_mb * 1e6 bytes, then stream the pickle to `out`; returns the counts."""
    t0 = time.time()
    ratio = calibrate(devices, seed)
    allocators, traces, templates, n_iids = simulate(target_mb * 1e6 / ratio, devices, seed)
    t1 = time.time()
    with open(out, "wb", buffering=1 << 20) as f:
        write_stream(f, allocators, traces, templates, n_iids)
    t2 = time.time()
    c = counts(allocators, traces)
    import os
    c["bytes"] = os.path.getsize(out)
    c["seconds"] = {"simulate": round(t1 - t0, 2), "write": round(t2 - t1, 2)}
    return c


# ---- verification (small sizes only) --------------------------------------------------------------------------

def build_object(allocators, traces, templates):
    """The object graph pickle.dump would see, with the sharing the writer assumes."""
    strs = {}

    def S(x):
        return strs.setdefault(x, x)

    fdicts = {}

    def fd(fr):
        d = fdicts.get(fr)
        if d is None:
            d = fdicts[fr] = {S("name"): S(fr[0]), S("filename"): S(fr[1]), S("line"): fr[2]}
        return d

    lists = {}
    empty = []

    def fl(tid, iid):
        if tid < 0:
            return empty
        lst = lists.get(iid)
        if lst is None:
            lst = lists[iid] = [fd(fr) for fr in templates[tid]]
        return lst

    segs = []
    for A in allocators:
        for seg in A.all_segments():
            blocks = list(seg.blocks())
            d = {S("device"): seg.device, S("address"): seg.addr, S("total_size"): seg.size,
                 S("allocated_size"): sum(b.size for b in blocks if b.allocated),
                 S("active_size"): sum(b.size for b in blocks if b.allocated or b.pending),
                 S("requested_size"): sum(b.requested for b in blocks if b.allocated or b.pending),
                 S("stream"): seg.stream, S("segment_type"): S("small" if seg.small else "large"),
                 S("segment_pool_id"): (seg.pool_id[0], seg.pool_id[1]), S("is_expandable"): seg.expandable}
            sc = seg.head.seg_ctx if seg.head is not None else None
            if sc is None:
                d[S("frames")] = empty
            d[S("blocks")] = [{S("address"): b.addr, S("size"): b.size, S("requested_size"): b.requested,
                               S("state"): S(b.state),
                               S("frames"): fl(b.ctx.tid, b.ctx.iid) if b.allocated and b.ctx else empty}
                              for b in blocks]
            if sc is not None:
                d[S("frames")] = fl(sc.tid, sc.iid)
            segs.append(d)
    dts = []
    for tr in traces:
        lst = []
        for i in range(len(tr)):
            a = ACTIONS[tr.action[i]]
            e = {S("action"): S(a), S("device_free" if a == "oom" else "addr"): tr.addr[i], S("size"): tr.size[i],
                 S("stream"): tr.stream[i], S("time_us"): tr.time[i], S("compile_context"): "".join(["N", "/A"])}
            if tr.tid[i] >= 0:
                e[S("frames")] = fl(tr.tid[i], tr.iid[i])
            lst.append(e)
        dts.append(lst)
    settings = {S(k): (S(v) if isinstance(v, str) else v) for k, v in CUDA_ALLOCATOR_SETTINGS.items()}
    settings[S("roundup_power2_divisions")] = {S(k): v for k, v in CUDA_ALLOCATOR_SETTINGS[
        "roundup_power2_divisions"].items()}
    return {S("segments"): segs, S("device_traces"): dts, S("allocator_settings"): settings,
            S("external_annotations"): []}


def verify(target_mb=0.3, devices=1, seed=3):
    """Stream-write a small big-file and compare with pickle.dumps of the same object graph."""
    allocators, traces, templates, n_iids = simulate(target_mb * 1e6, devices, seed, layers=2)
    buf = io.BytesIO()
    write_stream(buf, allocators, traces, templates, n_iids)
    mine = buf.getvalue()
    obj = build_object(allocators, traces, templates)
    ref = pickle.dumps(obj, protocol=4)
    assert pickle.loads(mine) == obj, "loaded object differs"

    def ops(b):
        return [(o.name, a) for o, a, _p in pickletools.genops(b) if o.name != "FRAME"]

    a, b = ops(mine), ops(ref)
    if a != b:
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y:
                raise AssertionError(f"opcode {i} differs: {x} != {y}")
        raise AssertionError(f"opcode count differs: {len(a)} != {len(b)}")
    return {"bytes": len(mine), "reference_bytes": len(ref), "opcodes": len(a)}
