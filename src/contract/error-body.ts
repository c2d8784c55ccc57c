// Error answers from remote services (the proxy's model endpoint; the control plane, or the
// egress proxy in front of it, for the proxy and the boot tool sync alike) are read for their
// message only, and only up to a limit: a broken or hostile upstream must not make the runtime
// hold an arbitrarily large body in memory. Past the limit the body is cut and the rest
// discarded (the stream is cancelled, closing that connection rather than draining it).

/** More than any real error message; what is past it is cut. */
export const ERROR_BODY_LIMIT = 64 * 1024;

export type ErrorBody = { text: string /** the body was longer than the limit and was cut */; cut: boolean };

/** The body of an error answer as text, at most `limit` bytes of it; a failed read keeps what came. */
export async function readErrorBody(res: Response, limit = ERROR_BODY_LIMIT): Promise<ErrorBody> {
  if (!res.body) return { text: "", cut: false };
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  let cut = false;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (size + value.byteLength > limit) {
        chunks.push(value.subarray(0, limit - size));
        size = limit;
        cut = true;
        break;
      }
      chunks.push(value);
      size += value.byteLength;
    }
  } catch {
    // the upstream went away mid-body: what arrived is still worth showing
  }
  if (cut) await reader.cancel().catch(() => {});
  return { text: new TextDecoder().decode(Buffer.concat(chunks, size)), cut };
}
