// Model usage (issue 16), summed from the outcome records of model calls (kind "outcome",
// action model:invoke): the tokens the provider reported and the cost the proxy computed at
// the model profile's prices. Grouped by user, group (its members' usage: a user in two groups
// counts in both), model or agent, over a time range; or as a series over time for the console.
// Budgets sum the same rows (spendOf).
import { and, count, eq, gte, inArray, lt, type SQL, sql, sum } from "drizzle-orm";
import { SvcError } from "../../contract/errors.ts";
import { type Db, type Tables, tables } from "../db/index.ts";
import { emailsOfUsers, groupMemberships } from "../directory/service.ts";

export const USAGE_DIMENSIONS = ["user", "group", "model", "agent"] as const;
export type UsageDimension = (typeof USAGE_DIMENSIONS)[number];

export type UsageTotals = { calls: number; prompt_tokens: number; completion_tokens: number; total_tokens: number; cost: number };
export type UsageRow = UsageTotals & { key: string | null; label: string | null };

const totals = (a: Tables["auditRecords"]) => ({
  calls: count(),
  prompt: sum(a.promptTokens).mapWith(Number),
  completion: sum(a.completionTokens).mapWith(Number),
  cost: sum(a.cost).mapWith(Number),
});

function asTotals(r: { calls: number; prompt: number | null; completion: number | null; cost: number | null }): UsageTotals {
  const p = r.prompt ?? 0;
  const c = r.completion ?? 0;
  return { calls: Number(r.calls), prompt_tokens: p, completion_tokens: c, total_tokens: p + c, cost: Math.round((r.cost ?? 0) * 1e9) / 1e9 };
}

function add(x: UsageTotals, y: UsageTotals): UsageTotals {
  return { calls: x.calls + y.calls, prompt_tokens: x.prompt_tokens + y.prompt_tokens, completion_tokens: x.completion_tokens + y.completion_tokens, total_tokens: x.total_tokens + y.total_tokens, cost: Math.round((x.cost + y.cost) * 1e9) / 1e9 };
}

const ZERO: UsageTotals = { calls: 0, prompt_tokens: 0, completion_tokens: 0, total_tokens: 0, cost: 0 };

function window(a: Tables["auditRecords"], orgId: string, since: number, until: number | null): SQL[] {
  // kind and action as literals, not parameters: only then may SQLite and PostgreSQL use the
  // partial index audit_org_model_outcome_ts, whose WHERE these terms must imply (tables.ts).
  const conds: SQL[] = [eq(a.orgId, orgId), sql`${a.kind} = 'outcome'`, sql`${a.action} = 'model:invoke'`, gte(a.ts, since)];
  if (until !== null) conds.push(lt(a.ts, until));
  return conds;
}

/** Usage grouped by one dimension, biggest total first. */
export async function usageBy(db: Db, orgId: string, by: UsageDimension, range: { since: number; until?: number | null }): Promise<UsageRow[]> {
  const a = tables(db).auditRecords;
  const col = by === "model" ? a.model : by === "agent" ? a.agentId : a.userId;
  const rows = await db
    .select({ key: col, ...totals(a) })
    .from(a)
    .where(and(...window(a, orgId, range.since, range.until ?? null)))
    .groupBy(col);
  let out: UsageRow[];
  if (by === "group") {
    const perUser = new Map(rows.map((r) => [r.key, asTotals(r)]));
    const groups = new Map<string, UsageRow>();
    for (const m of await groupMemberships(db, orgId)) {
      const u = perUser.get(m.userId);
      if (!u) continue;
      const g = groups.get(m.groupId) ?? { key: m.groupId, label: m.name, ...ZERO };
      groups.set(m.groupId, { ...g, ...add(g, u) });
    }
    out = [...groups.values()];
  } else {
    out = rows.map((r) => ({ key: r.key, label: null, ...asTotals(r) }));
    if (by === "user") {
      const emails = await emailsOfUsers(db, orgId, out.map((r) => r.key).filter((k): k is string => k !== null));
      out = out.map((r) => ({ ...r, label: r.key ? (emails.get(r.key) ?? null) : "(installation)" }));
    }
  }
  return out.sort((x, y) => y.total_tokens - x.total_tokens || y.cost - x.cost || String(x.key).localeCompare(String(y.key)));
}

/** Usage per time bucket (UTC day or hour) and key (user or model), for the console's charts. */
export async function usageSeries(db: Db, orgId: string, by: "user" | "model", bucket: "day" | "hour", range: { since: number; until?: number | null }): Promise<{ bucket: string; key: string | null; total_tokens: number; cost: number }[]> {
  const a = tables(db).auditRecords;
  const col = by === "model" ? a.model : a.userId;
  const step = bucket === "day" ? 86_400_000 : 3_600_000;
  // Integer division of the epoch milliseconds: the same SQL on SQLite and PostgreSQL. The step
  // is written into the SQL (one of two constants, never input): as a parameter, PostgreSQL
  // would not see the grouped expression and the selected one as the same.
  const b = sql<number>`(${a.ts} / ${sql.raw(String(step))})`.mapWith(Number);
  const rows = await db
    .select({ b, key: col, ...totals(a) })
    .from(a)
    .where(and(...window(a, orgId, range.since, range.until ?? null)))
    .groupBy(b, col)
    .orderBy(b);
  return rows.map((r) => {
    const t = asTotals(r);
    return { bucket: new Date(Math.floor(r.b) * step).toISOString(), key: r.key, total_tokens: t.total_tokens, cost: t.cost };
  });
}

/** What a set of users, or an agent, has used since a time: for budgets. */
export async function spendOf(db: Db, orgId: string, who: { userIds: string[] } | { agentId: string }, since: number): Promise<UsageTotals> {
  const a = tables(db).auditRecords;
  if ("userIds" in who && who.userIds.length === 0) return ZERO;
  const conds = window(a, orgId, since, null);
  conds.push("agentId" in who ? eq(a.agentId, who.agentId) : inArray(a.userId, who.userIds));
  const [row] = await db.select(totals(a)).from(a).where(and(...conds));
  return row ? asTotals(row) : ZERO;
}

/** spendOf, by the replica that wrote the outcome records (null: records without a replica id). */
export async function spendByReplica(db: Db, orgId: string, who: { userIds: string[] } | { agentId: string }, since: number): Promise<Map<string | null, UsageTotals>> {
  const a = tables(db).auditRecords;
  const out = new Map<string | null, UsageTotals>();
  if ("userIds" in who && who.userIds.length === 0) return out;
  const conds = window(a, orgId, since, null);
  conds.push("agentId" in who ? eq(a.agentId, who.agentId) : inArray(a.userId, who.userIds));
  const rows = await db
    .select({ replica: a.replicaId, ...totals(a) })
    .from(a)
    .where(and(...conds))
    .groupBy(a.replicaId);
  for (const r of rows) out.set(r.replica, asTotals(r));
  return out;
}

/** `7d`, `24h`, `30m` before now, or an ISO 8601 time. */
export function parseSince(value: string, now: number): number {
  const m = /^(\d+)([mhd])$/.exec(value.trim());
  if (m) return now - Number(m[1]) * { m: 60_000, h: 3_600_000, d: 86_400_000 }[m[2] as "m" | "h" | "d"];
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) throw new SvcError("validation_failed", `since="${value}" is neither a duration (7d, 24h, 30m) nor an ISO 8601 time`);
  return ms;
}
