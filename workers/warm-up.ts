// A small snapshot written here, byte for byte as CPython's pickler writes torch's snapshots, for a spare
// worker to open a few dozen times while the page is idle. The point is the JIT: V8 compiles the parser,
// attribution and replay for the paths this file takes, and each path a user's file takes that this one
// did not costs a deoptimisation and a fresh compile in the middle of their load (the opcode loop alone
// takes ≈ 0.1 s to compile, and in the meantime runs unoptimised). So this file has what real files have:
// protocol 4 frames, every integer width CPython picks, memoised strs and frame dicts, frames lists shared
// and repeated, a str over 255 bytes, batches, tuples, floats, bools, the entry shapes of several torch
// versions (with and without compile_context, user_metadata, frames), segment, oom and snapshot entries,
// frees of blocks allocated before the trace, small and large pools, new strs and frames throughout, the
// trace's keys at both memo-reference widths, stacks recorded "all" and "python" (two variants). Made
// here rather than fetched, so that warming up makes no request.

import { mulberry32 } from "../src/core/random";
import { Engine } from "./engine";

/** A Python float (a JS number is written as an int when it is an integer). */
class PyFloat {
  constructor(readonly value: number) {}
}

/** A Python tuple. */
class PyTuple {
  constructor(readonly items: PyValue[]) {}
}

type PyValue = null | boolean | number | string | PyFloat | PyTuple | PyValue[] | { [key: string]: PyValue };

/** CPython's protocol 4 framing: a frame is closed at the first save() after it reaches 64 KiB. */
const FRAME_TARGET_BYTES = 64 * 1024;
/** CPython writes lists and dicts in batches of this many items (APPENDS / SETITEMS). */
const BATCH = 1000;

/** The opcodes and choices of CPython's C pickler (Modules/_pickle.c), protocol 4. */
class PyPickler {
  private out = new Uint8Array(1 << 16);
  private length = 0;
  private frameStart = -1;
  private framing = false;
  private slots = 0;
  private readonly objects = new Map<object, number>();
  private readonly strs = new Map<string, number>();
  private readonly utf8 = new TextEncoder();

  dump(value: PyValue): Uint8Array {
    this.write(0x80, 4); // PROTO 4, before the first frame
    this.framing = true;
    this.save(value);
    this.write(0x2e); // STOP
    this.commitFrame();
    return this.out.slice(0, this.length);
  }

  private room(n: number): void {
    if (this.length + n <= this.out.length) return;
    const grown = new Uint8Array(Math.max(this.out.length * 2, this.length + n));
    grown.set(this.out.subarray(0, this.length));
    this.out = grown;
  }

  private write(...bytes: number[]): void {
    this.writeBytes(bytes);
  }

  private writeBytes(bytes: ArrayLike<number>): void {
    if (this.framing && this.frameStart < 0) {
      this.room(9);
      this.frameStart = this.length;
      this.length += 9; // the FRAME header, filled in when the frame is closed
    }
    this.room(bytes.length);
    for (let i = 0; i < bytes.length; i++) this.out[this.length++] = bytes[i];
  }

  private commitFrame(): void {
    if (this.frameStart < 0) return;
    const bodyBytes = this.length - this.frameStart - 9;
    if (bodyBytes >= 4) {
      this.out[this.frameStart] = 0x95;
      new DataView(this.out.buffer).setBigUint64(this.frameStart + 1, BigInt(bodyBytes), true);
    } else {
      this.out.copyWithin(this.frameStart, this.frameStart + 9, this.length);
      this.length -= 9;
    }
    this.frameStart = -1;
  }

  private memoize(): number {
    this.write(0x94);
    return this.slots++;
  }

  private get(slot: number): void {
    if (slot < 256) this.write(0x68, slot);
    else this.write(0x6a, slot & 0xff, (slot >>> 8) & 0xff, (slot >>> 16) & 0xff, slot >>> 24);
  }

