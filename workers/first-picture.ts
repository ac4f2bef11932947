// The first picture first. Once a file is open the page asks, within a few frames, for the panel, the
// timeline and half a dozen secondary answers (call tree, growth, phases, what-if, health); the worker
// answers in arrival order and the timeline's request, sent once the strip has measured its width, used
// to arrive last: the first picture waited ≈ 1 s behind answers for panes nobody looks at yet. Secondary
// answers now wait for the gate: open once the file's first timeline answer has gone out, or a moment
// after the panel's (a page that draws no timeline), or when the file fails, closes or is replaced.

/** How long after the panel's answer secondary answers wait at most for the timeline's request. */
const AFTER_PANEL_MS = 400;
/**
 * How long after a picture's answer the gate stays closed: the strip's and the overview's requests leave
 * the page together, and a message from the page is not always handled before the worker's own timers.
 */
const SIBLING_PICTURES_MS = 60;

export class FirstPicture {
  private gate: Promise<void> = Promise.resolve();
  private release: (() => void) | null = null;
  private timer: ReturnType<typeof setTimeout> | null = null;

  /** A file is being opened: secondary answers wait from now. */
  closeGate(): void {
    this.openGate();
    this.gate = new Promise<void>((resolve) => {
      this.release = resolve;
    });
  }

  /** The panel's answer went out: the timeline's request comes next, else the gate opens by itself. */
  panelSent(drawsTimeline: boolean): void {
    if (!this.release) return;
    if (!drawsTimeline) this.openGate();
    else if (this.timer === null) this.timer = setTimeout(() => this.openGate(), AFTER_PANEL_MS);
  }

  /** The timeline's answer went out (or the file failed, closed, was replaced): let the rest through. */
  openGate(): void {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.release?.();
    this.release = null;
  }

  /** A picture went out: open the gate once the pictures asked with it have been answered too. */
  openGateSoon(): void {
    if (!this.release) return;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = setTimeout(() => this.openGate(), SIBLING_PICTURES_MS);
  }

  /** Resolves when secondary answers may be computed. */
  wait(): Promise<void> {
    return this.gate;
  }
}
