// Model usage (issue 16), summed from the outcome records of model calls (kind "outcome",
// action model:invoke): the tokens the provider reported and the cost the proxy computed at
// the model profile's prices. Grouped by user, group (its members' usage: a user in two groups
// counts in both), model or agent, over a time range; or as a series over time for the console.
// Budgets sum the same rows (spendOf). Whole hours are read from the per-hour roll-ups (rollups.ts),
// unless the latest verification found them tampered with (rollup-check.ts): then from the records.
import { and, count, eq, gte, inArray, lt, type SQL, sql, sum } from "drizzle-orm";
import { SvcError } from "../../contract/errors.ts";
import { type Db, tables } from "../db/index.ts";
import { emailsOfUsers, groupMemberships } from "../directory/service.ts";
import { rollupsDistrusted } from "../audit-chain/rollup-trust.ts";
import { HOUR } from "./rollups.ts";

export const USAGE_DIMENSIONS = ["user", "group", "model", "agent"] as const;
export type UsageDimension = (typeof USAGE_DIMENSIONS)[number];

export type UsageTotals = { calls: number; prompt_tokens: number; completion_tokens: number; total_tokens: number; cost: number };
export type UsageRow = UsageTotals & { key: string | null; label: string | null };

function asTotals(r: { calls: number | string; prompt: number | null; completion: number | null; cost: number | null }): UsageTotals {
  const p = r.prompt ?? 0;
  const c = r.completion ?? 0;
  return { calls: Number(r.calls), prompt_tokens: p, completion_tokens: c, total_tokens: p + c, cost: Math.round((r.cost ?? 0) * 1e9) / 1e9 };
}

function add(x: UsageTotals, y: UsageTotals): UsageTotals {
  return {
    calls: x.calls + y.calls,
    prompt_tokens: x.prompt_tokens + y.prompt_tokens,
    completion_tokens: x.completion_tokens + y.completion_tokens,
    total_tokens: x.total_tokens + y.total_tokens,
    cost: Math.round((x.cost + y.cost) * 1e9) / 1e9,
  };
}

const ZERO: UsageTotals = { calls: 0, prompt_tokens: 0, completion_tokens: 0, total_tokens: 0, cost: 0 };

type Who = { userIds: string[] } | { agentId: string } | null;
/** What the sums are grouped by: a key (null: one total) and a time bucket (null: the whole range). */
type Grouping = { key: "userId" | "model" | "agentId" | "replicaId" | null; step: number | null };
type Sum = { key: string | null; bucket: number | null; totals: UsageTotals };

/**
 * Usage over [since, until), grouped. The whole hours come from the roll-ups (rollups.ts); the
 * parts of an hour at either end, from the model calls' outcome records dated there (at most an
 * hour each, read along audit_org_model_outcome_ts). The two agree: the roll-ups are the sums of
 * the same records.
 */
async function sums(db: Db, orgId: string, g: Grouping, who: Who, since: number, until: number | null): Promise<Sum[]> {
  if (who && "userIds" in who && who.userIds.length === 0) return [];
  const first = Math.ceil(since / HOUR) * HOUR;
  const last = until === null ? null : Math.floor(until / HOUR) * HOUR;
  // One after another: `db` may be a transaction (budget leases), one connection.
  const parts: Sum[] = [];
  // Roll-ups the latest verification found different from the records (audit/rollup-check.ts)
  // are not read: someone who lowered them would widen every budget.
  if ((last !== null && last <= first) || (await rollupsDistrusted(db, orgId))) parts.push(...(await recordSums(db, orgId, g, who, since, until)));
  else {
    if (since < first) parts.push(...(await recordSums(db, orgId, g, who, since, first)));
    // The whole hours' records an older replica stored and the fold has not counted yet
    // (rollup-fold.ts), read BEFORE the roll-ups: a fold committing in between then counts a
    // row twice (a budget narrower for a moment), never not at all (wider).
    parts.push(...(await recordSums(db, orgId, g, who, first, last, true)));
    parts.push(...(await rollupSums(db, orgId, g, who, first, last)));
    if (last !== null && last < until!) parts.push(...(await recordSums(db, orgId, g, who, last, until)));
  }
  const merged = new Map<string, Sum>();
  for (const s of parts) {
    const k = JSON.stringify([s.bucket, s.key]);
    const held = merged.get(k);
    merged.set(k, held ? { ...held, totals: add(held.totals, s.totals) } : s);
  }
  return [...merged.values()];
}

