// A stack as text: noise frames hidden, repeats collapsed, the full stack one click away. Every string
// from the snapshot is rendered as a React text node.

import { useState } from "react";
import type { FrameText, StackView } from "../../../workers/api";
import { CopyFrames } from "../views/call-tree/CopyFrames";

export function StackList({
  stack,
  emptyReason,
  loadFull,
  testId,
}: {
  stack: StackView;
  emptyReason: string | null;
  loadFull?: () => Promise<FrameText[]>;
  testId?: string;
}) {
  const [full, setFull] = useState<FrameText[] | null>(null);
  if (stack.total === 0) {
    return (
      <p className="muted small" data-testid={testId ? `${testId}-empty` : undefined}>
        {emptyReason ?? "No stack was recorded for this block."}
      </p>
    );
  }
  const frames = full ?? stack.frames;
  return (
    <div data-testid={testId}>
      {/* Focusable: a long stack scrolls inside its box, and the keyboard must reach that scroll (axe). */}
      {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a scrollable list, its keys are the scroll keys */}
      <ol className="stack" tabIndex={0} aria-label="Stack frames">
        {frames.map((f, i) => (
          // biome-ignore lint/suspicious/noArrayIndexKey: frames repeat; position is the identity
          <li key={i} className={!full && i === stack.siteFrame ? "site-frame" : undefined}>
            {"repeats" in f && f.repeats ? (
              <span className="repeats">{`<repeats ${f.repeats} times>`}</span>
            ) : (
              <>
                <span className="fn">{f.name || "??"}</span>{" "}
                <span className="loc">
                  {f.filename || "??"}
                  {f.line ? `:${f.line}` : ""}
                </span>
                {!full && i === stack.siteFrame && <span className="site-tag"> ◀ call site</span>}
              </>
            )}
          </li>
        ))}
      </ol>
      <div className="small muted">
        {full
          ? `All ${full.length} frames, innermost first.`
          : `${stack.frames.length < stack.total ? `${stack.hiddenNoise} interpreter/allocator frames hidden; innermost first. ` : "Innermost first. "}`}
        {loadFull && !full && stack.hiddenNoise > 0 && (
          <button
            type="button"
            className="link"
            onClick={() => void loadFull().then(setFull)}
            data-testid="full-stack"
          >
            Show full stack ({stack.total} frames)
          </button>
        )}
        {full && (
          <button type="button" className="link" onClick={() => setFull(null)}>
            Hide noise frames
          </button>
        )}
        {loadFull && <CopyFrames frames={frames} />}
      </div>
    </div>
  );
}

/** A short stack for tooltips: from the call-site frame outward, one line per frame. */
export function CompactStack({
  stack,
  emptyReason,
  max = 6,
}: {
  stack: StackView;
  emptyReason: string | null;
  max?: number;
}) {
  if (stack.total === 0) return <p className="muted small">{emptyReason ?? "No stack was recorded."}</p>;
  const start = Math.max(0, stack.siteFrame);
  const frames = stack.frames.slice(start, start + max);
  const after = stack.frames.length - start - frames.length;
  return (
    <div>
      {start > 0 && (
        <div className="muted small">{start} allocator/library frames inside the call site not shown</div>
      )}
      <ol className="stack compact">
        {frames.map((f, i) => (
          // biome-ignore lint/suspicious/noArrayIndexKey: frames repeat; position is the identity
          <li key={i}>
            {"repeats" in f && f.repeats ? (
              <span className="repeats">{`<repeats ${f.repeats} times>`}</span>
            ) : (
              <>
                <span className="fn">{f.name || "??"}</span>{" "}
                <span className="loc">
                  {shortPath(f.filename)}
                  {f.line ? `:${f.line}` : ""}
                </span>
              </>
            )}
          </li>
        ))}
      </ol>
      {after > 0 && <div className="muted small">… {after} outer frames</div>}
    </div>
  );
}

/** The last three path components: enough to recognise a file in a tooltip. */
export function shortPath(p: string): string {
  if (!p) return "??";
  const parts = p.split(/[\\/]/);
  return parts.length > 3 ? `…/${parts.slice(-3).join("/")}` : p;
}

/** "forward — Inside a forward: …" cut at the first sentence, for tooltips. */
export function firstSentence(text: string | null): string {
  if (!text) return "";
  const m = /^(.{20,}?[.;])\s/.exec(text);
  const s = m ? m[1] : text;
  return s.length > 160 ? `${s.slice(0, 157)}…` : s;
}
