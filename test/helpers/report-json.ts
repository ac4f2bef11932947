// `peakscope report FILE --json` run in the test's process (its deps the test's), and Python's count of a
// snapshot's trace entries to anchor it: shared by the tests of the attribution helper.

import { type ReportDeps, reportCommand } from "../../src/cli/report";
import { python } from "./python";

/** The exit code and the JSON report, without its `tool` (versions). */
export async function reportJson(file: string, deps: ReportDeps) {
  let out = "";
  const code = await reportCommand([file, "--json"], { stdout: (s) => (out += s), stderr: () => {} }, deps);
  const { tool: _, ...rest } = JSON.parse(out);
  return { code, json: rest };
}

/** The trace entries of every device in the snapshot at `path`, as Python's pickle reads them. */
export function pythonTraceEntries(path: string): number {
  return Number(
    python([
      "-c",
      "import pickle,sys; d=pickle.load(open(sys.argv[1],'rb')); print(sum(len(t) for t in d['device_traces']))",
      path,
    ]),
  );
}
