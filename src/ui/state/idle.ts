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
