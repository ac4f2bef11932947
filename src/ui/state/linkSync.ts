// Keeps the URL hash and the page in step (link.ts defines the format).
//
// Reading (at start and whenever the hash is changed by hand): bad or unknown parameters become one
// notice; `src`/`src2` are downloaded; `name`/`hash` (a link made from dropped files) make the page ask
// for those files; the view is applied once the files are open.
//
// Writing: while files are open, every change of view (device, range, pin, highlight…) rewrites the hash
// with history.replaceState (no new history entry each time), at most every 200 ms. Nothing is written
// while a link still waits for its files, so reloading such a page keeps the link.

import { applyTreeLink, treeLinkState, useCallTree } from "../views/call-tree/store";
import { capacityOf, devicesOf, linkIdOf, linkValueOf, useWhatIf } from "../views/whatif/store";
import { manyFiles, restoreView, useApp } from "./app";
import { type LinkState, parseLink, type SideLink, writeLink } from "./link";
import { momentLinkValue } from "./momentLink";
import { manySources } from "./ranksLink";
import { type State, sides } from "./store";

let lastWritten: string | null = null;
let timer: ReturnType<typeof setTimeout> | null = null;

function round(v: number, axis: "time" | "event"): number {
  return axis === "time" ? Math.round(v) : Math.round(v * 100) / 100;
}

function sideLink(s: State, opts: { range: boolean; site: boolean }): SideLink {
  const l: SideLink = {};
  const src = s.source;
  if (src?.kind === "url" || src?.kind === "demo") l.src = src.url;
  else if (src) {
    l.name = src.name;
    if (s.contentHash) l.hash = s.contentHash;
  }
  l.device = s.device;
  if (s.timelineMode !== "stacked") l.view = s.timelineMode;
  const r = s.panel?.replay;
  if (r && s.view) {
    l.axis = s.view.axis;
    if (opts.range) {
      const origin = s.view.axis === "time" ? r.t0 : 0;
      l.t0 = round(s.view.x0 - origin, s.view.axis);
      l.t1 = round(s.view.x1 - origin, s.view.axis);
    }
  }
  if (s.pinnedEvent !== null) l.pin = s.pinnedEvent;
  if (s.highlightCategory) l.cat = s.highlightCategory;
  if (opts.site && s.highlightSite) l.site = s.highlightSite;
  if (s.mapColor !== "category") l.color = s.mapColor;
  if (useApp.getState().mode !== "compare") {
    l.whatif = linkValueOf(s.side);
    l.whatifid = linkIdOf(s.side);
  }
  const gpus = devicesOf(s.side);
  if (gpus !== 1) l.devices = gpus;
  const capacityBytes = capacityOf(s.side);
  if (capacityBytes !== null) l.cap = capacityBytes;
  l.moment = momentLinkValue(s);
  return l;
}

/**
 * The link's `at=`: written only where it differs from the default — snapshots chosen while both files
 * have a peak (or while the comparison is still being computed: hasPeaks null).
 */
export function compareAtLinkValue(
  choice: "peaks" | "snapshots" | null,
  hasPeaks: boolean | null,
): "snapshots" | undefined {
  return choice === "snapshots" && hasPeaks !== false ? "snapshots" : undefined;
}

/** The link state of what is shown now, or null when nothing is open. */
export function linkState(): LinkState | null {
  const app = useApp.getState();
  const a = sides[app.base].getState();
  if (a.status !== "ready") return null;
  if (app.mode !== "compare") {
    return { a: sideLink(a, { range: true, site: a.highlightBy === "key" }), b: null, tree: treeLinkState() };
  }
  const b = sides[(1 - app.base) as 0 | 1].getState();
  if (b.status !== "ready") return null;
  return {
    a: sideLink(a, { range: true, site: a.highlightBy === "portable" }),
    // A linked B follows A's range; its own is written only when unlinked.
    b: sideLink(b, { range: !app.linked, site: false }),
    link: app.linked,
    align: app.align === "start" ? "start" : undefined,
    at: compareAtLinkValue(app.compareAt, app.compare ? app.compare.compare.atPeaks !== null : null),
    tree: treeLinkState(),
  };
}

