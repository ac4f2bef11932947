// "Copy link": the page's address with the view in its hash (linkSync.ts keeps it current). A dropped
// file is never in the link: it carries the file's name and content hash, and whoever opens it is asked
// for the file. The link is also shown in a text field, for browsers without clipboard access.

import { useLayoutEffect, useRef, useState } from "react";
import { useApp } from "../state/app";
import { currentLink } from "../state/linkSync";
import { sides } from "../state/store";

export function CopyLink() {
  const [open, setOpen] = useState<null | { href: string; copied: boolean; dropped: boolean }>(null);
  const box = useRef<HTMLDivElement>(null);
  const base = useApp((a) => a.base);
  const ready = sides[base]((s) => s.status === "ready");
  const expecting = useApp((a) => a.expecting);

  // A layout effect, not an effect: the listeners are in place before the box is painted, so an Escape
  // pressed as soon as the box shows closes it (a passive effect may run after that key on a busy page).
  useLayoutEffect(() => {
    if (!open) return;
    const close = (e: Event) => {
      if (e instanceof KeyboardEvent && e.key !== "Escape") return;
      if (e instanceof PointerEvent && box.current?.contains(e.target as Node)) return;
      setOpen(null);
    };
    window.addEventListener("keydown", close);
    window.addEventListener("pointerdown", close);
    return () => {
      window.removeEventListener("keydown", close);
      window.removeEventListener("pointerdown", close);
    };
  }, [open]);

  if (!ready && !expecting) return null;
  return (
    <div className="copy-link" ref={box}>
      <button
        type="button"
        data-testid="copy-link"
        title="Copy a link to this view (the files themselves are not in it)"
        onClick={async () => {
          const href = currentLink();
          const dropped = sides.some((s) => s.getState().source?.kind === "file");
          let copied = false;
          try {
            await navigator.clipboard.writeText(href);
            copied = true;
          } catch {
            copied = false;
          }
          setOpen({ href, copied, dropped });
        }}
      >
        Copy link
      </button>
      {open && (
        <div className="popover" role="dialog" aria-label="Link to this view" data-testid="link-popover">
          <div className="small">
            {open.copied ? <strong>Copied to the clipboard.</strong> : "Select the link and copy it:"}
          </div>
          <input
            readOnly
            value={open.href}
            data-testid="link-text"
            onFocus={(e) => e.currentTarget.select()}
            ref={(el) => {
              el?.select();
            }}
          />
          <div className="small muted">
            {open.dropped
              ? "The link holds the view and each dropped file's name and fingerprint, not the file: whoever opens it is asked to drop the same file, and told whether it matches."
              : "The link holds the view and the snapshot's URL; it downloads again when opened."}
          </div>
        </div>
      )}
    </div>
  );
}
