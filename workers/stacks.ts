// Stacks as the user reads them: the noise-frame filter (MemoryViz's, plus PyType_* and unnamed ??), ≥3 identical consecutive frames
// collapsed into one with `repeats`, and a sentence for an empty stack instead of nothing.

import { isNoiseFrame as isCoreNoiseFrame, isInterpreterFrame } from "../src/core/attribution/frames";
import type { IndexIntoStacks, SnapshotModel } from "../src/core/model/types";
import type { FrameText, StackView } from "./api";

/**
 * The one core filter (attribution/frames.ts isNoiseFrame): the same frames are hidden everywhere. In the
 * short stacks of tooltips and details also CPython's own functions where the binary had no symbols for
 * their file (`method_vectorcall ??`, `slot_tp_call ??`): the interpreter calling itself, between a Python
 * line and the op it ran. The full stack (fullStack) keeps every frame.
 */
export function isNoiseFrame(f: FrameText): boolean {
  return (
    isCoreNoiseFrame(f.filename, f.name) || (f.filename === "??" && isInterpreterFrame(f.filename, f.name))
  );
}

export function fullStack(model: SnapshotModel, stack: IndexIntoStacks): FrameText[] {
  const { offsets, frameIds } = model.stacks;
  const out: FrameText[] = [];
  if (stack < 0 || stack >= model.stacks.length) return out;
  for (let i = offsets[stack]; i < offsets[stack + 1]; i++) {
    const f = frameIds[i];
    out.push({
      filename: model.strings[model.frames.filename[f]] ?? "",
      line: model.frames.line[f],
      name: model.strings[model.frames.name[f]] ?? "",
    });
  }
  return out;
}

/**
 * Filtered and collapsed, innermost first; at most `limit` frames (the rest via fullStack). `site` marks
 * the call-site frame (siteFrame = its index in `frames`), so a short view can start there.
 */
export function stackView(
  model: SnapshotModel,
  stack: IndexIntoStacks,
  site?: FrameText | null,
  limit = 80,
): StackView {
  const all = fullStack(model, stack);
  const kept = all.filter((f) => !isNoiseFrame(f));
  const frames: StackView["frames"] = [];
  let siteFrame = -1;
  for (let i = 0; i < kept.length; ) {
    let j = i + 1;
    while (j < kept.length && same(kept[j], kept[i])) j++;
    const run = j - i;
    if (siteFrame < 0 && site && same(kept[i], site)) siteFrame = frames.length;
    if (run >= 3) {
      frames.push({ ...kept[i] });
      frames.push({ ...kept[i], repeats: run - 1 });
    } else {
      for (let k = i; k < j; k++) frames.push({ ...kept[k] });
    }
    i = j;
  }
  return {
    frames: frames.slice(0, limit),
    hiddenNoise: all.length - kept.length,
    total: all.length,
    siteFrame: siteFrame < limit ? siteFrame : -1,
  };
}

function same(a: FrameText, b: FrameText): boolean {
  return a.name === b.name && a.filename === b.filename && a.line === b.line;
}

/** MemoryViz's five causes of an empty stack, narrowed by what we know of the file. */
export function emptyStackReason(model: SnapshotModel, where: "trace" | "block" | "reconstructed"): string {
  const anyFrames = model.stacks.length > 1;
  if (!anyFrames) {
    return "No stacks anywhere in this file: it was written without recording history (call torch.cuda.memory._record_memory_history() before the run to get stacks).";
  }
  if (where === "reconstructed") {
    return "No stack: this block was alive before the trace starts (allocated before recording began, or its alloc was evicted from the ring buffer), so it was reconstructed from the snapshot's segments.";
  }
  return 'No stack was recorded for this allocation. Possible causes: it was allocated before recording started; the context setting excluded it; it was allocated in backward with stacks="python" (the autograd engine has no Python frame); it was reconstructed from segments; or its entry was evicted from the ring buffer.';
}

/** Why a live block of the snapshot has no stack, from the attribution's reason (UNKNOWN_REASONS). */
export function blockEmptyStackReason(model: SnapshotModel, reason: string): string {
  switch (reason) {
    case "before-recording":
      return "No stack: allocated before recording began (_record_memory_history() was called after this tensor existed). Call torch.cuda.memory._record_memory_history() before building the model to record its stack.";
    case "reconstructed":
      return emptyStackReason(model, "reconstructed");
    case "ring-buffer-evicted":
      return "No stack: its allocation was evicted from the trace ring buffer (trace_alloc_max_entries) before the snapshot; record with a larger max_entries to keep it.";
    case "no-stacks-recorded":
      return model.stacks.length > 1
        ? "No stack: its allocation is in the trace but carries no frames (context='state', or stacks='python' on the autograd engine's threads)."
        : emptyStackReason(model, "block");
    default:
      return emptyStackReason(model, "block");
  }
}
