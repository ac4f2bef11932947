"""`hostile`: inputs a reader must refuse cleanly (no code execution, no hang, no huge allocation), plus a
valid snapshot carrying HTML in its strings. Every malicious pickle is written by hand as bytes; nothing
here is ever unpickled by the generator.

manifest.json lists each file with "expect": "refuse" (the reader must report an error) or "load" (it must
load, and the UI must show the strings as text).
"""

import json
import os
import pickle
import random
import struct

from . import knownrun
from .layout import render

XSS = "<img src=x onerror=alert(1)>"


def p4(body):
    """PROTO 4 + body (no framing) + STOP."""
    return b"\x80\x04" + body + b"."


def short_str(s):
    b = s.encode()
    return b"\x8c" + bytes((len(b),)) + b + b"\x94"


def global_pickle():
    # protocol 0: GLOBAL os.system, MARK, STRING, TUPLE, REDUCE
    return b"cos\nsystem\n(S'echo pwned'\ntR."


def stack_global_pickle():
    return p4(short_str("os") + short_str("system") + b"\x93\x94" + short_str("echo pwned") + b"\x85\x94R\x94")


def build_pickle():
    # an object of class __main__.Snapshot made with NEWOBJ and given a snapshot-shaped state with BUILD
    body = (short_str("__main__") + short_str("Snapshot") + b"\x93\x94" + b")\x81\x94"
            + b"}\x94(" + short_str("segments") + b"]\x94" + short_str("device_traces") + b"]\x94u" + b"b")
    return p4(body)


def deep_pickle(depth=100_000):
    # [[[[...]]]] 100k levels: EMPTY_LIST x depth, then APPEND x (depth - 1)
    return b"\x80\x04" + b"]" * depth + b"a" * (depth - 1) + b"."


def huge_length_pickle():
    # BINUNICODE8 declaring 2**60 bytes, followed by only a few
    return b"\x80\x04\x8d" + struct.pack("<Q", 1 << 60) + b"abc" + b"."


def memo_huge_pickle():
    # LONG_BINGET of an index never put
    return p4(b"}\x94" + b"j" + struct.pack("<I", 0xFFFFFFF0))


def xss_snapshot():
    """A valid snapshot (known run, step2) whose user frames, an annotation and a path carry HTML."""
    run = knownrun.simulate("cuda-python", "linux", "step2")
    snap, tally = render([run.A], "cuda", annotations=run.annotations)
    seen = set()
    for tr in snap["device_traces"]:
        for e in tr:
            for fr in e.get("frames", []):
                if id(fr) in seen or not fr["filename"].endswith("train.py"):
                    continue
                seen.add(id(fr))
                fr["filename"] = fr["filename"].replace("/proj/", f"/{XSS}/")
                fr["name"] = f"{fr['name']}{XSS}"
    snap["external_annotations"].append({"stage": "START", "name": XSS, "device": 0, "time_us": 1})
    snap["external_annotations"].append({"stage": "END", "name": XSS, "device": 0, "time_us": 2})
    return pickle.dumps(snap, protocol=4), tally


FILES = [
    ("global.pickle", global_pickle, "refuse", "GLOBAL os.system + REDUCE (protocol 0)"),
    ("stack-global.pickle", stack_global_pickle, "refuse", "STACK_GLOBAL os.system + REDUCE (protocol 4)"),
    ("build.pickle", build_pickle, "refuse", "STACK_GLOBAL + NEWOBJ + BUILD of a snapshot-shaped state"),
    ("deep.pickle", deep_pickle, "refuse-or-load", "100,000 nested lists: must not overflow the stack; "
     "not a snapshot"),
    ("huge-length.pickle", huge_length_pickle, "refuse", "BINUNICODE8 declaring 2**60 bytes"),
    ("memo-huge.pickle", memo_huge_pickle, "refuse", "LONG_BINGET of a memo index never put"),
    ("random.bin", lambda: random.Random(1234).randbytes(4096), "refuse", "4096 random bytes (seed 1234)"),
    ("empty.pickle", lambda: b"", "refuse", "0 bytes"),
    ("not-snapshot.pickle", lambda: pickle.dumps({"hello": 1}, protocol=4), "refuse",
     "a valid pickle of {'hello': 1}: not a snapshot"),
]


def write_all(outdir):
    os.makedirs(outdir, exist_ok=True)
    manifest = []
    for name, fn, expect, what in FILES:
        with open(os.path.join(outdir, name), "wb") as f:
            f.write(fn())
        manifest.append({"file": name, "expect": expect, "what": what})
    data, tally = xss_snapshot()
    with open(os.path.join(outdir, "xss.pickle"), "wb") as f:
        f.write(data)
    manifest.append({"file": "xss.pickle", "expect": "load", "what": f"valid snapshot with {XSS} in user frame "
                     "names, file paths and annotation names: must render as text", "segments": tally["segments"],
                     "traceEntries": tally["traceEntries"], "xss": XSS})
    with open(os.path.join(outdir, "manifest.json"), "w") as f:
        json.dump({"generator": "test/gen/generate.py hostile", "files": manifest}, f, indent=1)
        f.write("\n")
    return manifest
