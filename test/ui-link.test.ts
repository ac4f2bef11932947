// The URL-hash format of the page (src/ui/state/link.ts): what is written reads back the same; every bad
// or unknown parameter is ignored with a notice naming it, and the rest is still used.

import { describe, expect, it } from "vitest";
import { type LinkState, parseLink, writeLink } from "../src/ui/state/link";

describe("link hash", () => {
  it("round-trips a single file's view", () => {
    const state: LinkState = {
      a: {
        src: "https://example.org/runs/step 2.pickle?sig=a&b=c",
        device: 1,
        view: "allocations",
        axis: "time",
        t0: 1500,
        t1: 98_000_000,
        pin: 42,
        cat: "optimizer_state",
        site: "/home/u/proj/train.py:57:forward",
        color: "state",
      },
      b: null,
    };
    const hash = writeLink(state);
    expect(hash.startsWith("v=1&src=https://example.org/runs/step%202.pickle%3Fsig%3Da%26b%3Dc&")).toBe(true);
    const back = parseLink(`#${hash}`);
    expect(back.notices).toEqual([]);
    expect(back.state).toEqual(state);
  });

  it("round-trips a comparison: per-file parameters end in 2, link and align are global", () => {
    const state: LinkState = {
      a: {
        name: "a.pickle",
        hash: "0123456789abcdef0123456789abcdef",
        device: 0,
        axis: "event",
        t0: -1.5,
        t1: 300,
      },
      b: { name: "b.pickle", hash: "fedcba9876543210fedcba9876543210", device: 2, pin: 7 },
      link: false,
      align: "start",
    };
    const hash = writeLink(state);
    expect(hash).toContain("name2=b.pickle");
    expect(hash).toContain("device2=2");
    expect(hash).toContain("link=0");
    expect(parseLink(hash)).toEqual({ state, notices: [], empty: false });
  });

  it("a comparison on the shared time axis writes link=1, read back as linked", () => {
    const state: LinkState = { a: { name: "a.pickle" }, b: { name: "b.pickle" }, link: true };
    const hash = writeLink(state);
    expect(new URLSearchParams(hash.replace(/^#/, "")).get("link")).toBe("1");
    expect(parseLink(hash).state.link).toBe(true);
  });

  it("keeps the comparison's Compare at (at=) and each file's typed capacity (cap=, cap2=) in bytes", () => {
    const capacityBytes = 40 * 2 ** 30;
    const state: LinkState = {
      a: { name: "a.pickle", cap: capacityBytes },
      b: { name: "b.pickle", cap: 80_000_000_000 },
      link: false,
      at: "snapshots",
    };
    const hash = writeLink(state);
    const params = new URLSearchParams(hash);
    expect([params.get("at"), params.get("cap"), params.get("cap2")]).toEqual([
      "snapshots",
      "42949672960",
      "80000000000",
    ]);
    expect(parseLink(hash)).toEqual({ state, notices: [], empty: false });
  });

  it("reads at= only as peaks or snapshots and cap= only as a whole number of bytes ≥ 1", () => {
    const { state, notices } = parseLink("#v=1&name=a.pickle&at=both&cap=0&cap2=40GB");
    expect(state.at).toBeUndefined();
    expect(state.a).toEqual({ name: "a.pickle" });
    expect(state.b).toBeNull();
    expect(notices).toEqual([
      "at=both (expected peaks or snapshots)",
      "cap=0 (not a whole number of bytes ≥ 1)",
      "cap2=40GB (not a whole number of bytes ≥ 1)",
    ]);
  });

  it("ignores bad and unknown parameters with a notice each, keeping the rest", () => {
    const { state, notices } = parseLink(
      "#v=7&src=demo.pickle&device=x&t0=abc&pin=-1&axis=up&view=3d&color=red&hash=zz&foo=1&align=middle&link=yes&device=3",
    );
    expect(state.a).toEqual({ src: "demo.pickle" });
    expect(state.b).toBeNull();
    for (const bad of [
      "v=7",
      "device=x",
      "t0=abc",
      "pin=-1",
      "axis=up",
      "view=3d",
      "color=red",
      "hash=zz",
      "foo",
      "align=middle",
      "link=yes",
      "a second device",
    ]) {
      expect(notices.join("\n"), bad).toContain(bad);
    }
  });

  it("an empty hash is no link; a hash without v is read as v=1 with a notice", () => {
    expect(parseLink("").empty).toBe(true);
    expect(parseLink("#").empty).toBe(true);
    const r = parseLink("#device=1");
    expect(r.state.a.device).toBe(1);
    expect(r.notices).toEqual(["the missing version (read as v=1)"]);
  });

  it("keeps strings as given (they are shown as text, never parsed as markup) and bounds their length", () => {
    const xss = "<img src=x onerror=alert(1)>";
    const r = parseLink(`#v=1&cat=${encodeURIComponent(xss)}&name=${"x".repeat(5000)}`);
    expect(r.state.a.cat).toBe(xss);
    expect(r.state.a.name).toBeUndefined();
    expect(r.notices[0]).toContain("longer than 4096 characters");
  });
});
