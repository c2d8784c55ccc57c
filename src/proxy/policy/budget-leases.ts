// The budget leases this replica holds (docs/proxy.md "Budgets"): before a model call is
// forwarded, each budget of the caller needs a lease with room for it: what its calls
// consumed, plus its calls in flight at what a call of that budget has been consuming
// (a running mean), below what was granted. One without room, or about to expire, is replaced
// by a new lease from the control plane (POST /runtime/budget-leases), one request for every
// budget wanted at that moment, shared by the calls waiting on it. A call adds what it
// consumed to its leases when it ends. A lease is settled (its consumption reported) once it
// is replaced, idle, expiring or at shutdown, and only when no call in flight still spends
// from it; until then every request reports what its calls consumed so far. So the control
// plane knows every ended call's spend when it grants, and this replica spends at most what it
// was granted plus what its calls in flight spend beyond their estimate: the overshoot of one
// proxy is bounded by its calls in flight, and across replicas by theirs (the control plane
// never grants the same remainder twice).
// A control plane that cannot be asked (unreachable, or older, without the route) is no
// reason to refuse: the caller falls back to the polled spend (budgets.ts) for that call.
import type { BudgetLease, BudgetLeaseRequest, BudgetLeaseResponse, BudgetState } from "../../contract/runtime-api.ts";
import type { Logger } from "../../log/index.ts";

/** A lease is renewed this long before it expires (it is good for a minute). */
export const RENEW_MARGIN_MS = 5_000;
/** A lease no call took for this long is settled, so that its remainder goes back to the other replicas. */
export const IDLE_MS = 5_000;
/** After a failed request, calls fall back to the polled spend for this long before asking again. */
export const RETRY_AFTER_FAILURE_MS = 2_000;
/** A budget the control plane had nothing left of is refused without asking again for this long. */
export const REFUSAL_KEPT_MS = 1_000;

export type Lease = { id: string; budgetId: string; granted: number; consumed: number; inflight: number; usableUntil: number; resetsAt: number; lastUsed: number; retired: boolean };

export type Acquired = { ok: true; leases: Lease[] } | { ok: false; refused: BudgetState; answer: BudgetLease } | { ok: "unavailable" };

export class BudgetLeases {
  private readonly current = new Map<string, Lease>();
  /** Replaced or idle leases still spent from by calls in flight; settled when the last one ends. */
  private readonly retired = new Set<Lease>();
  /** Settled here, to be reported with the next request. */
  private settlements: BudgetLeaseRequest["settle"] = [];
  private request: Promise<void> | null = null;
  /** Budgets the control plane had nothing left of, with when it said so. */
  private readonly refused = new Map<string, { answer: BudgetLease; at: number }>();
  private failedAt = Number.NEGATIVE_INFINITY;
  private timer: ReturnType<typeof setInterval> | null = null;
  /** Per budget: what a call has been consuming (a running mean), reserved for each call in flight. */
  private readonly perCall = new Map<string, number>();
  /** Per budget: calls waiting for a lease with room (what a new lease should hold). */
  private readonly waiting = new Map<string, number>();

  constructor(
    private readonly o: {
      lease: (req: BudgetLeaseRequest) => Promise<BudgetLeaseResponse>;
      log: Logger;
      now?: () => number;
      onError?: (e: unknown) => void;
    },
  ) {}

  private now(): number {
    return (this.o.now ?? Date.now)();
  }

  /** Settles idle and expiring leases in the background (once a second). */
  start(): void {
    this.timer ??= setInterval(() => void this.tidy(), 1000);
    this.timer.unref?.();
  }

  /** Leases with something left on every budget, taken for one call (each counts the call in flight until `release`). */
  async acquire(budgets: readonly BudgetState[]): Promise<Acquired> {
    const counted: string[] = [];
    try {
      // Each round waits for one request (another call's, or its own): it either brings a lease
      // with room, or says nothing remains (refused), or fails (unavailable). A bound, not a plan.
      for (let round = 0; round < 50; round++) {
        const now = this.now();
        const missing = budgets.filter((b) => !this.usable(this.current.get(b.id), now));
        if (missing.length === 0) {
          const leases = budgets.map((b) => this.current.get(b.id)!);
          for (const l of leases) {
            l.inflight++;
            l.lastUsed = now;
          }
          return { ok: true, leases };
        }
        for (const b of missing) {
          const r = this.refused.get(b.id);
          if (r && now - r.at < REFUSAL_KEPT_MS) return { ok: false, refused: b, answer: r.answer };
        }
        if (now - this.failedAt < RETRY_AFTER_FAILURE_MS) return { ok: "unavailable" };
        for (const b of missing) {
          if (counted.includes(b.id)) continue;
          counted.push(b.id);
          this.waiting.set(b.id, (this.waiting.get(b.id) ?? 0) + 1);
        }
        this.request ??= this.renew(missing.map((b) => b.id)).finally(() => (this.request = null));
        await this.request;
      }
      return { ok: "unavailable" };
    } finally {
      for (const id of counted) this.waiting.set(id, (this.waiting.get(id) ?? 1) - 1);
    }
  }

