#!/usr/bin/env python3
"""Self-check of the generator: runs every subcommand into a temporary folder and checks the outputs against
test/tools/py_inspect.py and against a replay of the written trace (which reads only the file).

    python3 test/gen/selfcheck.py [--keep DIR] [--big-mb 3]

Exit status 0 when everything agrees; prints one line per check.
"""

import argparse
import json
import os
import pickle
import shutil
import sys
import tempfile

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "tools"))

import generate  # noqa: E402
import py_inspect  # noqa: E402
from memgen import bigpickle  # noqa: E402

MiB = 1 << 20
FAILS = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        FAILS.append(what)


def inspect(path, blocks=True):
    obj, fmt, proto = py_inspect.load_snapshot(path)
    return py_inspect.inspect(obj, fmt, proto, blocks), obj


def same_counts(got, tally):
    keys = ("segments", "blocks", "traceEntries", "actions", "devices", "totals")
    return all(got[k] == tally[k] for k in keys)


def replay(obj):
    """Independent replay of a complete trace (recorded from the start): live requested sizes by address,
    the peak of requested bytes (+ at alloc, - at free_requested), and the set of live segments."""
    live, segs, req, peak, peak_i = {}, {}, 0, 0, None
    tr = obj["device_traces"][0]
    start = 0
    while start < len(tr) and tr[start]["action"] == "workspace_snapshot":
        start += 3  # torch_npu's prepended workspace entries
    for i in range(start, len(tr)):
        e = tr[i]
        a = e["action"]
        if a == "alloc":
            live[e["addr"]] = e["size"]
            req += e["size"]
        elif a == "free_requested":
            req -= live[e["addr"]]
        elif a == "free_completed":
            del live[e["addr"]]
        elif a == "segment_alloc":
            segs[e["addr"]] = e["size"]
        elif a == "segment_free":
            del segs[e["addr"]]
        if req > peak:
            peak, peak_i = req, i
    return live, segs, peak, peak_i


def final_state(obj, device=0):
    blocks, segs = {}, {}
    for s in obj["segments"]:
        if s["device"] != device or s.get("is_expandable"):
            continue
        segs[s["address"]] = s["total_size"]
        for b in s["blocks"]:
            if b["state"] != "inactive":
                blocks[b["address"]] = b["requested_size"]
    return blocks, segs


