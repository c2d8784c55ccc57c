// The governed-call pipeline: every model call, pack tool call and MCP tool call goes through
// the same steps, in this order (docs/proxy.md "The governed call"):
//   1 identity   the front-end user resolved through the bundle's identity map (a user of a
//                disabled service user is refused here, recorded under that user)
//   2 decision   policies, their conditions, shadow policies (decision.ts); for a model call,
//                the model the profile offers
//   3 rate limits                       (limits.ts)
//   4 budget reservation, model calls   (limits.ts)
//   5 claim link, for an unlinked user's refusal (fetched while the record is written)
//   6 the decision record, durable in the spool before anything is answered or run
//   7 the call itself: the adapter's (model forward, the pack tool in Open WebUI, MCP upstream)
//   8 the outcome record, and the usage settled on the budgets
// The entry points (../api/chat-route.ts, ../api/tool-routes.ts, ../mcp/gateway.ts) are thin
// adapters: they read their request, call `admit`, answer a refusal in their own form
// (refusals.ts holds the one table), run the call on a permit and report its end.
import { type Context, ROOT_CONTEXT } from "@opentelemetry/api";
import type { AuditRecord, AuditSubject, UpstreamIdentity } from "../../contract/audit.ts";
import { REFUSAL_CODES } from "../../contract/errors.ts";
import type { FrontendUser } from "../../contract/local-api.ts";
import type { Logger } from "../../log/index.ts";
import type { AuditRecorder, Verdict } from "../audit/recorder.ts";
import type { ClaimLinks } from "./claim-links.ts";
import type { DecisionSummary } from "./decision-summary.ts";
import { auditSubject, type CompiledBundle, type Decision, type Subject } from "../policy/policy-index.ts";
import type { RateLimiter } from "../policy/rate-limits.ts";
import type { ProxyStatus } from "../policy/status.ts";
import { actionOf, disabledCaller, modelRefusal, policyDecision } from "./decision.ts";
import { type BudgetGate, rateRefusal, type Reservation } from "./limits.ts";
import { disabledRefusal, type Refusal } from "./refusals.ts";
import { NO_TRACING, type Tracing, traces } from "../../tracing/index.ts";

export type ToolCall = {
  kind: "tool";
  tool: string;
  args: unknown;
  payload?: string | null;
  /** The MCP server of an MCP tool (recorded as `tool_server`). */
  server?: string;
  user: FrontendUser | null;
  /** How long an unlinked user's refusal waits for a claim link (ClaimLinks' default when absent). */
  claimWaitMs?: number;
};
export type ModelCall = { kind: "model"; model: string | null; task: string | null; user: FrontendUser | null };
export type GovernedCall = ToolCall | ModelCall;

export type Permit = { permit: true; compiled: CompiledBundle; record: AuditRecord; warning: string | null; reservation: Reservation | null };
export type Refused = { permit: false; record: AuditRecord; refusal: Refusal; claim?: string };
export type Admission = Permit | Refused;

/** How a permitted model call ended (step 8). */
export type ModelCallEnd = { record: AuditRecord; usage: { prompt_tokens: number; completion_tokens: number } | null; cost: number | undefined; ok: boolean; durationMs: number };

export type PipelineDeps = {
  status: ProxyStatus;
  recorder: AuditRecorder;
  claims: Pick<ClaimLinks, "forRefusal">;
  decisions: DecisionSummary;
  log: Logger;
  now: () => Date;
  rateLimits?: RateLimiter;
  budgets?: BudgetGate;
  /** A permitted model call's outcome record (usage, cost) is written (metrics). */
  onModelCallEnd?: (end: ModelCallEnd) => void;
  /** Spans for the decision and the record's durable write (../tracing.ts); off when absent. */
  tracing?: Tracing;
};

function refusalOf(d: Decision): Refusal {
  return { code: d.code!, message: d.message!, reason: d.reason, policyId: d.policyId };
}

/** Steps 1–4 decided: what the record says, the refusal if any, the budgets reserved, and for a permit who (and when it was decided). */
type Decided = { verdict: Verdict; refusal: Refusal | null; reservation: Reservation | null; permittedFor: Subject | null; at: number };

/** A disabled user's refusal, recorded under their service user; no policy is asked. */
function refusedAsDisabled(subject: AuditSubject): Decided {
  return { verdict: { decision: "deny", reason: disabledRefusal.reason, policyId: null, subject }, refusal: disabledRefusal, reservation: null, permittedFor: null, at: 0 };
}

export class Pipeline {
  constructor(private readonly d: PipelineDeps) {}

  /** The bundle to decide on, or null when no decision can be made (starting, unavailable). */
  bundle(): CompiledBundle | null {
    return this.d.status.serving() ? this.d.status.compiled : null;
  }

