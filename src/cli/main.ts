// The peakscope CLI: `inspect` (what the reader sees), `report` (attribution, checks, compare, --html),
// `view` (the page on localhost, opened at the file), `tree` (the call tree), `whatif` (peaks under
// changes, suggestions), `ranks` (many rank files) and `leaks` (growth across steps).

import { SnapshotReadError } from "../core/formats/errors";
import type { CliIo } from "./io";
import { peakscopeVersion } from "./version";

export type { CliIo } from "./io";

export const USAGE = `usage:
  peakscope inspect FILE [--json]
  peakscope report FILE [--counters SIDECAR] [--compare OTHER [--counters-other SIDECAR]] [--at EVENT [--device N]] [--json] [--html OUT.html] [--device-total SIZE]
  peakscope view FILE [FILE2] [--port N] [--no-open] [--build] [--site DIR]
  peakscope ranks FILE... [--json] [--jobs N]
  peakscope leaks FILE... [--json] [--capacity SIZE] [--step-marker REGEX] [--threshold SIZE]
  peakscope whatif FILE [--counters SIDECAR] [--device N] [--remove SPEC]... [--scale SPEC=FACTOR]... [--free-early SPEC]... [--recompute MODULE]... [--suggest] [--capacity SIZE] [--device-total SIZE] [--devices N] [--json]
  peakscope tree FILE [--at snapshot|peak|EVENT] [--device N] [--by stack|module|forward|metadata[:KEY]] [--bottom-up] [--folded] [--json] [--csv] [--group NAME=REGEX]... [--search TEXT|/RE/] [--range A..B [--measure live-at-end|allocated-in|freed-in]]
  peakscope help
  peakscope --version

  inspect  what the reader found: counts, actions, totals per device
  report   categories, call sites, checks, the peak and what it held; --compare: what changed; --at: the state
           after one trace event; --html: one self-contained HTML file (opens from file://, no network)
  view     serves the viewer on 127.0.0.1 and opens the browser at FILE (FILE2: a comparison)
  tree     the call tree of the live memory at the snapshot, the peak or any event (by stack or by
           module); --folded: folded stacks for flamegraph.pl / speedscope
  whatif   the exact peak without / with less / with earlier frees of a selection (SPEC: category:NAME,
           site:FILE:LINE, frame:TEXT); --suggest: ranked ways to lower the peak, which ones fit
  ranks    one row per rank file (or its report --json), the outliers above the median peak and the
           category that makes the difference; files read in parallel (worker threads)
  leaks    what grows from one step to the next: one FILE, the steps inside its trace (annotations, else the
           optimizer's repetition); several, dumps of one rank after different steps (step from the name
           …step3…, else the sidecar's tag); names each leak (call site, category, bytes per step) and, with the
           capacity known, the step at which memory runs out

Sizes are MiB with two decimals (1 MiB = 1,048,576 B), exact bytes beside them where numbers are compared.
report exit codes: 0 all checks passed or skipped, 2 a check failed, 1 unreadable input or bad usage;
ranks: 2 when some rank is an outlier; leaks: 2 when a leak is found, 0 when none.
Capture snapshots with python/peakscope_hook.py (README, "Capture").
`;

const HELP = new Set(["help", "--help", "-h"]);
const VERSION = new Set(["--version", "-V", "version"]);
const COMMANDS = new Set(["inspect", "report", "view", "ranks", "tree", "whatif", "leaks"]);

const processIo: CliIo = {
  stdout: (s) => process.stdout.write(s),
  stderr: (s) => process.stderr.write(s),
};

export async function main(argv: string[], io: CliIo = processIo): Promise<number> {
  const [command, ...args] = argv;
  try {
    if (command !== undefined && HELP.has(command)) {
      io.stdout(USAGE);
      return 0;
    }
    if (command !== undefined && VERSION.has(command)) {
      io.stdout(`${peakscopeVersion()}\n`);
      return 0;
    }
    if (command !== undefined && COMMANDS.has(command) && args.some((a) => HELP.has(a))) {
      const lines = USAGE.split("\n").filter((l) => l.startsWith(`  peakscope ${command} `));
      io.stdout(`usage:\n${lines.join("\n")}\n\n(peakscope help: every command)\n`);
      return 0;
    }
    // Each command is imported when it runs, so `--help` and `--version` load none of the readers.
    if (command === "inspect") {
      const { inspectCommand } = await import("./inspect");
      return await inspectCommand(args, io);
    }
    if (command === "report") {
      const { reportCommand } = await import("./report");
      return await reportCommand(args, io);
    }
    if (command === "view") {
      const { viewCommand } = await import("./view");
      return await viewCommand(args, io);
    }
    if (command === "tree") {
      const { runTree } = await import("./tree");
      return await runTree(args, io);
    }
    if (command === "whatif") {
      const { runWhatIf } = await import("./whatif");
      return await runWhatIf(args, io);
    }
    if (command === "ranks") {
      const { runRanks } = await import("./ranks");
      return await runRanks(args, io);
    }
    if (command === "leaks") {
      const { runLeaks } = await import("./leaks");
      return await runLeaks(args, io);
    }
    io.stderr(command === undefined ? USAGE : `peakscope: unknown command ${command}\n${USAGE}`);
    return 1;
  } catch (e) {
    if (e instanceof SnapshotReadError) {
      io.stderr(`peakscope: ${e.message}\n`);
      return 1;
    }
    throw e;
  }
}
