#!/usr/bin/env python3
"""What a snapshot's trace says about one allocation, and about the frames alive at the peak: the source of
expected values for the e2e specs of the timeline ("each allocation") and the Flame tab.

    python3 test/tools/py_at_peak.py FILE [--device D] [--search TEXT ...] [--event N ...]

Prints one JSON object:
  device, peakBytes, peakEvent   test/tools/replay.py's replay of the device (the first with a trace unless
                                 --device)
  search     {TEXT: bytes}  Σ rounded bytes of the blocks allocated (not pending free) after peakEvent whose
             allocation stack holds a frame whose "filename:line:name" contains TEXT (case-insensitive, as
             "Search frames" reads it). The stack is the `alloc` entry's frames; a block alive before the
             trace that the trace never names has the snapshot block's frames; a block allocated before the
             trace and freed in it has no allocation stack known (counted in `noStackBytes`, never matched).
  noStackBytes  bytes at the peak with no allocation stack
  allocations   allocations of the device: one per `alloc` entry, plus the blocks alive before the trace
  event      {N: {addr, requestedBytes, sizeBytes, freeCompletedEvent, frames, firstFrame}} for the
             allocation an `alloc` entry N opens: its rounded size (replay.py's rule), the entry that
             completes its free (-1: still allocated at the end), and its stack's length.

Standard library only; no peakscope code.
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from py_inspect import load_snapshot  # noqa: E402
from replay import NEVER, check_settings, is_npu, live_after, replay_device  # noqa: E402


def frame_text(f):
    return f"{f.get('filename', '')}:{f.get('line', 0)}:{f.get('name', '')}".lower()


def main(argv):
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("--device", type=int)
    ap.add_argument("--search", action="append", default=[])
    ap.add_argument("--event", type=int, action="append", default=[])
    a = ap.parse_args(argv)
    snap, _fmt, _proto = load_snapshot(a.file)
    check_settings(snap)
    npu = is_npu(snap)
    segs = snap.get("segments") or []
    traces = snap.get("device_traces") or []
    dev = a.device if a.device is not None else next(i for i, t in enumerate(traces) if t)
    tr = traces[dev]
    r = replay_device(tr, dev, segs, npu)
    peak = r["peakEvent"]

    # The stack of each allocation alive at the peak (allocated, not pending free).
    live, end_frames, allocs = live_after(tr, dev, segs, npu, peak)
    assert sum(x.size for x in live) == r["peakBytes"]
    search = {q: 0 for q in a.search}
    no_stack = 0
    for x in live:
        if x.start >= 0:
            frames = tr[x.start].get("frames") or []
        elif x.sized_by == "untouched-block":
            frames = end_frames.get(x.addr, [])
        else:
            no_stack += x.size
            continue
        texts = [frame_text(f) for f in frames]
        for q in a.search:
            if any(q.lower() in t for t in texts):
                search[q] += x.size

    by_start = {x.start: x for x in allocs if x.start >= 0}
    events = {}
    for n in a.event:
        e = tr[n]
        assert e.get("action") == "alloc", f"entry {n} is a {e.get('action')}, not an alloc"
        x = by_start[n]
        frames = e.get("frames") or []
        events[str(n)] = {
            "addr": x.addr,
            "requestedBytes": x.requested,
            "sizeBytes": x.size,
            "freeCompletedEvent": -1 if x.free_comp == NEVER else x.free_comp,
            "frames": len(frames),
            "firstFrame": frames[0].get("name", "") if frames else None,
        }
    print(json.dumps({"device": dev, "peakBytes": r["peakBytes"], "peakEvent": peak, "search": search,
                      "noStackBytes": no_stack, "allocations": len(allocs), "event": events}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
