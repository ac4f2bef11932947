#!/usr/bin/env python3
"""Independent replay of a snapshot's device traces: the peak allocated bytes, its event, and the blocks
live at it. The source of expected values for the real-corpus peak test (test/report-corpus-peak.test.ts).

    python3 test/tools/replay.py [--curve] FILE [FILE...]

Prints one JSON object {file name: result}, where result is {"devices": [...]} or {"error": text}.
Each device with a non-empty trace gives:
  device, events        the index into device_traces and its length
  replayable            alloc / free_requested / free_completed entries
  peakBytes             the highest allocated bytes after any event of the list (rounded block bytes: the
                        measure of memory_allocated() / max_memory_allocated())
  peakEvent             the first event index (into the device's list) reaching it
  initialBytes          allocated before event 0 (blocks alive before the trace window)
  beforeTraceBytes      of peakBytes, the bytes of allocations made before the trace
  snapshotAllocatedBytes  Σ allocated_size of the device's segments
  blocks                [[address, sizeBytes], ...] allocated (not pending free) after peakEvent, by address
  aliveAtEnd / sizedBy  counts, for the test's messages
  allocated             with --curve: the allocated bytes after every event

Written from the snapshot format (../shared/docs/snapshot-format.md) and PyTorch's caching allocator
(CUDACachingAllocator.cpp), not from peakscope's TypeScript. The rules:

- Allocated bytes are the allocator's allocated_bytes stat: `alloc` adds the block; the user's free
  (`free_requested`, recorded in free()) removes it, while the block stays active until `free_completed`
  (free_block(): record_stream / cross-stream events can delay it). A `free_completed` with no
  `free_requested` before it (older writers, skip_actions) is both. Note: the format doc's "Replay semantics"
  says allocated moves at free_completed; that is MemoryViz's "active" view. free() decrements
  allocated_bytes before deciding whether to wait for events, and Σ segment allocated_size (which excludes
  active_pending_free blocks) is what the end state must equal, so free_requested it is.
- An allocation is (address, ordinal): an `alloc` over an address still open closes the old one there.
- The ring buffer: a free of an address with nothing open is an allocation made before the trace (alive from
  the start; a lone free_completed means its free was requested before the trace: active, not allocated).
  A block active in `segments` at an address no alloc/free entry names was allocated before the trace and
  lives throughout.
- Sizes are rounded block bytes. A block still open at the end has the snapshot block's size. Otherwise
  round_size(requested): max(512, multiple of 512) (torch_npu: +32 first). Blocks > 1 MiB come from the large
  pool, where a free block is split only when more than 1 MiB would remain (kSmallSize): best fit hands out
  the start of a free block, and the free block at the address runs to the next active block of the segment
  or its end, so the block is that whole run when run <= rounded + 1 MiB, else exactly rounded. Expandable
  segments split exactly (rounded). A large block alive before the trace and freed in it: at the trace's
  start, the space after it up to the next active block is either part of it or a free large block (> 1 MiB),
  so run <= rounded + 1 MiB gives the run; otherwise rounded (a lower bound).
- torch_npu's workspace entries (`workspace_snapshot` and the segment_alloc / alloc that follow it at its
  address) describe a separate allocator at dump time: not part of allocated.
- Not modelled (the file is refused with an error): max_split_size set, roundup_power2_divisions non-zero.

Standard library only; reuses py_inspect's restricted unpickler.
"""

import bisect
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from py_inspect import load_snapshot  # noqa: E402

MiB = 1 << 20
NEVER = float("inf")
ALLOC, FREE_REQ, FREE_COMP = "alloc", "free_requested", "free_completed"


def round_size(n, npu):
    if npu:
        n += 32
    return 512 if n < 512 else (n + 511) // 512 * 512


def check_settings(snap):
    s = snap.get("allocator_settings") or {}
    mss = s.get("max_split_size", -1)
    if mss not in (-1, None) and mss < (1 << 62):
        raise ValueError(f"max_split_size {mss} is not modelled")
    div = s.get("roundup_power2_divisions") or {}
    if isinstance(div, dict) and any(v for v in div.values()):
        raise ValueError("roundup_power2_divisions is not modelled")


def is_npu(snap):
    for tr in snap.get("device_traces") or []:
        for e in tr or []:
            if e.get("action") == "workspace_snapshot":
                return True
            for f in e.get("frames") or []:
                if "torch_npu" in str(f.get("name", "")) or "torch_npu" in str(f.get("filename", "")):
                    return True
    return False


def final_state(segs, dev):
    """Active blocks {address: (size, pending)} and the non-expandable / expandable segment ranges."""
    active, fixed, expandable = {}, [], []
    for s in segs:
        if int(s.get("device", 0)) != dev:
            continue
        (expandable if s.get("is_expandable") else fixed).append((s["address"], s["total_size"]))
        a = s["address"]
        for b in s.get("blocks") or []:
            ba = b.get("address", a)
            st = b.get("state")
            if st in ("active_allocated", "active_pending_free", "active_awaiting_free"):
                active[ba] = (b["size"], st != "active_allocated")
            a = ba + b["size"]
    return active, fixed, expandable


