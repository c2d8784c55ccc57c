// Budget leases (POST /runtime/budget-leases; docs/proxy.md "Budgets"): before forwarding a
// model call a proxy replica must hold a lease on each budget of the caller, a share of what
// remains of it in its period, and spends from it; it settles the lease (what its calls
// consumed) when the lease is used up, idle, expiring or at shutdown, and reports with every
// request what the calls of the leases it still holds consumed so far. What a budget has spent,
// as leases decide it, is per replica the greater of two counts of that replica's calls:
//   - its leases' charges: an open lease its grant (or its consumption, when more), a settled
//     one its consumption; a lease never settled counts as open until LEASE_GRACE_MS past its
//     expiry (a stream outlives a lease; a replica that died holds its share that long), then
//     as what it last reported;
//   - the spend ingested from its outcome records (its calls made without a lease: an older
//     proxy, the control plane unreachable, before the budget existed).
// A grant is what remains (the limit less that spend) times LEASE_SHARE, at least
// LEASE_MIN_SHARE of the limit and what the proxy says its waiting calls need, at most what
// remains: nothing when nothing remains (the call is refused). Grants are computed and stored in one SERIALIZABLE transaction, so two
// control-plane replicas never grant the same remainder twice (PostgreSQL aborts one of two
// conflicting grants, and it runs again); the leases of one replica thus never exceed the
// limit together, and the overshoot is what calls in flight spend past their lease.
import { and, eq, inArray, lt } from "drizzle-orm";
import { newId } from "../../contract/ids.ts";
import type { BudgetLease, BudgetLeaseRequest } from "../../contract/runtime-api.ts";
import { spendByReplica } from "../audit/usage.ts";
import { type Db, tables } from "../db/index.ts";
import type { RuntimeCaller } from "../installations/runtime-auth.ts";
import { type BudgetRow, periodOf, runtimeBudgets, scopeOf } from "./service.ts";

/** How long a lease is good for; the proxy renews or settles it before. */
export const LEASE_TTL_MS = 60_000;
/** After its expiry, a lease never settled keeps its grant this long (a long stream, a replica gone). */
export const LEASE_GRACE_MS = 10 * 60_000;
/** The share of what remains one lease reserves. */
export const LEASE_SHARE = 0.2;
/** The smallest lease, as a share of the limit (unless less remains). */
export const LEASE_MIN_SHARE = 0.01;

type LeaseRow = { replicaId: string | null; granted: number; consumed: number; settled: boolean; expiresAt: number };

/** What a lease counts in its budget's spend at `now`. Pure. */
export function leaseCharge(l: Omit<LeaseRow, "replicaId">, now: number): number {
  if (l.settled) return l.consumed;
  if (now < l.expiresAt + LEASE_GRACE_MS) return Math.max(l.granted, l.consumed);
  return l.consumed;
}

/** A budget's spend from its leases and its ingested spend, both by replica (see the top of this file). Pure. */
export function ledgerSpent(leases: readonly LeaseRow[], ingested: ReadonlyMap<string | null, number>, now: number): number {
  const charges = new Map<string | null, number>();
  for (const l of leases) charges.set(l.replicaId, (charges.get(l.replicaId) ?? 0) + leaseCharge(l, now));
  let spent = 0;
  for (const [replica, charged] of charges) spent += Math.max(charged, ingested.get(replica) ?? 0);
  for (const [replica, v] of ingested) if (!charges.has(replica)) spent += v;
  return spent;
}

/**
 * The next lease of a budget: a share of what remains, at least a floor and what the waiting
 * calls need (so a lease is not smaller than the calls it is for), never more than remains. Pure.
 */
export function leaseSize(limit: number, spent: number, unit: "tokens" | "money", need = 0): number {
  const remaining = limit - spent;
  if (!(remaining > 0)) return 0;
  const share = Math.max(remaining * LEASE_SHARE, limit * LEASE_MIN_SHARE, need);
  // Tokens are whole: a share rounds up, but never past what remains.
  return Math.min(remaining, unit === "tokens" ? Math.ceil(share) : share);
}

/** Settles the caller's finished leases and grants one per wanted budget of this runtime, in one transaction. */
export async function grantLeases(db: Db, caller: RuntimeCaller, req: BudgetLeaseRequest, now: number): Promise<BudgetLease[]> {
  // Only this runtime's budgets (theirs to spend): a token cannot hold another installation's share.
  const wanted = new Set(req.want);
  const mine = req.want.length === 0 ? [] : (await runtimeBudgets(db, caller)).map((b) => b.row).filter((b) => wanted.has(b.id));
  const scopes = new Map<string, Awaited<ReturnType<typeof scopeOf>>>();
  for (const b of mine) scopes.set(b.id, await scopeOf(db, b));
  return db.transaction(async (tx) => {
    const l = tables(tx).budgetLeases;
    // Settled leases take their final consumption; reported ones their consumption so far (they stay open).
    const updates = [...req.settle.map((x) => ({ ...x, settled: true })), ...(req.report ?? []).map((x) => ({ ...x, settled: false }))];
    if (updates.length > 0) {
      const held = await tx
        .select()
        .from(l)
        .where(
          and(
            eq(l.installationId, caller.installationId),
            inArray(
              l.id,
              updates.map((x) => x.lease_id),
            ),
          ),
        );
      const byId = new Map(held.map((h) => [h.id, h]));
      for (const u of updates) {
        const h = byId.get(u.lease_id);
        if (h && !h.settled)
          await tx
            .update(l)
            .set({ settled: u.settled, consumed: Math.max(h.consumed, u.consumed) })
            .where(eq(l.id, h.id));
      }
    }
    const out: BudgetLease[] = [];
    for (const b of mine) out.push(await grantOne(tx, caller, b, scopes.get(b.id)!, req.need?.[b.id] ?? 0, now));
    return out;
  });
}

async function grantOne(tx: Db, caller: RuntimeCaller, b: BudgetRow, scope: Awaited<ReturnType<typeof scopeOf>>, need: number, now: number): Promise<BudgetLease> {
  const l = tables(tx).budgetLeases;
  const { start, end } = periodOf(b.period, now);
  // Leases of earlier periods count for nothing any more.
  await tx.delete(l).where(and(eq(l.budgetId, b.id), lt(l.periodStart, start)));
  const leases = await tx
    .select({ replicaId: l.replicaId, granted: l.granted, consumed: l.consumed, settled: l.settled, expiresAt: l.expiresAt })
    .from(l)
    .where(and(eq(l.budgetId, b.id), eq(l.periodStart, start)));
  const ingested = new Map<string | null, number>();
  for (const [replica, t] of await spendByReplica(tx, b.orgId, scope, start)) ingested.set(replica, b.unit === "tokens" ? t.total_tokens : t.cost);
  const spent = ledgerSpent(leases, ingested, now);
  const granted = leaseSize(b.limit, spent, b.unit, need);
  const expiresAt = now + LEASE_TTL_MS;
  let id: string | null = null;
  if (granted > 0) {
    id = newId("budgetLease", now);
    await tx.insert(l).values({ id, orgId: b.orgId, budgetId: b.id, installationId: caller.installationId, replicaId: caller.replicaId, periodStart: start, granted, expiresAt });
  }
  return {
    budget_id: b.id,
    lease_id: id,
    granted,
    expires_at: new Date(expiresAt).toISOString(),
    spent,
    limit: b.limit,
    period_start: new Date(start).toISOString(),
    resets_at: new Date(end).toISOString(),
  };
}