  /** A call ended having consumed `amount(budgetId)` of each of its leases. */
  release(leases: readonly Lease[], amount: (budgetId: string) => number): void {
    for (const l of leases) {
      const v = Math.max(0, amount(l.budgetId));
      const mean = this.perCall.get(l.budgetId);
      this.perCall.set(l.budgetId, mean === undefined ? v : mean * 0.8 + v * 0.2);
      l.consumed += v;
      l.inflight--;
      if (l.retired && l.inflight === 0) this.settle(l);
    }
  }

  /** Settles every lease with no call in flight and reports them (shutdown). */
  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    for (const l of this.current.values()) this.retire(l);
    this.current.clear();
    await this.flush();
  }

  /**
   * A lease with room for one more call: what its calls consumed plus what its calls in flight
   * are expected to consume stays below the grant. Until a call of the budget has ended (no
   * mean yet), a lease takes one call at a time: another call waits for a lease of its own.
   */
  private usable(l: Lease | undefined, now: number): l is Lease {
    if (l === undefined || now >= l.usableUntil || now >= l.resetsAt) return false;
    const perCall = this.perCall.get(l.budgetId);
    return perCall === undefined ? l.inflight === 0 && l.consumed < l.granted : l.consumed + l.inflight * perCall < l.granted;
  }

  private retire(l: Lease): void {
    l.retired = true;
    if (l.inflight === 0) this.settle(l);
    else this.retired.add(l);
  }

  private settle(l: Lease): void {
    this.retired.delete(l);
    this.settlements.push({ lease_id: l.id, consumed: l.consumed });
  }

  /** One request: the leases settled so far, what the others consumed so far, and new leases on `want`. */
  private async renew(want: string[]): Promise<void> {
    const sentAt = this.now();
    // A lease being replaced is settled in this very request when no call spends from it.
    for (const id of want) {
      const old = this.current.get(id);
      if (old && !this.usable(old, sentAt)) {
        this.current.delete(id);
        this.retire(old);
      }
    }
    const settle = this.settlements;
    this.settlements = [];
    const report = [...this.current.values(), ...this.retired].filter((l) => l.consumed > 0).map((l) => ({ lease_id: l.id, consumed: l.consumed }));
    let answer: BudgetLeaseResponse;
    try {
      const need = Object.fromEntries(want.map((id) => [id, (this.perCall.get(id) ?? 0) * Math.max(1, this.waiting.get(id) ?? 0)]).filter(([, v]) => (v as number) > 0));
      answer = await this.o.lease({ settle, ...(report.length > 0 ? { report } : {}), want, ...(Object.keys(need).length > 0 ? { need } : {}) });
    } catch (e) {
      this.settlements.unshift(...settle);
      if (this.failedAt === Number.NEGATIVE_INFINITY || sentAt - this.failedAt > 60_000)
        this.o.log.warn("budget leases not renewed; enforcing the polled spend meanwhile", { error: (e as Error).message.slice(0, 300) });
      this.failedAt = sentAt;
      this.o.onError?.(e);
      return;
    }
    this.failedAt = Number.NEGATIVE_INFINITY;
    const asOf = Date.parse(answer.as_of);
    for (const g of answer.leases) {
      const old = this.current.get(g.budget_id);
      if (old) {
        this.current.delete(g.budget_id);
        this.retire(old);
      }
      if (!g.lease_id || g.granted <= 0) {
        this.refused.set(g.budget_id, { answer: g, at: sentAt });
        continue;
      }
      this.refused.delete(g.budget_id);
      // The control plane's expiry read against its own clock, so a skewed local clock does not stretch it.
      const ttl = Date.parse(g.expires_at) - asOf;
      this.current.set(g.budget_id, {
        id: g.lease_id,
        budgetId: g.budget_id,
        granted: g.granted,
        consumed: 0,
        inflight: 0,
        usableUntil: sentAt + ttl - RENEW_MARGIN_MS,
        resetsAt: sentAt + (Date.parse(g.resets_at) - asOf),
        lastUsed: sentAt,
        retired: false,
      });
    }
  }

  /** Idle or expiring leases are settled; what was settled is reported. */
  private async tidy(): Promise<void> {
    const now = this.now();
    for (const [id, l] of this.current) {
      if (now - l.lastUsed >= IDLE_MS || now >= l.usableUntil || now >= l.resetsAt) {
        this.current.delete(id);
        this.retire(l);
      }
    }
    await this.flush();
  }

  private async flush(): Promise<void> {
    if (this.settlements.length === 0 || this.request) return;
    this.request = this.renew([]).finally(() => (this.request = null));
    await this.request;
  }
}