  private save(v: PyValue): void {
    if (this.frameStart >= 0 && this.length - this.frameStart - 9 >= FRAME_TARGET_BYTES) this.commitFrame();
    if (v === null) this.write(0x4e);
    else if (v === true) this.write(0x88);
    else if (v === false) this.write(0x89);
    else if (typeof v === "number") this.int(v);
    else if (typeof v === "string") this.str(v);
    else if (v instanceof PyFloat) {
      const b = new Uint8Array(8);
      new DataView(b.buffer).setFloat64(0, v.value, false);
      this.write(0x47);
      this.writeBytes(b);
    } else {
      const slot = this.objects.get(v);
      if (slot !== undefined) this.get(slot);
      else if (v instanceof PyTuple) this.tuple(v);
      else if (Array.isArray(v)) this.list(v);
      else this.dict(v);
    }
  }

  private int(v: number): void {
    if (v >= 0 && v < 0x100) this.write(0x4b, v);
    else if (v >= 0 && v < 0x10000) this.write(0x4d, v & 0xff, v >>> 8);
    else if (v >= -(2 ** 31) && v < 2 ** 31)
      this.write(0x4a, v & 0xff, (v >> 8) & 0xff, (v >> 16) & 0xff, v >>> 24);
    else {
      // LONG1: little-endian two's complement, as few bytes as keep the sign
      const bytes: number[] = [];
      let x = BigInt(v);
      for (;;) {
        const b = Number(x & 0xffn);
        bytes.push(b);
        x >>= 8n;
        if ((x === 0n && b < 0x80) || (x === -1n && b >= 0x80)) break;
      }
      this.write(0x8a, bytes.length, ...bytes);
    }
  }

  private str(s: string): void {
    const slot = this.strs.get(s);
    if (slot !== undefined) {
      this.get(slot);
      return;
    }
    const b = this.utf8.encode(s);
    // (CPython writes a str of a frame's size or more outside the frames: not done here)
    if (b.length >= FRAME_TARGET_BYTES) throw new Error("strs of 64 KiB or more are not written");
    if (b.length < 256) this.write(0x8c, b.length);
    else
      this.write(0x58, b.length & 0xff, (b.length >>> 8) & 0xff, (b.length >>> 16) & 0xff, b.length >>> 24);
    this.writeBytes(b);
    this.strs.set(s, this.memoize());
  }

  /** A tuple of one to three items (torch's are pairs: segment_pool_id). */
  private tuple(t: PyTuple): void {
    if (t.items.length < 1 || t.items.length > 3) throw new Error("only tuples of 1 to 3 items are written");
    for (const item of t.items) this.save(item);
    this.write([0x85, 0x86, 0x87][t.items.length - 1]); // TUPLE1 / TUPLE2 / TUPLE3
    this.objects.set(t, this.memoize());
  }

  private list(items: PyValue[]): void {
    this.write(0x5d);
    this.objects.set(items, this.memoize());
    if (items.length === 1) {
      this.save(items[0]);
      this.write(0x61); // APPEND
      return;
    }
    for (let at = 0; at < items.length; at += BATCH) {
      this.write(0x28);
      for (const item of items.slice(at, at + BATCH)) this.save(item);
      this.write(0x65); // APPENDS
    }
  }

  /**
   * A dict, its keys in insertion order. (JS puts integer-like keys first: they may only be used in a
   * dict that has no others, in ascending order, as roundup_power2_divisions has them.)
   */
  private dict(d: { [key: string]: PyValue }): void {
    this.write(0x7d);
    this.objects.set(d, this.memoize());
    const keys = Object.keys(d);
    if (keys.length === 1) {
      this.save(keys[0]);
      this.save(d[keys[0]]);
      this.write(0x73); // SETITEM
      return;
    }
    if (keys.length === 0) return;
    // as CPython's batch_dict_exact: after a full batch comes another, even an empty one
    for (let at = 0; ; at += BATCH) {
      const batch = keys.slice(at, at + BATCH);
      this.write(0x28);
      for (const k of batch) {
        this.save(k);
        this.save(d[k]);
      }
      this.write(0x75); // SETITEMS
      if (batch.length < BATCH) break;
    }
  }
}

