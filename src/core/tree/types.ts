// Types of the live-memory call tree. Pure data: a tree can be posted from a worker (structured clone),
// serialised (toJson) or diffed (diffTrees).

/** Which moment: the snapshot's own blocks, the replay's peak, or the state after one trace event. */
export type TreeMoment = "snapshot" | "peak" | number;

export type TreeOrientation = "top-down" | "bottom-up";

/** What a node stands for. */
export type TreeNodeKind =
  | "root"
  /** One frame (own code, or in module mode a torch.nn forward/backward). */
  | "frame"
  /** A run of consecutive library / CPython / native frames collapsed into one node. */
  | "library"
  /** ≥ 3 identical consecutive frames (recursion) folded into one. */
  | "repeat"
  /** Memory with no stack, one node per reason ("no stack recorded", …). */
  | "no-stack"
  /** Under a no-stack node: one node per category (and inferring rule). */
  | "category"
  /** A custom group (`groups` option): allocations whose stack has a frame matching its regex. */
  | "group"
  /** Module roll-up: memory allocated outside every forward/backward frame. */
  | "outside"
  /** An attribution call site (module roll-up, under "outside"; stacks of nothing but allocator frames). */
  | "site";

export interface TreeFrameRef {
  filename: string;
  line: number;
  name: string;
}

export interface CallTreeNode {
  /** Stable id: a hash of the path of display items from the root (same in every tree of the file, and
   * across files when the frames' portable keys agree), so a UI can keep selection / expansion. */
  key: string;
  kind: TreeNodeKind;
  /** Display label: `train.py:57 forward`, `torch · 14 frames`, `no stack recorded`. */
  name: string;
  /** More about the node: for a library run, its innermost meaningful frame (`linear.py:125 forward`);
   * for a no-stack category, the inferring rule; null otherwise. */
  detail: string | null;
  /** A frame of the user's own code (emphasise it). */
  own: boolean;
  /** The frame of a frame / repeat node; null for the others. */
  frame: TreeFrameRef | null;
  /** Labels of the frames a library node collapsed (outermost first), so a UI can expand it; null otherwise. */
  collapsedFrames: string[] | null;
  /** Rounded block bytes of the live allocated memory under this node (itself included). */
  bytes: number;
  /** Of which allocated with this node as the end of their path. */
  selfBytes: number;
  /** Live allocated blocks under this node. */
  blocks: number;
  /** Bytes per category id (CallTree.categoryNames); sums to `bytes`. */
  byCategory: number[];
  /** The node's item matched the search (also listed in CallTree.matchKeys). */
  match: boolean;
  /** Sorted by bytes, largest first. */
  children: CallTreeNode[];
}

export interface CallTreeOptions {
  /** "top-down" (default): outermost frame first. "bottom-up": allocation sites first. */
  orientation?: TreeOrientation;
  /** "stack" (default): frames as people read them. "module": only the forward/backward frames of own
   * code and torch.nn (the module nesting). */
  by?: "stack" | "module";
  /** Keep only own-code frames in the paths; memory whose stack has no own code is left out of the tree
   * (its bytes are in `hiddenBytes`). */
  ownCodeOnly?: boolean;
  /** Drop the library runs from stacks that have own code (the memory lands on the innermost own frame);
   * stacks without own code keep theirs. Nothing is left out. */
  hideLibrary?: boolean;
  /** Text (case-insensitive substring) or `/regex/flags`, tested against every frame of a stack
   * (`filename:line:name`, dropped and collapsed frames included). */
  search?: string;
  /** Custom groups: name → regex (string source or RegExp) tested against every frame as `filename:line:name`.
   * The root's children become one node per group (first matching group wins, in insertion order) and
   * "(no group)"; the tree of each group below it. */
  groups?: Record<string, string | RegExp>;
  /** Snapshot only: the blocks of one device's segments (default: every device). Replays are one device. */
  device?: number | null;
  /** A time range of the replay (events `from`..`to`, both included) instead of one moment (`at` is then
   * not used): "live-at-end": allocated in the range and not freed by its end; "allocated-in": allocated
   * in the range, freed or not; "freed-in": allocated before or in the range and freed (free requested) in
   * it. Bytes: rounded sizes, by the allocation table's allocEvent / freeRequestedEvent. */
  range?: CallTreeRange;
}

export type RangeMeasure = "live-at-end" | "allocated-in" | "freed-in";

export interface CallTreeRange {
  from: number;
  to: number;
  measure: RangeMeasure;
}

export interface CallTree {
  /** The replay's device, or the option's for the snapshot (null: all devices). */
  device: number | null;
  /** The event after which the state is taken (the peak's event for "peak"); null for the snapshot. */
  event: number | null;
  at: "snapshot" | "peak" | "event";
  orientation: TreeOrientation;
  by: "stack" | "module";
  /** Set when the tree is grouped by forward line or by metadata (group-by.ts): "forward", "metadata[:KEY]". */
  groupBy?: string;
  /** The range measured (opts.range, clamped to the trace); then `event` is its `to`, `at` "event", and
   * totalBytes the measure's bytes. */
  range?: CallTreeRange;
  /** Live allocated bytes at that moment (rounded block bytes): replay.allocated[event] (initial for −1),
   * or Σ active_allocated blocks at the snapshot. Equals root.bytes + hiddenBytes. */
  totalBytes: number;
  totalBlocks: number;
  /** Left out by ownCodeOnly. */
  hiddenBytes: number;
  categoryNames: readonly string[];
  root: CallTreeNode;
  /** Keys of the nodes whose item matches `search` (empty without one). */
  matchKeys: string[];
  /** Live bytes whose stack has a frame matching `search`; null without a search. */
  matchBytes: number | null;
  nodeCount: number;
}

/** One node of diffTrees(a, b): B − A per node key. */
export interface CallTreeDiffNode {
  key: string;
  kind: TreeNodeKind;
  name: string;
  detail: string | null;
  own: boolean;
  bytesA: number;
  bytesB: number;
  /** bytesB − bytesA. */
  deltaBytes: number;
  selfBytesA: number;
  selfBytesB: number;
  blocksA: number;
  blocksB: number;
  /** Sorted by |deltaBytes|, largest first. */
  children: CallTreeDiffNode[];
}
