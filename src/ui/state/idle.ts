// The page's idle signal for tests and tools: document.body.dataset.busy is "0" only when no worker
// request is in flight and no canvas paint is pending, and has stayed so for two animation frames (so
// React has committed the answers and the canvases have painted them).

let pending = 0;
let settle = 0;

export function beginWork(): void {
  pending++;
  document.body.dataset.busy = String(pending);
  if (settle) {
    cancelAnimationFrame(settle);
    settle = 0;
  }
}

export function endWork(): void {
  pending = Math.max(0, pending - 1);
  if (pending > 0) {
    document.body.dataset.busy = String(pending);
    return;
  }
  if (settle) cancelAnimationFrame(settle);
  settle = requestAnimationFrame(() => {
    settle = requestAnimationFrame(() => {
      settle = 0;
      if (pending === 0) document.body.dataset.busy = "0";
    });
  });
}

/** Whether any worker request (or other tracked work) is in flight. */
export function workPending(): boolean {
  return pending > 0;
}

/** Runs `fn` counted as work, for anything asynchronous the page waits on. */
export async function tracked<T>(fn: () => Promise<T>): Promise<T> {
  beginWork();
  try {
    return await fn();
  } finally {
    endWork();
  }
}

// The timeline's first drawing of a newly opened file: work that can wait (the content hash for share
// links reads the whole file again) waits for it, so as not to share the CPU with the first picture.
let painted: (() => void)[] = [];

/** Called by the timeline each time it draws data. */
export function notePainted(): void {
  const waiting = painted;
  painted = [];
  for (const fn of waiting) fn();
}

/** Resolves at the timeline's next drawing, or after `timeoutMs` (a file without a trace has none). */
export function nextPaint(timeoutMs: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, timeoutMs);
    painted.push(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}