// ---------------------------------------------------------------------------------------------------------
// The snapshot: one device, a small and a large pool, a trace of ≈ 3000 entries that leaves exactly the
// blocks the segments list (what the replay checks), allocations from before the trace, one segment made
// and released during the trace.

const ENTRIES = 3000;
const MiB = 1 << 20;

type Frame = { [key: string]: PyValue };

/**
 * Call stacks as torch records them: C++ frames ("??", line 0), torch's Python, the user's script. Frame
 * dicts are shared, and so is each traceback's list: an allocation's free entries and its block carry the
 * very list its alloc entry did (a memo reference in the pickle), as torch's snapshots do.
 */
class Tracebacks {
  readonly lists: Frame[][] = [];
  private readonly frames = new Map<string, Frame>();

  constructor(
    private readonly random: () => number,
    private readonly pythonOnly: boolean,
  ) {}

  private frame(name: string, filename: string, line: number): Frame {
    const key = `${name}\n${filename}\n${line}`;
    let f = this.frames.get(key);
    if (!f) {
      f = { name, filename, line };
      this.frames.set(key, f);
    }
    return f;
  }

  /** A new traceback (index into lists): some old frames in a new order, now and then a new line. */
  make(): number {
    const r = this.random;
    const pick = <T>(xs: readonly T[]) => xs[Math.floor(r() * xs.length)];
    // C++ frames (stacks="all"); none when recorded with stacks="python"
    const cpp = (name: string, filename = "??") => (this.pythonOnly ? [] : [this.frame(name, filename, 0)]);
    const frames: Frame[] = [
      ...cpp("torch::unwind::unwind()"),
      ...cpp("torch::CapturedTraceback::gather(bool, bool, bool)"),
      ...cpp("torch::cuda::(anonymous namespace)::gather_with_cpp()", "memory_snapshot.cpp"),
      ...cpp(
        "c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(signed char, unsigned long, CUstream_st*)",
        "CUDACachingAllocator.cpp",
      ),
      ...cpp(pick(OPS)),
    ];
    // a kernel not seen before: a new str (names keep appearing in a real trace), a new line-0 frame
    if (r() < 0.25)
      frames.push(
        ...cpp(`at::native::(anonymous namespace)::kernel_${this.lists.length}(at::TensorIterator&)`),
      );
    const kind = r();
    if (kind < 0.04) {
      // a collective: native frames only, no autograd node
      frames.push(
        ...cpp("c10d::ProcessGroupNCCL::allreduce(std::vector<at::Tensor>&, c10d::AllreduceOptions const&)"),
      );
    } else if (kind < 0.08) {
      // a library's own thread: the standard library only
      frames.push(this.frame("run", "/usr/lib/python3.11/threading.py", 1010));
      frames.push(this.frame("_bootstrap_inner", "/usr/lib/python3.11/threading.py", 1073));
    } else if (kind < 0.12) {
      // inside a library, no line of the user's (under a path over 255 bytes: a BINUNICODE str)
      const site = "/home/u/.local/lib/python3.11/site-packages/";
      frames.push(this.frame("_run_stage", `${site}lightning/pytorch/trainer/trainer.py`, 1026));
      frames.push(this.frame("wrapper", `/home/u/${"nested/".repeat(36)}generated.py`, 12));
      frames.push(this.frame("fit", `${site}lightning/pytorch/trainer/trainer.py`, 539));
    } else if (kind < 0.27) {
      // the autograd engine's threads: no Python frame (and with stacks="python", no frame at all)
      frames.push(
        ...cpp(
          "torch::autograd::generated::MmBackward0::apply(std::vector<at::Tensor, std::allocator<at::Tensor> >&&)",
        ),
        ...cpp("torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&)"),
      );
    } else {
      const site = "/home/u/.local/lib/python3.11/site-packages/";
      for (let d = Math.floor(r() * 5); d >= 0; d--) {
        const [name, file, line] = pick(LAYERS);
        frames.push(...cpp("_PyEval_EvalFrameDefault"), this.frame(name, site + file, line));
      }
      // the user's line: mostly a few known ones, sometimes one not seen before (of every int width)
      const known = r() < 0.6;
      const line = known
        ? 40 + 37 * Math.floor(r() * 12)
        : r() < 0.5
          ? 1 + Math.floor(r() * 250)
          : 300 + Math.floor(r() * 90000);
      const fn = known || r() < 0.5 ? `block_${line % 7}` : `layer_${this.lists.length}`;
      frames.push(this.frame(fn, "/home/u/proj/model.py", line));
      // the standard library and another package between the user's lines, now and then
      if (r() < 0.2) frames.push(this.frame("inner", "/usr/lib/python3.11/contextlib.py", 81));
      frames.push(this.frame("train_step", "/home/u/proj/train.py", 95));
      if (r() < 0.3)
        frames.push(this.frame("_run_stage", `${site}lightning/pytorch/trainer/trainer.py`, 1026));
      frames.push(this.frame("<module>", "/home/u/proj/train.py", 155));
    }
    this.lists.push(frames);
    return this.lists.length - 1;
  }

