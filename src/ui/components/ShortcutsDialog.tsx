// The "Keyboard shortcuts" dialog ("?" or the header's ? button): a modal <dialog> listing shortcuts().

import { useEffect, useRef } from "react";
import { useWorkspace } from "../views/workspace/store";
import { shortcuts } from "./shortcuts";

export function ShortcutsDialog() {
  const open = useWorkspace((w) => w.shortcutsOpen);
  const setOpen = useWorkspace((w) => w.setShortcutsOpen);
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (open && !d.open) d.showModal();
    if (!open && d.open) d.close();
  }, [open]);
  return (
    <dialog
      ref={ref}
      className="shortcuts-dialog"
      aria-labelledby="shortcuts-title"
      onClose={() => setOpen(false)}
      data-testid="shortcuts-dialog"
    >
      <h2 id="shortcuts-title">Keyboard shortcuts</h2>
      <table className="num-table">
        <tbody>
          {shortcuts().map((s) => (
            <tr key={s.keys}>
              <th scope="row">
                <kbd>{s.keys}</kbd>
              </th>
              <td>{s.what}</td>
            </tr>
          ))}
        </tbody>
      </table>
      <p className="small muted">Keys act where the focus is: in the call tree, ↑/↓/←/→ move in the tree.</p>
      <button type="button" onClick={() => setOpen(false)}>
        Close
      </button>
    </dialog>
  );
}

/** The hint line: every shortcut, one line. */
export function ShortcutHint() {
  return (
    <p className="hint-line small muted" data-testid="hint-line">
      {shortcuts()
        .map((s) => `${s.keys} ${s.what.split(":")[0].split(" (")[0]}`)
        .join(" · ")}
    </p>
  );
}