function write(): void {
  timer = null;
  // Someone else changed the hash (a link pasted, back/forward): its hashchange applies it first.
  if (location.hash !== (lastWritten ?? location.hash)) return;
  const app = useApp.getState();
  if (app.expecting || app.pendingRestore) return;
  if (sides.some((s) => s.getState().status === "loading")) return;
  const state = linkState();
  if (!state) return;
  const hash = `#${writeLink(state)}`;
  if (hash === location.hash) return;
  lastWritten = hash;
  history.replaceState(history.state, "", hash);
}

function schedule(): void {
  if (timer) return;
  timer = setTimeout(write, 200);
}

/** Sets the hash without applying it (the rank overview puts back its own link). */
export function replaceHash(hash: string): void {
  const h = hash === "" || hash.startsWith("#") ? hash : `#${hash}`;
  lastWritten = h;
  if (location.hash !== h) history.replaceState(history.state, "", h || location.pathname + location.search);
}

/** Back / Forward landed on an entry of this page: its hash is not a link to apply (the files are open). */
export function adoptHash(): void {
  lastWritten = location.hash;
}

/** The page's address with the current view, written now (for "Copy link"). */
export function currentLink(): string {
  if (timer) {
    clearTimeout(timer);
    timer = null;
  }
  write();
  return location.href;
}

/** Applies a link: notices, downloads, or waiting for dropped files. */
export function applyLink(hash: string): void {
  lastWritten = hash;
  if (location.hash !== hash)
    history.replaceState(history.state, "", hash || location.pathname + location.search);
  const app = useApp.getState();
  const many = manySources(hash);
  if (many && manyFiles.openUrls) {
    // More than two files: the rank overview downloads and summarises them.
    for (const t of ["link", "link-wait", "restore"]) app.clearTopic(t);
    useApp.setState({ pendingRestore: null, expecting: null });
    void manyFiles.openUrls(many);
    return;
  }
  const { state, notices, empty } = parseLink(hash);
  applyTreeLink(state.tree);
  app.clearTopic("link");
  app.clearTopic("link-wait");
  app.clearTopic("restore");
  if (notices.length > 0) {
    app.notify(
      "warn",
      `From this link, peakscope ignored: ${notices.join("; ")}. The rest is applied.`,
      "link",
    );
  }
  if (empty) return;
  const { a, b } = state;
  if (a.src) {
    useApp.setState({ pendingRestore: state, expecting: null });
    if (b && !b.src && b.name) {
      app.notify("warn", `The link's second file, ${b.name}, was a dropped file: it is not opened.`, "link");
    }
    void app.openUrls(a.src, b?.src ?? null);
    return;
  }
  if (a.name) {
    // The files open now may be those the link names (a link pasted into the page that made it).
    const open = [sides[app.base].getState(), sides[(1 - app.base) as 0 | 1].getState()];
    const same = (s: State, name: string, hash: string | undefined) =>
      s.status === "ready" &&
      s.source?.kind === "file" &&
      s.fileName === name &&
      (!hash || s.contentHash === hash);
    const comparing = app.mode === "compare";
    if (
      same(open[0], a.name, a.hash) &&
      (b?.name ? comparing && same(open[1], b.name, b.hash) : !comparing)
    ) {
      void restoreView(state);
      return;
    }
    app.reset();
    const expecting = {
      a: { name: a.name, hash: a.hash ?? null },
      b: b?.name ? { name: b.name, hash: b.hash ?? null } : null,
    };
    useApp.setState({ expecting, pendingRestore: state });
    return;
  }
  const hasView = Object.keys(a).length > 0 || b !== null;
  if (hasView) {
    useApp.setState({ pendingRestore: state, expecting: null });
    app.notify(
      "info",
      "This link holds a view but no file (no src or name): drop a snapshot and the view is applied to it.",
      "link-wait",
    );
  }
}

export function startLinkSync(): void {
  for (const s of sides) s.subscribe(schedule);
  useApp.subscribe(schedule);
  useCallTree.subscribe(schedule);
  useWhatIf.subscribe(schedule);
  window.addEventListener("hashchange", (e) => {
    const hash = new URL(e.newURL).hash;
    if (hash === lastWritten) return;
    applyLink(hash);
  });
  applyLink(location.hash);
}
