// Model calls, an adapter over the governed-call pipeline (../pipeline/pipeline.ts): the body
// is scanned for the model it names, the pipeline decides (policy first: a caller who may not
// call models learns nothing about the profile's models) and records the decision, and a
// permitted call is forwarded to the model profile's endpoint with its sealed API key and
// metered (metered-call.ts) until its answer ends.
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
      return openAIError(502, `the API key of model profile "${profile.display_name}" is not sealed to this runtime's credential-sync key; re-seal it (PUT /model-profiles/{id}/api-key)`, "upstream_error", "api_key_unsealable");
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
    const a = await c.pipeline.admit(compiled, { kind: "model", model, task: taskOf(req.headers), user });
    if (!a.permit) return refusedAnswer(a);
    const apiKey = await apiKeyFor(a);
    if (apiKey instanceof Response) {
      c.pipeline.modelOutcome(a, { usage: null, cost: undefined, ok: false, durationMs: 0 });
      return apiKey;
    }
    const profile = a.compiled.bundle.model_profile!;
    const answer = await forwardMetered({ profile, apiKey, chat, model, ca: c.modelCa, signal: req.signal, ...(c.fetchImpl ? { fetchImpl: c.fetchImpl } : {}), recordId: a.record.id, onEnd: (end) => c.pipeline.modelOutcome(a, end) });
    // The 80 % warning, for the Pipe to show that user alone (a front-end notification).
    if (a.warning) answer.headers.set(NOTICE_HEADER, encodeURIComponent(a.warning));
    return answer;
  }

  return [{ method: "POST", path: "/v1/chat/completions", handler: chat, bodyLimit: CHAT_BODY_LIMIT }];
}
