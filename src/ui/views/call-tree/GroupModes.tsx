// The call tree's grouped modes, offered only when the file carries what they group by: "By forward line"
// (forward_frames, anomaly mode) and "By metadata" (user_metadata; one button per key of a JSON dict).

import type { GroupModes } from "../../../../workers/tree";
import { useCallTree } from "./store";

export function GroupModeButtons({ modes, groupBy }: { modes: GroupModes | undefined; groupBy: string }) {
  const set = useCallTree((t) => t.set);
  if (!modes) return null;
  const metadata =
    modes.metadataKeys === null
      ? []
      : modes.metadataKeys.length === 0
        ? ["metadata"]
        : modes.metadataKeys.map((k) => `metadata:${k}`);
  return (
    <>
      {modes.forward && (
        <button
          type="button"
          aria-pressed={groupBy === "forward"}
          onClick={() => set({ groupBy: groupBy === "forward" ? "" : "forward" })}
          title="Backward allocations under the forward line that caused them (forward_frames, anomaly mode)"
          data-testid="tree-by-forward"
        >
          By forward line
        </button>
      )}
      {metadata.map((m) => (
        <button
          key={m}
          type="button"
          aria-pressed={groupBy === m}
          onClick={() => set({ groupBy: groupBy === m ? "" : m })}
          title="Live memory by the user_metadata of its allocation ((none): entries without it)"
          data-testid={`tree-by-${m.replace(":", "-")}`}
        >
          By {m.replace("metadata:", "metadata ")}
        </button>
      ))}
    </>
  );
}