def check_known(tmp):
    truths = {}
    for layout in ("cuda-all", "cuda-python", "npu"):
        for paths in ("linux", "conda", "venv", "dist", "windows"):
            for moment in ("step2", "step3", "mid_backward"):
                out = os.path.join(tmp, f"known-{layout}-{paths}-{moment}.pickle")
                truth = generate.known(out, layout, paths, moment)
                got, obj = inspect(out)
                name = f"known {layout} {paths} {moment}"
                ok = same_counts(got, truth["tally"]) and got["format"] == "pickle" and got["pickleProtocol"] == 4
                check(ok, name + ": py_inspect agrees with the truth tally")
                snap = truth["snapshot"]
                check(sum(snap["categories"].values()) == got["totals"]["allocatedBytes"] == snap["allocatedBytes"],
                      name + ": categories sum to allocated_size")
                live, segs, peak, peak_i = replay(obj)
                blocks, fsegs = final_state(obj)
                workspace = {s["address"] for s in obj["segments"] if s["allocated_size"] == 0 and
                             s["blocks"][0].get("requested_size") and layout == "npu" and
                             s["address"] not in segs}
                check(live == blocks, name + ": replayed live allocations == active blocks")
                check(segs == {a: v for a, v in fsegs.items() if a not in workspace},
                      name + ": replayed segments == segments")
                check(truth["peakRequested"]["bytes"] == peak and truth["peakRequested"]["eventIndex"] == peak_i,
                      name + ": replayed requested peak == truth")
                counters = json.load(open(out + ".counters.json"))
                check(counters["memory_allocated"] == snap["allocatedBytes"] and
                      counters["memory_reserved"] == snap["reservedBytes"] and
                      counters["max_memory_allocated"] == truth["maxMemoryAllocated"],
                      name + ": counters sidecar agrees")
                truths[(layout, paths, moment)] = truth
    for layout in ("cuda-all", "cuda-python", "npu"):
        a = truths[(layout, "linux", "step2")]["snapshot"]["categories"]
        b = truths[(layout, "linux", "step3")]["snapshot"]["categories"]
        check(a == b, f"known {layout}: step2 and step3 have identical composition")
        c = truths[(layout, "linux", "mid_backward")]["snapshot"]["categories"]
        per = 512 if layout == "npu" else 0
        check(a["parameters"] == 3 * (8 * MiB + per) and a["gradients"] == 3 * (8 * MiB + per) and
              a["optimizer_state"] == 6 * (8 * MiB + per) and a["input"] == 2 * MiB + per and a["activations"] == 0,
              f"known {layout}: step2 composition 24/24/48/2 MiB, no activations")
        check(c["temporary"] == 10 * MiB + 2 * per and c["activations"] == 0,
              f"known {layout}: mid_backward holds 10 MiB of temporaries (in-flight gradients), no activations")
        pk = truths[(layout, "linux", "step2")]["peak"]["categories"]
        check(pk["temporary"] == 3 * (8 * MiB + per) and pk["optimizer_state"] == 6 * (8 * MiB + per) and
              pk["workspace"] == 0, f"known {layout}: peak holds 24 MiB of sqrt temporaries, 48 MiB of state")
    # protocols and truncation
    for proto in range(6):
        out = os.path.join(tmp, f"known-p{proto}.pickle")
        truth = generate.known(out, protocol=proto)
        got, _ = inspect(out)
        check(same_counts(got, truth["tally"]) and got["pickleProtocol"] == (proto if proto >= 2 else None),
              f"known --protocol {proto}: counts and protocol")
    out = os.path.join(tmp, "known-trunc.pickle")
    truth = generate.known(out, "cuda-all", "linux", "mid_backward", truncate_trace=60)
    got, obj = inspect(out)
    check(same_counts(got, truth["tally"]) and got["traceEntries"] == 60, "known --truncate-trace 60: counts")
    seen, orphans = set(), []
    for e in obj["device_traces"][0]:
        if e["action"] == "alloc":
            seen.add(e["addr"])
        elif e["action"] == "free_requested" and e["addr"] not in seen:
            orphans.append(e)
    check(len(orphans) > 0, "known --truncate-trace 60: frees of allocations that fell out are present")


