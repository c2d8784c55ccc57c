// The daemon's one pipeline (pipeline.ts), put together from its parts: claim links and budget
// leases through the runtime API client, the rate limits of SVC_PROXY_RATE_LIMITS, the budget
// book the limits poll fills. Shared by the local API's routes and the MCP gateway.
import type { Tracing } from "../../tracing/index.ts";
import type { Logger } from "../../log/index.ts";
import type { AuditRecorder } from "../audit/recorder.ts";
import type { ControlPlaneClient } from "../link/control-plane-client.ts";
import { BudgetLeases } from "../policy/budget-leases.ts";
import type { BudgetBook } from "../policy/budgets.ts";
import { RateLimiter, type RateRule } from "../policy/rate-limits.ts";
import type { ProxyStatus } from "../policy/status.ts";
import { ClaimLinks } from "./claim-links.ts";
import type { DecisionSummary } from "./decision-summary.ts";
import { leaseGate } from "./limits.ts";
import { type ModelCallEnd, Pipeline } from "./pipeline.ts";

export function daemonPipeline(o: {
  status: ProxyStatus;
  recorder: AuditRecorder;
  client: Pick<ControlPlaneClient, "createClaim" | "budgetLeases">;
  decisions: DecisionSummary;
  book: BudgetBook;
  rateRules: readonly RateRule[];
  log: Logger;
  /** A runtime call failed: a refused credential is noticed here too (BundleLoop.credentialCheck). */
  onRuntimeError: (e: unknown) => void;
  onModelCallEnd: (end: ModelCallEnd) => void;
  tracing: Tracing;
}): { pipeline: Pipeline; leases: BudgetLeases } {
  // Budgets by reservation: leases from the control plane before each model call (../policy/budget-leases.ts).
  const leases = new BudgetLeases({ lease: async (req) => o.client.budgetLeases(req), log: o.log, onError: o.onRuntimeError });
  const pipeline = new Pipeline({
    status: o.status,
    recorder: o.recorder,
    claims: new ClaimLinks({ createClaim: async (r) => o.client.createClaim(r), log: o.log, onError: o.onRuntimeError }),
    decisions: o.decisions,
    log: o.log,
    now: () => new Date(),
    budgets: leaseGate(o.book, leases),
    ...(o.rateRules.length > 0 ? { rateLimits: new RateLimiter(o.rateRules) } : {}),
    onModelCallEnd: o.onModelCallEnd,
    tracing: o.tracing,
  });
  return { pipeline, leases };
}
