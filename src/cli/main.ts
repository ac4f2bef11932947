// The memscope CLI: `inspect` (what the reader sees) and `report` (attribution, checks, compare).

import { SnapshotReadError } from "../core/formats/errors";
import { inspectCommand } from "./inspect";

export interface CliIo {
  stdout(s: string): void;
  stderr(s: string): void;
}

const USAGE = `usage:
  memscope inspect FILE [--json]
  memscope report FILE [--counters SIDECAR] [--compare OTHER [--counters-other SIDECAR]] [--at EVENT] [--json]
`;

const processIo: CliIo = {
  stdout: (s) => process.stdout.write(s),
  stderr: (s) => process.stderr.write(s),
};

export async function main(argv: string[], io: CliIo = processIo): Promise<number> {
  const [command, ...args] = argv;
  try {
    if (command === "inspect") return await inspectCommand(args, io);
    if (command === "report") {
      const { reportCommand } = await import("./report");
      return await reportCommand(args, io);
    }
    io.stderr(USAGE);
    return 1;
  } catch (e) {
    if (e instanceof SnapshotReadError) {
      io.stderr(`memscope: ${e.message}\n`);
      return 1;
    }
    throw e;
  }
}
