// Budgets (issue 16): a limit on what a user, a group (its members together) or an agent may
// spend on model calls per UTC day or month, in tokens (prompt + completion) or money (the
// cost the proxies computed at the profiles' prices). Spend is summed from the ingested outcome
// records of every installation (audit/usage.ts spendOf), so it counts across replicas and
// installations. Proxies fetch the budgets that concern them with their spend
// (GET /runtime/limits) and refuse a model call once a budget is used up.
import { and, eq } from "drizzle-orm";
import type { BudgetState } from "../../contract/runtime-api.ts";
import { SvcError } from "../../contract/errors.ts";
import { hasPrefix, newId } from "../../contract/ids.ts";
import { getAgent } from "../agents/service.ts";
import { type Acting, recordChange } from "../audit/admin-events.ts";
import { spendOf } from "../audit/usage.ts";
import { type Db, type Tables, tables } from "../db/index.ts";
import { emailsOfUsers, getUser, groupMemberIds, identityMap, resolveGroup } from "../directory/service.ts";

export type BudgetRow = Tables["budgets"]["$inferSelect"];
export type BudgetInput = { name: string; scope: "user" | "group" | "agent"; target: string; period: "day" | "month"; unit: "tokens" | "money"; limit: number };

/** The current period [start, end) of a budget at `now`, in UTC. */
export function periodOf(period: "day" | "month", now: number): { start: number; end: number } {
  const d = new Date(now);
  if (period === "day") {
    const start = Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate());
    return { start, end: start + 86_400_000 };
  }
  return { start: Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), 1), end: Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1) };
}

/** The scope's id for a target given as usr_…/email, grp_…/group name, or agt_…. */
async function scopeIdOf(db: Db, orgId: string, scope: BudgetInput["scope"], target: string): Promise<{ id: string; label: string }> {
  if (scope === "user") {
    const u = await getUser(db, orgId, target);
    return { id: u.id, label: u.email };
  }
  if (scope === "group") {
    const g = await resolveGroup(db, orgId, target);
    return { id: g.id, label: g.name };
  }
  const a = await getAgent(db, orgId, target);
  return { id: a.id, label: a.name };
}

/** A budget as its admin events show it. */
function eventView(b: BudgetRow, target?: string) {
  return { id: b.id, name: b.name, scope: b.scope, scope_id: b.scopeId, ...(target ? { target } : {}), period: b.period, unit: b.unit, limit: b.limit };
}

export async function createBudget(db: Db, orgId: string, input: BudgetInput, by: Acting): Promise<BudgetRow> {
  const name = input.name.trim();
  if (!name) throw new SvcError("validation_failed", "name is empty", { errors: [{ path: "/name", message: "must not be empty" }] });
  if (!(input.limit > 0) || !Number.isFinite(input.limit)) throw new SvcError("validation_failed", "limit must be a number above 0", { errors: [{ path: "/limit", message: "must be > 0" }] });
  if (input.unit === "tokens" && !Number.isInteger(input.limit))
    throw new SvcError("validation_failed", "a token limit is a whole number", { errors: [{ path: "/limit", message: "must be an integer" }] });
  return db.transaction(async (tx) => {
    const scope = await scopeIdOf(tx, orgId, input.scope, input.target);
    const b = tables(tx).budgets;
    const [row] = await tx
      .insert(b)
      .values({ id: newId("budget"), orgId, name, scope: input.scope, scopeId: scope.id, period: input.period, unit: input.unit, limit: input.limit })
      .onConflictDoNothing()
      .returning();
    if (!row) throw new SvcError("conflict", `a budget named "${name}" already exists`);
    await recordChange(tx, by, { orgId, action: "budget.create", target: { type: "budget", id: row.id, name }, after: eventView(row, scope.label) });
    return row;
  });
}

export async function listBudgets(db: Db, orgId: string): Promise<BudgetRow[]> {
  const b = tables(db).budgets;
  return db.select().from(b).where(eq(b.orgId, orgId)).orderBy(b.name);
}

