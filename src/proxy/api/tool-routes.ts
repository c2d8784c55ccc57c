// Pack tool calls, an adapter over the governed-call pipeline (../pipeline/pipeline.ts): the
// decision (answered only once its audit record is durable) and, after the governor ran the
// tool in Open WebUI (the pipeline's step 7), its outcome. With tracing on (../tracing.ts) a
// decision is a span under the request's `traceparent`, holding the pipeline's spans.
import { SpanKind } from "@opentelemetry/api";
import { DecideRequest, type DecideResponse, OutcomeRequest } from "../../contract/local-api.ts";
import { firstProblem } from "../schema-check.ts";
import { traces } from "../../tracing/index.ts";
import { readJsonBody, TOOL_BODY_LIMIT } from "./json-body.ts";
import { openAIError } from "./model-forward.ts";
import { badBody, type Route, type RouteContext, unavailable } from "./routes.ts";

export function toolRoutes(c: RouteContext): Route[] {
  async function decide(req: Request): Promise<Response> {
    const compiled = c.pipeline.bundle();
    if (!compiled) return unavailable(c.status);
    const read = await readJsonBody(req, TOOL_BODY_LIMIT, { exact: true });
    if (!read.ok) return badBody(read);
    const problem = firstProblem(DecideRequest, read.value);
    if (problem) return openAIError(422, `invalid decide request: ${problem}`, "invalid_request_error", "validation_failed");
    const r = read.value as DecideRequest;
    const call = { kind: "tool", tool: r.tool, args: r.args, payload: r.payload ?? null, user: r.user } as const;
    const parent = c.tracing.incoming(req.headers);
    // The tool's name is the span's; its arguments never are.
    const a = !traces(c.tracing, parent)
      ? await c.pipeline.admit(compiled, call)
      : await c.tracing.span("svc.tool_decision", parent, { kind: SpanKind.SERVER, attributes: { "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": r.tool } }, async (span, ctx) => {
          const admitted = await c.pipeline.admit(compiled, call, ctx);
          span.setAttributes({ "svc.record.id": admitted.record.id, "svc.decision": admitted.record.decision });
          return admitted;
        });
    const answer: DecideResponse = a.permit
      ? { decision: "permit", record_id: a.record.id }
      : { decision: "deny", record_id: a.record.id, code: a.refusal.code, message: a.refusal.message, ...(a.claim ? { claim_url: a.claim } : {}) };
    return Response.json(answer);
  }

  async function outcome(req: Request): Promise<Response> {
    const compiled = c.pipeline.bundle();
    if (!compiled) return unavailable(c.status);
    const read = await readJsonBody(req, TOOL_BODY_LIMIT);
    if (!read.ok) return badBody(read);
    const problem = firstProblem(OutcomeRequest, read.value);
    if (problem) return openAIError(422, `invalid outcome: ${problem}`, "invalid_request_error", "validation_failed");
    const r = read.value as OutcomeRequest;
    const record = await c.pipeline.toolOutcome(compiled, r.record_id, r.outcome, r.exit_code ?? null);
    if (!record) return openAIError(404, `no permitted decision ${r.record_id} is known to this proxy`, "invalid_request_error", "not_found");
    return Response.json({ record_id: record.id });
  }

  return [
    { method: "POST", path: "/v1/tools/decide", handler: decide },
    { method: "POST", path: "/v1/tools/outcome", handler: outcome },
  ];
}
