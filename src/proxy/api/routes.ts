// What every local-API route module shares: the route shape, the dependencies the daemon hands
// in, and the answers more than one route gives. A new feature (MCP gateway, budgets) adds a
// module exporting `xRoutes(ctx): Route[]` and one line in local-api.ts.
import type { FrontendUser } from "../../contract/local-api.ts";
import type { Logger } from "../../log/index.ts";
import type { AuditRecorder } from "../audit/recorder.ts";
import type { CredentialSync } from "../link/credential-sync.ts";
import type { BudgetBook } from "../policy/budgets.ts";
import type { Subject } from "../policy/policy-index.ts";
import type { RateLimiter } from "../policy/rate-limits.ts";
import type { ProxyStatus } from "../policy/status.ts";
import type { ClaimLinks } from "./claim-links.ts";
import type { DecisionSummary } from "./decision-summary.ts";
import type { BodyResult } from "./json-body.ts";
import type { ModelCallEnd } from "./metered-call.ts";
import { openAIError } from "./model-forward.ts";

/** A route gets the request and the front-end user of its x-svc-user-* headers, read once. */
export type RouteHandler = (req: Request, user: FrontendUser | null) => Promise<Response>;

export type Route = {
  method: "GET" | "POST" | "PUT" | "DELETE";
  path: string;
  handler: RouteHandler;
  /** Answered without the runtime token (only /readyz). */
  public?: boolean;
  /** The supervisor's alone: the front end's credential of the boot (SVC_FRONTEND_TOKEN) gets 403. */
  runtimeTokenOnly?: boolean;
};

/** What the route modules use; built once by createLocalApi from LocalApiDeps. */
export type RouteContext = {
  status: ProxyStatus;
  recorder: AuditRecorder;
  claims: ClaimLinks;
  credentials: Pick<CredentialSync, "unseal">;
  modelCa: string[] | null;
  spoolDepth: () => number;
  decisions: DecisionSummary;
  log: Logger;
  fetchImpl?: typeof fetch;
  /** A permitted model call's answer ended and its outcome record (usage, cost) is written. */
  onModelCallEnd?: (end: ModelCallEnd) => void;
  /** Budgets to enforce on model calls (issue 16); absent: none. */
  budgets?: BudgetBook;
  /** Requests-per-minute limits on model and tool calls (issue 16); absent: none. */
  rateLimits?: RateLimiter;
  /** The clock policy conditions see as `now`. */
  now: () => Date;
};

/** No usable bundle (starting, refused credential, unavailable): 503, the reason named. */
export function unavailable(status: ProxyStatus): Response {
  return openAIError(503, `governance unavailable: ${status.readiness().reason ?? status.state}`, "unavailable", "governance_unavailable");
}

/** A body the client got wrong (malformed JSON, too large, too deep): 400/413 in OpenAI format. */
export function badBody(r: Extract<BodyResult, { ok: false }>): Response {
  return openAIError(r.status, r.message, "invalid_request_error", r.code);
}

/** Who a rate limit counts a call against: the service user, or the installation. */
export function rateKey(s: Subject): string {
  return s.kind === "user" ? s.userId : s.kind === "installation" ? `installation:${s.installationId}` : `unlinked:${s.remoteUserId}`;
}
