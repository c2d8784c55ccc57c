// The local API on the unix socket (ARCHITECTURE.md "Proxy daemon, local API"). Every route
// but /readyz needs the runtime token as a bearer (compared in constant time). Errors are in
// OpenAI format {error:{message,type,code}} on every route, since the Pipe relays them.
// Bodies are read within a per-route limit (json-body.ts): a client's mistake is a 4xx with a
// stable code, never a 500.
// A decision is answered only after its audit record is durable in the spool.
import { bearer, safeEqual } from "../../contract/bearer.ts";
import { REFUSAL_CODES } from "../../contract/errors.ts";
import { DecideRequest, type DecideResponse, type FrontendUser, OutcomeRequest, USER_HEADERS } from "../../contract/local-api.ts";
import type { Logger } from "../../log/index.ts";
import type { ControlPlaneClient } from "../link/control-plane-client.ts";
import type { CredentialSync } from "../link/credential-sync.ts";
import { type BodyResult, CHAT_BODY_LIMIT, readJsonBody, TOOL_BODY_LIMIT } from "./json-body.ts";
import { forwardChat, openAIError } from "./model-forward.ts";
import { type Decision, decideModel, decideTool, MODEL_ACTION, refusalMessage, visibleModels } from "../policy/policy-index.ts";
import type { AuditRecorder } from "../audit/recorder.ts";
import { firstProblem } from "../schema-check.ts";
import type { ProxyStatus } from "../policy/status.ts";

/** The one route that needs no token. */
export const READYZ_PATH = "/readyz";

export type LocalApiDeps = {
  token: string;
  status: ProxyStatus;
  recorder: AuditRecorder;
  claims: Pick<ControlPlaneClient, "createClaim">;
  credentials: Pick<CredentialSync, "unseal">;
  /** CA certificates for the model endpoint (system roots + SVC_PROXY_CA_FILE), or null for the defaults. */
  modelCa: string[] | null;
  spoolDepth: () => number;
  log: Logger;
  fetchImpl?: typeof fetch;
  /** A claims call failed: a refused credential is noticed here too (BundleLoop.credentialCheck). */
  onRuntimeError?: (e: unknown) => void;
  /** The clock policy conditions see as `now` (tests set it). */
  now?: () => Date;
};

/** The Authorization header carries the runtime token (constant-time compare). */
export function bearerMatches(header: string | null, token: string): boolean {
  const given = bearer(header);
  return given !== null && safeEqual(given, token);
}

/** A request header the caller got wrong: 400, never a fallback to "no session user". */
export class BadUserHeader extends Error {}

// The same bounds as the user object of /v1/tools/decide (contract/local-api.ts FrontendUser).
const USER_HEADER_LIMITS = { id: 200, email: 320, name: 200 } as const;

/**
 * The front-end user named by the x-svc-user-* headers; null when the call has no session
 * user. An over-long value throws BadUserHeader: it must not be cut (another user's id) or
 * dropped (the installation subject would decide instead).
 */
export function userFromHeaders(h: Headers): FrontendUser | null {
  const id = h.get(USER_HEADERS.id)?.trim();
  if (!id) return null;
  const email = headerText(h.get(USER_HEADERS.email));
  const name = headerText(h.get(USER_HEADERS.name));
  for (const [field, value] of [["id", id], ["email", email], ["name", name]] as const) {
    const limit = USER_HEADER_LIMITS[field];
    if (value && value.length > limit) throw new BadUserHeader(`${USER_HEADERS[field]} is longer than ${limit} characters`);
  }
  return { id, ...(email ? { email } : {}), ...(name ? { name } : {}) };
}

/** Header values are percent-encoded by the Pipe when not plain ASCII (names with accents). */
function headerText(v: string | null): string | undefined {
  const t = v?.trim();
  if (!t) return undefined;
  try {
    return decodeURIComponent(t);
  } catch {
    return t;
  }
}

/** A body the client got wrong (malformed JSON, too large, too deep): 400/413 in OpenAI format. */
function badBody(r: Extract<BodyResult, { ok: false }>): Response {
  return openAIError(r.status, r.message, "invalid_request_error", r.code);
}

