// "Save report" (issue 14): the same self-contained HTML file as `peakscope report FILE --html OUT.html`,
// built in the worker from the open model (src/report-html: renderReportHtml + buildReportPictures, pure)
// with the counters sidecar in use and the replays the worker already prepared. The page gets the string
// and downloads it; nothing is sent anywhere.

import { version } from "../package.json";
import { replayReport } from "../src/core/replay/report";
import type { Replay } from "../src/core/replay/types";
import { buildReport, replayInputs } from "../src/core/report/index";
import { buildReportPictures, renderReportHtml } from "../src/report-html/index";
import type { Engine } from "./engine";

export interface ReportHtmlAnswer {
  /** The whole HTML file. */
  html: string;
  /** A file name for it: the snapshot's name + `.report.html`. */
  fileName: string;
  /** The report's allocated total (Σ allocated_size, all devices), as `report --json` prints it. */
  allocatedBytes: number;
  ms: number;
}

export function reportHtml(engine: Engine): ReportHtmlAnswer {
  const model = engine.model;
  const attribution = engine.attribution;
  if (!model) throw new Error("No snapshot is open.");
  if (!attribution) throw new Error("The attribution failed, so the report cannot be built.");
  const t0 = performance.now();
  const inputs = replayInputs(attribution);
  const replays = new Map<number, Replay>();
  for (let d = 0; d < model.traces.length; d++) {
    if (model.traces[d].length > 0) replays.set(d, engine.device(d).replay);
  }
  const counters = engine.countersSidecar;
  // As src/cli/report.ts builds it for --html.
  const replay = replayReport(model, inputs, counters, { replays });
  const report = buildReport(model, { counters, attribution, replay });
  const html = renderReportHtml(report, buildReportPictures(model, attribution, replays), {
    generatedAt: new Date().toISOString(),
    version,
  });
  const name = engine.summary?.fileName ?? "snapshot";
  return {
    html,
    fileName: `${name.replace(/[\\/:*?"<>|]+/g, "_")}.report.html`,
    allocatedBytes: report.totals.allocatedBytes,
    ms: performance.now() - t0,
  };
}
