"""`grow-real`: a real snapshot grown to a target size, the way a longer run of the same job would write it.

A real fixture's trace is one window of a training job. A longer recording of the same job is that window's
steps again and again: the same call stacks, strings and frame objects (torch symbolises each frame once
and shares the dict), fresh addresses and times, the allocator's cached segments reused. This module
writes exactly that, as a stream of protocol-4 pickle opcodes with CPython's memo numbering (memo by object
identity, as `pickle.dump` does on the object graph torch builds), never holding the grown file's objects:

- repetition 0 is the original trace, byte for byte the opcodes CPython writes for it (`verify()` checks
  the whole file against the original's opcodes when nothing is added);
- in repetition k ≥ 1 every block allocated in the window gets a fresh address: its original address plus
  an offset above the file's whole address range, alternating between two such banks (repetitions 1, 3, 5 …
  in one, 2, 4 … in the other), so that no block is at the address it had in the step before, while the
  set of addresses stays bounded as a caching allocator's is (it reuses its segments step after step);
  `addresses="unique"` gives every repetition a bank of its own instead (k × the offset), a harder case
  than real runs for anything keyed by address; every time moves on by k × the window's length;
- a block freed in the window but allocated before it (its "pre-window" free) is, from repetition 1 on,
  the same-sized block the previous repetition left allocated at its end (matched in order, by size): a
  steady job frees last step's tensors, it does not leak them; unmatched pre-window frees and unmatched
  end-live allocations are left out of repetitions ≥ 1, so every repetition ends with the same live bytes;
- segment events are left out of repetitions ≥ 1 (a steady job reuses its cached segments), and the
  final `segments` hold every block live at the end: the original segments, with the blocks the last
  repetition moved shown in copies of their segments at the moved addresses;
- entries' fresh objects (the dict, a per-entry `compile_context` string, a frames list shared only by an
  allocation's two free events) are fresh again in each repetition; objects shared across the original
  window (keys, action names, frame dicts and their strings) stay shared;
- `external_annotations` (e.g. `Optimizer.step#…` START/END) repeat with the times;
- `host_pins=N` also records pinned host memory (`record_pinned_host_memory=True`): in every repetition a
  data loader pins N tensors (its batch's fields) and frees the step before's once copied, through the
  pinned host caching allocator of `newest.py` (`HostAllocator`: power-of-two blocks, a freed block cached
  and reused); `host_segments` and `host_traces` are added to the root, and the truth says what they hold.

Nothing here reads torch; the output's peak is checked against `test/tools/replay.py` by the tests.
"""

import pickle
import struct
from collections import Counter, defaultdict, deque

FRAME_TARGET = 64 * 1024
KEEP_ACTIONS = ("alloc", "free_requested", "free_completed")


def enc_int(v):
    """CPython's save_long for protocol ≥ 2."""
    if 0 <= v < 256:
        return b"K" + bytes((v,))
    if 0 <= v < 65536:
        return b"M" + struct.pack("<H", v)
    if -0x80000000 <= v < 0x80000000:
        return b"J" + struct.pack("<i", v)
    b = pickle.encode_long(v)
    if len(b) < 256:
        return b"\x8a" + bytes((len(b),)) + b
    return b"\x8b" + struct.pack("<i", len(b)) + b


def str_bytes(text):
    b = text.encode("utf-8", "surrogatepass")
    if len(b) < 256:
        return b"\x8c" + bytes((len(b),)) + b + b"\x94"
    if len(b) < 1 << 32:
        return b"X" + struct.pack("<I", len(b)) + b + b"\x94"
    return b"\x8d" + struct.pack("<Q", len(b)) + b + b"\x94"


def get(i):
    return b"h" + bytes((i,)) if i < 256 else b"j" + struct.pack("<I", i)


