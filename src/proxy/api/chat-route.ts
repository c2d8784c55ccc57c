// Model calls, an adapter over the governed-call pipeline (../pipeline/pipeline.ts): the body
// is scanned for the model it names, the pipeline decides (policy first: a caller who may not
// call models learns nothing about the profile's models) and records the decision, and a
// permitted call is forwarded to the model profile's endpoint with its sealed API key and
// metered (metered-call.ts) until its answer ends. With tracing on (../tracing.ts), the call is
// a span (a child of the request's `traceparent`) holding the decision, the record's durable
// write and the model forward, whose `traceparent` goes to the provider.
import { SpanKind, SpanStatusCode } from "@opentelemetry/api";
import { scanChatBody } from "./chat-body.ts";
import { CHAT_BODY_LIMIT, readBodyBytes } from "./json-body.ts";
import { forwardMetered } from "./metered-call.ts";
import { openAIError } from "./model-forward.ts";
import { badBody, type Route, type RouteContext, unavailable } from "./routes.ts";
import type { Permit, Refused } from "../pipeline/pipeline.ts";
import { REFUSALS } from "../pipeline/refusals.ts";

/** Open WebUI's background task a call is made for, as the Pipe reports it (issue 15). */
export const TASK_HEADER = "x-svc-task";
const TASK_NAME = /^[a-z][a-z0-9_]{0,63}$/;

/** The task header when it is a plain task name; anything else is not recorded. Pure. */
export function taskOf(h: Headers): string | null {
  const t = h.get(TASK_HEADER);
  return t && TASK_NAME.test(t) ? t : null;
}

/** A notice for the caller alone (percent-encoded UTF-8): the Pipe shows it as a notification. */
export const NOTICE_HEADER = "x-svc-notice";

/** A refused model call in OpenAI format, as the refusal table says (403, 429 with Retry-After, 404). */
function refusedAnswer(a: Refused): Response {
  const row = REFUSALS[a.refusal.code];
  const r = openAIError(row.status, a.refusal.message, row.type, a.refusal.code, { record_id: a.record.id, ...(a.claim ? { claim_url: a.claim } : {}) });
  if (a.refusal.retryAfterSeconds !== undefined) r.headers.set("retry-after", String(a.refusal.retryAfterSeconds));
  return r;
}

export function chatRoutes(c: RouteContext): Route[] {
  /** The profile's API key, unsealed for this call; a Response when it cannot be. */
  async function apiKeyFor(p: Permit): Promise<string | null | Response> {
    const profile = p.compiled.bundle.model_profile!;
    if (profile.auth_type !== "api_key") return null;
    if (!profile.api_key_sealed) return openAIError(502, `model profile "${profile.display_name}" needs an API key but none is sealed to this runtime`, "upstream_error", "api_key_missing");
    try {
      return await c.credentials.unseal(profile.api_key_sealed);
    } catch {
      return openAIError(
        502,
        `the API key of model profile "${profile.display_name}" is not sealed to this runtime's credential-sync key; re-seal it (PUT /model-profiles/{id}/api-key)`,
        "upstream_error",
        "api_key_unsealable",
      );
    }
  }

  async function chat(req: Request, user: Parameters<Route["handler"]>[1]): Promise<Response> {
    const compiled = c.pipeline.bundle();
    if (!compiled) return unavailable(c.status);
    // The conversation is scanned, not parsed (chat-body.ts): only the fields the proxy reads.
    const read = await readBodyBytes(req, CHAT_BODY_LIMIT);
    if (!read.ok) return badBody(read);
    const scanned = scanChatBody(read.bytes);
    if (!scanned.ok) return openAIError(scanned.status, scanned.message, "invalid_request_error", scanned.code);
    const chat = scanned.body;
    const asked = chat.field("model");
    const model = typeof asked === "string" && asked ? asked : (compiled.bundle.model_profile?.default_model ?? null);
    const call = c.tracing.start("svc.model_call", c.tracing.incoming(req.headers), {
      kind: SpanKind.SERVER,
      attributes: { "gen_ai.operation.name": "chat", ...(model ? { "gen_ai.request.model": model } : {}) },
    });
    let a: Permit | Refused;
    try {
      a = await c.pipeline.admit(compiled, { kind: "model", model, task: taskOf(req.headers), user }, call.ctx);
    } catch (e) {
      call.span.setStatus({ code: SpanStatusCode.ERROR, message: (e as Error).message });
      call.span.end();
      throw e;
    }
    call.span.setAttributes({ "svc.record.id": a.record.id, "svc.decision": a.record.decision });
    if (!a.permit) {
      call.span.end();
      return refusedAnswer(a);
    }
    const permit = a;
    const apiKey = await apiKeyFor(permit);
    if (apiKey instanceof Response) {
      c.pipeline.modelOutcome(permit, { usage: null, cost: undefined, ok: false, durationMs: 0 });
      call.span.setStatus({ code: SpanStatusCode.ERROR, message: "no usable API key" });
      call.span.end();
      return apiKey;
    }
    const profile = permit.compiled.bundle.model_profile!;
    // The model forward's span (GenAI conventions: operation, model, token counts), ended with the answer.
    const fwd = c.tracing.start(`chat ${model ?? ""}`.trim(), call.ctx, {
      kind: SpanKind.CLIENT,
      attributes: { "gen_ai.operation.name": "chat", ...(model ? { "gen_ai.request.model": model } : {}) },
    });
    const onEnd = (end: Parameters<Parameters<typeof forwardMetered>[0]["onEnd"]>[0]) => {
      if (end.usage) fwd.span.setAttributes({ "gen_ai.usage.input_tokens": end.usage.prompt_tokens, "gen_ai.usage.output_tokens": end.usage.completion_tokens });
      if (!end.ok) fwd.span.setStatus({ code: SpanStatusCode.ERROR });
      fwd.span.end();
      call.span.end();
      c.pipeline.modelOutcome(permit, end);
    };
    const answer = await forwardMetered({
      profile,
      apiKey,
      chat,
      model,
      ca: c.modelCa,
      signal: req.signal,
      ...(c.fetchImpl ? { fetchImpl: c.fetchImpl } : {}),
      recordId: permit.record.id,
      traceHeaders: c.tracing.outgoing(fwd.ctx),
      onEnd,
    });
    // The 80 % warning, for the Pipe to show that user alone (a front-end notification).
    if (permit.warning) answer.headers.set(NOTICE_HEADER, encodeURIComponent(permit.warning));
    return answer;
  }

  return [{ method: "POST", path: "/v1/chat/completions", handler: chat, bodyLimit: CHAT_BODY_LIMIT }];
}