  /**
   * The frames list of the next allocation. A training step repeats itself: mostly a recent traceback,
   * as the very same list (a memo reference to it) or as a new list of the same frames (a list of
   * memo references), sometimes a new one.
   */
  next(): Frame[] {
    const r = this.random();
    const n = this.lists.length;
    if (n === 0 || r < 0.3) return this.lists[this.make()];
    const recent = this.lists[n - 1 - Math.floor(this.random() * Math.min(n, 40))];
    return r < 0.65 ? recent : [...recent];
  }
}

const OPS = [
  "at::native::empty_cuda(c10::ArrayRef<long>, c10::TensorOptions const&)",
  "at::native::addmm_out_cuda_impl(at::Tensor&, at::Tensor const&, at::Tensor const&)",
  "torch::autograd::Engine::evaluate_function(std::shared_ptr<torch::autograd::GraphTask>&)",
  "at::_ops::_to_copy::redispatch(c10::DispatchKeySet, at::Tensor const&, std::optional<c10::ScalarType>, " +
    "std::optional<c10::Layout>, std::optional<c10::Device>, std::optional<bool>, bool, " +
    "std::optional<c10::MemoryFormat>) [clone .constprop.0] (in libtorch_cpu.so)", // over 255 bytes
];

const LAYERS: readonly [string, string, number][] = [
  ["forward", "torch/nn/modules/linear.py", 125],
  ["_conv_forward", "torch/nn/modules/conv.py", 549],
  ["forward", "torch/nn/modules/normalization.py", 217],
  ["_call_impl", "torch/nn/modules/module.py", 1747],
  ["_wrapped_call_impl", "torch/nn/modules/module.py", 1736],
  ["step", "torch/optim/adamw.py", 243],
  ["backward", "torch/_tensor.py", 581],
];

/** An allocation: its requested bytes, its stack, whether its free was requested. */
interface Live {
  requested: number;
  frames: Frame[];
  pending: boolean;
}

interface Slot {
  segment: number;
  address: number;
  sizeBytes: number;
  /** The allocation in it, or null when free. */
  live: Live | null;
}

type LiveSlot = Slot & { live: Live };

interface Segment {
  address: number;
  sizeBytes: number;
  pool: "small" | "large";
  /** Exists before the trace starts (else a segment_alloc entry makes it). */
  made: boolean;
  released: boolean;
  /** A segment at the same address that must be given back before this one is made, or -1. */
  after: number;
}