class Writer:
    """Protocol-4 opcodes with CPython's identity memo, framed in ~64 KiB FRAMEs at object boundaries."""

    def __init__(self, f):
        self.f = f
        self.buf = []
        self.blen = 0
        self.memo_n = 0
        self.memo = {}  # id(obj) -> memo index, for objects that stay alive (the original snapshot's)
        self.keep = []  # objects made here and written by identity: kept alive so ids stay unique
        f.write(b"\x80\x04")

    def w(self, b):
        self.buf.append(b)
        self.blen += len(b)

    def boundary(self):
        if self.blen >= FRAME_TARGET:
            data = b"".join(self.buf)
            self.f.write(b"\x95" + struct.pack("<Q", len(data)) + data)
            self.buf = []
            self.blen = 0

    def put(self, obj):
        self.memo[id(obj)] = self.memo_n
        self.memo_n += 1

    def save(self, obj):
        if obj is None:
            self.w(b"N")
            return
        if obj is True or obj is False:
            self.w(b"\x88" if obj else b"\x89")
            return
        if isinstance(obj, int):
            self.w(enc_int(obj))
            return
        if isinstance(obj, float):
            self.w(b"G" + struct.pack(">d", obj))
            return
        m = self.memo.get(id(obj))
        if m is not None:
            self.w(get(m))
            return
        if isinstance(obj, str):
            self.w(str_bytes(obj))
            self.put(obj)
        elif isinstance(obj, tuple):
            if not obj:
                self.w(b")")
                return
            if len(obj) <= 3:
                for x in obj:
                    self.save(x)
                self.w(b"\x85\x86\x87"[len(obj) - 1:len(obj)] + b"\x94")
            else:
                self.w(b"(")
                for x in obj:
                    self.save(x)
                self.w(b"t\x94")
            self.put(obj)
        elif isinstance(obj, list):
            self.w(b"]\x94")
            self.put(obj)
            self.batches(obj, self.save, b"e", b"a")
        elif isinstance(obj, dict):
            self.w(b"}\x94")
            self.put(obj)
            self.batches(list(obj.items()), lambda kv: (self.save(kv[0]), self.save(kv[1])), b"u", b"s")
        else:
            raise TypeError(f"cannot write {type(obj).__name__}")

    def batches(self, items, one, many_op, one_op):
        """CPython's _batch_appends / _batch_setitems: MARK … APPENDS per 1000, a lone item with APPEND."""
        for i in range(0, len(items), 1000):
            chunk = items[i:i + 1000]
            if len(chunk) > 1:
                self.w(b"(")
                for x in chunk:
                    one(x)
                self.w(many_op)
            else:
                one(chunk[0])
                self.w(one_op)
            self.boundary()

    def finish(self):
        self.w(b".")
        data = b"".join(self.buf)
        self.f.write(b"\x95" + struct.pack("<Q", len(data)) + data)


def plan(trace):
    """Block identities in one device's window: which frees are of pre-window blocks, which allocations are
    still live at the end, and the same-size matching of the two that keeps repetitions steady."""
    live = {}  # addr -> alloc index (until free_completed)
    block_of = [None] * len(trace)  # entry index -> ("in", alloc index) | ("pre", pre id)
    pre_live = {}  # addr -> pre id, between a pre-window block's free_requested and free_completed
    pre_sizes = []
    for i, e in enumerate(trace):
        a = e.get("action")
        if a == "alloc":
            live[e["addr"]] = i
            block_of[i] = ("in", i)
        elif a in ("free_requested", "free_completed"):
            addr = e["addr"]
            if addr in live:
                block_of[i] = ("in", live[addr])
                if a == "free_completed":
                    del live[addr]
            else:
                pid = pre_live.get(addr)
                if pid is None:
                    pid = len(pre_sizes)
                    pre_sizes.append(e["size"])
                    pre_live[addr] = pid
                block_of[i] = ("pre", pid)
                if a == "free_completed":
                    del pre_live[addr]
    end_live = sorted(live.values())
    by_size = defaultdict(deque)
    for i in end_live:
        by_size[trace[i]["size"]].append(i)
    pre_match = {}  # pre id -> alloc index of the end-live block of the previous repetition it frees
    for pid, size in enumerate(pre_sizes):
        q = by_size.get(size)
        if q:
            pre_match[pid] = q.popleft()
    matched_end = set(pre_match.values())
    return block_of, pre_match, matched_end, set(end_live)


