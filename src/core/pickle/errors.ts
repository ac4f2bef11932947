export type PickleErrorKind = "truncated" | "unsafe" | "corrupt" | "limit";

/** A pickle that cannot be read; `offset` is the byte offset in the pickle stream where it went wrong. */
export class PickleError extends Error {
  constructor(
    readonly kind: PickleErrorKind,
    message: string,
    readonly offset: number,
  ) {
    super(message);
    this.name = "PickleError";
  }
}
