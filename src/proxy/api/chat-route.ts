// Model calls: the policy decides first (a caller who may not call models learns nothing about
// the profile's models), the decision is audited, and a permitted call is forwarded to the
// model profile's endpoint with its sealed API key.
import { REFUSAL_CODES } from "../../contract/errors.ts";
import { type Decision, decideModel, MODEL_ACTION, refusalMessage } from "../policy/policy-index.ts";
import { scanChatBody } from "./chat-body.ts";
import { CHAT_BODY_LIMIT, readBodyBytes } from "./json-body.ts";
import { forwardMetered, type ModelCallEnd } from "./metered-call.ts";
import { openAIError } from "./model-forward.ts";
import { badBody, type Route, type RouteContext, rateKey, unavailable } from "./routes.ts";

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

export function chatRoutes(c: RouteContext): Route[] {
  async function chat(req: Request, user: Parameters<Route["handler"]>[1]): Promise<Response> {
    const compiled = c.status.compiled;
    if (!c.status.serving() || !compiled) return unavailable(c.status);
    // The conversation is scanned, not parsed (chat-body.ts): only the fields the proxy reads.
    const read = await readBodyBytes(req, CHAT_BODY_LIMIT);
    if (!read.ok) return badBody(read);
    const scanned = scanChatBody(read.bytes);
    if (!scanned.ok) return openAIError(scanned.status, scanned.message, "invalid_request_error", scanned.code);
    const chat = scanned.body;
    const profile = compiled.bundle.model_profile;
    const asked = chat.field("model");
    const model = typeof asked === "string" && asked ? asked : (profile?.default_model ?? null);
    const task = taskOf(req.headers);
    let decision = decideModel(compiled, user, c.now());
    if (decision.decision === "permit" && profile && model !== null) {
      const offered = profile.models.length > 0 ? profile.models : [profile.default_model];
      if (!offered.includes(model)) {
        // A refusal like any other: audited as a deny before answering.
        const refusal: Decision = { ...decision, decision: "deny", code: null, reason: "model_not_found", policyId: null, message: null };
        const record = await c.recorder.decision({ compiled, kind: "model", action: MODEL_ACTION, toolName: null, model, task, decision: refusal, args: { model } });
        c.decisions.note("model", "deny", "model_not_found");
        return openAIError(404, `model "${model}" is not offered by the model profile "${profile.display_name}" (offered: ${offered.join(", ")})`, "invalid_request_error", "model_not_found", { record_id: record.id });
      }
    }
    // A permitted caller over a rate limit or a budget is refused like a policy refusal,
    // audited with that code.
    const rate = decision.decision === "permit" && c.rateLimits ? c.rateLimits.take({ user: rateKey(decision.subject), model }, c.now().getTime()) : null;
    if (rate && !rate.ok) decision = { ...decision, decision: "deny", code: REFUSAL_CODES.rateLimited, reason: REFUSAL_CODES.rateLimited, message: rate.message };
    const budget = decision.decision === "permit" && c.budgets ? c.budgets.check(decision.subject, c.now().getTime()) : null;
    if (budget?.refusal) decision = { ...decision, decision: "deny", code: REFUSAL_CODES.budgetExceeded, reason: REFUSAL_CODES.budgetExceeded, message: budget.refusal };
    const [record, claim] = await Promise.all([
      c.recorder.decision({ compiled, kind: "model", action: MODEL_ACTION, toolName: null, model, task, decision, args: { model } }),
      decision.code === REFUSAL_CODES.unlinked && user ? c.claims.forRefusal(user) : undefined,
    ]);
    c.decisions.note("model", decision.decision, decision.code);
    if (decision.decision !== "permit" || !profile) {
      const refused = openAIError(rate && !rate.ok ? 429 : 403, decision.message ?? refusalMessage(REFUSAL_CODES.denied), "refusal", decision.code ?? REFUSAL_CODES.denied, { record_id: record.id, ...(claim ? { claim_url: claim } : {}) });
      if (rate && !rate.ok) refused.headers.set("retry-after", String(rate.retryAfterSeconds));
      return refused;
    }
    let apiKey: string | null = null;
    if (profile.auth_type === "api_key") {
      if (!profile.api_key_sealed) return openAIError(502, `model profile "${profile.display_name}" needs an API key but none is sealed to this runtime`, "upstream_error", "api_key_missing");
      try {
        apiKey = await c.credentials.unseal(profile.api_key_sealed);
      } catch {
        return openAIError(502, `the API key of model profile "${profile.display_name}" is not sealed to this runtime's credential-sync key; re-seal it (PUT /model-profiles/{id}/api-key)`, "upstream_error", "api_key_unsealable");
      }
    }
    const subject = decision.subject;
    const onEnd = (e: ModelCallEnd) => {
      c.budgets?.add(subject, e.usage, e.cost);
      c.onModelCallEnd?.(e);
    };
    const answer = await forwardMetered({ profile, apiKey, chat, model, ca: c.modelCa, signal: req.signal, ...(c.fetchImpl ? { fetchImpl: c.fetchImpl } : {}), compiled, decision: record, recorder: c.recorder, log: c.log, onEnd });
    // The 80 % warning, for the Pipe to show that user alone (a front-end notification).
    if (budget?.warning) answer.headers.set(NOTICE_HEADER, encodeURIComponent(budget.warning));
    return answer;
  }

  return [{ method: "POST", path: "/v1/chat/completions", handler: chat }];
}