function layout(): { segments: Segment[]; slots: Slot[] } {
  const segments: Segment[] = [];
  const slots: Slot[] = [];
  const add = (
    address: number,
    sizeBytes: number,
    pool: "small" | "large",
    pieces: number[],
    made: boolean,
    after = -1,
  ) => {
    const segment = segments.length;
    segments.push({ address, sizeBytes, pool, made, released: false, after });
    for (let at = 0, i = 0; at < sizeBytes; i++) {
      const size = Math.min(pieces[i % pieces.length], sizeBytes - at);
      slots.push({ segment, address: address + at, sizeBytes: size, live: null });
      at += size;
    }
  };
  const high = 0x7f3a_2000_0000;
  add(high, 2 * MiB, "small", [512, 1024, 8192, 512, 65536, 131072, 2048, 262144], true);
  add(high + 2 * MiB, 2 * MiB, "small", [4096, 512, 16384, 1536, 524288], false);
  add(high + 0x4000_0000, 20 * MiB, "large", [2 * MiB, 4 * MiB, 6 * MiB, 8 * MiB], true);
  add(high + 0x8000_0000, 64 * MiB, "large", [16 * MiB, 2 * MiB, 24 * MiB, 4 * MiB], false);
  // an address below 2^40, as on Windows (5-byte integers): given back in the second half, then a larger
  // segment is made at the same address (so that one segment spans two address intervals of the trace)
  add(0xb_0e40_0000, 40 * MiB, "large", [10 * MiB, 30 * MiB], false);
  add(0xb_0e40_0000, 60 * MiB, "large", [20 * MiB, 40 * MiB], false, segments.length - 1);
  return { segments, slots };
}

/**
 * Two ways real files come. "segments-first", as torch writes it: the trace's keys land in the memo after
 * a long segments list, so they are LONG_BINGETs; stacks="all"; a free carries its allocation's stack.
 * "traces-first", as some tools write it: the keys are BINGETs; stacks="python"; a free carries its own.
 */
export type WarmUpVariant = "segments-first" | "traces-first";

