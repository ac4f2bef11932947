# Independent truth for the e2e specs: a torch memory snapshot pickle read by Python's own unpickler (no
# peakscope code). Prints JSON: the snapshot's allocated bytes on the device with a trace, and the peak of
# allocated bytes found by walking the trace backwards from the snapshot (alloc: +size, free_completed:
# -size), with its event index.
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
after = end
peak, peak_event = end, len(trace) - 1
for i in range(len(trace) - 1, -1, -1):
    e = trace[i]
    if after >= peak:
        peak, peak_event = after, i
    if e["action"] == "alloc":
        after -= e["size"]
    elif e["action"] == "free_completed":
        after += e["size"]
print(json.dumps({"device": dev, "snapshotBytes": end, "peakBytes": peak, "peakEvent": peak_event,
                  "events": len(trace), "initialBytes": after}))
