// Decompression with the platform's DecompressionStream (browsers, workers and Node 20 all have it).

export async function* inflate(
  chunks: AsyncIterable<Uint8Array>,
  format: "gzip" | "deflate-raw",
): AsyncGenerator<Uint8Array> {
  const ds = new DecompressionStream(format);
  const writer = ds.writable.getWriter();
  const reader = ds.readable.getReader();
  // Feed in the background; errors surface through the reader.
  const feeding = (async () => {
    try {
      for await (const c of chunks) await writer.write(c as Uint8Array<ArrayBuffer>);
      await writer.close();
    } catch (e) {
      await writer.abort(e).catch(() => {});
    }
  })();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      yield value;
    }
  } finally {
    // Stops the feeder too when the consumer gave up early (a parse error, a cancel).
    await reader.cancel().catch(() => {});
    await feeding;
  }
}
