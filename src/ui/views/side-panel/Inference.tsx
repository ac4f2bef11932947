// The side panel's marks for what no stack says: a category's inferred part (bytes, rule, a disclosure
// with the rule's description), the unknown bytes by reason, the torch_npu workspace kept apart, and the
// one line that says how to get real stacks instead.

import { useId, useState } from "react";
import type { DeviceInference, InferredPart, RuleText } from "../../../../workers/api";
import { Bytes } from "../../components/Bytes";
import { describeRule, InferredSwatch, partsOf, partsTitle, ruleBody } from "../../components/Inferred";
import { SeeCapture } from "../../components/SeeCapture";
import { formatCount, formatPercent } from "../../format";

/** Why memory is unknown, as the report keys it, in words. */
export const UNKNOWN_REASON_TEXT: Record<string, { label: string; why: string }> = {
  "before-recording": {
    label: "allocated before recording began",
    why: "Alive before _record_memory_history() was called, and no size or lifetime rule could name it.",
  },
  "ring-buffer-evicted": {
    label: "its alloc was evicted from the trace ring buffer",
    why: "The trace keeps only the newest max_entries entries; this block's allocation fell out of it.",
  },
  "no-stacks-recorded": {
    label: "recorded without a stack",
    why: "Its allocation is in the trace (or the file has no stacks at all) but carries no frames: history off, context='state', or stacks='python' on the autograd engine's threads.",
  },
  reconstructed: {
    label: "reconstructed from the segments",
    why: "Not in the trace: its address was reconstructed from the snapshot's segments.",
  },
};

/**
 * The inferred part of one category: a button "╲ 24 MiB inferred · matches-gradient" that opens the
 * rule's description below the row (and says it on hover).
 */
export function InferredToggle({
  category,
  parts,
  rules,
  open,
  onToggle,
  controls,
}: {
  category: string;
  parts: InferredPart[];
  rules: readonly RuleText[];
  open: boolean;
  onToggle: () => void;
  controls: string;
}) {
  const bytes = parts.reduce((a, p) => a + p.bytes, 0);
  const ids = [...new Set(parts.map((p) => p.rule))];
  return (
    <button
      type="button"
      className="inferred-badge"
      aria-expanded={open}
      aria-controls={controls}
      title={`${partsTitle(parts, rules)}\n(click for details)`}
      data-testid={`inferred-${category}`}
      data-value={bytes}
      data-rules={ids.join(" ")}
      onClick={onToggle}
    >
      <InferredSwatch />
      inferred · {ids.join(", ")} {open ? "▾" : "▸"}
    </button>
  );
}

/** The disclosure under a category row: each rule that named part of it, its bytes and what it means. */
export function InferredRules({
  id,
  parts,
  rules,
}: {
  id: string;
  parts: InferredPart[];
  rules: readonly RuleText[];
}) {
  return (
    <div className="inferred-rules" id={id} data-testid="inferred-rules">
      {parts.map((p) => (
        <p key={p.rule}>
          <strong>inferred ({p.rule})</strong>: <Bytes value={p.bytes} /> in {formatCount(p.count)} blocks.{" "}
          {ruleBody(describeRule(rules, p.rule))}
        </p>
      ))}
      <p className="muted">
        No stack says what these blocks are: they were allocated before recording began, and the category was
        inferred from their sizes and lifetimes.
      </p>
    </div>
  );
}

/** Under the unknown row: its bytes by reason, one sub-row each (non-zero reasons only). */
export function UnknownReasonRows({
  byReason,
  allocated,
}: {
  byReason: Record<string, number>;
  allocated: number;
}) {
  const rows = Object.entries(byReason).filter(([, v]) => v > 0);
  return (
    <>
      {rows.map(([reason, v]) => {
        const t = UNKNOWN_REASON_TEXT[reason] ?? { label: reason, why: "" };
        return (
          <tr key={reason} className="sub-row" data-unknown-reason={reason} data-value={v} title={t.why}>
            <td className="wrap">{t.label}</td>
            <td>
              <Bytes value={v} />
            </td>
            <td>{allocated > 0 ? formatPercent(v / allocated) : "—"}</td>
          </tr>
        );
      })}
    </>
  );
}

/** Hook: which category rows have their disclosure open, and ids for aria-controls. */
export function useDisclosures(): {
  isOpen: (name: string) => boolean;
  toggle: (name: string) => void;
  idOf: (name: string) => string;
} {
  const base = useId();
  const [open, setOpen] = useState<ReadonlySet<string>>(new Set());
  return {
    isOpen: (n) => open.has(n),
    toggle: (n) =>
      setOpen((s) => {
        const next = new Set(s);
        if (next.has(n)) next.delete(n);
        else next.add(n);
        return next;
      }),
    idOf: (n) => `${base}-inferred-${n}`,
  };
}

/** Below the categories: the fix (record earlier). */
export function InferenceNotes({ inference }: { inference: DeviceInference }) {
  const inferred = inference.snapshot.reduce((a, p) => a + p.bytes, 0);
  const unknownBefore = inference.unknownBytesByReason["before-recording"] ?? 0;
  return (
    <>
      {(inference.beforeRecordingBytes > 0 || inferred > 0) && (
        <p className="fix-line" data-testid="record-fix">
          <Bytes value={inference.beforeRecordingBytes} /> was allocated before recording began, so no stack
          says what it is
          {inferred > 0 ? (
            <>
              {" "}
              (<Bytes value={inferred} /> marked <InferredSwatch />
              inferred: named from sizes and lifetimes
              {unknownBefore > 0 ? (
                <>
                  ; <Bytes value={unknownBefore} /> left unknown
                </>
              ) : null}
              )
            </>
          ) : null}
          .{" "}
          <span data-testid="record-fix-action">
            Recording started after these blocks were allocated: call <code>peakscope_hook.start()</code>{" "}
            before the model is built — <SeeCapture />.
          </span>
        </p>
      )}
    </>
  );
}

/** Under a category of the peak table: its inferred part at the peak and at the snapshot. */
export function InferredPeakRow({
  category,
  peak,
  snapshot,
  rules,
}: {
  category: string;
  peak: readonly InferredPart[] | undefined;
  snapshot: readonly InferredPart[] | undefined;
  rules: readonly RuleText[];
}) {
  const atPeak = partsOf(peak, category);
  const atSnap = partsOf(snapshot, category);
  if (atPeak.length === 0 && atSnap.length === 0) return null;
  const sum = (ps: InferredPart[]) => ps.reduce((a, p) => a + p.bytes, 0);
  const ids = [...new Set([...atPeak, ...atSnap].map((p) => p.rule))];
  const title = [
    atPeak.length > 0 ? `At the peak:\n${partsTitle(atPeak, rules, "allocations")}` : "",
    atSnap.length > 0 ? `At the snapshot:\n${partsTitle(atSnap, rules, "blocks")}` : "",
  ]
    .filter(Boolean)
    .join("\n");
  return (
    <tr className="sub-row" data-inferred-of={category} title={title}>
      <td>
        <span className="inferred-badge" data-rules={ids.join(" ")}>
          <InferredSwatch />
          inferred · {ids.join(", ")}
        </span>
      </td>
      <td data-testid={`peak-inferred-${category}`} data-value={sum(atPeak)}>
        {atPeak.length > 0 ? <Bytes value={sum(atPeak)} /> : "—"}
      </td>
      <td data-testid={`snapshot-inferred-${category}`} data-value={sum(atSnap)}>
        {atSnap.length > 0 ? <Bytes value={sum(atSnap)} /> : "—"}
      </td>
    </tr>
  );
}
