// A permitted model call, forwarded and metered (issue 16). The decision record is written
// before the call; this writes the call's outcome record once the answer has ended (a
// streamed answer: when its last chunk was relayed, or the stream failed or was abandoned),
// carrying the provider's token counts, the cost at the profile's price and the duration.
// Writing it never delays or breaks the answer: a failure to write is logged. The answer
// names its decision record in RECORD_HEADER (the outcome record's `ref`).
import type { AuditRecord } from "../../contract/audit.ts";
import type { Logger } from "../../log/index.ts";
import type { AuditRecorder } from "../audit/recorder.ts";
import type { CompiledBundle } from "../policy/policy-index.ts";
import type { ChatBody } from "./chat-body.ts";
import { forwardChat } from "./model-forward.ts";
import { askForUsage, costOf, meterStream, type Usage, usageOf } from "./usage-meter.ts";

export const RECORD_HEADER = "x-svc-record-id";

/** What a finished model call reports (metrics, budgets). */
export type ModelCallEnd = { record: AuditRecord; usage: Usage | null; cost: number | undefined; ok: boolean; durationMs: number };

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
    compiled: CompiledBundle;
    decision: AuditRecord;
    recorder: Pick<AuditRecorder, "modelOutcome">;
    log: Logger;
    onEnd?: (end: ModelCallEnd) => void;
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
    const durationMs = performance.now() - started;
    const cost = usage ? costOf(usage, price) : undefined;
    input
      .recorder.modelOutcome({ compiled: input.compiled, decision: input.decision, outcome: ok ? "ok" : "error", usage, cost, durationMs })
      .then((record) => input.onEnd?.({ record, usage, cost, ok, durationMs }))
      .catch((e) => input.log.error("model outcome not recorded", { ref: input.decision.id, error: (e as Error).message }));
  };
  upstream.headers.set(RECORD_HEADER, input.decision.id);
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
