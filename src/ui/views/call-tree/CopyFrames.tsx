// "Copy stack" for a kept (pinned) stack: an allocation band's or a map block's (StackList), as text,
// innermost first, one frame a line.

import { useState } from "react";
import type { FrameText } from "../../../../workers/api";
import { copyText } from "./download";

export function framesText(frames: (FrameText & { repeats?: number })[]): string {
  return frames
    .map((f) =>
      f.repeats
        ? `  <repeats ${f.repeats} times>`
        : `${f.name || "??"}  ${f.filename || "??"}${f.line ? `:${f.line}` : ""}`,
    )
    .join("\n");
}

export function CopyFrames({ frames }: { frames: (FrameText & { repeats?: number })[] }) {
  const [said, setSaid] = useState<string | null>(null);
  return (
    <>
      {" "}
      <button
        type="button"
        className="link"
        data-testid="copy-stack"
        onClick={() =>
          void copyText(`# innermost first\n${framesText(frames)}\n`).then((ok) =>
            setSaid(ok ? "copied" : "could not copy: select the text"),
          )
        }
      >
        Copy stack
      </button>
      {said && (
        <span className="muted" role="status">
          {" "}
          ({said})
        </span>
      )}
    </>
  );
}