export async function deleteBudget(db: Db, orgId: string, idOrName: string, by: Acting): Promise<BudgetRow> {
  return db.transaction(async (tx) => {
    const { budgets: b, budgetLeases: l } = tables(tx);
    const [row] = await tx
      .delete(b)
      .where(and(eq(b.orgId, orgId), hasPrefix(idOrName, "budget") ? eq(b.id, idOrName) : eq(b.name, idOrName)))
      .returning();
    if (!row) throw new SvcError("not_found", `budget "${idOrName}" not found`);
    await tx.delete(l).where(eq(l.budgetId, row.id));
    await recordChange(tx, by, { orgId, action: "budget.delete", target: { type: "budget", id: row.id, name: row.name }, before: eventView(row) });
    return row;
  });
}

/** Whose model calls a budget counts: an agent's, or users' (one, or a group's members). */
export async function scopeOf(db: Db, b: BudgetRow): Promise<{ agentId: string } | { userIds: string[] }> {
  return b.scope === "agent" ? { agentId: b.scopeId } : { userIds: b.scope === "user" ? [b.scopeId] : await groupMemberIds(db, b.scopeId) };
}

/** What the budget's scope has spent in the current period, in its unit. */
async function spentOn(db: Db, b: BudgetRow, since: number): Promise<number> {
  const t = await spendOf(db, b.orgId, await scopeOf(db, b), since);
  return b.unit === "tokens" ? t.total_tokens : t.cost;
}

export async function budgetState(db: Db, b: BudgetRow, now: number, groupName: string | null = null): Promise<BudgetState> {
  const { start, end } = periodOf(b.period, now);
  return {
    id: b.id,
    name: b.name,
    scope: b.scope,
    scope_id: b.scopeId,
    group_name: groupName,
    period: b.period,
    unit: b.unit,
    limit: b.limit,
    spent: await spentOn(db, b, start),
    period_start: new Date(start).toISOString(),
    resets_at: new Date(end).toISOString(),
  };
}

/** The admin view: every budget with its target's label, spend and share used. */
export async function budgetsWithStatus(db: Db, orgId: string, now: number) {
  const rows = await listBudgets(db, orgId);
  const emails = await emailsOfUsers(
    db,
    orgId,
    rows.filter((r) => r.scope === "user").map((r) => r.scopeId),
  );
  const out = [];
  for (const r of rows) {
    const groupName = r.scope === "group" ? ((await resolveGroup(db, orgId, r.scopeId).catch(() => null))?.name ?? null) : null;
    const s = await budgetState(db, r, now, groupName);
    const target = r.scope === "user" ? (emails.get(r.scopeId) ?? r.scopeId) : r.scope === "group" ? (groupName ?? r.scopeId) : r.scopeId;
    out.push({ ...s, target, used: s.limit > 0 ? s.spent / s.limit : 0, created_at: new Date(r.createdAt).toISOString() });
  }
  return out;
}

/**
 * The budgets a runtime enforces: its agent's, and those of the users linked through its
 * installation and of their groups (a group's by the name the bundle's identities carry).
 */
export async function runtimeBudgets(db: Db, caller: { orgId: string; installationId: string; agentId: string }): Promise<{ row: BudgetRow; groupName: string | null }[]> {
  const rows = await listBudgets(db, caller.orgId);
  if (rows.length === 0) return [];
  const identities = await identityMap(db, caller.orgId, caller.installationId);
  const users = new Set(identities.map((i) => i.user_id));
  const groupNames = new Set(identities.flatMap((i) => i.groups));
  const out: { row: BudgetRow; groupName: string | null }[] = [];
  for (const r of rows) {
    if (r.scope === "agent" && r.scopeId === caller.agentId) out.push({ row: r, groupName: null });
    else if (r.scope === "user" && users.has(r.scopeId)) out.push({ row: r, groupName: null });
    else if (r.scope === "group") {
      const g = await resolveGroup(db, caller.orgId, r.scopeId).catch(() => null);
      if (g && groupNames.has(g.name)) out.push({ row: r, groupName: g.name });
    }
  }
  return out;
}

/** runtimeBudgets, each with its spend in the current period (GET /runtime/limits). */
export async function budgetsForRuntime(db: Db, caller: { orgId: string; installationId: string; agentId: string }, now: number): Promise<BudgetState[]> {
  const out: BudgetState[] = [];
  for (const { row, groupName } of await runtimeBudgets(db, caller)) out.push(await budgetState(db, row, now, groupName));
  return out;
}
