#!/usr/bin/env python3
"""Independent reading of memory artifacts with the standard library only (json, gzip, base64, pickle-free).

Prints one JSON object per file, for the tests to compare peakscope with:
  profiler traces: per device ("cuda:0", "cpu:-1") the peak allocated bytes — max "Total Allocated" when
    the events carry it; otherwise the running sum of Bytes in time order (file order among equal ts),
    started at what the trace proves was allocated before it: per size, the most frees of that size
    that ever outnumbered the allocations of that size (frees of allocations it never saw);
  memory timelines: the peak of the running total and the live bytes per PyTorch category there;
  MemoryViz pages: the embedded pickle's length (NUL padding stripped) and its first/last byte.

Usage: py_artifacts.py FILE...
"""
import base64
import collections
import gzip
import json
import re
import sys

DEVICE_TYPES = {0: "cpu", 1: "cuda"}
TIMELINE_CATEGORIES = ["parameter", "optimizer_state", "input", "temporary", "activation", "gradient",
                       "autograd_detail", "unknown"]


def load_json(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    return json.loads(data.decode("utf-8"))


def profiler(doc):
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    mem = [e for e in events if e.get("name") in ("[memory]", "[OutOfMemory]")]
    mem = sorted(mem, key=lambda e: e["ts"])  # sorted() is stable: file order among equal ts
    by_device = collections.OrderedDict()
    for e in mem:
        a = e["args"]
        dev_id = a.get("Device Id", -1 if a["Device Type"] == 0 else 0)
        key = "%s:%d" % (DEVICE_TYPES.get(a["Device Type"], "type %d" % a["Device Type"]), dev_id)
        by_device.setdefault(key, []).append(e)
    out = {}
    for key, es in by_device.items():
        es_mem = [e for e in es if e["name"] == "[memory]"]
        totals = [e["args"]["Total Allocated"] for e in es_mem if "Total Allocated" in e["args"]]
        if totals:
            peak = max(totals)
        else:
            # the start level: per size, the most that frees ever outnumbered allocations
            balance = collections.Counter()
            deficit = collections.Counter()
            for e in es_mem:
                b = e["args"]["Bytes"]
                size = abs(b)
                balance[size] += 1 if b >= 0 else -1
                deficit[size] = max(deficit[size], -balance[size])
            level = sum(size * n for size, n in deficit.items())
            peak = level
            for e in es_mem:
                level += e["args"]["Bytes"]
                peak = max(peak, level)
        out[key] = {"peakAllocatedBytes": peak, "memoryEvents": len(es_mem),
                    "oomEvents": len(es) - len(es_mem)}
    rank = None
    if isinstance(doc, dict) and isinstance(doc.get("distributedInfo"), dict):
        rank = doc["distributedInfo"].get("rank")
    return {"kind": "profiler-trace", "devices": out, "rank": rank}


def timeline(doc):
    if len(doc) == 2 and isinstance(doc[0], list) and isinstance(doc[1], list) and len(doc[0]) == len(doc[1]) \
            and (not doc[0] or not isinstance(doc[0][0], list)):
        times, sizes = doc
        best = max(range(len(times)), key=lambda k: (sum(sizes[k][1:9]), -k))
        live = sizes[best][1:9]
    else:
        live = [0] * 8
        best_total = None
        for t, action, nbytes, cat in doc:
            live[cat] += nbytes
            total = sum(live)
            if best_total is None or total > best_total:
                best_total = total
                best_live = list(live)
        live = best_live
    return {"kind": "memory-timeline", "peakAllocatedBytes": sum(live),
            "categories": dict(zip(TIMELINE_CATEGORIES, live))}


def memoryviz(path):
    text = open(path, encoding="utf-8").read()
    m = re.search(r"local_files\s*=\s*(\[.*?\])\s*\n", text, re.S)
    if not m:
        return {"kind": "html-without-snapshot"}
    files = json.loads(m.group(1))
    raw = base64.b64decode(files[0]["base64"])
    stripped = raw.rstrip(b"\x00") if raw.endswith(b"\x00") else raw
    # only the writer's 1-3 padding bytes; the pickle itself ends with STOP ('.')
    while len(raw) - len(stripped) > 3:
        stripped += b"\x00"
    return {"kind": "memoryviz-html", "pickleBytes": len(stripped), "lastByte": stripped[-1],
            "padBytes": len(raw) - len(stripped)}


def read(path):
    with open(path, "rb") as f:
        head = f.read(64)
    if head.lstrip().startswith(b"<"):
        return memoryviz(path)
    doc = load_json(path)
    if isinstance(doc, dict) or (isinstance(doc, list) and doc and isinstance(doc[0], dict)):
        return profiler(doc)
    return timeline(doc)


if __name__ == "__main__":
    print(json.dumps({p: read(p) for p in sys.argv[1:]}))
