"""A faithful, small simulation of PyTorch's caching allocator (c10/cuda/CUDACachingAllocator.cpp) and of
torch_npu's NPUCachingAllocator, enough to produce snapshots whose segments, blocks and trace agree with each
other exactly as a real `_snapshot()` does.

What is modelled (from the allocator source):
- round_size: CUDA rounds to 512-byte multiples (min 512); torch_npu adds 32 bytes first.
- pools: requests <= 1 MiB (rounded) use the small pool (2 MiB segments); others the large pool:
  segments of 20 MiB for 1..10 MiB requests, else the request rounded up to 2 MiB.
- best fit among cached free blocks of the same pool and stream, ordered by (size, address).
- splitting: the allocated part is a NEW block at the front; the remainder keeps the old block's identity
  (so it keeps a stale requested_size; a fresh segment's remainder has requested_size 0). Large-pool blocks
  split only when more than 1 MiB remains, small-pool (and expandable) blocks when >= 512 bytes remain.
- free: free_requested (allocated drops), then free_completed when no stream use is pending (active drops),
  merge with free neighbours (the freed block survives, the neighbour is deleted).
- a segment's frames (context_when_segment_allocated) live on its ORIGINAL head block only: they vanish from
  the snapshot once the head is split off or merged away, as in real files.
- release of cached segments (empty_cache / before an OOM), OOM records (device_free), snapshot markers,
  expandable segments (segment_map / segment_unmap, tail-only unmapping), private pools (segment_pool_id).
- the allocator statistics that torch.cuda.memory_stats() reports.
- history recording switched on late (`record_history` False until `_record_memory_history`): no trace
  entries and no contexts (blocks and segments allocated meanwhile carry no frames); the observer still sees
  every event, so bookkeeping of the whole run stays exact.
"""

import bisect

MIN_BLOCK = 512
SMALL_SIZE = 1 << 20          # largest "small" request (1 MiB)
SMALL_BUFFER = 2 << 20        # small segments are 2 MiB
LARGE_BUFFER = 20 << 20       # 1..10 MiB requests get a 20 MiB segment
MIN_LARGE_ALLOC = 10 << 20
ROUND_LARGE = 2 << 20
GiB = 1 << 30


class OutOfMemory(Exception):
    """Raised by Allocator.malloc when the simulated device is full (an `oom` record was written)."""


class Clock:
    """Microsecond wall clock shared by the allocators of one simulated process."""

    def __init__(self, start_us=1763324225770003):
        self.t = start_us

    def tick(self, us=1):
        self.t += us
        return self.t


class Ctx:
    """One gathered context (a CapturedTraceback). Identity matters: every record that captured the same
    context shares one frames list in the snapshot (pickle memoises it)."""

    __slots__ = ("frames", "site", "uid")
    _next = 0

    def __init__(self, frames, site=None):
        self.frames = tuple(frames)
        self.site = site  # innermost user frame "path:line:function", or None
        Ctx._next += 1
        self.uid = Ctx._next


class TraceRec:
    """One trace entry as the allocator records it (before rendering to a dict)."""

    __slots__ = ("action", "addr", "size", "stream", "time_us", "ctx")

    def __init__(self, action, addr, size, stream, time_us, ctx):
        self.action = action
        self.addr = addr  # for "oom" this is device_free
        self.size = size
        self.stream = stream
        self.time_us = time_us
        self.ctx = ctx


class Segment:
    __slots__ = ("device", "addr", "size", "stream", "small", "pool_id", "expandable", "head", "page")

    def __init__(self, device, addr, size, stream, small, pool_id, expandable=False, page=0):
        self.device = device
        self.addr = addr
        self.size = size  # for expandable segments: bytes currently mapped
        self.stream = stream
        self.small = small
        self.pool_id = pool_id
        self.expandable = expandable
        self.head = None
        self.page = page

    def blocks(self):
        b = self.head
        while b is not None:
            yield b
            b = b.next


class Block:
    __slots__ = ("addr", "size", "requested", "allocated", "pending", "ctx", "seg_ctx", "prev", "next",
                 "seg", "alloc")

    def __init__(self, seg, addr, size):
        self.seg = seg
        self.addr = addr
        self.size = size
        self.requested = 0
        self.allocated = False
        self.pending = False  # freed by the user, waiting for stream events (active_pending_free)
        self.ctx = None       # context_when_allocated
        self.seg_ctx = None   # context_when_segment_allocated (original head block only)
        self.prev = None
        self.next = None
        self.alloc = None

    @property
    def state(self):
        if self.allocated:
            return "active_allocated"
        return "active_pending_free" if self.pending else "inactive"