class EntryCodec:
    """The bytes of one trace entry in a repetition ≥ 1, built from the original entry: shared objects as
    memo gets, fresh ones written again, the address and time replaced."""

    def __init__(self, W, trace):
        self.W = W
        refs = Counter()
        for e in trace:
            for v in e.values():
                if isinstance(v, (str, list, dict, tuple)):
                    refs[id(v)] += 1
        self.refs = refs

    def entry(self, e, addr, time_us, per_rep):
        W = self.W
        out = [b"}\x94("]
        W.memo_n += 1  # the entry dict
        for k, v in e.items():
            out.append(get(W.memo[id(k)]))
            if k == "addr":
                out.append(enc_int(addr))
            elif k == "time_us":
                out.append(enc_int(time_us))
            elif isinstance(v, (bool, int, float)) or v is None:
                out.append(enc_int(v) if isinstance(v, int) and not isinstance(v, bool) else self.plain(v))
            elif isinstance(v, str) and self.refs[id(v)] > 1:
                out.append(get(W.memo[id(v)]))  # shared across the window: shared across repetitions
            elif isinstance(v, str):
                out.append(str_bytes(v))  # fresh per entry in the original: fresh again
                W.memo_n += 1
            elif isinstance(v, list) and all(id(x) in W.memo for x in v):
                m = per_rep.get(id(v))
                if m is not None:
                    out.append(get(m))
                else:
                    per_rep[id(v)] = W.memo_n
                    W.memo_n += 1
                    out.append(self.list_body(v))
            else:
                raise ValueError(f"grow-real: an entry value of key {k!r} is not a plain shared object")
        out.append(b"u")
        return b"".join(out)

    @staticmethod
    def plain(v):
        if v is None:
            return b"N"
        if v is True or v is False:
            return b"\x88" if v else b"\x89"
        return b"G" + struct.pack(">d", v)

    def list_body(self, items):
        W = self.W
        parts = [b"]\x94"]
        gets = [get(W.memo[id(x)]) for x in items]
        for i in range(0, len(gets), 1000):
            chunk = gets[i:i + 1000]
            parts.append(b"(" + b"".join(chunk) + b"e" if len(chunk) > 1 else chunk[0] + b"a")
        return b"".join(parts)


def address_span(snap):
    lo, hi = None, 0
    for seg in snap.get("segments", []):
        a, n = seg["address"], seg["total_size"]
        lo = a if lo is None else min(lo, a)
        hi = max(hi, a + n)
    for tr in snap.get("device_traces", []):
        for e in tr:
            if "addr" in e and "size" in e:
                lo = e["addr"] if lo is None else min(lo, e["addr"])
                hi = max(hi, e["addr"] + e["size"])
    return lo or 0, hi


def bank_of(k, addresses):
    """Address bank of repetition k (0: the original addresses)."""
    if k == 0:
        return 0
    return k if addresses == "unique" else 1 + (k - 1) % 2


