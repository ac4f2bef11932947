"""A known training run written as torch.profiler would: a Chrome trace (`[memory]` events, cpu_op and
user_annotation spans, python_function spans with with_stack=True, distributedInfo for the rank) and an
export_memory_timeline raw file. Every number in the truth comes from this module's own bookkeeping.

The run: a 3-layer MLP in `/home/user/proj/train.py`, two steps of forward → loss → backward → AdamW step.
Forward outputs are saved for backward (freed there: activations); the backward's grad buffers of the
inputs are freed in it (temporary); AccumulateGrad makes each .grad (kept: gradients); the optimizer's
first step makes exp_avg / exp_avg_sq (kept: optimizer_state) and a scratch buffer per parameter freed
inside the step (temporary). Parameters exist before profiling (a baseline, in Total Allocated).
"""
import gzip
import json

OWN = "/home/user/proj/train.py"
TORCH = "/usr/lib/python3/site-packages/torch/nn/modules/module.py"
OPTIM = "/usr/lib/python3/site-packages/torch/optim/adamw.py"


class Run:
    def __init__(self, rank, with_stack, scale):
        self.rank = rank
        self.with_stack = with_stack
        self.scale = scale
        self.t = 1000.0
        self.events = []      # trace events, in time order
        self.allocs = []      # bookkeeping: one dict per allocation
        self.next_addr = 0x7F0000000000 + rank * 0x100000000
        self.live = {}
        self.allocated = 0
        self.reserved = 0
        self.peak = 0
        self.peak_live = []
        self.stack = []       # open spans: [name, cat, start, python?]
        self.raw = []         # export_memory_timeline raw rows
        self.py_frames = []   # the Python frames the run is in (written as spans only with with_stack)

    def tick(self, dt=1.0):
        self.t += dt
        return round(self.t, 3)

    def open(self, name, cat):
        self.stack.append([name, cat, self.tick()])

    def close(self):
        name, cat, start = self.stack.pop()
        end = self.tick()
        self.events.append({"ph": "X", "cat": cat, "name": name, "pid": 100 + self.rank, "tid": 7,
                            "ts": start, "dur": round(end - start, 3), "args": {}})

    def py(self, filename, line, func):
        # like torch's Python tracer: a frame is named by its function's first line (co_firstlineno)
        self.py_frames.append((filename, line))
        if self.with_stack:
            self.open("%s(%d): %s" % (filename, line, func), "python_function")

    def py_close(self):
        self.py_frames.pop()
        if self.with_stack:
            self.close()

    def own_line(self):
        """The innermost own-code frame's line: what a call site of this allocation names."""
        return next((line for f, line in reversed(self.py_frames) if f == OWN), None)

    def mem(self, addr, nbytes):
        self.allocated += nbytes
        self.reserved = max(self.reserved, (self.allocated + (2 << 20) - 1) // (2 << 20) * (2 << 20))
        self.events.append({"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]",
                            "pid": 100 + self.rank, "tid": 7, "ts": self.tick(0.1),
                            "args": {"Device Type": 1, "Device Id": 0, "Addr": addr, "Bytes": nbytes,
                                     "Total Allocated": self.allocated, "Total Reserved": self.reserved,
                                     "Ev Idx": len(self.events)}})

    def alloc(self, nbytes, category, op):
        nbytes = nbytes * self.scale
        addr = self.next_addr
        self.next_addr += (nbytes + 511) // 512 * 512 + 512
        a = {"addr": addr, "bytes": nbytes, "category": category, "ownLine": self.own_line(), "op": op,
             "freed": False}
        self.allocs.append(a)
        self.live[addr] = a
        # the op span around the allocation: it is the innermost span containing the event
        self.open(op, "cpu_op")
        self.mem(addr, nbytes)
        self.close()
        self.raw.append([int(self.t * 1000), 2, nbytes, RAW_CATEGORY[category]])
        if self.allocated > self.peak:
            self.peak = self.allocated
            self.peak_live = [x for x in self.live.values()]
        return a

    def free(self, a):
        del self.live[a["addr"]]
        a["freed"] = True
        self.mem(a["addr"], -a["bytes"])
        self.raw.append([int(self.t * 1000), 4, -a["bytes"], RAW_CATEGORY[a["category"]]])


RAW_CATEGORY = {"parameters": 0, "optimizer_state": 1, "input": 2, "temporary": 3, "activations": 4,
                "gradients": 5, "unknown": 7}


def simulate(rank=0, with_stack=True, steps=2, on_step=None):
    r = Run(rank, with_stack, scale=1 + rank)   # rank 1 works on twice the sizes: a different peak
    widths = [(4096, 1024), (1024, 1024), (1024, 16)]
    # parameters: allocated before profiling; in Total Allocated from the first event on
    baseline = sum(i * o * 4 for i, o in widths) * r.scale
    r.allocated = baseline
    for i, o in widths:
        r.raw.append([-1, 1, i * o * 4 * r.scale, 0])
    grads = {}
    state = {}
    for step in range(1, steps + 1):
        r.open("ProfilerStep#%d" % step, "user_annotation")
        # forward
        r.py(OWN, 88, "train")
        r.py(OWN, 40, "forward")
        x = r.alloc(64 * 4096 * 4, "input", "aten::to")
        saved = []
        for k, (i, o) in enumerate(widths):
            r.py(TORCH, 1501, "_call_impl")
            out = r.alloc(64 * o * 4, "activations", "aten::addmm")
            r.py_close()
            saved.append(out)
        r.py_close()
        loss = r.alloc(512, "activations", "aten::nll_loss")
        r.py_close()
        # backward: AccumulateGrad makes the .grad, the grad of each input is a temporary
        r.py(OWN, 90, "train")
        r.py("/usr/lib/python3/site-packages/torch/_tensor.py", 487, "backward")
        r.free(loss)
        for k, (i, o) in reversed(list(enumerate(widths))):
            r.open("autograd::engine::evaluate_function: AddmmBackward0", "cpu_op")
            tmp = r.alloc(64 * i * 4, "temporary", "aten::mm")
            r.free(saved[k])
            r.close()
            if k not in grads:
                r.open("autograd::engine::evaluate_function: torch::autograd::AccumulateGrad", "cpu_op")
                grads[k] = r.alloc(i * o * 4, "gradients", "aten::empty_strided")
                r.close()
            r.open("autograd::engine::evaluate_function: AddmmBackward0", "cpu_op")
            r.free(tmp)
            r.close()
        r.free(x)
        r.py_close()
        r.py_close()
        # optimizer step: state on the first step, a scratch buffer per parameter freed inside it
        r.py(OWN, 91, "train")
        r.open("Optimizer.step#AdamW.step", "user_annotation")
        r.py(OPTIM, 180, "step")
        for k, (i, o) in enumerate(widths):
            if k not in state:
                state[k] = [r.alloc(i * o * 4, "optimizer_state", "aten::zeros_like") for _ in range(2)]
            scratch = r.alloc(i * o * 4, "temporary", "aten::sqrt")
            r.free(scratch)
        r.py_close()
        r.close()
        r.py_close()
        r.close()
        if on_step:
            on_step(r)
    return r, baseline


def write_trace(r, path, world_size=2):
    doc = {
        "schemaVersion": 1,
        "deviceProperties": [{"id": 0, "name": "Simulated GPU", "totalGlobalMem": 85899345920}],
        "distributedInfo": {"backend": "nccl", "rank": r.rank, "world_size": world_size},
        "profile_memory": 1,
        "with_stack": 1 if r.with_stack else 0,
        "traceEvents": sorted(r.events, key=lambda e: e["ts"]),
        "traceName": path,
        "displayTimeUnit": "ms",
        "baseTimeNanoseconds": 1700000000000000000,
    }
    data = json.dumps(doc, indent=1).encode()
    if path.endswith(".gz"):
        data = gzip.compress(data, mtime=0)
    with open(path, "wb") as f:
        f.write(data)


def write_raw(r, path):
    rows = sorted(r.raw, key=lambda x: (x[0], x[1]))
    with gzip.open(path, "wt") as f:
        json.dump(rows, f)


def truth(r, baseline):
    """What the run did: the peak, what was live there, and every allocation's op and own-code line."""
    by_cat = {}
    for a in r.peak_live:
        by_cat[a["category"]] = by_cat.get(a["category"], 0) + a["bytes"]
    return {
        "rank": r.rank,
        "withStack": r.with_stack,
        "baselineBytes": baseline,
        "peakAllocatedBytes": r.peak,
        "peakCategoriesInTrace": by_cat,
        "allocations": [{"bytes": a["bytes"], "op": a["op"], "ownFile": OWN, "ownLine": a["ownLine"],
                         "category": a["category"], "freed": a["freed"]} for a in r.allocs],
    }


def profiler_run(out, rank=0, with_stack=True, kind="trace"):
    r, baseline = simulate(rank, with_stack)
    if kind == "raw":
        write_raw(r, out)
    else:
        write_trace(r, out)
    return truth(r, baseline)


def big_trace(out, target_mb):
    """A long run's trace of about target_mb MB (uncompressed), written as it is simulated."""
    target = int(target_mb * 1e6)
    with open(out, "w") as f:
        f.write('{"schemaVersion": 1, "profile_memory": 1, "with_stack": 1, "traceEvents": [\n')
        state = {"first": True, "bytes": 0, "events": 0}

        def flush(r):
            for e in r.events:
                line = json.dumps(e)
                f.write(line if state["first"] else ",\n" + line)
                state["first"] = False
                state["bytes"] += len(line) + 2
                state["events"] += 1
            r.events = []
            r.raw = []
            r.allocs = []
            if state["bytes"] >= target:
                raise StopIteration

        try:
            simulate(0, True, steps=10 ** 9, on_step=flush)
        except StopIteration:
            pass
        f.write('\n], "displayTimeUnit": "ms"}\n')
    return {"events": state["events"]}
