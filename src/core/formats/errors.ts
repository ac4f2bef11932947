// The one error type a user sees when a file cannot be read. Its message says what went wrong, where
// (a byte offset when there is one) and what to do; the CLI prints it and the page shows it verbatim.

export type ReadErrorCode =
  | "empty"
  | "truncated"
  | "not-snapshot"
  | "unsafe"
  | "corrupt"
  | "too-large"
  | "permission"
  | "cancelled"
  | "io";

export class SnapshotReadError extends Error {
  constructor(
    readonly code: ReadErrorCode,
    message: string,
    /** Byte offset in the (decompressed) stream where reading failed, when known. */
    readonly offset: number | null = null,
  ) {
    super(message);
    this.name = "SnapshotReadError";
  }
}

export function permissionDenied(fileName: string): SnapshotReadError {
  return new SnapshotReadError(
    "permission",
    `Cannot read ${fileName}: permission denied. torch_npu writes snapshots write-only (mode 0200); run \`chmod 600 ${fileName}\` and open it again.`,
  );
}
