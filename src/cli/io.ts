// What every command writes to, and what reads a snapshot (tests pass their own).

import type { SnapshotModel } from "../core/model/types";

export interface CliIo {
  stdout(s: string): void;
  stderr(s: string): void;
}

export interface SnapshotDeps {
  readSnapshot(path: string): Promise<SnapshotModel>;
}