def workspace_indices(tr):
    out = set()
    for i, e in enumerate(tr):
        if e.get("action") == "workspace_snapshot":
            out.add(i)
            for j in (i + 1, i + 2):
                if j < len(tr) and tr[j].get("action") in ("segment_alloc", ALLOC) and tr[j].get("addr") == e.get("addr"):
                    out.add(j)
    return out


class Alloc:
    __slots__ = ("addr", "requested", "start", "free_req", "free_comp", "size", "sized_by")

    def __init__(self, addr, requested, start):
        self.addr, self.requested, self.start = addr, requested, start
        self.free_req = self.free_comp = NEVER
        self.size = None
        self.sized_by = None


class Segments:
    """Non-expandable segments reserved at each moment (segment_alloc / segment_free), as sorted ranges."""

    def __init__(self, tr, skip, fixed):
        first = {}
        for i, e in enumerate(tr):
            if i in skip:
                continue
            if e.get("action") in ("segment_alloc", "segment_free") and e.get("addr") not in first:
                first[e["addr"]] = (e["action"], e.get("size"))
        reserved = {a: n for a, n in fixed if a not in first}
        for a, (act, n) in first.items():
            if act == "segment_free":
                reserved[a] = n
        self.starts = sorted(reserved)
        self.size = dict(reserved)

    def apply(self, e):
        a = e.get("addr")
        if e["action"] == "segment_alloc" and a not in self.size:
            bisect.insort(self.starts, a)
            self.size[a] = e["size"]
        elif e["action"] == "segment_free" and a in self.size:
            self.starts.remove(a)
            del self.size[a]

    def containing(self, addr):
        k = bisect.bisect_right(self.starts, addr) - 1
        if k >= 0:
            s = self.starts[k]
            if addr < s + self.size[s]:
                return s, s + self.size[s]
        return None


def in_expandable(addr, expandable, mapped):
    return any(s <= addr < s + n for s, n in expandable) or any(s <= addr < s + n for s, n in mapped)


def fit(addr, rounded, seg, active_starts):
    """The large-pool rule: the whole free run when at most 1 MiB would remain, else exactly rounded."""
    k = bisect.bisect_right(active_starts, addr)
    end = seg[1]
    if k < len(active_starts) and active_starts[k] < end:
        end = active_starts[k]
    run = end - addr
    return (run, "fit-run") if rounded <= run <= rounded + MiB else (rounded, "rounded")


def size_allocations(tr, dev, segs, npu):
    """Every allocation of the device's trace (and the blocks alive before it) with its rounded size:
    (allocations, replayable entries, allocations still open at the end with the snapshot's block)."""
    skip = workspace_indices(tr)
    active_end, fixed, expandable = final_state(segs, dev)
    mapped = [(e["addr"], e["size"]) for e in tr if e.get("action") == "segment_map"]
    allocs, open_, touched = [], {}, set()
    replayable = 0
    # Pass 1: pair entries into allocations (start, free_req, free_comp); -1 = before the trace.
    for i, e in enumerate(tr):
        act = e.get("action")
        if i in skip or act not in (ALLOC, FREE_REQ, FREE_COMP):
            continue
        replayable += 1
        a = e.get("addr")
        touched.add(a)
        cur = open_.get(a)
        if act == ALLOC:
            if cur is not None:
                cur.free_req = min(cur.free_req, i)
                cur.free_comp = i
            x = Alloc(a, e["size"], i)
            allocs.append(x)
            open_[a] = x
        elif act == FREE_REQ:
            if cur is None:
                cur = Alloc(a, e["size"], -1)
                allocs.append(cur)
                open_[a] = cur
            if cur.free_req == NEVER:
                cur.free_req = i
        else:
            if cur is None:
                cur = Alloc(a, e["size"], -1)
                cur.free_req = -1
                allocs.append(cur)
            elif cur.free_req == NEVER:
                cur.free_req = i
            cur.free_comp = i
            open_.pop(a, None)
    workspace = {tr[i].get("addr") for i in skip}  # the workspace allocator's block, not allocated
    alive_end = 0
    for a, (size, pending) in active_end.items():
        if a in touched or a in workspace:
            continue
        x = Alloc(a, size, -1)
        x.size, x.sized_by = size, "untouched-block"
        if pending:
            x.free_req = -1
        allocs.append(x)
    for a, x in open_.items():
        if a in active_end and x.size is None:
            x.size, x.sized_by = active_end[a][0], "end-block"
            alive_end += 1

    # Pass 2: size the rest, walking the events with the active set (start addresses) and reserved segments.
    segments = Segments(tr, skip, fixed)
    active_starts = sorted(x.addr for x in allocs if x.start == -1 and x.free_comp >= 0)
    for x in allocs:  # alive before the trace and freed in it: the rule at the trace's start
        if x.size is None and x.start == -1:
            rounded = round_size(x.requested, npu)
            seg = segments.containing(x.addr)
            if rounded <= MiB or seg is None or in_expandable(x.addr, expandable, mapped):
                x.size, x.sized_by = rounded, "rounded"
            else:
                x.size, x.sized_by = fit(x.addr, rounded, seg, [s for s in active_starts if s != x.addr])
    by_event_open = {x.start: x for x in allocs if x.start >= 0}
    closes = {}
    for x in allocs:
        if x.free_comp != NEVER:
            closes.setdefault(x.free_comp, []).append(x)
    for i, e in enumerate(tr):
        if i in skip:
            continue
        act = e.get("action")
        if act in ("segment_alloc", "segment_free"):
            segments.apply(e)
        for x in closes.get(i, []):  # frees at i (and an alloc over a live address closing the old one)
            if x.start < i:
                active_starts.remove(x.addr)
        x = by_event_open.get(i)
        if x is not None:
            if x.size is None:
                rounded = round_size(x.requested, npu)
                seg = segments.containing(x.addr)
                if rounded <= MiB or in_expandable(x.addr, expandable, mapped):
                    x.size, x.sized_by = rounded, "rounded"
                elif seg is None:  # no segment holds it (only the synthetic mosaic file): a lower bound
                    x.size, x.sized_by = rounded, "rounded-no-segment"
                else:
                    x.size, x.sized_by = fit(x.addr, rounded, seg, active_starts)
            if x.free_comp > i:
                bisect.insort(active_starts, x.addr)

    return allocs, replayable, alive_end