export function warmUpSnapshot(variant: WarmUpVariant = "segments-first"): Uint8Array {
  const random = mulberry32(20261130); // the same file every time
  const torchOrder = variant === "segments-first";
  const stacks = new Tracebacks(random, !torchOrder);
  /** The stack a free entry carries: its allocation's, or (recorded the other way) the free's own. */
  const freeStack = (live: Live) => (torchOrder || random() < 0.5 ? live.frames : stacks.next());
  const { segments, slots } = layout();
  const trace: PyValue[] = [];
  let timeUs = 1_763_324_225_770_000;
  // The entry shapes of several torch versions, a third of the trace each.
  const shapeOf = (i: number) => Math.floor((3 * i) / ENTRIES);
  const entry = (action: string, addr: number, sizeBytes: number, frames: Frame[] | null): void => {
    timeUs += 1 + Math.floor(random() * 400);
    const shape = shapeOf(trace.length);
    const e: { [key: string]: PyValue } = { action, addr, size: sizeBytes, stream: 0, time_us: timeUs };
    if (shape >= 1) e.compile_context = "N/A";
    if (shape === 2) e.user_metadata = "";
    if (frames !== null) e.frames = frames;
    trace.push(e);
  };
  // Allocations from before the trace: some freed during it, some alive at the end.
  for (const [k, s] of slots.entries()) {
    if (segments[s.segment].made && k % 3 === 0)
      s.live = { requested: s.sizeBytes - 64, frames: stacks.next(), pending: false };
  }
  const segmentInUse = (seg: number) => slots.some((s) => s.segment === seg && s.live);
  const pendingFrees: LiveSlot[] = [];
  const completeFrees = (all: boolean) => {
    while (pendingFrees.length > 0 && (all || random() < 0.5)) {
      const s = pendingFrees.shift() as LiveSlot;
      entry("free_completed", s.address, s.live.requested, freeStack(s.live));
      (s as Slot).live = null;
    }
  };
  // the segment that is given back in the second half (it takes no new allocations then, and empties),
  // and the one made at its address afterwards
  const reborn = segments.findIndex((seg) => seg.after >= 0);
  const leaving = segments[reborn].after;
  const usable = (k: number) => segments[k].after < 0 || segments[segments[k].after].released;
  while (trace.length < ENTRIES - 8) {
    const closing = trace.length > ENTRIES / 2;
    const free = slots.filter((s) => !s.live && !(closing && s.segment === leaving) && usable(s.segment));
    const live = slots.filter((s): s is LiveSlot => s.live !== null && !s.live.pending);
    if (free.length > 0 && (live.length === 0 || random() < 0.52)) {
      const s = free[Math.floor(random() * free.length)];
      const seg = segments[s.segment];
      if (!seg.made) {
        entry("segment_alloc", seg.address, seg.sizeBytes, null);
        seg.made = true;
      }
      s.live = {
        requested: s.sizeBytes - Math.floor(random() * 4) * 128,
        frames: stacks.next(),
        pending: false,
      };
      entry("alloc", s.address, s.live.requested, s.live.frames);
    } else if (live.length > 0) {
      const s = live[Math.floor(random() * live.length)];
      s.live.pending = true;
      entry("free_requested", s.address, s.live.requested, freeStack(s.live));
      pendingFrees.push(s);
    }
    completeFrees(false);
    const seg = segments[leaving];
    if (closing && seg.made && !seg.released && !segmentInUse(leaving)) {
      completeFrees(true);
      entry("segment_free", seg.address, seg.sizeBytes, null);
      seg.released = true;
    }
  }
  completeFrees(true);
  // an out-of-memory entry (device_free instead of addr), then the snapshot's own marker
  timeUs += 10;
  trace.push({
    action: "oom",
    device_free: 12 * MiB,
    size: 96 * MiB,
    stream: 0,
    time_us: timeUs,
    compile_context: "N/A",
    frames: stacks.next(),
  });
  trace.push({ action: "snapshot", addr: 0, size: 0, stream: 0, time_us: timeUs + 5 });
  // A request still pending at the end: an active_pending_free block.
  const pending = slots.find((s): s is LiveSlot => s.live !== null);
  if (pending) {
    pending.live.pending = true;
    trace.push({
      action: "free_requested",
      addr: pending.address,
      size: pending.live.requested,
      stream: 0,
      time_us: timeUs + 9,
    });
  }
  const segmentList = segments.flatMap((seg, k) =>
    seg.made && !seg.released ? [segmentValue(seg, k, slots)] : [],
  );
  const top: { [key: string]: PyValue } = torchOrder
    ? { segments: segmentList, device_traces: [trace] }
    : { device_traces: [trace], segments: segmentList };
  return new PyPickler().dump({
    ...top,
    allocator_settings: {
      PYTORCH_CUDA_ALLOC_CONF: "",
      max_split_size: -1,
      garbage_collection_threshold: new PyFloat(0),
      expandable_segments: false,
      pinned_num_register_threads: 1,
      release_lock_on_cudamalloc: true, // (NEWTRUE: real files have both bools)
      pinned_use_cuda_host_register: false,
      roundup_power2_divisions: Object.fromEntries(
        [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768].map((n) => [`${n}`, 0]),
      ),
    },
    external_annotations: [
      { name: "forward", stage: "START", device: 0, time_us: 1_763_324_225_770_100 },
      { name: "forward", stage: "END", device: 0, time_us: timeUs - 100 },
    ],
  });
}

