// The one table of refusals a governed call can get, whatever its entry point (chat route,
// pack tool routes, MCP gateway): the code, how a model call's HTTP answer carries it, and how
// the audit record's `reason` names it. The texts the model or user reads are spec §7's,
// character by character (`tool_not_registered`, `Refused (svc.denied): …`,
// `Refused (identity.unlinked)`); svc's own codes follow the same `Refused (<code>): …` form.
// A refusal by a rate limit or a budget names that limit or budget in the record's reason
// (`svc.rate_limited: tool:crm.read=10/min`), never the policy that had permitted the call.
import { REFUSAL_CODES, type RefusalCode } from "../../contract/errors.ts";

/** A permitted caller who named a model the profile does not offer (404, not a "refusal" type). */
export const MODEL_NOT_FOUND = "model_not_found";
export type PipelineRefusalCode = RefusalCode | typeof MODEL_NOT_FOUND;

type Row = { status: 403 | 404 | 429; type: "refusal" | "invalid_request_error" };

/** How each refusal answers a model call (HTTP status, OpenAI error type); tool calls answer 200 with `decision: "deny"`. */
export const REFUSALS: Readonly<Record<PipelineRefusalCode, Row>> = {
  [REFUSAL_CODES.toolNotRegistered]: { status: 403, type: "refusal" },
  [REFUSAL_CODES.denied]: { status: 403, type: "refusal" },
  [REFUSAL_CODES.unlinked]: { status: 403, type: "refusal" },
  [REFUSAL_CODES.disabled]: { status: 403, type: "refusal" },
  [REFUSAL_CODES.rateLimited]: { status: 429, type: "refusal" },
  [REFUSAL_CODES.budgetExceeded]: { status: 403, type: "refusal" },
  // Given by the MCP gateway after a permit (gateway-oauth.ts), never by the pipeline's decision.
  [REFUSAL_CODES.consentRequired]: { status: 403, type: "refusal" },
  [MODEL_NOT_FOUND]: { status: 404, type: "invalid_request_error" },
};

/** A refused call: what the caller reads and what its audit record says. */
export type Refusal = {
  code: PipelineRefusalCode;
  /** The text the model or user reads. */
  message: string;
  /** The audit record's reason: the code, then `: ` and the limit or budget that refused, when one did. */
  reason: string;
  /** The policy that refused (a deny, or a condition that failed); null for every other refusal. */
  policyId: string | null;
  /** A rate limit's wait (the chat route's Retry-After). */
  retryAfterSeconds?: number;
};

/**
 * A disabled user's refusal, in spec §7's form: they learn that their service user is
 * disabled (not that they are unlinked: a claim link would not help them).
 */
export const DISABLED_TEXT = `Refused (${REFUSAL_CODES.disabled}): the service user this chat account is linked to is disabled; ask an administrator of svc to enable it`;

export const disabledRefusal: Refusal = { code: REFUSAL_CODES.disabled, message: DISABLED_TEXT, reason: REFUSAL_CODES.disabled, policyId: null };

const REASON_LIMIT = 200;

/** A limit's refusal, naming the limit in the reason (cut to the record's bound). */
export function limitRefusal(code: RefusalCode, message: string, limit: string, retryAfterSeconds?: number): Refusal {
  return { code, message, reason: `${code}: ${limit}`.slice(0, REASON_LIMIT), policyId: null, ...(retryAfterSeconds !== undefined ? { retryAfterSeconds } : {}) };
}
