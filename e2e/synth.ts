// Writes a large synthetic snapshot pickle (protocol 4) for tests that need a file slow enough to
// cancel: `entries` trace entries of alloc / free_requested / free_completed cycles, no segments.

import { createWriteStream } from "node:fs";

export async function writeBigPickle(path: string, entries: number): Promise<void> {
  const out = createWriteStream(path);
  const memo = new Map<string, number>();
  const parts: Buffer[] = [];
  let pending = 0;
  const push = (b: Buffer) => {
    parts.push(b);
    pending += b.length;
  };
  const flush = async () => {
    if (pending === 0) return;
    const chunk = Buffer.concat(parts.splice(0));
    pending = 0;
    if (!out.write(chunk)) await new Promise<void>((r) => out.once("drain", () => r()));
  };
  const str = (s: string) => {
    const m = memo.get(s);
    if (m !== undefined) {
      const b = Buffer.alloc(5);
      b[0] = 0x6a; // LONG_BINGET
      b.writeUInt32LE(m, 1);
      push(b);
      return;
    }
    const bytes = Buffer.from(s, "utf8");
    push(Buffer.from([0x8c, bytes.length])); // SHORT_BINUNICODE
    push(bytes);
    push(Buffer.from([0x94])); // MEMOIZE
    memo.set(s, memo.size);
  };
  const int = (v: number) => {
    const b = Buffer.alloc(5);
    b[0] = 0x4a; // BININT
    b.writeInt32LE(v, 1);
    push(b);
  };
  const get = (s: string) => memo.get(s) as number;
  push(Buffer.from([0x80, 0x04, 0x7d, 0x94])); // PROTO 4, EMPTY_DICT, MEMOIZE
  memo.set("\u0000root", 0);
  push(Buffer.from([0x28])); // MARK
  str("segments");
  push(Buffer.from([0x5d])); // EMPTY_LIST
  str("device_traces");
  push(Buffer.from([0x5d, 0x5d])); // EMPTY_LIST (outer), EMPTY_LIST (device 0)
  const actions = ["alloc", "free_requested", "free_completed"];
  // The first three entries spell every key and action out (and memoise them).
  push(Buffer.from([0x28])); // MARK
  const first = Math.min(entries, 3);
  for (let j = 0; j < first; j++) {
    push(Buffer.from([0x7d, 0x28])); // EMPTY_DICT, MARK
    str("action");
    str(actions[j % 3]);
    str("addr");
    int(0x10000);
    str("size");
    int(4096);
    str("stream");
    int(0);
    str("time_us");
    int(j);
    str("frames");
    push(Buffer.from([0x5d, 0x75])); // EMPTY_LIST, SETITEMS
  }
  push(Buffer.from([0x65])); // APPENDS
  // The rest: fixed-size records with memo references, written straight into one buffer per batch.
  const REC = 2 + 5 * 2 + 5 * 2 + 5 * 2 + 5 * 2 + 5 * 2 + 5 + 2;
  const key = ["action", "addr", "size", "stream", "time_us", "frames"].map(get);
  const act = actions.map(get);
  for (let i = first; i < entries; i += 4096) {
    const n = Math.min(4096, entries - i);
    const b = Buffer.alloc(2 + n * REC);
    let o = 0;
    b[o++] = 0x28; // MARK
    for (let j = i; j < i + n; j++) {
      b[o++] = 0x7d;
      b[o++] = 0x28;
      const kv = (k: number, op: number, v: number) => {
        b[o++] = 0x6a;
        b.writeUInt32LE(k, o);
        o += 4;
        b[o++] = op;
        if (op === 0x6a) b.writeUInt32LE(v, o);
        else b.writeInt32LE(v, o);
        o += 4;
      };
      kv(key[0], 0x6a, act[j % 3]);
      kv(key[1], 0x4a, 0x10000 + ((Math.floor(j / 3) % 1000) << 12));
      kv(key[2], 0x4a, 4096);
      kv(key[3], 0x4a, 0);
      kv(key[4], 0x4a, j);
      b[o++] = 0x6a;
      b.writeUInt32LE(key[5], o);
      o += 4;
      b[o++] = 0x5d;
      b[o++] = 0x75;
    }
    b[o++] = 0x65; // APPENDS
    push(b.subarray(0, o));
    if (pending > 4 << 20) await flush();
  }
  push(Buffer.from([0x61])); // APPEND device 0 list to device_traces
  push(Buffer.from([0x75, 0x2e])); // SETITEMS, STOP
  await flush();
  await new Promise<void>((resolve, reject) => out.end((e?: Error | null) => (e ? reject(e) : resolve())));
}
