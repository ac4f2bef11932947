// What the current moment holds, for the Summary and the sidebar: bytes by category (the peak's and the
// snapshot's from the panel; an event's from the worker's timeline at that one event) and the top
// own-code lines (the bottom-up call tree at the moment, own code only: its first level is the innermost
// own-code frame of every stack). The annotation span around the moment comes with the tree.

import { useEffect, useState } from "react";
import type { TreeNodeOut } from "../../../../workers/tree";
import { type Moment, momentEvent, momentOf } from "../../state/moment";
import { useSide } from "../../state/store";

export interface MomentFacts {
  /** The moment these facts are about (they lag the store while a request runs). */
  attr: string;
  totalBytes: number;
  byCategory: { name: string; bytes: number; index: number }[];
  /** Own-code lines holding the most at the moment, largest first (at most 5). */
  topLines: TreeNodeOut[];
  /** Bytes the tree holds (equal to the total but for blocks without a trace at an event). */
  treeTotalBytes: number;
  /** The innermost record_function span around the moment, when the trace has any. */
  span: string | null;
}

export function useMoment(): Moment {
  const S = useSide();
  const pinnedEvent = S((s) => s.pinnedEvent);
  const momentRange = S((s) => s.momentRange);
  const panel = S((s) => s.panel);
  return momentOf({ pinnedEvent, momentRange, panel });
}

/** One request per moment however many views ask (the moment bar, the Summary, the sidebar). */
const cache = new Map<string, Promise<MomentFacts>>();

export function useMomentFacts(): MomentFacts | null {
  const S = useSide();
  const panel = S((s) => s.panel);
  const side = S((s) => s.side);
  const generation = S((s) => s.generation);
  const device = S((s) => s.device);
  const ask = S((s) => s.ask);
  const moment = useMoment();
  const event = momentEvent(moment);
  const kind = moment.kind;
  const [facts, setFacts] = useState<MomentFacts | null>(null);

  useEffect(() => {
    if (!panel) return;
    let stale = false;
    const names = panel.categories.map((c) => c.name);
    const r = panel.replay;
    const dev = panel.report?.devices.find((d) => d.device === device) ?? null;
    async function load(): Promise<MomentFacts> {
      let bytes: number[];
      if (event === null) bytes = names.map((n) => dev?.categories[n] ?? 0);
      else if (r && kind === "peak") bytes = names.map((_, c) => r.peakByCategory[c] ?? 0);
      else {
        const t = await ask((api) =>
          api.timeline({ device, axis: "event", x0: event as number, x1: (event as number) + 1, buckets: 1 }),
        );
        bytes = names.map((_, c) => t.byCategory[c] ?? 0);
      }
      const tree = await ask((api) =>
        api.tree({
          device,
          event,
          orientation: "bottom-up",
          by: "stack",
          ownCodeOnly: true,
          hideLibrary: true,
          search: "",
          maxNodes: 60,
        }),
      );
      const own = tree.root.children.filter((n) => n.kind !== "more" && n.own);
      const span =
        event === null
          ? null
          : (tree.spans
              .filter((s) => s.from <= event && event <= s.to)
              .sort((a, b) => a.to - a.from - (b.to - b.from))[0]?.name ?? null);
      return {
        attr: `${kind}:${event ?? "snapshot"}`,
        totalBytes: bytes.reduce((a, b) => a + b, 0),
        byCategory: names
          .map((name, index) => ({ name, bytes: bytes[index] ?? 0, index }))
          .filter((c) => c.bytes > 0)
          .sort((a, b) => b.bytes - a.bytes),
        topLines: own.slice(0, 5),
        treeTotalBytes: tree.totalBytes,
        span,
      };
    }
    const key = `${side}|${generation}|${device}|${kind}|${event}|${panel.countersFile}`;
    let p = cache.get(key);
    if (!p) {
      if (cache.size > 40) cache.clear();
      p = load();
      cache.set(key, p);
      p.catch(() => cache.delete(key));
    }
    p.then(
      (f) => !stale && setFacts(f),
      () => !stale && setFacts(null),
    );
    return () => {
      stale = true;
    };
  }, [panel, device, ask, event, kind, side, generation]);
  return facts;
}
