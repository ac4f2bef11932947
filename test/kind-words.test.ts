// The Summary's kind sentence (src/ui/components/SourceKind.tsx lacksHeads): each thing a file lacks named
// by the words before its colon, lower-cased inside the sentence, a long parenthesis left for the details.
import { describe, expect, it } from "vitest";
import { lacksHeads } from "../src/ui/components/SourceKind";

describe("lacksHeads", () => {
  it("names each lack by its head", () => {
    expect(
      lacksHeads([
        "No segments: a profiler trace records each allocation and free, not the allocator's segments.",
        "No Python stacks (recorded without with_stack=True): call sites are the ops that allocated.",
        "Categories only where the spans show them (AccumulateGrad → gradients; Optimizer.step → optimizer state): the rest.",
        "OOM entries: none",
      ]),
    ).toEqual([
      "no segments",
      "no Python stacks (recorded without with_stack=True)",
      "categories only where the spans show them",
      "OOM entries",
    ]);
  });

  it("cuts a head still too long", () => {
    const [h] = lacksHeads([`${"word ".repeat(40)}: more`]);
    expect(h.length).toBe(88);
    expect(h.endsWith("…")).toBe(true);
  });
});