def replay_device(tr, dev, segs, npu, curve=False):
    allocs, replayable, alive_end = size_allocations(tr, dev, segs, npu)
    # Pass 3: the allocated curve (after each event) and its first maximum.
    n = len(tr)
    delta = [0] * (n + 1)
    initial = 0
    for x in allocs:
        lo, hi = x.start, x.free_req
        if hi <= lo:
            continue
        if lo < 0:
            initial += x.size
            lo = 0
        delta[lo] += x.size
        if hi != NEVER:
            delta[hi] -= x.size
    # The peak is over every event of the list (a trace holding only a `snapshot` marker has one: the state
    # after it is everything alive before the trace).
    peak, peak_event, cur = None, None, 0
    allocated = []
    if n:
        for i in range(n):
            cur += delta[i]
            allocated.append(cur)
            if peak is None or cur > peak:
                peak, peak_event = cur, i
    blocks, before_trace = [], 0
    if peak_event is not None:
        live = [x for x in allocs if x.start <= peak_event < x.free_req]
        blocks = sorted([x.addr, x.size] for x in live)
        before_trace = sum(x.size for x in live if x.start < 0)
        assert sum(s for _, s in blocks) == peak
    sized_by = {}
    for x in allocs:
        sized_by[x.sized_by] = sized_by.get(x.sized_by, 0) + 1
    snapshot_allocated = sum(int(s.get("allocated_size", 0)) for s in segs if int(s.get("device", 0)) == dev)
    out = {"device": dev, "events": n, "replayable": replayable, "peakBytes": peak, "peakEvent": peak_event,
           "initialBytes": initial, "beforeTraceBytes": before_trace, "blocks": blocks,
           "snapshotAllocatedBytes": snapshot_allocated, "aliveAtEnd": alive_end, "sizedBy": sized_by}
    if curve:
        out["allocated"] = allocated
    return out


def replay_file(path, curve=False):
    snap, _fmt, _proto = load_snapshot(path)
    if not isinstance(snap, dict):
        return {"devices": []}
    check_settings(snap)
    npu = is_npu(snap)
    segs = snap.get("segments") or []
    return {"devices": [replay_device(tr, dev, segs, npu, curve)
                        for dev, tr in enumerate(snap.get("device_traces") or []) if tr]}


def main(argv):
    out = {}
    curve = "--curve" in argv
    for p in [a for a in argv if a != "--curve"]:
        try:
            out[os.path.basename(p)] = replay_file(p, curve)
        except Exception as e:  # noqa: BLE001 - a refused file is reported, the others still run
            out[os.path.basename(p)] = {"error": f"{type(e).__name__}: {e}"}
    print(json.dumps(out))
    return 0


def live_after(tr, dev, segs, npu, event):
    """The allocations alive (allocated, not pending free) after `event` of device `dev`, each block's
    frames at the snapshot by address (the stack of a live allocation made before the trace), and all of
    the device's allocations."""
    allocs, _replayable, _alive_end = size_allocations(tr, dev, segs, npu)
    end_frames = {}
    for s in segs:
        if int(s.get("device", 0)) != dev:
            continue
        addr = s["address"]
        for b in s.get("blocks") or []:
            ba = b.get("address", addr)
            end_frames[ba] = b.get("frames") or []
            addr = ba + b["size"]
    return [x for x in allocs if x.start <= event < x.free_req], end_frames, allocs


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

