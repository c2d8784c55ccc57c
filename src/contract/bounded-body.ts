// A request body read only up to a byte limit, shared by the servers that take bodies from
// clients they do not trust (the control plane's request gate, the proxy's local API): the
// body is counted while it is read and abandoned as soon as it passes the limit, so an
// oversized (or endless, chunked) body is never held in memory.

/**
 * At most `limit` bytes of the body, joined into one fresh buffer; null as soon as it is
 * longer (the stream is cancelled then, so the sender stops and nothing more is pulled).
 */
export async function readBounded(body: ReadableStream<Uint8Array>, limit: number): Promise<Uint8Array<ArrayBuffer> | null> {
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel().catch(() => {});
      return null;
    }
    chunks.push(value);
  }
  const out = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.byteLength;
  }
  return out;
}
