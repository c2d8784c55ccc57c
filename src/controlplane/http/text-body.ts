// A response body written straight to the connection from a generator of text chunks (Bun's
// direct stream): no TextEncoder and no chunk queued and copied on the way, which cost the
// export in chain order about 2 µs of CPU a record on top of writing the text (issue 30,
// docs/performance.md). Each write is awaited, so a slow client slows the generator down
// instead of buffering; a client that goes away stops it at its next chunk; a generator that
// fails errors the body, so the client sees a transfer error, never a short body that looks whole.

/**
 * The body of `chunks`, for `new Response(…)` (Bun.serve, or a reader of the whole body such as
 * `.text()`). Read chunk by chunk with `getReader()`, the first read takes every chunk: give
 * such a caller the generator itself.
 */
export function textBody(chunks: AsyncGenerator<string>): ReadableStream<Uint8Array> {
  let gone = false;
  const source: Bun.DirectUnderlyingSource<Uint8Array> = {
    type: "direct",
    async pull(controller) {
      // leaving the loop early (or on a failure) closes the generator
      for await (const chunk of chunks) {
        // after the client went away Bun takes writes and drops them: stop reading instead
        if (gone) return;
        await controller.write(chunk);
      }
      controller.close();
    },
    cancel() {
      gone = true;
    },
  };
  // the DOM library's ReadableStream type knows no direct source (bun-types declares it)
  return new ReadableStream(source as unknown as UnderlyingDefaultSource<Uint8Array>);
}
