// The pool of memory a finished pass gave back (src/core/model/recycled-memory.ts): a taken column reads
// as a new one would (its value everywhere, whatever the memory held), no byte is handed out twice, and
// what was not taken is let go. Expected values are written here, not read from the pool.

import { afterEach, describe, expect, it } from "vitest";
import {
  dropRecycledMemory,
  fillColumn,
  preferShared,
  recycledBytes,
  recycleMemory,
  setAside,
  takeFloat64,
  takeInt32,
  takeSharedRegions,
  takeUint8,
} from "../src/core/model/recycled-memory";

const MiB = 1 << 20;

/** A buffer full of garbage, as a finished pass leaves it. */
function dirty(bytes: number): ArrayBuffer {
  const b = new ArrayBuffer(bytes);
  new Uint8Array(b).fill(0xab);
  return b;
}

afterEach(() => dropRecycledMemory());

describe("recycled memory", () => {
  it("hands shared memory out first when asked to, and gives shared regions to another thread, never to carve again", () => {
    const plain = dirty(4 * MiB);
    const small = new SharedArrayBuffer(3 * MiB);
    const big = new SharedArrayBuffer(6 * MiB);
    recycleMemory(plain);
    recycleMemory(small);
    recycleMemory(big);
    // first fit takes from the first region given back: the plain one
    expect(takeUint8(MiB).buffer).toBe(plain);
    preferShared();
    expect(takeUint8(MiB).buffer).toBe(small);
    // 5 MiB asked: the biggest shared region (6 MiB) is enough; the rest stays
    const given = takeSharedRegions(5 * MiB);
    expect(given.map((r) => [r.buffer, r.byteOffset, r.byteLength])).toEqual([[big, 0, 6 * MiB]]);
    // 2 MiB left of the small one, 3 of the plain one: 6 MiB no longer fits anywhere
    expect(recycledBytes()).toBe(5 * MiB);
    expect(takeUint8(2 * MiB).buffer).toBe(small);
    expect(takeUint8(3 * MiB).buffer).toBe(plain);
    expect(takeSharedRegions(MiB)).toEqual([]);
    expect(recycledBytes()).toBe(0);
  });

  it("hands out columns carved from given-back memory, filled as asked", () => {
    const buf = dirty(8 * MiB);
    recycleMemory(buf);
    const n = MiB / 2; // 4 MiB of doubles
    const f = takeFloat64(n);
    expect(f.buffer).toBe(buf);
    expect(f.length).toBe(n);
    expect(f.every((v) => v === 0)).toBe(true);
    const i = takeInt32(MiB / 2, -1); // 2 MiB
    expect(i.buffer).toBe(buf);
    expect(i.every((v) => v === -1)).toBe(true);
    const u = takeUint8(MiB + 3, 255); // an odd length: the next column still starts aligned
    expect(u.buffer).toBe(buf);
    expect(u.every((v) => v === 255)).toBe(true);
    // no two columns share a byte: writing one leaves the others as they were
    f.fill(1.5);
    i.fill(7);
    u.fill(9);
    expect(f.every((v) => v === 1.5)).toBe(true);
    expect(i.every((v) => v === 7)).toBe(true);
    expect(u.every((v) => v === 9)).toBe(true);
    const ends = [f, i, u]
      .map((c) => [c.byteOffset, c.byteOffset + c.byteLength])
      .sort((a, b) => a[0] - b[0]);
    for (let k = 1; k < ends.length; k++) expect(ends[k][0]).toBeGreaterThanOrEqual(ends[k - 1][1]);
  });

  it("gives new memory when nothing given back fits, and takes only what a region holds", () => {
    recycleMemory(dirty(2 * MiB));
    const big = takeFloat64(MiB); // 8 MiB: more than the region
    expect(big.buffer.byteLength).toBe(8 * MiB);
    expect(big.every((v) => v === 0)).toBe(true);
    expect(recycledBytes()).toBe(2 * MiB);
    const small = takeInt32(1000); // under a megabyte: not worth a region
    expect(small.buffer.byteLength).toBe(4000);
    expect(recycledBytes()).toBe(2 * MiB);
  });

  it("ignores pieces too small to serve a column, and lets go of the rest at the end of a load", () => {
    recycleMemory(dirty(MiB / 2));
    expect(recycledBytes()).toBe(0);
    recycleMemory(dirty(4 * MiB), 8, 3 * MiB);
    expect(recycledBytes()).toBe(3 * MiB);
    dropRecycledMemory();
    expect(recycledBytes()).toBe(0);
    expect(takeUint8(2 * MiB).buffer.byteLength).toBe(2 * MiB);
  });

  it("memory set aside goes to the one take of its size, after smaller takes that would have cut it", () => {
    // the order the analysis takes in: smaller columns first, the biggest last
    const memo = dirty(10 * MiB);
    const other = dirty(8 * MiB);
    recycleMemory(memo);
    recycleMemory(other);
    setAside(6 * MiB); // carved from the first region that holds it: the first 6 MiB of `memo`
    expect(recycledBytes()).toBe(18 * MiB);
    const a = takeInt32(MiB); // 4 MiB: fits what is left of `memo`, not the part set aside
    expect(a.buffer).toBe(memo);
    expect(a.byteOffset).toBe(6 * MiB);
    const b = takeFloat64((7 * MiB) / 8); // 7 MiB: more than the set-aside's 6 is not given it either
    expect(b.buffer).toBe(other);
    const c = takeFloat64((5 * MiB) / 8); // 5 MiB: less than 6, nor that
    expect(c.buffer.byteLength).toBe(5 * MiB);
    const d = takeFloat64((6 * MiB) / 8); // exactly the size set aside
    expect(d.buffer).toBe(memo);
    expect(d.byteOffset).toBe(0);
    expect(d.every((v) => v === 0)).toBe(true);
    expect(recycledBytes()).toBe(MiB); // `other`'s last MiB
    // nothing fits a second time
    expect(takeFloat64((6 * MiB) / 8).buffer.byteLength).toBe(6 * MiB);
  });

  it("sets nothing aside when no region holds it", () => {
    const region = dirty(4 * MiB);
    recycleMemory(region);
    setAside(6 * MiB);
    expect(recycledBytes()).toBe(4 * MiB);
    expect(takeInt32(MiB).buffer).toBe(region); // the region, whole, to the next take
  });
  it("fills a column in shared memory exactly, 8 bytes at a time or not, and nothing around it", () => {
    const cases: [
      string,
      (b: SharedArrayBuffer, at: number, n: number) => Uint8Array | Int32Array | Float64Array,
      number,
      number,
      number[],
    ][] = [
      ["bytes", (b, at, n) => new Uint8Array(b, at, n), 3, 1001, [0, 255, 7]],
      ["int32", (b, at, n) => new Int32Array(b, at, n), 4, 999, [0, -1, 123456789]],
      ["doubles", (b, at, n) => new Float64Array(b, at, n), 8, 333, [0, 1.5, -(2 ** 40), Number.NaN]],
    ];
    for (const [name, make, at, n, values] of cases) {
      for (const value of values) {
        const buffer = new SharedArrayBuffer(at + n * 8 + 16);
        const all = new Uint8Array(buffer);
        all.fill(0xab);
        const col = make(buffer, at, n);
        expect(fillColumn(col, value)).toBe(col);
        for (let i = 0; i < n; i++)
          if (!Object.is(col[i], value)) expect([name, value, i, col[i]]).toEqual([name, value, i, value]);
        // the bytes before and after the column are as they were
        const end = at + col.byteLength;
        for (let k = 0; k < buffer.byteLength; k++)
          if ((k < at || k >= end) && all[k] !== 0xab)
            expect([name, value, k, all[k]]).toEqual([name, value, k, 0xab]);
      }
    }
  });
});