class Alloc:
    """What a tensor's storage holds: the block plus the generator's own labels (category, call site)."""

    __slots__ = ("uid", "nbytes", "block", "stream", "category", "kind", "site", "label", "free_ctx",
                 "recorded")
    _next = 0

    def __init__(self, nbytes, block, stream, category, kind, site, label, recorded=True):
        Alloc._next += 1
        self.uid = Alloc._next
        self.nbytes = nbytes
        self.block = block
        self.stream = stream
        self.category = category
        self.kind = kind
        self.site = site
        self.label = label
        self.free_ctx = None
        self.recorded = recorded  # allocated while history was recorded (else its block has no frames)

    @property
    def size(self):
        return self.block.size


class AddressSpace:
    """Hands out 2 MiB-aligned device addresses like cudaMalloc: mostly increasing, freed ranges reused."""

    def __init__(self, base=0x7F3A2C000000, gap_every=3):
        self.next = base
        self.freed = []  # (addr, size)
        self.count = 0
        self.gap_every = gap_every

    def take(self, size):
        for i, (a, s) in enumerate(self.freed):
            if s >= size:
                if s == size:
                    del self.freed[i]
                else:
                    self.freed[i] = (a + size, s - size)
                return a
        self.count += 1
        if self.gap_every and self.count % self.gap_every == 0:
            self.next += ROUND_LARGE  # other allocations (cuBLAS handles, NCCL, ...) sit between ours
        a = self.next
        self.next += -(-size // ROUND_LARGE) * ROUND_LARGE
        return a

    def give_back(self, addr, size):
        self.freed.append((addr, size))
        self.freed.sort()

    def reserve_va(self, size=1 << 40):
        """Virtual address range for an expandable segment."""
        a = self.next
        self.next += size
        return a


class Stat:
    __slots__ = ("current", "peak", "allocated", "freed")

    def __init__(self):
        self.current = self.peak = self.allocated = self.freed = 0

    def update(self, amount):
        self.current += amount
        if self.current > self.peak:
            self.peak = self.current
        if amount > 0:
            self.allocated += amount
        elif amount < 0:
            self.freed -= amount


STAT_NAMES = ("allocation", "segment", "active", "inactive_split", "allocated_bytes", "reserved_bytes",
              "active_bytes", "inactive_split_bytes", "requested_bytes")


class Allocator:
    """One device's caching allocator. Records TraceRec objects into `self.trace` (or calls `recorder`)."""

    def __init__(self, device=0, flavor="cuda", clock=None, capacity=80 * GiB, space=None,
                 expandable=False, recorder=None, record=True):
        self.device = device
        self.flavor = flavor
        self.clock = clock or Clock()
        self.capacity = capacity
        self.space = space or AddressSpace()
        self.expandable = expandable
        self.trace = []
        self.recorder = recorder
        self.record_history = record  # False: nothing is recorded and no context kept (observer still called)
        self.observer = None     # called as observer(rec, block) after each event (bookkeeping hooks)
        self.track_stats = True  # memory_stats() counters (big turns them off for speed)
        self.segments = {}       # addr -> Segment (regular)
        self.exp_segments = {}   # (small, pool_id, stream) -> Segment (expandable)
        self.free_keys = {}      # pool key -> sorted [(size, addr)]
        self.free_blocks = {}    # pool key -> {addr: Block}
        self.reserved = 0
        self.stats = {n: {p: Stat() for p in ("all", "large_pool", "small_pool")} for n in STAT_NAMES}
        self.num_alloc_retries = 0
        self.num_ooms = 0
        self.num_device_alloc = 0
        self.num_device_free = 0
        self.live = {}           # Alloc uid -> Alloc (allocated or pending)

    # ---- recording -------------------------------------------------------------------------------
    def _rec(self, action, addr, size, stream, ctx, block=None):
        if not self.record_history:
            if self.observer is not None and self.recorder is None:
                self.observer(TraceRec(action, addr, size, stream, self.clock.tick(1), None), block)
            return
        t = self.clock.tick(1)
        if self.recorder is not None:
            self.recorder(action, addr, size, stream, t, ctx)
            return
        rec = TraceRec(action, addr, size, stream, t, ctx)
        self.trace.append(rec)
        if self.observer is not None:
            self.observer(rec, block)

    def _stat(self, name, small, amount):
        if not self.track_stats:
            return
        s = self.stats[name]
        s["all"].update(amount)
        s["small_pool" if small else "large_pool"].update(amount)

    # ---- sizes ------------------------------------------------------------------------------------
    def round_size(self, n):
        if self.flavor == "npu":
            n += 32
        if n < MIN_BLOCK:
            return MIN_BLOCK
        return -(-n // MIN_BLOCK) * MIN_BLOCK

    @staticmethod
    def allocation_size(size):
        if size <= SMALL_SIZE:
            return SMALL_BUFFER
        if size < MIN_LARGE_ALLOC:
            return LARGE_BUFFER
        return -(-size // ROUND_LARGE) * ROUND_LARGE

    # ---- free-block pools ------------------------------------------------------------------------
    @staticmethod
    def _key(seg):
        return (seg.small, seg.pool_id, seg.stream)

    def _pool_add(self, b):
        k = self._key(b.seg)
        bisect.insort(self.free_keys.setdefault(k, []), (b.size, b.addr))
        self.free_blocks.setdefault(k, {})[b.addr] = b

    def _pool_remove(self, b):
        k = self._key(b.seg)
        keys = self.free_keys[k]
        i = bisect.bisect_left(keys, (b.size, b.addr))
        assert keys[i] == (b.size, b.addr)
        del keys[i]
        del self.free_blocks[k][b.addr]

    def _get_free_block(self, small, pool_id, stream, size):
        k = (small, pool_id, stream)
        keys = self.free_keys.get(k)
        if not keys:
            return None
        i = bisect.bisect_left(keys, (size, -1))
        if i == len(keys):
            return None
        b = self.free_blocks[k][keys[i][1]]
        self._pool_remove(b)
        return b

    # ---- malloc -----------------------------------------------------------------------------------
    def malloc(self, nbytes, ctx, stream=0, pool_id=(0, 0), category="unknown", kind="", site=None,
               label=""):
        if not self.record_history:
            ctx = None  # no context is gathered while history is off
        size = self.round_size(nbytes)
        small = size <= SMALL_SIZE
        block = self._get_free_block(small, pool_id, stream, size)
        if block is None:
            if self.expandable:
                block = self._expand(small, pool_id, stream, size, ctx)
            else:
                block = self._alloc_block(small, pool_id, stream, size, ctx)
        if self._should_split(block, size):
            block = self._split(block, size)
        block.allocated = True
        block.requested = nbytes
        block.ctx = ctx
        if site is None and ctx is not None:
            site = ctx.site
        a = Alloc(nbytes, block, stream, category, kind, site, label, self.record_history)
        block.alloc = a
        self.live[a.uid] = a
        self._stat("allocation", small, 1)
        self._stat("allocated_bytes", small, block.size)
        self._stat("active", small, 1)
        self._stat("active_bytes", small, block.size)
        self._stat("requested_bytes", small, nbytes)
        self._rec("alloc", block.addr, nbytes, stream, ctx, block)
        return a

    def _should_split(self, block, size):
        remaining = block.size - size
        if block.seg.small or block.seg.expandable:
            return remaining >= MIN_BLOCK
        return remaining > SMALL_SIZE

    def _split(self, remaining, size):
        """The allocated part becomes a new block in front; `remaining` keeps its identity."""
        seg = remaining.seg
        b = Block(seg, remaining.addr, size)
        b.prev = remaining.prev
        if b.prev is not None:
            b.prev.next = b
        b.next = remaining
        remaining.prev = b
        remaining.addr += size
        remaining.size -= size
        if seg.head is remaining:
            seg.head = b
        self._pool_add(remaining)
        return b

    def _make_room(self, need, ctx):
        if self.reserved + need <= self.capacity:
            return True
        self.num_alloc_retries += 1
        self.release_cached(ctx)
        return self.reserved + need <= self.capacity

    def _oom(self, size, stream, ctx):
        self.num_ooms += 1
        self._rec("oom", self.capacity - self.reserved, size, stream, ctx)
        raise OutOfMemory(f"tried to allocate {size} bytes with {self.capacity - self.reserved} free")

    def _alloc_block(self, small, pool_id, stream, size, ctx):
        seg_size = self.allocation_size(size)
        if not self._make_room(seg_size, ctx):
            self._oom(size, stream, ctx)
        addr = self.space.take(seg_size)
        seg = Segment(self.device, addr, seg_size, stream, small, pool_id)
        b = Block(seg, addr, seg_size)
        b.seg_ctx = ctx
        seg.head = b
        self.segments[addr] = seg
        self.reserved += seg_size
        self.num_device_alloc += 1
        self._rec("segment_alloc", addr, seg_size, stream, ctx)
        self._stat("segment", small, 1)
        self._stat("reserved_bytes", small, seg_size)
        return b

    def _expand(self, small, pool_id, stream, size, ctx):
        """Expandable segments: map more pages at the end of the (stream, pool) segment."""
        key = (small, pool_id, stream)
        seg = self.exp_segments.get(key)
        page = SMALL_BUFFER if small else LARGE_BUFFER
        if seg is None:
            seg = Segment(self.device, self.space.reserve_va(), 0, stream, small, pool_id, True, page)
            self.exp_segments[key] = seg
        retried = False
        while True:
            tail = None
            for tail in seg.blocks():
                pass
            tail_free = tail is not None and not tail.allocated and not tail.pending
            need = size - (tail.size if tail_free else 0)
            map_size = -(-need // page) * page
            if self.reserved + map_size <= self.capacity:
                break
            if retried:
                self._oom(size, stream, ctx)
            self.num_alloc_retries += 1
            self.release_cached(ctx)
            retried = True
        map_addr = seg.addr + seg.size
        seg.size += map_size
        self.reserved += map_size
        self._rec("segment_map", map_addr, map_size, stream, ctx)
        self._stat("reserved_bytes", small, map_size)
        if tail_free:
            self._pool_remove(tail)
            tail.size += map_size
            return tail
        b = Block(seg, map_addr, map_size)
        if tail is None:
            seg.head = b
            b.seg_ctx = ctx
        else:
            tail.next = b
            b.prev = tail
        return b

    # ---- free -------------------------------------------------------------------------------------
    def free(self, a, ctx=None, deferred=False):
        """The user's free: free_requested; free_completed now, or later (complete_free) when deferred
        (record_stream / cross-stream use keeps the block active_pending_free)."""
        b = a.block
        small = b.seg.small
        b.allocated = False
        self._stat("allocation", small, -1)
        self._stat("allocated_bytes", small, -b.size)
        self._rec("free_requested", b.addr, b.requested, a.stream, ctx or b.ctx, b)
        if deferred:
            b.pending = True
            a.free_ctx = ctx
            return
        self._free_block(b, ctx)

    def complete_free(self, a, ctx=None):
        b = a.block
        assert b.pending
        b.pending = False
        self._free_block(b, ctx)

    def _free_block(self, b, ctx):
        a = b.alloc
        small = b.seg.small
        orig_size, req = b.size, b.requested
        self._stat("active", small, -1)
        self._stat("active_bytes", small, -orig_size)
        self._stat("requested_bytes", small, -req)
        self._rec("free_completed", b.addr, b.requested, b.seg.stream, ctx or b.ctx, b)
        b.ctx = None
        for cand in (b.prev, b.next):
            self._try_merge(b, cand)
        self._pool_add(b)
        b.alloc = None
        if a is not None:
            self.live.pop(a.uid, None)

    def _try_merge(self, dst, src):
        if src is None or src.allocated or src.pending:
            return
        self._pool_remove(src)
        seg = dst.seg
        if dst.prev is src:
            dst.addr = src.addr
            dst.prev = src.prev
            if dst.prev is not None:
                dst.prev.next = dst
            if seg.head is src:
                seg.head = dst
        else:
            dst.next = src.next
            if dst.next is not None:
                dst.next.prev = dst
        dst.size += src.size

    # ---- cache release, markers ------------------------------------------------------------------
    def release_cached(self, ctx=None):
        """empty_cache(): cudaFree every wholly free segment (large pool first), unmap free tails."""
        for small in (False, True):
            for k in sorted(k for k in self.free_keys if k[0] == small):
                for size, addr in list(self.free_keys[k]):
                    b = self.free_blocks[k][addr]
                    if b.seg.expandable or b.prev is not None or b.next is not None:
                        continue
                    self._pool_remove(b)
                    seg = b.seg
                    del self.segments[seg.addr]
                    self.reserved -= seg.size
                    self.num_device_free += 1
                    self.space.give_back(seg.addr, seg.size)
                    self._rec("segment_free", seg.addr, seg.size, seg.stream, ctx or b.seg_ctx)
                    self._stat("segment", small, -1)
                    self._stat("reserved_bytes", small, -seg.size)
        for seg in self.exp_segments.values():
            self._unmap_tail(seg, ctx)

    def _unmap_tail(self, seg, ctx):
        tail = None
        for tail in seg.blocks():
            pass
        if tail is None or tail.allocated or tail.pending:
            return
        off = tail.addr - seg.addr
        start = -(-off // seg.page) * seg.page
        size = seg.size - start
        if size <= 0:
            return
        self._pool_remove(tail)
        if start == off:
            if tail.prev is not None:
                tail.prev.next = None
            else:
                seg.head = None
        else:
            tail.size -= size
            self._pool_add(tail)
        seg.size -= size
        self.reserved -= size
        self._rec("segment_unmap", seg.addr + start, size, seg.stream, ctx)
        self._stat("reserved_bytes", seg.small, -size)

    def snapshot_marker(self):
        """What `_snapshot()` itself records (seen in the NEXT dump's trace): addr 0, size = total active."""
        self._rec("snapshot", 0, self.active_bytes(), 0, None)

    # ---- state views ------------------------------------------------------------------------------
    def all_segments(self):
        segs = list(self.segments.values()) + [s for s in self.exp_segments.values() if s.size > 0]
        return sorted(segs, key=lambda s: s.addr)

    def allocated_bytes(self):
        return self.stats["allocated_bytes"]["all"].current

    def active_bytes(self):
        return self.stats["active_bytes"]["all"].current

    def requested_bytes(self):
        return self.stats["requested_bytes"]["all"].current

    def tally(self):
        """Counts and sums of the current state from the simulation's own bookkeeping."""
        segs = self.all_segments()
        t = {"segments": len(segs), "blocks": 0, "reservedBytes": 0, "allocatedBytes": 0,
             "activeBytes": 0, "requestedBytes": 0, "blockStates": {}, "liveBlockBytes": 0}
        for s in segs:
            t["reservedBytes"] += s.size
            for b in s.blocks():
                t["blocks"] += 1
                st = b.state
                t["blockStates"][st] = t["blockStates"].get(st, 0) + 1
                if st != "inactive":
                    t["activeBytes"] += b.size
                    t["requestedBytes"] += b.requested
                if st == "active_allocated":
                    t["allocatedBytes"] += b.size
                    t["liveBlockBytes"] += b.size
        return t

    def memory_stats(self):
        """torch.cuda.memory_stats()-shaped flat dict (inactive_split* are exact only for `current`)."""
        inact_n = {"all": 0, "large_pool": 0, "small_pool": 0}
        inact_b = dict(inact_n)
        for s in self.all_segments():
            if s.expandable:
                continue
            for b in s.blocks():
                if b.state == "inactive" and (b.prev is not None or b.next is not None):
                    p = "small_pool" if s.small else "large_pool"
                    for q in ("all", p):
                        inact_n[q] += 1
                        inact_b[q] += b.size
        out = {}
        for name in STAT_NAMES:
            for pool in ("all", "large_pool", "small_pool"):
                st = self.stats[name][pool]
                vals = {"current": st.current, "peak": st.peak, "allocated": st.allocated, "freed": st.freed}
                if name == "inactive_split":
                    vals["current"] = inact_n[pool]
                    vals["peak"] = max(st.peak, inact_n[pool])
                if name == "inactive_split_bytes":
                    vals["current"] = inact_b[pool]
                    vals["peak"] = max(st.peak, inact_b[pool])
                for k, v in vals.items():
                    out[f"{name}.{pool}.{k}"] = v
        out["max_split_size"] = -1
        out["num_alloc_retries"] = self.num_alloc_retries
        out["num_device_alloc"] = self.num_device_alloc
        out["num_device_free"] = self.num_device_free
        out["num_ooms"] = self.num_ooms
        out["num_sync_all_streams"] = 0
        for k in ("current", "peak", "allocated", "freed"):
            out[f"oversize_allocations.{k}"] = 0
            out[f"oversize_segments.{k}"] = 0
        return dict(sorted(out.items()))
