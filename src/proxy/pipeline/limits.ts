// Steps 3 and 4 of the pipeline, for a call policy permitted: the requests-per-minute limits
// (every governed call: model calls, pack tools and MCP tools alike) and the budgets (model
// calls). A refusal names the limit or budget that refused (refusals.ts), never the policy
// that had permitted the call.
import { REFUSAL_CODES } from "../../contract/errors.ts";
import type { BudgetBook } from "../policy/budgets.ts";
import type { Subject } from "../policy/policy-index.ts";
import type { RateLimiter } from "../policy/rate-limits.ts";
import { limitRefusal, type Refusal } from "./refusals.ts";

/** Who a rate limit counts a call against: the service user, or the installation. */
export function rateKey(s: Subject): string {
  return s.kind === "user" ? s.userId : s.kind === "installation" ? `installation:${s.installationId}` : `unlinked:${s.remoteUserId}`;
}

/** Takes a token from each bucket that applies, or refuses naming the rule whose bucket is empty. */
export function rateRefusal(limiter: RateLimiter | undefined, s: Subject, call: { tool?: string; model?: string | null }, now: number): Refusal | null {
  if (!limiter) return null;
  const v = limiter.take({ user: rateKey(s), ...call }, now);
  return v.ok ? null : limitRefusal(REFUSAL_CODES.rateLimited, v.message, `rate limit ${v.limit}`, v.retryAfterSeconds);
}

/** What a model call holds of its caller's budgets between its decision and its end. */
export type Reservation = {
  refusal: Refusal | null;
  /** The 80 % notice for the caller alone, once per budget and period. */
  warning: string | null;
  /** The call ended having used this much (null: no usage reported): counted on every budget that applies. */
  settle(usage: { prompt_tokens: number; completion_tokens: number } | null, cost: number | undefined): void;
};

/** The budgets step: reserve before the call, settle after it. */
export type BudgetGate = { reserve(s: Subject, now: number): Promise<Reservation> };

/** Budgets as the last polled spend plus this replica's own (BudgetBook), with nothing reserved ahead. */
export function bookGate(book: BudgetBook): BudgetGate {
  return {
    async reserve(s, now) {
      const v = book.check(s, now);
      const refusal = v.refusal && v.exceeded ? limitRefusal(REFUSAL_CODES.budgetExceeded, v.refusal, `budget "${v.exceeded.name}" (${v.exceeded.id})`) : null;
      return { refusal, warning: v.warning, settle: (usage, cost) => book.add(s, usage, cost) };
    },
  };
}
