// Top bar: open a file (button + hidden input), open the demo, the open file's name, device selector.

import { useRef } from "react";
import { useStore } from "../state/store";

export function Header() {
  const input = useRef<HTMLInputElement>(null);
  const openFiles = useStore((s) => s.openFiles);
  const openDemo = useStore((s) => s.openDemo);
  const status = useStore((s) => s.status);
  const fileName = useStore((s) => s.fileName);
  const summary = useStore((s) => s.summary);
  const device = useStore((s) => s.device);
  const setDevice = useStore((s) => s.setDevice);
  const devices = summary?.devices ?? [];

  return (
    <header className="topbar">
      <div className="brand" title="memscope: PyTorch GPU memory snapshot viewer">
        memscope
      </div>
      <button
        type="button"
        className="primary"
        onClick={() => input.current?.click()}
        disabled={status === "loading"}
      >
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
          if (files.length > 0) void openFiles(files);
        }}
      />
      <button type="button" onClick={() => void openDemo()} disabled={status === "loading"}>
        Open demo
      </button>
      {fileName && (
        <span className="file-name" data-testid="header-file">
          {fileName}
        </span>
      )}
      <span className="spacer" />
      {devices.length > 1 && (
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
      {devices.length === 1 && <span className="device-one">device {devices[0].device}</span>}
      <span className="privacy-badge" title="The file is read in this browser tab; nothing is uploaded.">
        local only
      </span>
    </header>
  );
}