  /**
   * Steps 1–6: decides the call, reserves what it may spend, writes its decision record
   * (durably) and, for an unlinked user, fetches a claim link meanwhile. Throws when the record
   * cannot be written (SpoolFullError, UnrecordableCall): the call is then refused by its
   * adapter and never runs.
   */
  async admit(compiled: CompiledBundle, call: GovernedCall, trace: Context = ROOT_CONTEXT): Promise<Admission> {
    const tracing = this.d.tracing ?? NO_TRACING;
    const traced = traces(tracing, trace);
    // The decision's span: steps 1–4, its policy and effect (never the arguments).
    const deciding = traced ? tracing.start("svc.decision", trace, { attributes: { "svc.call.kind": call.kind, "svc.action": actionOf(call) } }) : null;
    let decided: Decided;
    try {
      const disabled = disabledCaller(compiled, call.user);
      decided = disabled ? refusedAsDisabled(disabled) : this.decide(compiled, call);
      // Step 4, model calls only (a tool decision never waits here): a reservation on the caller's budgets.
      if (decided.permittedFor && call.kind === "model" && this.d.budgets) await this.reserve(decided, decided.permittedFor, decided.at);
      const { verdict: v, refusal: r } = decided;
      deciding?.span.setAttributes({ "svc.decision": v.decision, ...(v.policyId ? { "svc.policy.id": v.policyId } : {}), ...(r ? { "svc.refusal.code": r.code } : {}) });
    } finally {
      deciding?.span.end();
    }
    const { verdict, refusal, reservation } = decided;
    // Step 6's span: the decision record written and fsynced in the spool.
    const recording = traced
      ? tracing.span("svc.audit.spool_write", trace, {}, async (span) => {
          const record = await this.record(compiled, call, verdict);
          span.setAttribute("svc.record.id", record.id);
          return record;
        })
      : this.record(compiled, call, verdict);
    const claiming = refusal?.code === REFUSAL_CODES.unlinked && call.user ? this.d.claims.forRefusal(call.user, call.kind === "tool" ? call.claimWaitMs : undefined) : undefined;
    let record: AuditRecord;
    let claim: string | undefined;
    try {
      if (claiming) [record, claim] = await Promise.all([recording, claiming]);
      else record = await recording;
    } catch (e) {
      reservation?.settle(null, undefined); // nothing runs: what was reserved goes back
      throw e;
    }
    this.d.decisions.note(call.kind, refusal ? "deny" : "permit", refusal?.code ?? null);
    if (refusal) return { permit: false, record, refusal, ...(claim ? { claim } : {}) };
    return { permit: true, compiled, record, warning: reservation?.warning ?? null, reservation };
  }

  /** Step 6: the decision record, durable in the spool when this resolves. */
  private async record(compiled: CompiledBundle, call: GovernedCall, verdict: Verdict): Promise<AuditRecord> {
    return call.kind === "tool"
      ? this.d.recorder.decision({
          compiled,
          kind: "tool",
          action: actionOf(call),
          toolName: call.tool,
          decision: verdict,
          args: call.args,
          payload: call.payload ?? null,
          ...(call.server ? { toolServer: call.server } : {}),
        })
      : this.d.recorder.decision({ compiled, kind: "model", action: actionOf(call), toolName: null, model: call.model, task: call.task, decision: verdict, args: { model: call.model } });
  }

  /** Steps 2–3 for a caller who is not disabled: policy, then the rate limits of a permitted call. */
  private decide(compiled: CompiledBundle, call: GovernedCall): Decided {
    const now = this.d.now();
    const decision = policyDecision(compiled, call.user, call, now);
    let refusal = decision.decision === "deny" ? refusalOf(decision) : null;
    if (!refusal && call.kind === "model") refusal = modelRefusal(compiled, call.model);
    if (!refusal && this.d.rateLimits) refusal = rateRefusal(this.d.rateLimits, decision.subject, call.kind === "tool" ? { tool: call.tool } : { model: call.model }, now.getTime());
    const verdict: Verdict = refusal
      ? { decision: "deny", reason: refusal.reason, policyId: refusal.policyId, subject: auditSubject(decision.subject) }
      : { decision: "permit", reason: decision.reason, policyId: decision.policyId, subject: auditSubject(decision.subject) };
    if (decision.shadow) verdict.shadow = decision.shadow;
    return { verdict, refusal, reservation: null, permittedFor: refusal ? null : decision.subject, at: now.getTime() };
  }

  /** Step 4: the budgets reserved for a permitted model call; a refusal turns the verdict into a deny naming the budget. */
  private async reserve(d: Decided, subject: Subject, at: number): Promise<void> {
    const r = await this.d.budgets!.reserve(subject, at);
    d.reservation = r;
    if (!r.refusal) return;
    d.refusal = r.refusal;
    d.verdict = { ...d.verdict, decision: "deny", reason: r.refusal.reason, policyId: r.refusal.policyId };
  }

  /** Step 8 of a tool call: its outcome record; null when the decision is unknown here (not permitted, or forgotten). */
  async toolOutcome(compiled: CompiledBundle, ref: string, outcome: "ok" | "error", exitCode: number | null, upstreamIdentity: UpstreamIdentity | null = null): Promise<AuditRecord | null> {
    const record = await this.d.recorder.outcome({ compiled, ref, outcome, exitCode, upstreamIdentity });
    if (record) this.d.decisions.note("outcome", outcome, null);
    return record;
  }

  /**
   * Step 8 of a model call, once its answer has ended: the usage settled on the budgets, then
   * the outcome record. Never throws and never delays the answer: a failure to write is logged.
   */
  modelOutcome(p: Permit, end: Omit<ModelCallEnd, "record">): void {
    p.reservation?.settle(end.usage, end.cost);
    this.d.recorder
      .modelOutcome({ compiled: p.compiled, decision: p.record, outcome: end.ok ? "ok" : "error", usage: end.usage, cost: end.cost, durationMs: end.durationMs })
      .then((record) => this.d.onModelCallEnd?.({ ...end, record }))
      .catch((e) => this.d.log.error("model outcome not recorded", { ref: p.record.id, error: (e as Error).message }));
  }
}
