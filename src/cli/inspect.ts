// `peakscope inspect FILE [--json]`: what the reader found, as counts and segment-field totals.

import { summarize } from "../core/model/summary";
import { formatMiB } from "../core/report/format";
import type { CliIo } from "./main";
import { readSnapshotFile } from "./read-file";

export async function inspectCommand(args: string[], io: CliIo): Promise<number> {
  const json = args.includes("--json");
  const files = args.filter((a) => !a.startsWith("--"));
  if (files.length !== 1) {
    io.stderr("usage: peakscope inspect FILE [--json]\n");
    return 1;
  }
  const model = await readSnapshotFile(files[0]);
  const s = summarize(model);
  if (json) {
    const { fileName: _f, notes: _n, ...rest } = s;
    io.stdout(
      `${JSON.stringify({ ...rest, devices: s.devices.map(({ requestedBytes: _r, ...d }) => d) })}\n`,
    );
    return 0;
  }
  const mib = formatMiB;
  const lines = [
    `${s.fileName}: ${s.format}${s.pickleProtocol === null ? "" : ` (pickle protocol ${s.pickleProtocol})`}`,
    `segments ${s.segments}, blocks ${s.blocks}, trace entries ${s.traceEntries}`,
    "",
    `${"device".padEnd(8)}${"segments".padStart(10)}${"blocks".padStart(10)}${"trace".padStart(10)}${"reserved".padStart(16)}${"allocated".padStart(16)}${"active".padStart(16)}`,
    ...s.devices.map(
      (d) =>
        `${String(d.device).padEnd(8)}${String(d.segments).padStart(10)}${String(d.blocks).padStart(10)}${String(d.traceEntries).padStart(10)}${mib(d.reservedBytes).padStart(16)}${mib(d.allocatedBytes).padStart(16)}${mib(d.activeBytes).padStart(16)}`,
    ),
    "",
    `actions: ${
      Object.entries(s.actions)
        .map(([k, v]) => `${k} ${v}`)
        .join(", ") || "none"
    }`,
    ...s.notes.map((n) => `note: ${n}`),
  ];
  io.stdout(`${lines.join("\n")}\n`);
  return 0;
}
