// The whole window accepts dropped files. While files are dragged over the page an overlay says what a
// drop will do. With a file open it has two halves: the left opens the dropped file alone (replacing the
// open one), the right compares it with the open one. Two or more files dropped at once are compared.

import { type ReactNode, useEffect, useRef, useState } from "react";
import { useApp } from "../state/app";
import { sides } from "../state/store";
import { filesOfEntries, folderEntries } from "../views/ranks/folder";

type Over = null | { count: number; x: number };

export function DropTarget({ children }: { children: ReactNode }) {
  const [over, setOver] = useState<Over>(null);
  const depth = useRef(0);
  const openFiles = useApp((a) => a.openFiles);
  const mode = useApp((a) => a.mode);
  const base = useApp((a) => a.base);
  const baseName = sides[base]((s) => (s.status === "ready" ? s.fileName : null));
  const otherName = sides[1 - base]((s) => s.fileName);
  const canCompare = mode === "compare" || baseName !== null;

  useEffect(() => {
    const hasFiles = (e: DragEvent) => Array.from(e.dataTransfer?.types ?? []).includes("Files");
    const count = (e: DragEvent) => e.dataTransfer?.items?.length ?? 1;
    const enter = (e: DragEvent) => {
      if (!hasFiles(e)) return;
      e.preventDefault();
      depth.current++;
      setOver({ count: count(e), x: e.clientX });
    };
    const overFn = (e: DragEvent) => {
      if (!hasFiles(e)) return;
      e.preventDefault();
      if (e.dataTransfer) e.dataTransfer.dropEffect = "copy";
      const c = count(e);
      setOver((o) => (o && o.count === c && Math.abs(o.x - e.clientX) < 4 ? o : { count: c, x: e.clientX }));
    };
    const leave = (e: DragEvent) => {
      if (!hasFiles(e)) return;
      depth.current = Math.max(0, depth.current - 1);
      if (depth.current === 0) setOver(null);
    };
    const drop = (e: DragEvent) => {
      e.preventDefault();
      depth.current = 0;
      setOver(null);
      // A folder (or several): every file in it, opened together (more than two: the rank overview).
      const folders = folderEntries(e.dataTransfer);
      if (folders) {
        void filesOfEntries(folders).then((fs) => {
          if (fs.length > 0) void openFiles(fs, "replace");
        });
        return;
      }
      const files = Array.from(e.dataTransfer?.files ?? []);
      if (files.length === 0) return;
      // The right half of the window is the "compare with the open file" zone.
      const right = e.clientX > window.innerWidth / 2;
      void openFiles(files, right ? "compare" : "replace");
    };
    window.addEventListener("dragenter", enter);
    window.addEventListener("dragover", overFn);
    window.addEventListener("dragleave", leave);
    window.addEventListener("drop", drop);
    return () => {
      window.removeEventListener("dragenter", enter);
      window.removeEventListener("dragover", overFn);
      window.removeEventListener("dragleave", leave);
      window.removeEventListener("drop", drop);
    };
  }, [openFiles]);

  const split = over && over.count === 1 && canCompare;
  const right = over ? over.x > window.innerWidth / 2 : false;
  return (
    <div className="app" data-drag-over={over ? "1" : undefined}>
      {children}
      {over && !split && (
        <div className="drop-overlay" aria-hidden="true">
          <div>
            {over.count > 1
              ? "Drop to open these snapshots: two side by side, more as a rank overview (a .counters.json goes with its snapshot)"
              : "Drop the snapshot to open it"}
          </div>
        </div>
      )}
      {split && (
        <div className="drop-overlay split" aria-hidden="true" data-testid="drop-zones">
          <div className={right ? "zone" : "zone active"}>
            <strong>Open alone</strong>
            <span>replaces what is open</span>
          </div>
          <div className={right ? "zone active" : "zone"}>
            <strong>Compare</strong>
            <span>
              {mode === "compare" && otherName
                ? `replaces ${otherName}, the right-hand file`
                : `side by side with ${baseName ?? "the open file"}`}
            </span>
          </div>
        </div>
      )}
    </div>
  );
}
