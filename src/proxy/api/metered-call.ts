// A permitted model call, forwarded and metered (issue 16): step 7 of the governed-call
// pipeline (../pipeline/pipeline.ts). The decision record was written before the call; once
// the answer has ended (a streamed answer: when its last chunk was relayed, or the stream
// failed or was abandoned) `onEnd` reports the provider's token counts, the cost at the
// profile's price and the duration, and the pipeline writes the outcome record (step 8).
// Reporting never delays or breaks the answer. The answer names its decision record in
// RECORD_HEADER (the outcome record's `ref`).
import type { ChatBody } from "./chat-body.ts";
import { forwardChat } from "./model-forward.ts";
import { askForUsage, costOf, meterStream, type Usage, usageOf } from "./usage-meter.ts";

export const RECORD_HEADER = "x-svc-record-id";

/** How a forwarded call ended: the usage the provider reported, its cost, whether it went well, how long it took. */
export type CallEnd = { usage: Usage | null; cost: number | undefined; ok: boolean; durationMs: number };

/**
 * The body sent upstream: the caller's bytes with the model the call goes to and, for a
 * streamed call, `stream_options.include_usage` spliced in; whether it streams; and whether
 * the caller asked for streamed usage itself.
 */
export function upstreamRequest(chat: ChatBody, model: string | null): { bytes: Uint8Array<ArrayBuffer>; stream: boolean; callerAsked: boolean } {
  const stream = chat.field("stream");
  const { streamOptions, callerAsked } = askForUsage(stream, chat.field("stream_options"));
  const set: [string, unknown][] = [];
  if (chat.field("model") !== model) set.push(["model", model]);
  if (streamOptions) set.push(["stream_options", streamOptions]);
  return { bytes: chat.withFields(set), stream: Boolean(stream), callerAsked };
}

export async function forwardMetered(
  input: Omit<Parameters<typeof forwardChat>[0], "body" | "stream"> & {
    /** The caller's body as scanned, and the model it is sent to (spliced in when it differs). */
    chat: ChatBody;
    model: string | null;
    /** The decision record's id (RECORD_HEADER). */
    recordId: string;
    onEnd: (end: CallEnd) => void;
  },
): Promise<Response> {
  const { bytes, stream, callerAsked } = upstreamRequest(input.chat, input.model);
  const started = performance.now();
  const upstream = await forwardChat({ ...input, body: bytes, stream });
  const price = input.profile.prices?.[input.model ?? ""];
  let done = false;
  const finish = (usage: Usage | null, ok: boolean) => {
    if (done) return;
    done = true;
    input.onEnd({ usage, cost: usage ? costOf(usage, price) : undefined, ok, durationMs: performance.now() - started });
  };
  upstream.headers.set(RECORD_HEADER, input.recordId);
  if (!upstream.ok || !upstream.body) {
    finish(null, false);
    return upstream;
  }
  if ((upstream.headers.get("content-type") ?? "").includes("text/event-stream")) {
    return new Response(meterStream(upstream.body, { strip: !callerAsked, onEnd: finish }), { status: upstream.status, headers: upstream.headers });
  }
  let text: string;
  try {
    text = await upstream.text();
  } catch (e) {
    finish(null, false);
    throw e;
  }
  let usage: Usage | null = null;
  try {
    usage = usageOf(JSON.parse(text));
  } catch {}
  finish(usage, true);
  return new Response(text, { status: upstream.status, headers: upstream.headers });
}