/** Sums of the model calls' outcome records in [since, until); `pending`: only those outside the roll-ups. */
async function recordSums(db: Db, orgId: string, g: Grouping, who: Who, since: number, until: number | null, pending = false): Promise<Sum[]> {
  const a = tables(db).auditRecords;
  // kind and action as literals, not parameters: only then may SQLite and PostgreSQL use the
  // partial index audit_org_model_outcome_ts, whose WHERE these terms must imply (tables.ts);
  // `rollup_pending` as the bare column likewise, for audit_org_rollup_pending_ts.
  const conds: SQL[] = [eq(a.orgId, orgId), sql`${a.kind} = 'outcome'`, sql`${a.action} = 'model:invoke'`, gte(a.ts, since)];
  if (pending) conds.push(sql`${a.rollupPending}`);
  if (until !== null) conds.push(lt(a.ts, until));
  if (who) conds.push("agentId" in who ? eq(a.agentId, who.agentId) : inArray(a.userId, who.userIds));
  const key = g.key ? a[g.key] : sql<null>`null`;
  // Integer division of the epoch milliseconds: the same SQL on SQLite and PostgreSQL. The step
  // is written into the SQL (one of two constants, never input): as a parameter, PostgreSQL
  // would not see the grouped expression and the selected one as the same.
  const bucket = g.step ? sql<number>`(${a.ts} / ${sql.raw(String(g.step))})`.mapWith(Number) : sql<null>`null`;
  const q = db
    .select({ key, bucket, calls: count(), prompt: sum(a.promptTokens).mapWith(Number), completion: sum(a.completionTokens).mapWith(Number), cost: sum(a.cost).mapWith(Number) })
    .from(a)
    .where(and(...conds));
  const groups = [...(g.key ? [a[g.key]] : []), ...(g.step ? [bucket] : [])];
  const rows = groups.length > 0 ? await q.groupBy(...groups) : await q;
  return rows.filter((r) => Number(r.calls) > 0).map((r) => ({ key: r.key as string | null, bucket: r.bucket as number | null, totals: asTotals(r) }));
}

async function rollupSums(db: Db, orgId: string, g: Grouping, who: Who, from: number, below: number | null): Promise<Sum[]> {
  const hu = tables(db).auditHourlyUsage;
  const conds: SQL[] = [eq(hu.orgId, orgId), gte(hu.hour, from)];
  if (below !== null) conds.push(lt(hu.hour, below));
  if (who) conds.push("agentId" in who ? eq(hu.agentId, who.agentId) : inArray(hu.userId, who.userIds));
  const key = g.key ? hu[g.key] : sql<null>`null`;
  // An hour is a multiple of the step (an hour or a day): its bucket is the one of every record in it.
  const bucket = g.step ? sql<number>`(${hu.hour} / ${sql.raw(String(g.step))})`.mapWith(Number) : sql<null>`null`;
  const n = (col: typeof hu.calls | typeof hu.cost) => sql<number>`sum(${col})`.mapWith(Number);
  const q = db
    .select({ key, bucket, calls: n(hu.calls), prompt: n(hu.promptTokens), completion: n(hu.completionTokens), cost: n(hu.cost) })
    .from(hu)
    .where(and(...conds));
  const groups = [...(g.key ? [hu[g.key]] : []), ...(g.step ? [bucket] : [])];
  const rows = groups.length > 0 ? await q.groupBy(...groups) : await q;
  // '' stands for null in the roll-ups' keys (tables.ts).
  return rows.filter((r) => Number(r.calls) > 0).map((r) => ({ key: r.key === "" ? null : (r.key as string | null), bucket: r.bucket as number | null, totals: asTotals(r) }));
}