/** A segment as torch lists it: its blocks in address order, free neighbours merged into one. */
function segmentValue(seg: Segment, k: number, slots: Slot[]): PyValue {
  const blocks: { [key: string]: PyValue }[] = [];
  let allocated = 0;
  let active = 0;
  let requested = 0;
  let freeRun: { [key: string]: PyValue } | null = null;
  for (const s of slots) {
    if (s.segment !== k) continue;
    if (!s.live) {
      if (freeRun) freeRun.size = (freeRun.size as number) + s.sizeBytes;
      else {
        freeRun = { address: s.address, size: s.sizeBytes, requested_size: 0, state: "inactive", frames: [] };
        blocks.push(freeRun);
      }
      continue;
    }
    freeRun = null;
    active += s.sizeBytes;
    requested += s.live.requested;
    if (!s.live.pending) allocated += s.sizeBytes;
    blocks.push({
      address: s.address,
      size: s.sizeBytes,
      requested_size: s.live.requested,
      state: s.live.pending ? "active_pending_free" : "active_allocated",
      frames: s.live.frames,
    });
  }
  return {
    device: 0,
    address: seg.address,
    total_size: seg.sizeBytes,
    allocated_size: allocated,
    active_size: active,
    requested_size: requested,
    stream: 0,
    segment_type: seg.pool,
    segment_pool_id: new PyTuple([0, 0]),
    is_expandable: false,
    frames: [],
    blocks,
  };
}

/**
 * The first slice the warm-up file is read in, in round `i`: whole, or cut (each next slice four times
 * the last) at places that move from round to round, so that opcodes and entries straddle slice
 * boundaries every which way (a user's file is read in slices too).
 */
export function warmUpSlice(i: number): number {
  const k = Math.floor(i / 2);
  return [4 << 20, 65_536 + 37 * k, 4096 + 131 * k, 20_011 + 7 * k][k % 4];
}
export const WARM_UP_VARIANTS: readonly WarmUpVariant[] = ["segments-first", "traces-first"];

/** The engine of the round in progress, if any. */
let warming: Engine | null = null;

/** Ends the round in progress at its next slice: a user's file should not share the thread with it. */
export function cancelWarmUp(): void {
  warming?.cancel();
}

/**
 * Opens the warm-up snapshots `rounds` times (each variant in each slicing), asking each time for what
 * the page asks for once a file is open. Stops before the next round once `stop()` is true, or at once
 * on cancelWarmUp(). Returns the rounds completed.
 */
export async function warmUp(rounds: number, stop: () => boolean = () => false): Promise<number> {
  // Written when first needed, each after a macrotask: a file picked as the page loads is asked for while
  // this worker starts, and writing both (≈ 0.1 s in code not yet compiled) would make it wait.
  const files: (Blob | undefined)[] = [];
  const file = (v: number): Blob => {
    files[v] ??= new Blob([warmUpSnapshot(WARM_UP_VARIANTS[v]) as Uint8Array<ArrayBuffer>]);
    return files[v];
  };
  let i = 0;
  for (; i < rounds; i++) {
    await new Promise((resolve) => setTimeout(resolve, 0));
    if (stop()) break;
    const engine = new Engine();
    warming = engine;
    const first = warmUpSlice(i);
    const r = await engine.open(file(i % WARM_UP_VARIANTS.length), "warm-up.pickle", undefined, {
      first,
      max: first * 4,
    });
    warming = null;
    if (!r.ok) return i; // cancelled (cancelWarmUp)
    const replay = engine.panel(0).replay;
    if (replay) {
      engine.timeline({ device: 0, axis: "time", x0: replay.t0, x1: replay.t1 + 1, buckets: 1200 });
      engine.timeline({ device: 0, axis: "event", x0: 0, x1: replay.events, buckets: 1200 });
      engine.segmentMap({ device: 0, event: null });
      engine.segmentMap({ device: 0, event: replay.peakEvent });
    }
    engine.close();
  }
  return i;
}