def grow(snap, reps, f, addresses="banks", host_pins=0, host_truth=None):
    """Write `snap` with each device's window repeated `reps` times to the binary file `f`; returns the
    number of trace entries written. With `host_pins`, pinned host memory too (what it holds goes into the
    dict `host_truth`)."""
    lo, hi = address_span(snap)
    offset = 1 << max(21, (hi - lo).bit_length())  # above the whole address range, 2 MiB aligned
    traces = snap.get("device_traces", [])
    plans = [plan(t) for t in traces]
    spans = []
    for t in traces:
        times = [e["time_us"] for e in t if "time_us" in e]
        if len(times) > 1:
            gap = max(1, (times[-1] - times[0]) // max(1, len(times) - 1))
            spans.append(times[-1] - times[0] + gap)
        else:
            spans.append(1)

    # The end state: blocks the last repetition left live at moved addresses, per device.
    moved = {}  # (device, original addr) -> moved addr
    if reps > 1:
        for d, (block_of, pre_match, matched_end, end_live) in enumerate(plans):
            for i in matched_end:
                a = traces[d][i]["addr"]
                moved[(d, a)] = a + bank_of(reps - 1, addresses) * offset
    segments = segments_after(snap.get("segments", []), moved, traces)

    W = Writer(f)
    W.w(b"}\x94")
    W.put(snap)
    keys = list(snap.items())
    if host_pins > 0:
        t0 = next((e["time_us"] for t in traces for e in t if isinstance(e.get("time_us"), int)), 0)
        host_segments, host_traces, truth = pinned_host(reps, t0, spans[0] if spans else 1, host_pins)
        W.keep.extend((host_segments, host_traces))
        keys += [("host_segments", host_segments), ("host_traces", host_traces)]
        if host_truth is not None:
            host_truth.update(truth)
    W.w(b"(" if len(keys) > 1 else b"")
    written = 0
    for k, v in keys:
        W.save(k)
        if k == "segments":
            W.keep.append(segments)
            W.save(segments)
        elif k == "device_traces":
            written = write_traces(W, traces, plans, reps, offset, spans, addresses)
        elif k == "external_annotations" and reps > 1 and isinstance(v, list):
            grown = repeat_annotations(v, reps, spans[0] if spans else 1)
            W.keep.append(grown)
            W.save(grown)
        else:
            W.save(v)
        W.boundary()
    W.w(b"u" if len(keys) > 1 else b"s")
    W.finish()
    return written


def pinned_host(reps, t0, span, pins):
    """A data loader's pinned batches over `reps` steps (see the module's docstring): (segments, trace,
    truth). Frame dicts are shared, as torch symbolises each frame once; each allocation has its own list."""
    from .allocator import Clock
    from .newest import HostAllocator

    clock = Clock(t0)
    H = HostAllocator(clock)
    user = "/home/user/project/train.py"
    pin = {"name": "pin_memory", "filename": "/usr/lib/python3/site-packages/torch/utils/data/_utils/pin_memory.py",
           "line": 69}
    module = {"name": "<module>", "filename": user, "line": 120}
    field_frames = [{"name": "load_batch", "filename": user, "line": 40 + i} for i in range(pins)]
    sizes = (3_000_000, 100_000, 1_200_000, 50_000, 8_000_000, 20_000)
    prev = []
    for k in range(reps):
        clock.t = max(clock.t, t0 + k * span)
        cur = [H.malloc(sizes[i % len(sizes)] + i, [pin, field_frames[i], module]) for i in range(pins)]
        done = [pin, {"name": "copy_batch", "filename": user, "line": 60}, module]
        for addr in prev:
            H.free(addr, done)
        prev = cur
    segments = H.segments()
    truth = {"segments": len(segments), "reservedBytes": sum(s["total_size"] for s in segments),
             "allocatedBytes": H.allocated, "peakAllocatedBytes": H.peak, "traceEntries": len(H.trace)}
    return segments, H.trace, truth


def repeat_annotations(anns, reps, span):
    out = list(anns)
    for k in range(1, reps):
        for a in anns:
            b = dict(a)
            if isinstance(b.get("time_us"), int):
                b["time_us"] += k * span
            out.append(b)
    return out


def segments_after(segments, moved, traces):
    """The original segments with the moved blocks inactive, plus copies of their segments at the moved
    addresses holding them (everything else in a copy is one inactive block, as a reused cached segment)."""
    if not moved:
        return segments
    out = []
    for seg in segments:
        dev = seg.get("device", 0)
        blocks = seg.get("blocks", [])
        hit = [b for b in blocks if (dev, b["address"]) in moved and b.get("state") == "active_allocated"]
        if not hit:
            out.append(seg)
            continue
        shift = moved[(dev, hit[0]["address"])] - hit[0]["address"]
        stay = dict(seg)
        stay["blocks"] = [inactive(b) if b in hit else b for b in blocks]
        copy = dict(seg)
        copy["address"] = seg["address"] + shift
        copy["blocks"] = [dict(b, address=b["address"] + shift) if b in hit else
                          inactive(dict(b, address=b["address"] + shift)) for b in blocks]
        for s in (stay, copy):
            act = [b for b in s["blocks"] if b.get("state") == "active_allocated"]
            s["allocated_size"] = sum(b["size"] for b in act)
            s["active_size"] = sum(b["size"] for b in act)
            if "requested_size" in s:
                s["requested_size"] = sum(b.get("requested_size", b["size"]) for b in act)
        out.append(stay)
        out.append(copy)
    return out


def inactive(b):
    c = dict(b)
    c["state"] = "inactive"
    if "frames" in c:
        c["frames"] = []
    if "requested_size" in c:
        c["requested_size"] = 0
    return c


def write_traces(W, traces, plans, reps, offset, spans, addresses):
    W.w(b"]\x94")
    W.put(traces)
    written = 0
    n_dev = len(traces)
    if n_dev > 1:
        W.w(b"(")
    for d, t in enumerate(traces):
        if reps == 1 or not t:
            W.save(t)
            written += len(t)
        else:
            written += write_grown_trace(W, t, plans[d], reps, offset, spans[d], addresses)
        W.boundary()
    if n_dev > 1:
        W.w(b"e")
    elif n_dev == 1:
        W.w(b"a")
    return written


def write_grown_trace(W, t, pl, reps, offset, span, addresses):
    block_of, pre_match, matched_end, end_live = pl
    codec = EntryCodec(W, t)
    W.w(b"]\x94")
    W.put(t)
    pending = []  # entries of the current 1000-batch

    def flush():
        if len(pending) > 1:
            W.w(b"(" + b"".join(pending) + b"e")
        elif pending:
            W.w(pending[0] + b"a")
        pending.clear()
        W.boundary()

    written = 0
    # Repetition 0: the original entries, through the identity memo (so they match CPython's bytes).
    for e in t:
        start = W.blen
        buf_len = len(W.buf)
        W.save(e)
        pending.append(b"".join(W.buf[buf_len:]))
        del W.buf[buf_len:]
        W.blen = start
        written += 1
        if len(pending) == 1000:
            flush()
    for k in range(1, reps):
        per_rep = {}
        for i, e in enumerate(t):
            a = e.get("action")
            if a not in KEEP_ACTIONS:
                continue
            kind, ident = block_of[i]
            if kind == "in":
                if ident in end_live and ident not in matched_end:
                    continue  # an end-live allocation no later free matches: once is enough
                addr = e["addr"] + bank_of(k, addresses) * offset
            else:
                m = pre_match.get(ident)
                if m is None:
                    continue  # a pre-window free with no same-size block to free
                addr = t[m]["addr"] + bank_of(k - 1, addresses) * offset
            pending.append(codec.entry(e, addr, e["time_us"] + k * span, per_rep))
            written += 1
            if len(pending) == 1000:
                flush()
    flush()
    return written


def load(path):
    class Safe(pickle.Unpickler):
        def find_class(self, module, name):
            raise pickle.UnpicklingError(f"grow-real reads plain snapshots only (found {module}.{name})")

    with open(path, "rb") as f:
        snap = Safe(f).load()
    if not isinstance(snap, dict):
        raise SystemExit(f"grow-real: {path} is an old-format snapshot (a list of segments, no trace): nothing to grow")
    return snap


def entry_bytes(snap, addresses="banks", host_pins=0):
    """Bytes per repetition, estimated from one repetition's output size."""
    import io

    sizes = []
    for reps in (1, 2, 3):
        buf = io.BytesIO()
        grow(snap, reps, buf, addresses, host_pins)
        sizes.append(len(buf.getvalue()))
    return sizes[0], sizes[2] - sizes[1]


def write_grown(src, out, target_mb, addresses="banks", host_pins=0):
    snap = load(src)
    base, per_rep = entry_bytes(snap, addresses, host_pins)
    reps = max(1, 1 + round((target_mb * 1e6 - base) / max(1, per_rep)))
    host = {}
    with open(out, "wb") as f:
        n = grow(snap, reps, f, addresses, host_pins, host)
    truth = {"source": src, "repetitions": reps, "entries": n, "addresses": addresses}
    if host_pins > 0:
        truth["host"] = host
    return truth


def verify(src):
    """With nothing added the output's opcodes equal the original file's (FRAME aside)."""
    import io
    import pickletools

    snap = load(src)
    buf = io.BytesIO()
    grow(snap, 1, buf)

    def ops(raw):
        return [(op.name, arg) for op, arg, _ in pickletools.genops(raw) if op.name != "FRAME"]

    with open(src, "rb") as f:
        original = f.read()
    a, b = ops(original), ops(buf.getvalue())
    if a != b:
        at = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        raise AssertionError(f"grow-real: opcode {at} differs: {a[at:at + 3]} vs {b[at:at + 3]}")
    return len(a)