export function createLocalApi(d: LocalApiDeps): (req: Request) => Promise<Response> {
  const clock = d.now ?? (() => new Date());
  const unavailable = () => openAIError(503, `governance unavailable: ${d.status.readiness().reason ?? d.status.state}`, "unavailable", "governance_unavailable");

  async function claimUrl(user: FrontendUser): Promise<string | undefined> {
    try {
      const c = await d.claims.createClaim({ remote_user_id: user.id, ...(user.email ? { email: user.email } : {}), ...(user.name ? { name: user.name } : {}) });
      return c.url;
    } catch (e) {
      d.log.warn("claim link not created", { remote_user_id: user.id, error: (e as Error).message });
      d.onRuntimeError?.(e);
      return undefined;
    }
  }

  async function readyz(): Promise<Response> {
    const r = d.status.readiness();
    return Response.json(r, { status: r.ready ? 200 : 503 });
  }

  async function models(_req: Request, user: FrontendUser | null): Promise<Response> {
    const compiled = d.status.serving() ? d.status.compiled : null;
    const visible = compiled ? visibleModels(compiled, user, clock()) : null;
    const created = compiled ? Math.floor(Date.parse(compiled.bundle.generated_at) / 1000) || 0 : 0;
    return Response.json({
      object: "list",
      data: (visible?.models ?? []).map((id) => ({ id, object: "model", created, owned_by: "svc", name: id, profile: visible!.profile.display_name })),
    });
  }

  async function chat(req: Request, user: FrontendUser | null): Promise<Response> {
    const compiled = d.status.compiled;
    if (!d.status.serving() || !compiled) return unavailable();
    const read = await readJsonBody(req, CHAT_BODY_LIMIT);
    if (!read.ok) return badBody(read);
    const body = read.value;
    if (!body || typeof body !== "object" || Array.isArray(body) || !Array.isArray((body as { messages?: unknown }).messages)) {
      return openAIError(400, "the body must be a chat-completions request: a JSON object with a messages array", "invalid_request_error", "invalid_body");
    }
    const chatBody = body as Record<string, unknown>;
    const profile = compiled.bundle.model_profile;
    const model = typeof chatBody.model === "string" && chatBody.model ? chatBody.model : (profile?.default_model ?? null);
    // Policy first: a caller who may not call models learns nothing about the profile's models
    // (as /v1/models shows them none), and an unlinked user still gets the claim link.
    const decision = decideModel(compiled, user, clock());
    if (decision.decision === "permit" && profile && model !== null) {
      const offered = profile.models.length > 0 ? profile.models : [profile.default_model];
      if (!offered.includes(model)) {
        // A refusal like any other: audited as a deny before answering.
        const refusal: Decision = { ...decision, decision: "deny", code: null, reason: "model_not_found", policyId: null, message: null };
        const record = await d.recorder.decision({ compiled, kind: "model", action: MODEL_ACTION, toolName: null, model, decision: refusal, args: { model } });
        d.log.info("decision", { kind: "model", action: MODEL_ACTION, decision: "deny", code: "model_not_found", record_id: record.id, user_id: record.subject.user_id, via_installation: record.subject.via_installation, policy_revision: compiled.revision });
        return openAIError(404, `model "${model}" is not offered by the model profile "${profile.display_name}" (offered: ${offered.join(", ")})`, "invalid_request_error", "model_not_found", { record_id: record.id });
      }
    }
    const [record, claim] = await Promise.all([
      d.recorder.decision({ compiled, kind: "model", action: MODEL_ACTION, toolName: null, model, decision, args: { model } }),
      decision.code === REFUSAL_CODES.unlinked && user ? claimUrl(user) : Promise.resolve(undefined),
    ]);
    d.log.info("decision", { kind: "model", action: MODEL_ACTION, decision: decision.decision, code: decision.code, record_id: record.id, user_id: record.subject.user_id, via_installation: record.subject.via_installation, policy_revision: compiled.revision });
    if (decision.decision !== "permit" || !profile) {
      return openAIError(403, decision.message ?? refusalMessage(REFUSAL_CODES.denied), "refusal", decision.code ?? REFUSAL_CODES.denied, { record_id: record.id, ...(claim ? { claim_url: claim } : {}) });
    }
    let apiKey: string | null = null;
    if (profile.auth_type === "api_key") {
      if (!profile.api_key_sealed) return openAIError(502, `model profile "${profile.display_name}" needs an API key but none is sealed to this runtime`, "upstream_error", "api_key_missing");
      try {
        apiKey = await d.credentials.unseal(profile.api_key_sealed);
      } catch {
        return openAIError(502, `the API key of model profile "${profile.display_name}" is not sealed to this runtime's credential-sync key; re-seal it (PUT /model-profiles/{id}/api-key)`, "upstream_error", "api_key_unsealable");
      }
    }
    return forwardChat({ profile, apiKey, body: { ...chatBody, model }, ca: d.modelCa, signal: req.signal, ...(d.fetchImpl ? { fetchImpl: d.fetchImpl } : {}) });
  }

  async function decide(req: Request): Promise<Response> {
    const compiled = d.status.compiled;
    if (!d.status.serving() || !compiled) return unavailable();
    const read = await readJsonBody(req, TOOL_BODY_LIMIT);
    if (!read.ok) return badBody(read);
    const body = read.value;
    const problem = firstProblem(DecideRequest, body);
    if (problem) return openAIError(422, `invalid decide request: ${problem}`, "invalid_request_error", "validation_failed");
    const r = body as DecideRequest;
    const decision = decideTool(compiled, r.user, r.tool, { args: r.args, now: clock() });
    const [record, claim] = await Promise.all([
      d.recorder.decision({ compiled, kind: "tool", action: `tool:${r.tool}`, toolName: r.tool, decision, args: r.args, payload: r.payload ?? null }),
      decision.code === REFUSAL_CODES.unlinked && r.user ? claimUrl(r.user) : Promise.resolve(undefined),
    ]);
    d.log.info("decision", { kind: "tool", action: `tool:${r.tool}`, decision: decision.decision, code: decision.code, record_id: record.id, user_id: record.subject.user_id, via_installation: record.subject.via_installation, policy_revision: compiled.revision });
    const answer: DecideResponse =
      decision.decision === "permit"
        ? { decision: "permit", record_id: record.id }
        : { decision: "deny", record_id: record.id, code: decision.code!, message: decision.message!, ...(claim ? { claim_url: claim } : {}) };
    return Response.json(answer);
  }

  async function outcome(req: Request): Promise<Response> {
    const compiled = d.status.compiled;
    if (!d.status.serving() || !compiled) return unavailable();
    const read = await readJsonBody(req, TOOL_BODY_LIMIT);
    if (!read.ok) return badBody(read);
    const body = read.value;
    const problem = firstProblem(OutcomeRequest, body);
    if (problem) return openAIError(422, `invalid outcome: ${problem}`, "invalid_request_error", "validation_failed");
    const r = body as OutcomeRequest;
    const record = await d.recorder.outcome({ compiled, ref: r.record_id, outcome: r.outcome, exitCode: r.exit_code ?? null });
    if (!record) return openAIError(404, `no permitted decision ${r.record_id} is known to this proxy`, "invalid_request_error", "not_found");
    d.log.info("outcome", { record_id: record.id, ref: r.record_id, outcome: r.outcome, exit_code: r.exit_code ?? null });
    return Response.json({ record_id: record.id });
  }

  /** A route gets the request and the front-end user of its x-svc-user-* headers, read once. */
  type Handler = (req: Request, user: FrontendUser | null) => Promise<Response>;
  // path → method → handler. A known path asked with another method is 405 with Allow.
  const routes = new Map<string, Map<string, Handler>>([
    [READYZ_PATH, new Map([["GET", readyz]])],
    ["/v1/models", new Map([["GET", models]])],
    ["/v1/chat/completions", new Map([["POST", chat]])],
    ["/v1/tools/decide", new Map([["POST", decide]])],
    ["/v1/tools/outcome", new Map([["POST", outcome]])],
    ["/v1/policy", new Map([["GET", async () => Response.json(d.status.report(d.spoolDepth()))]])],
  ]);

  return async (req) => {
    const path = new URL(req.url).pathname;
    if (path !== READYZ_PATH && !bearerMatches(req.headers.get("authorization"), d.token)) {
      return openAIError(401, "the runtime token is required: Authorization: Bearer <SVC_RUNTIME_TOKEN>", "authentication_error", "unauthorized");
    }
    const methods = routes.get(path);
    if (!methods) return openAIError(404, `no route ${req.method} ${path}`, "invalid_request_error", "not_found");
    // HEAD is answered like GET (health checkers use it); Bun sends no body for HEAD.
    const route = methods.get(req.method) ?? (req.method === "HEAD" ? methods.get("GET") : undefined);
    if (!route) {
      const allow = [...methods.keys()].flatMap((m) => (m === "GET" ? ["GET", "HEAD"] : [m])).join(", ");
      const r = openAIError(405, `${req.method} is not allowed on ${path}; allowed: ${allow}`, "invalid_request_error", "method_not_allowed");
      r.headers.set("allow", allow);
      return r;
    }
    let user: FrontendUser | null;
    try {
      user = userFromHeaders(req.headers);
    } catch (e) {
      if (e instanceof BadUserHeader) return openAIError(400, e.message, "invalid_request_error", "invalid_user");
      throw e;
    }
    try {
      return await route(req, user);
    } catch (e) {
      d.log.error("local api request failed", { path, error: (e as Error).message });
      // The audit record could not be written (or another fault): fail closed.
      return openAIError(500, "the proxy could not decide this call; it was not run", "internal_error", "internal");
    }
  };
}