def rounded(n, npu):
    n += 32 if npu else 0
    return max(512, -(-n // 512) * 512)


def replay_window(obj):
    """Replay of a trace that may have started late (record-from) or been cut: allocations made before it
    are unknown until their free appears. Returns the workspace addresses (torch_npu's prepended entries),
    live {addr: requested} of allocations made in the trace, early {addr: requested} frees of allocations made
    before it (with the event index), segments made in the trace, requested bytes relative to the start at
    each event, and the events' streams."""
    tr = obj["device_traces"][0]
    ws = set()
    start = 0
    while start < len(tr) and tr[start]["action"] == "workspace_snapshot":
        ws.add(tr[start]["addr"])
        start += 3
    live, early, segs, rel, req = {}, [], {}, [], 0
    for i in range(len(tr)):
        if i < start:
            rel.append(None)
            continue
        e = tr[i]
        a = e["action"]
        if a == "alloc":
            live[e["addr"]] = e["size"]
            req += e["size"]
        elif a == "free_requested":
            if e["addr"] in live:
                req -= live[e["addr"]]
            else:
                early.append((i, e["addr"], e["size"]))
                req -= e["size"]
        elif a == "free_completed":
            live.pop(e["addr"], None)
        elif a == "segment_alloc":
            segs[e["addr"]] = e["size"]
        elif a == "segment_free":
            segs.pop(e["addr"], None)
        rel.append(req)
    return ws, live, early, segs, rel


def check_known_options(tmp):
    """The record-from / streams / workspace options: py_inspect agrees, the trace replays onto the written
    segments, frames vanish exactly from what was allocated before recording, the truth's extras hold."""
    combos = [
        ("cuda-all", "step2", "after-build", 1, "inactive"),
        ("cuda-all", "step2", "after-step1", 1, "inactive"),
        ("cuda-all", "mid_backward", "after-step1", 1, "inactive"),
        ("cuda-python", "step3", "after-build", 1, "inactive"),
        ("cuda-python", "step2", "after-step1", 1, "inactive"),
        ("cuda-all", "step2", "start", 2, "inactive"),
        ("cuda-python", "step3", "start", 2, "inactive"),
        ("cuda-all", "step3", "after-step1", 2, "inactive"),
        ("npu", "step2", "start", 1, "active"),
        ("npu", "step2", "after-build", 1, "inactive"),
        ("npu", "mid_backward", "after-step1", 2, "active"),
        ("cuda-all", "step2", "start", 1, "inactive"),
        ("npu", "step3", "start", 1, "inactive"),
    ]
    ref = {}
    for layout, moment, rf, streams, ws_opt in combos:
        name = f"known {layout} {moment} --record-from {rf} --streams {streams} --workspace {ws_opt}"
        out = os.path.join(tmp, f"known-{layout}-{moment}-{rf}-s{streams}-{ws_opt}.pickle")
        truth = generate.known(out, layout, "linux", moment, record_from=rf, streams=streams, workspace=ws_opt)
        got, obj = inspect(out)
        npu = layout == "npu"
        late = rf != "start"
        snap = truth["snapshot"]
        check(same_counts(got, truth["tally"]), name + ": py_inspect agrees with the truth tally")
        check(sum(snap["categories"].values()) == got["totals"]["allocatedBytes"] == snap["allocatedBytes"],
              name + ": categories sum to allocated_size")
        wsaddr, live, early, tsegs, rel = replay_window(obj)
        blocks, fsegs, frames_of, seg_frames, alive = {}, {}, {}, {}, {}
        for sg in obj["segments"]:
            if sg["address"] in wsaddr:
                continue
            fsegs[sg["address"]] = sg["total_size"]
            seg_frames[sg["address"]] = sg["frames"]
            for b in sg["blocks"]:
                if b["state"] != "inactive":
                    blocks[b["address"]] = b["requested_size"]
                if b["state"] == "active_allocated":
                    alive[b["address"]] = b["requested_size"]
                    frames_of[b["address"]] = b["frames"]
        pre = {a: r for a, r in alive.items() if a not in live}  # live blocks the trace never allocated
        check(all(blocks.get(a) == r for a, r in live.items()) and set(blocks) - set(live) == set(pre),
              name + ": replayed allocations == active blocks (the rest allocated before recording)")
        check(all(fsegs.get(a) == v for a, v in tsegs.items()) and
              all(seg_frames[a] == [] for a in fsegs if a not in tsegs),
              name + ": replayed segments are written; the others (made before recording) have no frames")
        unrec = {b["address"] for b in truth["liveBlocks"] if b.get("recorded") is False}
        check(set(pre) == unrec - wsaddr and all(frames_of[a] == [] for a in pre) and (late or not pre),
              name + ": blocks without an alloc in the trace == truth's unrecorded blocks, all without frames")
        if layout != "cuda-python":
            check(all((frames_of[a] == []) == (a in pre) for a in frames_of),
                  name + ": every recorded live block has frames")
        # requested bytes: the absolute level at the end is known from the blocks, so the start level is too
        base_req = sum(alive.values()) - rel[-1]
        vals = [(r, -i) for i, r in enumerate(rel) if r is not None]
        top, neg_i = max(vals)
        check(truth["peakRequested"] == {"bytes": base_req + top, "eventIndex": -neg_i} and
              (late or base_req == 0), name + ": replayed requested peak == truth")
        # bytes of pre-recording allocations alive at the peak: frees after it + those still alive
        pi = truth["peak"]["eventIndex"]
        un_at_peak = sum(rounded(r, npu) for i, _a, r in early if i > pi) + sum(rounded(r, npu) for r in pre.values())
        uc = truth["peak"].get("unrecordedCategories", {})
        check(sum(uc.values()) == un_at_peak and sum(snap.get("unrecordedCategories", {}).values()) ==
              sum(b["size"] for b in truth["liveBlocks"] if b.get("recorded") is False),
              name + ": unrecorded bytes at the peak and the dump match the file")
        check(late == ("recordFrom" in truth and "unrecordedCategories" in snap and
                       all("recorded" in b for b in truth["liveBlocks"])), name + ": record-from fields iff late")
        counters = json.load(open(out + ".counters.json"))
        wsb = snap.get("workspaceBytes", 0)
        check(counters["memory_allocated"] == snap["allocatedBytes"] - wsb and
              counters["memory_reserved"] == snap["reservedBytes"] and
              counters["max_memory_allocated"] == truth["maxMemoryAllocated"] and
              truth["peak"]["allocatedBytes"] <= truth["maxMemoryAllocated"],
              name + ": counters sidecar agrees (allocated counters exclude the workspace)")
        if ws_opt == "active":
            wseg = [sg for sg in obj["segments"] if sg["address"] in wsaddr]
            check(len(wseg) == 1 and wseg[0]["allocated_size"] == wseg[0]["active_size"] == wsb == 8 * MiB ==
                  snap["categories"]["workspace"] and wseg[0]["blocks"][0]["state"] == "active_allocated" and
                  truth["peak"]["categories"]["workspace"] == 0,
                  name + ": workspace in use: its segment allocated, in the categories, not in the peak")
            check((wseg[0]["frames"] == []) == (rf == "after-step1"),
                  name + ": workspace frames only when allocated while recording")
        if streams == 2:
            side = {e["stream"] for e in obj["device_traces"][0]
                    if e["stream"] != obj["segments"][0]["stream"] and e["action"] != "snapshot"}
            tr = obj["device_traces"][0]
            gaps = [j - i for i, e in enumerate(tr) if e["action"] == "free_requested" and e["stream"] in side
                    for j in range(i + 1, len(tr)) if tr[j]["action"] == "free_completed" and
                    tr[j]["addr"] == e["addr"]][:1]
            check(len(side) == 1 and gaps and gaps[0] > 1, name + ": x on a side stream, deferred free_completed")
        if (layout, moment) not in ref:
            ref[(layout, moment)] = generate.known(os.path.join(tmp, f"ref-{layout}-{moment}.pickle"), layout,
                                                   "linux", moment)
        r = ref[(layout, moment)]
        check(dict(snap["categories"], workspace=0) == r["snapshot"]["categories"] and
              truth["peak"]["allocatedBytes"] == r["peak"]["allocatedBytes"] and
              truth["peak"]["categories"] == r["peak"]["categories"] and
              truth["maxMemoryAllocated"] == r["maxMemoryAllocated"],
              name + ": same composition, peak and max_memory_allocated as the default run")


def check_variants(tmp):
    d = os.path.join(tmp, "variants")
    generate.variants(d)
    m = json.load(open(os.path.join(d, "manifest.json")))
    for e in m["files"]:
        got, _ = inspect(os.path.join(d, e["file"]))
        exp = {k: v for k, v in e.items() if k not in ("file", "what")}
        check(got == exp, f"variants {e['file']}: py_inspect == manifest")


def check_hostile(tmp):
    d = os.path.join(tmp, "hostile")
    generate.hostile(d)
    m = json.load(open(os.path.join(d, "manifest.json")))
    for e in m["files"]:
        path = os.path.join(d, e["file"])
        try:
            got, _ = inspect(path)
            err = None
        except Exception as ex:  # noqa: BLE001
            got, err = None, ex
        if e["expect"] == "load":
            check(err is None and got["segments"] == e["segments"], f"hostile {e['file']}: loads")
        elif e["expect"] == "refuse":
            check(err is not None, f"hostile {e['file']}: refused ({type(err).__name__ if err else 'loaded!'})")
        else:
            check(True, f"hostile {e['file']}: {type(err).__name__ if err else 'loaded'}")
    src = os.path.join(tmp, "known-cuda-all-linux-step2.pickle")
    dst = os.path.join(tmp, "truncated.pickle")
    generate.truncate(src, os.path.getsize(src) // 2, dst)
    try:
        inspect(dst)
        check(False, "truncate: half a pickle is refused")
    except Exception:  # noqa: BLE001
        check(True, "truncate: half a pickle is refused")


def check_random(tmp):
    for seed, n in ((1, 3000), (2, 20000)):
        out = os.path.join(tmp, f"random-{seed}.pickle")
        truth = generate.random_trace(out, seed, n)
        got, obj = inspect(out)
        check(same_counts(got, truth["tally"]) and got["traceEntries"] >= n, f"random-trace {seed}: counts")
        live, segs, _peak, _i = replay(obj)
        blocks, fsegs = final_state(obj)
        check(live == blocks and segs == fsegs, f"random-trace {seed}: replay == final segments")
        tb = {(b["address"], b["requestedSize"]) for b in truth["liveBlocks"]}
        check(tb == set(blocks.items()), f"random-trace {seed}: truth liveBlocks == active blocks")


def check_ranks(tmp):
    d = os.path.join(tmp, "ranks")
    summary = generate.ranks(d, 4, 1)
    check(summary["outlier"] == 1 and len(summary["files"]) == 4 and
          os.path.exists(os.path.join(d, "ranks.truth.json")), "ranks 4 --outlier 1: four files and ranks.truth.json")
    for f in summary["files"]:
        r = f["rank"]
        out = os.path.join(d, f["file"])
        truth = json.load(open(out + ".truth.json"))
        got, obj = inspect(out)
        name = f"ranks rank {r} (batch {f['batch']})"
        check(same_counts(got, truth["tally"]), name + ": py_inspect agrees with the truth tally")
        snap = truth["snapshot"]
        check(sum(snap["categories"].values()) == got["totals"]["allocatedBytes"] == snap["allocatedBytes"],
              name + ": categories sum to allocated_size")
        live, segs, peak, peak_i = replay(obj)
        blocks, fsegs = final_state(obj)
        check(live == blocks and segs == fsegs, name + ": replay == final segments")
        check(truth["peakRequested"] == {"bytes": peak, "eventIndex": peak_i}, name + ": replayed requested peak")
        c = json.load(open(out + ".counters.json"))
        check(c["rank"] == r and c["world_size"] == 4 and c["memory_allocated"] == snap["allocatedBytes"] and
              c["max_memory_allocated"] == truth["maxMemoryAllocated"] == f["peakBytes"],
              name + ": counters sidecar with rank / world_size agrees")
        x = f["batch"] * 4096 + (64 * MiB if r == 1 else 0)
        check(snap["categories"]["input"] == f["peakCategories"]["input"] == x,
              name + ": input = batch x 2048 bf16 (+ 64 MiB on the outlier) at the dump and the peak")
    peaks = sorted(f["peakBytes"] for f in summary["files"])
    med = (peaks[1] + peaks[2]) / 2
    others = [f["peakBytes"] for f in summary["files"] if f["rank"] != 1]
    check(summary["medianPeakBytes"] == med and summary["outlierAboveMedianBytes"] ==
          summary["files"][1]["peakBytes"] - med and all(abs(p - med) <= 0.05 * med for p in others),
          "ranks: median, the outlier's excess, the other ranks within 5 % of the median")


def user_site(frames):
    """The innermost frame of the user's train.py as the generator names a site (file:line:function), or None
    (an engine-thread allocation has no Python frame)."""
    for f in frames or []:
        if f["filename"].endswith("/train.py"):
            return f"{f['filename']}:{f['line']}:{f['name']}"
    return None


def rows(live):
    """{(site, category): bytes} rows folded per site: the file knows sites, not categories."""
    out = {}
    for r in live:
        out[r["site"]] = out.get(r["site"], 0) + r["bytes"]
    return out


def check_leaks(tmp):
    """`leaks`: one trace per planted leak (and none), and a series of dumps. The file's own replay
    (test/tools/replay.py: rounded blocks, alloc to free_requested) gives the allocated bytes at each step's end
    and the bytes per call site live there; the truth's per-step rows, leak bytes and max_memory_allocated
    must agree, and the leak must grow by its planted bytes every step (none: flat)."""
    import replay as py_replay  # test/tools/replay.py

    per_step = {"list": 2 * MiB, "cache": 1 * MiB, "graph": None, None: 0}
    for leak in (None, "list", "graph", "cache"):
        out = os.path.join(tmp, f"leaks-{leak or 'none'}.pickle")
        truth = generate.leaks(out, leak)
        got, obj = inspect(out)
        name = f"leaks --leak {leak or 'none'}"
        live, segs, _peak, _i = replay(obj)
        blocks, fsegs = final_state(obj)
        check(live == blocks and segs == fsegs, name + ": replayed live allocations and segments == the dump's")
        tr = obj["device_traces"][0]
        dev = py_replay.replay_device(tr, 0, obj["segments"], False, curve=True)
        allocs, _n, _end = py_replay.size_allocations(tr, 0, obj["segments"], False)
        counters = json.load(open(out + ".counters.json"))
        check(dev["initialBytes"] == 0 and dev["peakBytes"] == truth["maxMemoryAllocated"] ==
              counters["max_memory_allocated"] and got["totals"]["allocatedBytes"] == counters["memory_allocated"],
              name + ": replayed peak == truth max_memory_allocated == counters; allocated == counters")
        ok_alloc, ok_sites = True, True
        for st in truth["steps"]:
            i = st["endEvent"]
            ok_alloc &= dev["allocated"][i] == st["allocatedBytes"]
            at = {}
            for x in allocs:
                if x.start <= i < x.free_req:
                    k = user_site(tr[x.start].get("frames"))
                    at[k] = at.get(k, 0) + x.size
            ok_sites &= at == rows(st["live"])
        check(ok_alloc, name + ": allocated at each step's end (the file's replay) == truth")
        check(ok_sites, name + ": bytes per call site live at each step's end (the file's replay) == truth")
        leak_bytes = [sum(st["leakBytes"]) for st in truth["steps"]]
        growth = [b - a for a, b in zip(leak_bytes, leak_bytes[1:])]
        want = per_step[leak]
        if leak is None:
            grows = truth["leakSites"] == [] and leak_bytes == [0] * len(leak_bytes)
        else:
            grows = (len(truth["leakSites"]) == (2 if leak == "graph" else 1) and growth[0] > 0 and
                     all(g == growth[0] for g in growth))
        check(grows, name + ": the leak grows by the same bytes every step (none: no leak bytes)")
        if want:
            check(growth[0] == want, name + f": {want // MiB} MiB more every step")
    d = os.path.join(tmp, "leaks-series")
    truth = generate.leaks(d, "list", series=True)
    leak_bytes = []
    for dump in truth["dumps"]:
        path = os.path.join(d, dump["file"])
        got, obj = inspect(path)
        live, segs, _peak, _i = replay(obj)
        blocks, fsegs = final_state(obj)
        at = {}
        for sg in obj["segments"]:
            for b in sg["blocks"]:
                if b["state"] == "active_allocated":
                    k = user_site(b.get("frames"))
                    at[k] = at.get(k, 0) + b["size"]
        check(live == blocks and segs == fsegs and got["totals"]["allocatedBytes"] == dump["allocatedBytes"] and
              at == rows(dump["live"]),
              f"leaks --series list {dump['file']}: replay == dump; allocated and bytes per site == truth")
        leak_bytes.append(sum(dump["leakBytes"]))
    check([b - a for a, b in zip(leak_bytes, leak_bytes[1:])] == [2 * MiB] * (len(leak_bytes) - 1),
          "leaks --series list: the leak grows by 2 MiB from dump to dump")


def check_big(tmp, mb):
    check(bool(bigpickle.verify(0.3, 1)), "big: streamed opcodes == pickle.dumps opcodes (1 device)")
    check(bool(bigpickle.verify(0.4, 2)), "big: streamed opcodes == pickle.dumps opcodes (2 devices)")
    out = os.path.join(tmp, "big.pickle")
    c = generate.big(out, mb, 2)
    got, obj = inspect(out)
    check(same_counts(got, c), f"big --target-mb {mb} --devices 2: printed counts == py_inspect")
    check(abs(c["bytes"] - mb * 1e6) < 0.15 * mb * 1e6, f"big: size {c['bytes']} within 15% of target")
    with open(out, "rb") as f:
        check(pickle.load(f) == obj, "big: plain pickle.load == restricted load")


def main():
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--keep", help="write into this folder and keep it")
    p.add_argument("--big-mb", type=float, default=3)
    a = p.parse_args()
    tmp = a.keep or tempfile.mkdtemp(prefix="memgen-check-")
    os.makedirs(tmp, exist_ok=True)
    try:
        check_known(tmp)
        check_known_options(tmp)
        check_variants(tmp)
        check_hostile(tmp)
        check_random(tmp)
        check_ranks(tmp)
        check_leaks(tmp)
        check_big(tmp, a.big_mb)
    finally:
        if not a.keep:
            shutil.rmtree(tmp, ignore_errors=True)
    print(f"{len(FAILS)} failed" if FAILS else "all checks passed")
    return 1 if FAILS else 0


if __name__ == "__main__":
    sys.exit(main())
