// The live-memory call tree (issue 12): pure, runs unchanged in a Web Worker, the CLI and tests.

export { buildCallTree, CallTreeBuilder, callTreeBuilder, searchTest } from "./builder";
export {
  diffTrees,
  diffTrees as diff,
  foldedFrameName,
  type TreeJson,
  type TreeJsonNode,
  toCsv,
  toFolded,
  toJson,
} from "./export";
export { renderTreeText, type TreeTextOptions } from "./text";
export type {
  CallTree,
  CallTreeDiffNode,
  CallTreeNode,
  CallTreeOptions,
  CallTreeRange,
  RangeMeasure,
  TreeFrameRef,
  TreeMoment,
  TreeNodeKind,
  TreeOrientation,
} from "./types";
