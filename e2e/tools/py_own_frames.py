#!/usr/bin/env python3
"""Which snapshots hold any stack frame of the user's own Python code: a `.py` file outside the installed
packages and the standard library (site-packages, dist-packages, lib/python…, frozen modules), in an active
block's frames (or its torch 2.0 "history" entries') or an `alloc` entry's. Prints {file name: true | false}. Standard library only; the files are
read by test/tools/py_inspect.py's restricted unpickler (no peakscope code).

    python3 e2e/tools/py_own_frames.py FILE [FILE...]
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "test", "tools"))
from py_inspect import load_snapshot  # noqa: E402

LIBRARY = ("site-packages", "dist-packages", "/lib/python", "<frozen", "\\Lib\\")


def own(frames):
    return any(f.get("filename", "").endswith(".py") and not any(x in f["filename"] for x in LIBRARY)
               for f in frames or [])


def has_own(path):
    s, _fmt, _proto = load_snapshot(path)
    if isinstance(s, list):
        s = {"segments": s}
    for seg in s.get("segments") or []:
        for b in seg.get("blocks") or []:
            # torch 2.0 wrote a block's stacks in its "history" (one entry per allocation at that address)
            stacks = [b.get("frames")] + [h.get("frames") for h in b.get("history") or []]
            if b.get("state") == "active_allocated" and any(own(fr) for fr in stacks):
                return True
    return any(e.get("action") == "alloc" and own(e.get("frames"))
               for tr in s.get("device_traces") or [] for e in tr or [])


if __name__ == "__main__":
    print(json.dumps({os.path.basename(p): has_own(p) for p in sys.argv[1:]}))
