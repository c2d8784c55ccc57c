// Tool calls: the decision (answered only once its audit record is durable) and the outcome
// of a permitted call.
import { REFUSAL_CODES } from "../../contract/errors.ts";
import { DecideRequest, type DecideResponse, OutcomeRequest } from "../../contract/local-api.ts";
import { decideTool } from "../policy/policy-index.ts";
import { firstProblem } from "../schema-check.ts";
import { readJsonBody, TOOL_BODY_LIMIT } from "./json-body.ts";
import { openAIError } from "./model-forward.ts";
import { badBody, type Route, type RouteContext, rateKey, unavailable } from "./routes.ts";

export function toolRoutes(c: RouteContext): Route[] {
  async function decide(req: Request): Promise<Response> {
    const compiled = c.status.compiled;
    if (!c.status.serving() || !compiled) return unavailable(c.status);
    const read = await readJsonBody(req, TOOL_BODY_LIMIT, { exact: true });
    if (!read.ok) return badBody(read);
    const body = read.value;
    const problem = firstProblem(DecideRequest, body);
    if (problem) return openAIError(422, `invalid decide request: ${problem}`, "invalid_request_error", "validation_failed");
    const r = body as DecideRequest;
    let decision = decideTool(compiled, r.user, r.tool, { args: r.args, now: c.now() });
    const rate = decision.decision === "permit" && c.rateLimits ? c.rateLimits.take({ user: rateKey(decision.subject), tool: r.tool }, c.now().getTime()) : null;
    if (rate && !rate.ok) decision = { ...decision, decision: "deny", code: REFUSAL_CODES.rateLimited, reason: REFUSAL_CODES.rateLimited, message: rate.message };
    const [record, claim] = await Promise.all([
      c.recorder.decision({ compiled, kind: "tool", action: `tool:${r.tool}`, toolName: r.tool, decision, args: r.args, payload: r.payload ?? null }),
      decision.code === REFUSAL_CODES.unlinked && r.user ? c.claims.forRefusal(r.user) : undefined,
    ]);
    c.decisions.note("tool", decision.decision, decision.code);
    const answer: DecideResponse =
      decision.decision === "permit"
        ? { decision: "permit", record_id: record.id }
        : { decision: "deny", record_id: record.id, code: decision.code!, message: decision.message!, ...(claim ? { claim_url: claim } : {}) };
    return Response.json(answer);
  }

  async function outcome(req: Request): Promise<Response> {
    const compiled = c.status.compiled;
    if (!c.status.serving() || !compiled) return unavailable(c.status);
    const read = await readJsonBody(req, TOOL_BODY_LIMIT);
    if (!read.ok) return badBody(read);
    const body = read.value;
    const problem = firstProblem(OutcomeRequest, body);
    if (problem) return openAIError(422, `invalid outcome: ${problem}`, "invalid_request_error", "validation_failed");
    const r = body as OutcomeRequest;
    const record = await c.recorder.outcome({ compiled, ref: r.record_id, outcome: r.outcome, exitCode: r.exit_code ?? null });
    if (!record) return openAIError(404, `no permitted decision ${r.record_id} is known to this proxy`, "invalid_request_error", "not_found");
    c.decisions.note("outcome", r.outcome, null);
    return Response.json({ record_id: record.id });
  }

  return [
    { method: "POST", path: "/v1/tools/decide", handler: decide },
    { method: "POST", path: "/v1/tools/outcome", handler: outcome },
  ];
}
