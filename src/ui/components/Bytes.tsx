// A byte count in binary units, with the exact number of bytes on hover.

import { exactBytes, formatBytes, formatBytesSigned } from "../format";

export function Bytes({ value, signed, testId }: { value: number; signed?: boolean; testId?: string }) {
  return (
    <span className="bytes" title={exactBytes(value)} data-bytes={value} data-testid={testId}>
      {signed ? formatBytesSigned(value) : formatBytes(value)}
    </span>
  );
}
