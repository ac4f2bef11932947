#!/usr/bin/env python3
"""The inactive-split curve of a snapshot's trace, replayed independently: after each event, the free bytes
inside the reserved segments that hold at least one active block (Σ over such segments of size − active
bytes). For non-expandable segments that is what memory_stats() calls inactive_split_bytes: every inactive
block of a segment that still holds an active one is a split block, and empty_cache() cannot return it.

    python3 test/tools/py_inactive_split.py FILE [--device D]

Prints {"device", "events", "maxBytes", "maxEvent", "endBytes"}: the curve's highest value (its first event)
and its value after the last event. The source of expected values for the rank overview's health overlay
(e2e/ranks.spec.ts).

The rules: an allocation is active from its `alloc` until its `free_completed` (a pending free still holds
its block), with test/tools/replay.py's rounded block size; segments come from `segment_alloc` /
`segment_free` and, for those the trace never names, from the snapshot (reserved throughout). Expandable
segments are refused (their mapped pages are not modelled here). Standard library only; no peakscope code.
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from py_inspect import load_snapshot  # noqa: E402
from replay import NEVER, Segments, check_settings, is_npu, size_allocations, workspace_indices  # noqa: E402


def curve(tr, dev, segs, npu):
    if any(s.get("is_expandable") for s in segs if int(s.get("device", 0)) == dev):
        raise ValueError("expandable segments are not modelled")
    skip = workspace_indices(tr)
    fixed = [(s["address"], s["total_size"]) for s in segs if int(s.get("device", 0)) == dev]
    segments = Segments(tr, skip, fixed)
    allocs, _replayable, _alive_end = size_allocations(tr, dev, segs, npu)
    active = {}  # segment start -> active bytes in it
    home = {}  # id(allocation) -> its segment's start

    def add(x):
        seg = segments.containing(x.addr)
        if seg is None:
            raise ValueError(f"no segment holds the block at {x.addr:#x}")
        home[id(x)] = seg[0]
        active[seg[0]] = active.get(seg[0], 0) + x.size

    def remove(x):
        s = home.pop(id(x))
        active[s] -= x.size
        if active[s] == 0:
            del active[s]

    opens, closes = {}, {}
    for x in allocs:
        if x.start >= 0:
            opens.setdefault(x.start, []).append(x)
        if x.free_comp != NEVER and x.free_comp > x.start:
            closes.setdefault(x.free_comp, []).append(x)
    for x in allocs:  # active before the first event
        if x.start < 0 and x.free_comp >= 0:
            add(x)
    best, best_event, value = None, None, None
    for i, e in enumerate(tr):
        if i not in skip and e.get("action") in ("segment_alloc", "segment_free"):
            segments.apply(e)
        for x in closes.get(i, []):
            if x.start >= 0 or id(x) in home:
                remove(x)
        for x in opens.get(i, []):
            if x.free_comp > i:
                add(x)
        value = sum(segments.size[s] - a for s, a in active.items())
        if best is None or value > best:
            best, best_event = value, i
    return {"device": dev, "events": len(tr), "maxBytes": best, "maxEvent": best_event, "endBytes": value}


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--device", type=int)
    a = ap.parse_args(argv)
    snap, _fmt, _proto = load_snapshot(a.file)
    check_settings(snap)
    traces = snap.get("device_traces") or []
    dev = a.device if a.device is not None else next(i for i, t in enumerate(traces) if t)
    print(json.dumps(curve(traces[dev], dev, snap.get("segments") or [], is_npu(snap))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