/** Usage grouped by one dimension, biggest total first. */
export async function usageBy(db: Db, orgId: string, by: UsageDimension, range: { since: number; until?: number | null }): Promise<UsageRow[]> {
  const rows = await sums(db, orgId, { key: by === "model" ? "model" : by === "agent" ? "agentId" : "userId", step: null }, null, range.since, range.until ?? null);
  let out: UsageRow[];
  if (by === "group") {
    const perUser = new Map(rows.map((r) => [r.key, r.totals]));
    const groups = new Map<string, UsageRow>();
    for (const m of await groupMemberships(db, orgId)) {
      const u = perUser.get(m.userId);
      if (!u) continue;
      const g = groups.get(m.groupId) ?? { key: m.groupId, label: m.name, ...ZERO };
      groups.set(m.groupId, { ...g, ...add(g, u) });
    }
    out = [...groups.values()];
  } else {
    out = rows.map((r) => ({ key: r.key, label: null, ...r.totals }));
    if (by === "user") {
      const emails = await emailsOfUsers(
        db,
        orgId,
        out.map((r) => r.key).filter((k): k is string => k !== null),
      );
      out = out.map((r) => ({ ...r, label: r.key ? (emails.get(r.key) ?? null) : "(installation)" }));
    }
  }
  return out.sort((x, y) => y.total_tokens - x.total_tokens || y.cost - x.cost || String(x.key).localeCompare(String(y.key)));
}

/** Usage per time bucket (UTC day or hour) and key (user or model), for the console's charts. */
export async function usageSeries(
  db: Db,
  orgId: string,
  by: "user" | "model",
  bucket: "day" | "hour",
  range: { since: number; until?: number | null },
): Promise<{ bucket: string; key: string | null; total_tokens: number; cost: number }[]> {
  const step = bucket === "day" ? 86_400_000 : HOUR;
  const rows = await sums(db, orgId, { key: by === "model" ? "model" : "userId", step }, null, range.since, range.until ?? null);
  return rows
    .sort((x, y) => x.bucket! - y.bucket! || String(x.key).localeCompare(String(y.key)))
    .map((r) => ({ bucket: new Date(Math.floor(r.bucket!) * step).toISOString(), key: r.key, total_tokens: r.totals.total_tokens, cost: r.totals.cost }));
}

/** What a set of users, or an agent, has used since a time: for budgets. */
export async function spendOf(db: Db, orgId: string, who: { userIds: string[] } | { agentId: string }, since: number): Promise<UsageTotals> {
  const [row] = await sums(db, orgId, { key: null, step: null }, who, since, null);
  return row?.totals ?? ZERO;
}

/** spendOf, by the replica that wrote the outcome records (null: records without a replica id). */
export async function spendByReplica(db: Db, orgId: string, who: { userIds: string[] } | { agentId: string }, since: number): Promise<Map<string | null, UsageTotals>> {
  const rows = await sums(db, orgId, { key: "replicaId", step: null }, who, since, null);
  return new Map(rows.map((r) => [r.key, r.totals]));
}

/** `7d`, `24h`, `30m` before now, or an ISO 8601 time. */
export function parseSince(value: string, now: number): number {
  const m = /^(\d+)([mhd])$/.exec(value.trim());
  if (m) return now - Number(m[1]) * { m: 60_000, h: 3_600_000, d: 86_400_000 }[m[2] as "m" | "h" | "d"];
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) throw new SvcError("validation_failed", `since="${value}" is neither a duration (7d, 24h, 30m) nor an ISO 8601 time`);
  return ms;
}
