// A byte count in binary units, with the exact number of bytes on hover.

import { exactBytes, formatBytes, formatBytesSigned } from "../format";

/** `note`: what the number is (which moment, which file), added to the exact bytes on hover. */
export function Bytes({
  value,
  signed,
  testId,
  note,
}: {
  value: number;
  signed?: boolean;
  testId?: string;
  note?: string;
}) {
  return (
    <span
      className="bytes"
      title={note ? `${exactBytes(value)} — ${note}` : exactBytes(value)}
      data-bytes={value}
      data-testid={testId}
    >
      {signed ? formatBytesSigned(value) : formatBytes(value)}
    </span>
  );
}
