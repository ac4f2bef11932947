// A small snapshot written here, in the shape torch writes (protocol 4: memoised strs and frame dicts,
// frames lists of memo references, one device trace), for a spare worker to open a few dozen times
// while the page is idle: the parser, attribution and replay get compiled before the user's file
// arrives (a fresh worker reads its first 100 MB ≈ 20% slower otherwise). Made here rather than
// fetched, so that warming up makes no request.

const ENTRIES = 3000;
const FRAMES_PER_STACK = 12;
const SITES = 40;
const SEGMENT_BYTES = 64 << 20;
const SEGMENT_ADDRESS = 0x7f00_0000_0000;

class PickleWriter {
  private bytes = new Uint8Array(1 << 16);
  private length = 0;
  private slots = 0;
  private readonly strs = new Map<string, number>();

  private room(n: number): void {
    if (this.length + n <= this.bytes.length) return;
    const grown = new Uint8Array(Math.max(this.bytes.length * 2, this.length + n));
    grown.set(this.bytes.subarray(0, this.length));
    this.bytes = grown;
  }

  op(...codes: number[]): void {
    this.room(codes.length);
    for (const c of codes) this.bytes[this.length++] = c;
  }

  private u32(v: number): void {
    this.op(v & 0xff, (v >>> 8) & 0xff, (v >>> 16) & 0xff, (v >>> 24) & 0xff);
  }

  memoize(): number {
    this.op(0x94);
    return this.slots++;
  }

  get(slot: number): void {
    if (slot < 256) this.op(0x68, slot);
    else {
      this.op(0x6a);
      this.u32(slot);
    }
  }

  /** A str: written and memoised the first time, a memo reference after. */
  str(s: string): void {
    const slot = this.strs.get(s);
    if (slot !== undefined) {
      this.get(slot);
      return;
    }
    const b = new TextEncoder().encode(s);
    this.op(0x8c, b.length, ...b);
    this.strs.set(s, this.memoize());
  }

  /** A non-negative integer below 2^53. */
  int(v: number): void {
    if (v < 256) this.op(0x4b, v);
    else if (v < 2 ** 31) {
      this.op(0x4a);
      this.u32(v);
    } else {
      this.op(0x8a, 8); // LONG1, 8 bytes little-endian (the top byte stays below 0x80: positive)
      for (let i = 0, x = v; i < 8; i++, x = Math.floor(x / 256)) this.op(x % 256);
    }
  }

  finish(): Uint8Array {
    this.op(0x2e);
    return this.bytes.slice(0, this.length);
  }
}

export function warmUpSnapshot(): Uint8Array {
  const w = new PickleWriter();
  w.op(0x80, 4);
  w.op(0x7d);
  w.memoize();
  w.op(0x28);
  // one segment, all of it free at the end (every allocation below is freed)
  w.str("segments");
  w.op(0x5d);
  w.memoize();
  w.op(0x7d);
  w.memoize();
  w.op(0x28);
  for (const [k, v] of [
    ["device", 0],
    ["address", SEGMENT_ADDRESS],
    ["total_size", SEGMENT_BYTES],
    ["stream", 0],
    ["allocated_size", 0],
    ["active_size", 0],
    ["requested_size", 0],
  ] as const) {
    w.str(k);
    w.int(v);
  }
  w.str("segment_type");
  w.str("large");
  w.str("blocks");
  w.op(0x5d);
  w.memoize();
  w.op(0x7d);
  w.memoize();
  w.op(0x28);
  w.str("address");
  w.int(SEGMENT_ADDRESS);
  w.str("size");
  w.int(SEGMENT_BYTES);
  w.str("requested_size");
  w.int(0);
  w.str("state");
  w.str("inactive");
  w.str("frames");
  w.op(0x5d);
  w.memoize();
  w.op(0x75); // SETITEMS: the block
  w.op(0x61); // APPEND: the block to blocks
  w.op(0x75); // SETITEMS: the segment
  w.op(0x61); // APPEND: the segment to segments
  // the trace: alloc, free_requested, free_completed per allocation, stacks from a few dozen sites
  w.str("device_traces");
  w.op(0x5d);
  w.memoize();
  w.op(0x5d);
  w.memoize();
  w.op(0x28);
  const frameSlots: number[] = [];
  const frame = (site: number, depth: number) => {
    const key = site * FRAMES_PER_STACK + depth;
    if (frameSlots[key] !== undefined) {
      w.get(frameSlots[key]);
      return;
    }
    w.op(0x7d);
    frameSlots[key] = w.memoize();
    w.op(0x28);
    w.str("filename");
    w.str(
      depth === 0 ? "/usr/lib/python3/site-packages/torch/nn/modules/linear.py" : `/work/train_${depth}.py`,
    );
    w.str("line");
    w.int(10 + site);
    w.str("name");
    w.str(depth === 0 ? "forward" : `step_${site % 7}`);
    w.op(0x75);
  };
  let time = 1_700_000_000_000_000;
  const entry = (action: string, addr: number, size: number, site: number) => {
    w.op(0x7d);
    w.memoize();
    w.op(0x28);
    w.str("action");
    w.str(action);
    w.str("addr");
    w.int(addr);
    w.str("size");
    w.int(size);
    w.str("stream");
    w.int(0);
    w.str("time_us");
    w.int(time++);
    w.str("frames");
    w.op(0x5d);
    w.memoize();
    w.op(0x28);
    for (let d = 0; d < FRAMES_PER_STACK; d++) frame(site, d);
    w.op(0x65); // APPENDS
    w.str("compile_context");
    w.str("N/A");
    w.op(0x75);
  };
  let addr = SEGMENT_ADDRESS;
  for (let i = 0; i < ENTRIES / 3; i++) {
    const size = 512 * (1 + (i % 64));
    const site = i % SITES;
    entry("alloc", addr, size, site);
    entry("free_requested", addr, size, site);
    entry("free_completed", addr, size, site);
    addr += size;
    if (addr + 64 * 512 > SEGMENT_ADDRESS + SEGMENT_BYTES) addr = SEGMENT_ADDRESS;
  }
  w.op(0x65); // APPENDS: entries to device 0's list
  w.op(0x61); // APPEND: device 0's list to device_traces
  w.op(0x75); // SETITEMS: the top dict
  return w.finish();
}
