// Steps 3 and 4 of the pipeline, for a call policy permitted: the requests-per-minute limits
// (every governed call: model calls, pack tools and MCP tools alike) and the budgets (model
// calls). A refusal names the limit or budget that refused (refusals.ts), never the policy
// that had permitted the call.
import { REFUSAL_CODES } from "../../contract/errors.ts";
import type { BudgetState } from "../../contract/runtime-api.ts";
import type { BudgetLeases } from "../policy/budget-leases.ts";
import { type BudgetBook, exceededMessage } from "../policy/budgets.ts";
import type { Subject } from "../policy/policy-index.ts";
import type { RateLimiter } from "../policy/rate-limits.ts";
import { limitRefusal, type Refusal } from "./refusals.ts";

/** Who a rate limit counts a call against: the service user, or the installation. */
export function rateKey(s: Subject): string {
  return s.kind === "user" ? s.userId : s.kind === "installation" ? `installation:${s.installationId}` : `unlinked:${s.remoteUserId}`;
}

/** Takes a token from each bucket that applies, or refuses naming the rule whose bucket is empty. */
export function rateRefusal(limiter: RateLimiter, s: Subject, call: { tool?: string; model?: string | null }, now: number): Refusal | null {
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

type Usage = { prompt_tokens: number; completion_tokens: number } | null;

/** What a call consumed of a budget, in its unit. Pure. */
function consumed(b: BudgetState, usage: Usage, cost: number | undefined): number {
  if (!usage) return 0;
  return b.unit === "tokens" ? usage.prompt_tokens + usage.completion_tokens : (cost ?? 0);
}

/**
 * Budgets by reservation: the caller's budgets (as last polled) each need a lease with
 * something left before the call (../policy/budget-leases.ts); the call's usage is settled on
 * them after it. A control plane that cannot be asked falls back to the polled spend
 * (bookGate). The 80 % notice comes from the polled spend plus this replica's own.
 */
export function leaseGate(book: BudgetBook, leases: BudgetLeases): BudgetGate {
  const fallback = bookGate(book);
  return {
    async reserve(s, now) {
      const budgets = book.applicable(s);
      if (budgets.length === 0) return fallback.reserve(s, now);
      const got = await leases.acquire(budgets);
      if (got.ok === "unavailable") return fallback.reserve(s, now);
      if (got.ok === false) {
        const { refused: b, answer } = got;
        const message = exceededMessage(b, answer.spent, `at ${answer.resets_at}`);
        return { refusal: limitRefusal(REFUSAL_CODES.budgetExceeded, message, `budget "${b.name}" (${b.id})`), warning: null, settle: () => {} };
      }
      const warning = book.check(s, now).warning;
      const byId = new Map(budgets.map((b) => [b.id, b]));
      return {
        refusal: null,
        warning,
        settle(usage, cost) {
          book.add(s, usage, cost);
          leases.release(got.leases, (id) => consumed(byId.get(id)!, usage, cost));
        },
      };
    },
  };
}

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
