// Every keyboard shortcut of the page, in one list: the "?" dialog and the hint line read it, so neither
// can forget one (useKeyboard.ts implements them).

import { TABS } from "../views/workspace/tabs";

export interface Shortcut {
  keys: string;
  what: string;
}

export function shortcuts(): Shortcut[] {
  return [
    { keys: "?", what: "this list of shortcuts" },
    { keys: "p", what: "moment: the peak" },
    { keys: "s", what: "moment: the snapshot" },
    { keys: "r", what: "moment: the range visible in the timeline" },
    { keys: "← / →", what: "moment: the event before / after (Shift: 100 events)" },
    { keys: "+ / −", what: "zoom the timeline in / out" },
    { keys: "0", what: "reset the timeline's zoom" },
    { keys: `1–${TABS.length}`, what: `tabs: ${TABS.map((t) => t.name).join(", ")}` },
    { keys: "Esc", what: "cancel a load, clear the selection, or go back to the snapshot" },
    { keys: "Tab", what: "move between the timeline, the tabs, the pane and the sidebar" },
  ];
}
