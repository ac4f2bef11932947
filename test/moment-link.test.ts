// The current moment in the link (src/ui/state/momentLink.ts, link.ts's `moment`): the four values read
// back as written, bad ones are ignored with a notice, and the peak is left out exactly when the file
// opens at the peak anyway (snapshot more than 2 % below it), written when it does not.
import { describe, expect, it } from "vitest";
import { type LinkState, parseLink, writeLink } from "../src/ui/state/link";
import { momentLinkValue, parseMoment } from "../src/ui/state/momentLink";
import type { PanelAnswer } from "../workers/api";

/** A panel as momentDefault reads it: a replay of `events` events peaking at `peakBytes`, a snapshot of `snapBytes`. */
function panel(events: number, peakEvent: number, peakBytes: number, snapBytes: number): PanelAnswer {
  return {
    device: 0,
    replay: { events, peakEvent, peakBytes },
    report: { devices: [{ device: 0, allocatedBytes: snapBytes }] },
    inference: null,
  } as unknown as PanelAnswer;
}

describe("moment in the link", () => {
  it("parses the four kinds and refuses the rest", () => {
    expect(parseMoment("peak")).toEqual({ kind: "peak" });
    expect(parseMoment("snapshot")).toEqual({ kind: "snapshot" });
    expect(parseMoment("event:42")).toEqual({ kind: "event", event: 42 });
    expect(parseMoment("range:3..90")).toEqual({ kind: "range", a: 3, b: 90 });
    for (const bad of ["", "event:", "event:-1", "range:9..3", "range:1-2", "now", "event:1e3"]) {
      expect(parseMoment(bad), bad).toBeNull();
    }
  });

  it("round-trips through the hash, per side; a bad value is a notice", () => {
    const state: LinkState = {
      a: { name: "a.pickle", device: 0, pin: 57, moment: "range:10..99" },
      b: { name: "b.pickle", device: 0, moment: "snapshot" },
      link: false,
    };
    const hash = writeLink(state);
    expect(hash).toContain("moment=range:10..99");
    expect(hash).toContain("moment2=snapshot");
    expect(parseLink(hash)).toEqual({ state, notices: [], empty: false });
    const bad = parseLink("#v=1&src=demo.pickle&moment=yesterday");
    expect(bad.state.a).toEqual({ src: "demo.pickle" });
    expect(bad.notices.join("\n")).toContain("moment=yesterday");
  });

  it("writes every moment but the peak a file opens at", () => {
    // Late-recorded: the snapshot is 40 % below the peak, so the file opens at the peak (event 30).
    const late = panel(100, 30, 1000, 600);
    const at = (pinnedEvent: number | null, momentRange: { a: number; b: number } | null = null) =>
      momentLinkValue({ panel: late, pinnedEvent, momentRange });
    expect(at(30)).toBeUndefined();
    expect(at(null)).toBe("snapshot");
    expect(at(12)).toBe("event:12");
    expect(at(30, { a: 5, b: 60 })).toBe("range:5..60");
    // The snapshot within 2 % of the peak: the file opens at the snapshot, so the peak is written.
    const calm = panel(100, 30, 1000, 990);
    expect(momentLinkValue({ panel: calm, pinnedEvent: 30, momentRange: null })).toBe("peak");
    expect(momentLinkValue({ panel: calm, pinnedEvent: null, momentRange: null })).toBe("snapshot");
    // No trace: nothing to say beyond the snapshot.
    expect(
      momentLinkValue({ panel: panel(0, 0, 0, 10), pinnedEvent: null, momentRange: null }),
    ).toBeUndefined();
  });
});
