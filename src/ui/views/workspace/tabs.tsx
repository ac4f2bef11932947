// The workspace's tabs, in order: one entry each (id, accessible name, what it shows). A new view joins
// by adding an entry here — the tab bar, its keys (1–9), the link to Back / Forward and the shortcut sheet
// read this list.

import type { ReactNode } from "react";
import { CallTreeView } from "../call-tree/CallTreeView";
import { HealthPanel } from "../health/HealthPanel";
import { SegmentMap } from "../segment-map/SegmentMap";
import { SidePanel } from "../side-panel/SidePanel";
import { WhatIfPanel } from "../whatif/WhatIfPanel";
import { SummaryPane } from "./SummaryPane";

export interface WorkspaceTab {
  id: string;
  /** The tab's accessible name (tests and the issue name them exactly). */
  name: string;
  /** The pane; `device` keys views that must start afresh on another device. */
  render(device: number): ReactNode;
}

export const TABS: WorkspaceTab[] = [
  { id: "summary", name: "Summary", render: () => <SummaryPane /> },
  // The outline with the icicle below it (as before); Flame gives the icicle the whole pane.
  { id: "call-tree", name: "Call tree", render: (d) => <CallTreeView key={d} show="both" /> },
  { id: "flame", name: "Flame", render: (d) => <CallTreeView key={d} show="flame" /> },
  { id: "segments", name: "Segments", render: (d) => <SegmentMap key={d} /> },
  { id: "whatif", name: "What if", render: () => <WhatIfPanel /> },
  { id: "allocator", name: "Allocator", render: (d) => <HealthPanel key={d} /> },
  { id: "checks", name: "Checks", render: () => <SidePanel part="checks" /> },
];
