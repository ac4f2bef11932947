# Independent truth for the e2e specs: a torch memory snapshot pickle read by Python's own unpickler (no
# peakscope code). Prints JSON: the snapshot's allocated bytes on the device with a trace, and the peak of
# allocated bytes found by walking the trace backwards from the snapshot (alloc: +size, free_completed:
# -size), with its event index; memory live before the trace is inferred from the snapshot and from
# frees of blocks the trace never allocated.
import json
import pickle
import sys

s = pickle.load(open(sys.argv[1], "rb"))
if isinstance(s, list):  # the oldest layout: the segment list alone, no trace
    s = {"segments": s}
traces = s.get("device_traces") or []
dev = next((i for i, t in enumerate(traces) if t), 0)
end = 0
for seg in s["segments"]:
    if seg.get("device", 0) != dev:
        continue
    for b in seg["blocks"]:
        if b["state"] == "active_allocated":
            end += b["size"]
trace = traces[dev] if traces else []
# Allocated bytes after each event relative to the trace's start (alloc: +size, free_completed: -size).
rel, prefix = 0, []
for e in trace:
    if e["action"] == "alloc":
        rel += e["size"]
    elif e["action"] == "free_completed":
        rel -= e["size"]
    prefix.append(rel)
# What was live when recording began: what the snapshot says was left (walking back from it), and at least
# what the trace frees without having allocated it (a snapshot that disagrees with its trace).
initial = max(end - rel, -min([0] + prefix))
peak, peak_event = initial, -1
for i, v in enumerate(prefix):
    if initial + v > peak:
        peak, peak_event = initial + v, i
print(json.dumps({"device": dev, "snapshotBytes": end, "peakBytes": peak, "peakEvent": peak_event,
                  "events": len(trace), "initialBytes": initial}))
