// A new task (not a microtask), without setTimeout's clamping: long work yields with it so that the
// thread's other messages (a worker's queries, a read's bytes) are handled in between.

export function nextTask(): Promise<void> {
  if (typeof setImmediate === "function") return new Promise((resolve) => setImmediate(resolve));
  return new Promise((resolve) => {
    const channel = new MessageChannel();
    channel.port1.onmessage = () => {
      channel.port1.close();
      resolve();
    };
    channel.port2.postMessage(null);
  });
}
