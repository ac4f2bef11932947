// Top bar: open a file (button + hidden input), compare with another, open the demo, the open file's
// name and device selector (one file; a comparison has them per column), and "Copy link".

import { useRef } from "react";
import { useApp } from "../state/app";
import { sides } from "../state/store";
import { useWorkspace } from "../views/workspace/store";
import { CopyLink } from "./CopyLink";
import { SaveReport } from "./SaveReport";

export function Header() {
  const input = useRef<HTMLInputElement>(null);
  const compareInput = useRef<HTMLInputElement>(null);
  const openFiles = useApp((a) => a.openFiles);
  const openDemo = useApp((a) => a.openDemo);
  const mode = useApp((a) => a.mode);
  const base = useApp((a) => a.base);
  const S = sides[base];
  const status = S((s) => s.status);
  const fileName = S((s) => s.fileName);
  const summary = S((s) => s.summary);
  const device = S((s) => s.device);
  const setDevice = S((s) => s.setDevice);
  const loading0 = sides[0]((s) => s.status === "loading");
  const loading1 = sides[1]((s) => s.status === "loading");
  const loading = loading0 || loading1;
  const devices = summary?.devices ?? [];
  const single = mode === "single";

  return (
    <header className="topbar">
      <div className="brand" title="peakscope: PyTorch GPU memory snapshot viewer">
        peakscope
      </div>
      <button type="button" className="primary" onClick={() => input.current?.click()} disabled={loading}>
        Open snapshot…
      </button>
      <input
        ref={input}
        type="file"
        data-testid="file-input"
        multiple
        hidden
        onChange={(e) => {
          const files = Array.from(e.currentTarget.files ?? []);
          e.currentTarget.value = "";
          if (files.length > 0) void openFiles(files, "replace");
        }}
      />
      <button
        type="button"
        onClick={() => compareInput.current?.click()}
        disabled={loading || (single && status !== "ready")}
        title={
          single && status !== "ready"
            ? "Open a snapshot first, then pick the one to compare it with (or drop two files at once)"
            : "Pick a second snapshot to show side by side with this one, with the difference between them"
        }
        data-testid="compare-with"
      >
        Compare with…
      </button>
      <input
        ref={compareInput}
        type="file"
        data-testid="compare-input"
        multiple
        hidden
        onChange={(e) => {
          const files = Array.from(e.currentTarget.files ?? []);
          e.currentTarget.value = "";
          if (files.length > 0) void openFiles(files, "compare");
        }}
      />
      <button type="button" onClick={() => void openDemo()} disabled={loading}>
        Open demo
      </button>
      {single && fileName && (
        <span className="file-name" data-testid="header-file" title={fileName}>
          {fileName}
        </span>
      )}
      <span className="spacer" />
      {single && devices.length > 1 && (
        <label className="device-select">
          Device{" "}
          <select
            data-testid="device-select"
            value={device}
            onChange={(e) => void setDevice(Number(e.currentTarget.value))}
          >
            {devices.map((d) => (
              <option key={d.device} value={d.device}>
                {`device ${d.device} — ${d.segments} segments, ${d.traceEntries} trace entries`}
              </option>
            ))}
          </select>
        </label>
      )}
      {single && devices.length === 1 && <span className="device-one">device {devices[0].device}</span>}
      <SaveReport />
      <CopyLink />
      <button
        type="button"
        onClick={() => useWorkspace.getState().setShortcutsOpen(true)}
        title="Keyboard shortcuts (?)"
        aria-label="Keyboard shortcuts"
        data-testid="shortcuts-button"
      >
        ?
      </button>
      <span className="privacy-badge" title="Files are read in this browser tab; nothing is uploaded.">
        local only
      </span>
    </header>
  );
}
