// The worker's first-picture gate (workers/first-picture.ts): secondary answers wait until the timeline's
// answer has gone out, a moment after the panel's, or the file failed — and never forever.
import { afterEach, describe, expect, it, vi } from "vitest";
import { FirstPicture } from "../workers/first-picture";

/** Whether the promise has settled after the microtasks queued so far. */
async function settled(p: Promise<void>): Promise<boolean> {
  let done = false;
  p.then(() => {
    done = true;
  });
  for (let k = 0; k < 5; k++) await Promise.resolve();
  return done;
}

describe("first picture gate", () => {
  afterEach(() => vi.useRealTimers());

  it("is open before any file, closes while one opens, opens with the timeline's answer", async () => {
    const g = new FirstPicture();
    expect(await settled(g.wait())).toBe(true);
    g.closeGate();
    const waiting = g.wait();
    expect(await settled(waiting)).toBe(false);
    g.panelSent(true);
    expect(await settled(waiting)).toBe(false);
    g.openGate();
    expect(await settled(waiting)).toBe(true);
  });

  it("opens at the panel when the file draws no timeline", async () => {
    const g = new FirstPicture();
    g.closeGate();
    const waiting = g.wait();
    g.panelSent(false);
    expect(await settled(waiting)).toBe(true);
  });

  it("opens by itself a moment after the panel when no timeline is asked for", async () => {
    vi.useFakeTimers();
    const g = new FirstPicture();
    g.closeGate();
    const waiting = g.wait();
    g.panelSent(true);
    await vi.advanceTimersByTimeAsync(399);
    expect(await settled(waiting)).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(await settled(waiting)).toBe(true);
  });

  it("a second file closes it again; the first file's waiters are let through", async () => {
    const g = new FirstPicture();
    g.closeGate();
    const first = g.wait();
    g.closeGate();
    const second = g.wait();
    expect(await settled(first)).toBe(true);
    expect(await settled(second)).toBe(false);
    g.openGate();
    expect(await settled(second)).toBe(true);
  });
});

describe("first picture gate: pictures asked together", () => {
  afterEach(() => vi.useRealTimers());
  it("a picture's answer opens it a moment later (the sibling picture goes first), not at once", async () => {
    vi.useFakeTimers();
    const g = new FirstPicture();
    g.closeGate();
    const waiting = g.wait();
    g.panelSent(true);
    g.openGateSoon();
    expect(await settled(waiting)).toBe(false);
    await vi.advanceTimersByTimeAsync(59);
    expect(await settled(waiting)).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(await settled(waiting)).toBe(true);
  });
});
