#!/usr/bin/env python3
"""Independent inspector of PyTorch memory snapshots: the source of expected values for peakscope's tests.

    python3 test/tools/py_inspect.py FILE [--blocks]

Prints one JSON object:
  format          "pickle" | "pickle+gzip" | "zip" | "json" | "segment-list" (the top level is a bare list of
                  segments, whatever the container)
  pickleProtocol  the PROTO opcode's argument; null without PROTO (protocols 0/1) or for JSON. For gzip/zip
                  the inner pickle's protocol.
  segments, blocks, traceEntries, actions {action: count}  (every action string, unknown ones included)
  devices         every device that has a segment or a device_traces list (device_traces[i] is device i,
                  even when empty), sorted: {device, segments, blocks, traceEntries, actions, reservedBytes,
                  allocatedBytes, activeBytes, requestedBytes} (+ blockStates, liveBlockBytes with --blocks)
  totals          {reservedBytes, allocatedBytes, activeBytes, requestedBytes} = sums over segments of
                  total_size, allocated_size, active_size, requested_size (0 when absent)

Content is sniffed, never the file name: 0x80 pickle, 1f 8b gzip'd pickle, "PK" a zip holding one snapshot
(pickle or JSON), "{" / "[" JSON. Pickles are read by a restricted unpickler (no class is ever resolved),
which stops at STOP and ignores trailing bytes. Standard library only.
"""

import argparse
import gzip
import io
import json
import pickle
import sys
import zipfile


class RestrictedUnpickler(pickle.Unpickler):
    """Snapshots hold only dicts/lists/str/int/float/bool/None/tuples: refuse every global."""

    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"refusing to load global {module}.{name}")

    def persistent_load(self, pid):
        raise pickle.UnpicklingError("refusing persistent id")


def pickle_protocol(data):
    """The PROTO opcode's argument, or None when the pickle starts without PROTO (protocols 0 and 1)."""
    if len(data) >= 2 and data[0] == 0x80:
        return data[1]
    return None


def load_pickle(data):
    return RestrictedUnpickler(io.BytesIO(data)).load()


def strip_ws(data):
    return data.lstrip(b" \t\r\n\xef\xbb\xbf")


def load_inner(data):
    """Load a pickle or JSON payload; returns (object, protocol, kind)."""
    if data[:1] == b"\x80":
        return load_pickle(data), pickle_protocol(data), "pickle"
    if strip_ws(data)[:1] in (b"{", b"["):
        return json.loads(data.decode("utf-8")), None, "json"
    # protocol 0/1 pickles have no PROTO opcode: try the unpickler
    return load_pickle(data), pickle_protocol(data), "pickle"


def load_snapshot(path):
    """Returns (object, format, pickleProtocol)."""
    with open(path, "rb") as f:
        head = f.read(2)
        if head[:1] == b"\x80":
            f.seek(0)
            return RestrictedUnpickler(f).load(), "pickle", pickle_protocol(head)
        f.seek(0)
        data = f.read()
    if data[:2] == b"\x1f\x8b":
        inner = gzip.decompress(data)
        obj, proto, kind = load_inner(inner)
        return obj, ("pickle+gzip" if kind == "pickle" else "json"), proto
    if data[:2] == b"PK":
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            names = [n for n in z.namelist() if not n.endswith("/")]
            if not names:
                raise ValueError("empty zip")
            inner = z.read(names[0])
        obj, proto, _kind = load_inner(inner)
        return obj, "zip", proto
    if not data:
        raise ValueError("empty file")
    obj, proto, kind = load_inner(data)
    return obj, kind, proto


def new_device(dev):
    return {"device": dev, "segments": 0, "blocks": 0, "traceEntries": 0, "actions": {},
            "reservedBytes": 0, "allocatedBytes": 0, "activeBytes": 0, "requestedBytes": 0,
            "blockStates": {}, "liveBlockBytes": 0}


def inspect(obj, fmt, proto, with_blocks=False):
    if isinstance(obj, list):
        segments, traces, fmt = obj, None, "segment-list"
    elif isinstance(obj, dict):
        if "segments" not in obj and "device_traces" not in obj:
            raise ValueError("not a snapshot: a dict without 'segments' or 'device_traces'")
        segments = obj.get("segments") or []
        traces = obj.get("device_traces")
    else:
        raise ValueError(f"not a snapshot: top level is {type(obj).__name__}")
    devices = {}
    for seg in segments:
        if not isinstance(seg, dict):
            raise ValueError("segment is not a dict")
        dev = int(seg.get("device", 0))
        d = devices.setdefault(dev, new_device(dev))
        d["segments"] += 1
        d["reservedBytes"] += int(seg.get("total_size", 0) or 0)
        d["allocatedBytes"] += int(seg.get("allocated_size", 0) or 0)
        d["activeBytes"] += int(seg.get("active_size", 0) or 0)
        d["requestedBytes"] += int(seg.get("requested_size", 0) or 0)
        blocks = seg.get("blocks") or []
        d["blocks"] += len(blocks)
        for b in blocks:
            st = b.get("state", "?")
            d["blockStates"][st] = d["blockStates"].get(st, 0) + 1
            if st == "active_allocated":
                d["liveBlockBytes"] += int(b.get("size", 0) or 0)
    if isinstance(traces, list):
        for dev, tr in enumerate(traces):
            d = devices.setdefault(dev, new_device(dev))
            for e in tr or []:
                d["traceEntries"] += 1
                a = e.get("action") if isinstance(e, dict) else None
                a = str(a)
                d["actions"][a] = d["actions"].get(a, 0) + 1
    devs = [devices[k] for k in sorted(devices)]
    if not with_blocks:
        for d in devs:
            del d["blockStates"]
            del d["liveBlockBytes"]
    actions = {}
    for d in devs:
        for k, v in d["actions"].items():
            actions[k] = actions.get(k, 0) + v
    keys = ("reservedBytes", "allocatedBytes", "activeBytes", "requestedBytes")
    return {
        "format": fmt,
        "pickleProtocol": proto,
        "segments": sum(d["segments"] for d in devs),
        "blocks": sum(d["blocks"] for d in devs),
        "traceEntries": sum(d["traceEntries"] for d in devs),
        "actions": actions,
        "devices": devs,
        "totals": {k: sum(d[k] for d in devs) for k in keys},
    }


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("file")
    p.add_argument("--blocks", action="store_true", help="add per-device blockStates and liveBlockBytes")
    a = p.parse_args(argv)
    try:
        obj, fmt, proto = load_snapshot(a.file)
        out = inspect(obj, fmt, proto, a.blocks)
    except Exception as e:  # noqa: BLE001 - report any reader failure as exit 1
        print(json.dumps({"error": f"{type(e).__name__}: {e}"}))
        return 1
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
