# Independent truth for the timeline's phase bands on the generator's "known" run (test/gen: the user's
# train.py, whose lines the generator documents: model.to 43 builds the parameters, the loss line 59 runs
# the forward, backward 60, opt.step 61; the autograd engine's thread, with no Python frame, is backward).
# Reads the pickle with Python's own unpickler (no peakscope code) and prints JSON: the runs of phases over
# device 0's trace as [phase, start, end) — a run starts at an entry whose phase differs from the last
# phase seen; entries of no phase (x = randn, line 45) belong to the run before them.
import json
import pickle
import sys

LINE_PHASE = {43: "parameters", 59: "forward", 60: "backward", 61: "optimizer"}

s = pickle.load(open(sys.argv[1], "rb"))
trace = s["device_traces"][0]
MEMORY = {"alloc", "free_requested", "free_completed", "segment_alloc", "segment_free"}


def phase_of(e):
    if e["action"] not in MEMORY:
        return None
    frames = e.get("frames") or []
    own = [f["line"] for f in frames if f["filename"].endswith("train.py")]
    if own:  # innermost frame of train.py (frames are innermost first)
        return LINE_PHASE.get(own[0])
    if any("thread_main" in f["name"] for f in frames):
        return "backward"
    return None


runs = []
last = None
for i, e in enumerate(trace):
    p = phase_of(e)
    if p and p != last:
        if runs:
            runs[-1][2] = i
        runs.append([p, i, len(trace)])
        last = p
print(json.dumps({"events": len(trace), "runs": runs}))
