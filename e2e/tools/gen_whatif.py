#!/usr/bin/env python3
"""The known run (test/gen/generate.py known, default options) and what-if truths from its own bookkeeping.

    python3 e2e/tools/gen_whatif.py OUT

Writes OUT (+ OUT.counters.json, OUT.truth.json) as `generate.py known OUT` does, then runs the same
(deterministic) simulation again and prints JSON from its per-record bookkeeping — allocated bytes and bytes
per category after every recorded trace entry, kept by the simulated allocator, never read from the file:
  peakBytes   the highest allocated bytes (== the truth's peak)
  without     {category: the highest allocated bytes had that category's allocations never been made}
              = max over entries of (allocated − that category's bytes)
Standard library only; no peakscope code.
"""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "test", "gen"))
sys.dont_write_bytecode = True

import generate  # noqa: E402
from memgen import knownrun  # noqa: E402


def main(out):
    truth = generate.known(out)
    run = knownrun.simulate()
    series = run.series  # (allocated, requested, {category: bytes}, ...) after each recorded entry
    peak = max(r[0] for r in series)
    assert peak == truth["peak"]["allocatedBytes"], "the second simulation is not the written run"
    cats = truth["snapshot"]["categories"].keys()
    without = {c: max(r[0] - r[2][c] for r in series) for c in cats}
    print(json.dumps({"peakBytes": peak, "without": without}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
