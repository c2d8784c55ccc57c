// Budgets as the proxy enforces them (issue 16; docs/proxy.md "Budgets"). The control plane
// sends each budget that concerns this runtime with what was spent in the current period
// across every installation (GET /runtime/limits, polled); this replica adds what it spent
// itself since that poll was sent, so its own calls count at once. A model call is refused
// when a budget of the caller (theirs, one of their groups', the agent's) is used up; at 80 %
// the caller is warned once per budget and period (by this replica).
// Pure: no clock or network; the caller passes `now`.
import type { BudgetState } from "../../contract/runtime-api.ts";
import { REFUSAL_CODES } from "../../contract/errors.ts";
import type { Subject } from "./policy-index.ts";

export const WARN_AT = 0.8;

/** A refusal names the budget that refused (`exceeded`), for the audit record. */
export type BudgetVerdict = { refusal: string | null; warning: string | null; exceeded?: { id: string; name: string } };
const NONE: BudgetVerdict = { refusal: null, warning: null };

function amount(unit: BudgetState["unit"], v: number): string {
  return unit === "tokens" ? `${Math.round(v)} tokens` : (Math.round(v * 10_000) / 10_000).toString();
}

/** The refusal of a used-up budget, in spec §7's form. Pure. */
export function exceededMessage(b: Pick<BudgetState, "name" | "unit" | "limit" | "period">, spent: number, resets: string): string {
  return `Refused (${REFUSAL_CODES.budgetExceeded}): the budget "${b.name}" is used up (${amount(b.unit, spent)} of ${amount(b.unit, b.limit)} this ${b.period}); it resets ${resets}`;
}

/** Whether a budget counts this subject's model calls: the agent's always; a user's or a group's for that user. Pure. */
export function applies(b: BudgetState, s: Subject): boolean {
  if (b.scope === "agent") return true;
  if (s.kind !== "user") return false;
  return b.scope === "user" ? b.scope_id === s.userId : b.group_name !== null && s.groups.includes(b.group_name);
}

export class BudgetBook {
  private budgets: BudgetState[] = [];
  /** Spent by this replica since start, per budget id. */
  private readonly local = new Map<string, number>();
  /** `local` when the last answered poll was sent: what the control plane may not have counted. */
  private base = new Map<string, number>();
  /** budget id + subject + period start: warned already. */
  private readonly warned = new Set<string>();
  /** True once the control plane answered: before, nothing is enforced. */
  known = false;

  /** A poll is sent: returns the mark to hand back with its answer. */
  mark(): Map<string, number> {
    return new Map(this.local);
  }

  /** The control plane's answer to the poll sent at `mark`. */
  update(budgets: BudgetState[], mark: Map<string, number>): void {
    this.budgets = budgets;
    this.base = mark;
    this.known = true;
  }

  get size(): number {
    return this.budgets.length;
  }

  /** The budgets that count this subject's model calls (as last polled). */
  applicable(s: Subject): BudgetState[] {
    return this.budgets.filter((b) => applies(b, s));
  }

  /** Every budget with what it has spent as far as this replica knows (metrics). */
  views(now: number): { name: string; spent: number; limit: number }[] {
    return this.budgets.map((b) => ({ name: b.name, spent: this.spent(b, now), limit: b.limit }));
  }

  /** What a budget has spent as far as this replica knows. */
  spent(b: BudgetState, now: number): number {
    if (now >= Date.parse(b.resets_at)) return (this.local.get(b.id) ?? 0) - (this.base.get(b.id) ?? 0);
    return b.spent + (this.local.get(b.id) ?? 0) - (this.base.get(b.id) ?? 0);
  }

  /** Before a model call: refused when a budget of the caller is used up; a warning at 80 %. */
  check(s: Subject, now: number): BudgetVerdict {
    if (this.budgets.length === 0) return NONE;
    let warning: string | null = null;
    for (const b of this.budgets) {
      if (!applies(b, s)) continue;
      const spent = this.spent(b, now);
      const resets = now >= Date.parse(b.resets_at) ? "at the next update" : `at ${b.resets_at}`;
      if (spent >= b.limit) {
        return { refusal: exceededMessage(b, spent, resets), warning: null, exceeded: { id: b.id, name: b.name } };
      }
      if (warning === null && spent >= WARN_AT * b.limit) {
        const key = `${b.id}\u0000${s.kind === "user" ? s.userId : "-"}\u0000${b.period_start}`;
        if (!this.warned.has(key)) {
          this.warned.add(key);
          warning = `${Math.floor((spent / b.limit) * 100)} % of the budget "${b.name}" is used (${amount(b.unit, spent)} of ${amount(b.unit, b.limit)} this ${b.period}); it resets ${resets}`;
        }
      }
    }
    return warning ? { refusal: null, warning } : NONE;
  }

  /** A model call of `s` ended having used this much: counted on every budget that applies. */
  add(s: Subject, usage: { prompt_tokens: number; completion_tokens: number } | null, cost: number | undefined): void {
    if (!usage) return;
    for (const b of this.budgets) {
      if (!applies(b, s)) continue;
      const v = b.unit === "tokens" ? usage.prompt_tokens + usage.completion_tokens : (cost ?? 0);
      if (v > 0) this.local.set(b.id, (this.local.get(b.id) ?? 0) + v);
    }
  }
}
