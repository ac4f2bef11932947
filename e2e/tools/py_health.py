# Independent truth for the allocator-health e2e checks: a generator (or torch) snapshot pickle read by
# Python's own unpickler (no peakscope code). Prints JSON: the snapshot's allocator_settings keys, and the
# "cached" curve (reserved − allocated) replayed over the first device trace from an empty start (the
# generator records from the start): reserved from segment_alloc / segment_free, allocated from alloc /
# free_completed with each request rounded up to the allocator's 512-byte block size.
import json
import pickle
import sys

s = pickle.load(open(sys.argv[1], "rb"))
traces = s.get("device_traces") or []
dev = next((i for i, t in enumerate(traces) if t), 0)
rnd = lambda n: (n + 511) // 512 * 512
reserved = allocated = 0
cached_max = 0
for e in traces[dev] if traces else []:
    a, size = e["action"], e["size"]
    if a == "segment_alloc":
        reserved += size
    elif a == "segment_free":
        reserved -= size
    elif a == "alloc":
        allocated += rnd(size)
    elif a == "free_completed":
        allocated -= rnd(size)
    cached_max = max(cached_max, reserved - allocated)
print(json.dumps({"device": dev, "settings": sorted((s.get("allocator_settings") or {}).keys()),
                  "cachedMaxBytes": cached_max, "endReservedBytes": reserved, "endAllocatedBytes": allocated}))
