#!/usr/bin/env python3
"""What a file held at its peak, by the line of the user's own code that allocated it: the source of expected
values for comparing two files at their peaks (test/compare-peaks.test.ts).

    python3 test/tools/py_peak_sites.py FILE [FILE...]

Prints one JSON object {file name: result}:
  device, peakBytes, peakEvent   test/tools/replay.py's replay of the device with the highest peak (the first
                                 such device on a tie)
  snapshotAllocatedBytes         Σ allocated_size of that device's segments
  ownLines   {"parent/file.py:line:function": bytes} Σ rounded bytes of the allocations alive (allocated, not
             pending free) after peakEvent, grouped by the innermost frame of the user's own code in the
             allocation's stack: a `.py` file outside installed packages and the standard library
             (site-packages, dist-packages, lib/pythonX.Y, frozen modules), keyed by the file's last two path
             components, its line and function (paths from different machines line up)
  otherBytes  the rest: allocations whose stack holds no own-code frame, or whose allocation stack is unknown
              (allocated before the trace and freed inside it)

The stack of an allocation is its `alloc` entry's frames; an allocation made before the trace and alive at its
end has the snapshot block's frames. Standard library only; no peakscope code.
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from py_inspect import load_snapshot  # noqa: E402
from replay import NEVER, check_settings, is_npu, live_after, replay_device  # noqa: E402

LIBRARY = ("site-packages", "dist-packages", "/lib/python", "<frozen", "\\Lib\\")


def own_key(frames):
    """The innermost own-code frame as parent/file.py:line:function, or None."""
    for f in frames or []:
        name = str(f.get("filename", ""))
        if name.endswith(".py") and not any(x in name for x in LIBRARY):
            parts = [p for p in name.replace("\\", "/").split("/") if p]
            return f"{'/'.join(parts[-2:])}:{f.get('line', 0)}:{f.get('name', '')}"
    return None


def peak_sites(path):
    snap, _fmt, _proto = load_snapshot(path)
    check_settings(snap)
    npu = is_npu(snap)
    segs = snap.get("segments") or []
    traces = snap.get("device_traces") or []
    best = None
    for dev, tr in enumerate(traces):
        if not tr:
            continue
        r = replay_device(tr, dev, segs, npu)
        if r["peakEvent"] is not None and (best is None or r["peakBytes"] > best[1]["peakBytes"]):
            best = (dev, r)
    if best is None:
        return {"device": None}
    dev, r = best
    tr = traces[dev]
    peak = r["peakEvent"]
    live, end_frames, _allocs = live_after(tr, dev, segs, npu, peak)
    assert sum(x.size for x in live) == r["peakBytes"]
    own, other = {}, 0
    for x in live:
        if x.start >= 0:
            frames = tr[x.start].get("frames") or []
        elif x.sized_by == "untouched-block" or x.free_req == NEVER:
            # alive before the trace and still at the end: the snapshot's block is that allocation
            frames = end_frames.get(x.addr, [])
        else:
            frames = []
        k = own_key(frames)
        if k is None:
            other += x.size
        else:
            own[k] = own.get(k, 0) + x.size
    return {"device": dev, "peakBytes": r["peakBytes"], "peakEvent": peak,
            "snapshotAllocatedBytes": r["snapshotAllocatedBytes"], "ownLines": own, "otherBytes": other}


def main(argv):
    print(json.dumps({os.path.basename(p): peak_sites(p) for p in argv}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
