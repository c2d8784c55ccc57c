// Audit activity for the console's overview (issue 15): decisions per hour (permits and
// denies), and the most called tools and the most active users, over a recent window. Only
// decision records count (tool and model calls, never outcomes or the admin trail's events),
// and Open WebUI's background tasks are left out: the figures are about what people and their
// models asked to do.
import type { Activity } from "../../contract/admin-audit.ts";
import { and, desc, eq, gte, inArray, isNull, sql } from "drizzle-orm";
import { type Db, tables } from "../db/index.ts";
import { emailsOfUsers } from "../directory/service.ts";

const HOUR = 3_600_000;
export const TOP = 10;

export type { Activity } from "../../contract/admin-audit.ts";

/** One bar per hour from `since` to `now`, zero where nothing happened. Pure. */
export function fillHours(rows: { h: number; decision: string; n: number }[], since: number, now: number): Activity["hours"] {
  const first = Math.floor(since / HOUR);
  const last = Math.floor(now / HOUR);
  const out = new Map<number, { permit: number; deny: number }>();
  for (let h = first; h <= last; h++) out.set(h, { permit: 0, deny: 0 });
  for (const r of rows) {
    const slot = out.get(r.h);
    if (!slot) continue;
    if (r.decision === "permit") slot.permit += r.n;
    else slot.deny += r.n;
  }
  return [...out].map(([h, v]) => ({ hour: new Date(h * HOUR).toISOString(), ...v }));
}

/**
 * `maxFutureMs`: how far ahead of its receipt a record may be dated (ingest refuses later ones),
 * so a record dated after `since` was received after `since - maxFutureMs`: that bound lets the
 * queries read the (org, received_at) index from there instead of every record of the organization.
 */
export async function auditActivity(db: Db, orgId: string, since: number, now: number, maxFutureMs: number): Promise<Activity> {
  const a = tables(db).auditRecords;
  const where = and(eq(a.orgId, orgId), gte(a.receivedAt, since - maxFutureMs), inArray(a.kind, ["tool", "model"]), isNull(a.task), gte(a.ts, since));
  // Integer division of epoch milliseconds: the same SQL on SQLite and PostgreSQL (usage.ts).
  const h = sql<number>`(${a.ts} / ${sql.raw(String(HOUR))})`.mapWith(Number);
  const n = sql<number>`count(*)`.mapWith(Number);
  const denied = sql<number>`sum(case when ${a.decision} = 'permit' then 0 else 1 end)`.mapWith(Number);
  const [hours, tools, users] = await Promise.all([
    db.select({ h, decision: a.decision, n }).from(a).where(where).groupBy(h, a.decision),
    db
      .select({ tool: a.toolName, calls: n, denied })
      .from(a)
      .where(and(where, eq(a.kind, "tool")))
      .groupBy(a.toolName)
      .orderBy(desc(n), a.toolName)
      .limit(TOP),
    db
      .select({ user: a.userId, calls: n, denied })
      .from(a)
      .where(and(where, sql`${a.userId} is not null`))
      .groupBy(a.userId)
      .orderBy(desc(n), a.userId)
      .limit(TOP),
  ]);
  const emails = await emailsOfUsers(db, orgId, users.flatMap((u) => (u.user ? [u.user] : [])));
  return {
    since: new Date(since).toISOString(),
    hours: fillHours(hours, since, now),
    top_tools: tools.flatMap((t) => (t.tool ? [{ tool: t.tool, calls: t.calls, denied: t.denied }] : [])),
    top_users: users.flatMap((u) => (u.user ? [{ user_id: u.user, email: emails.get(u.user) ?? null, calls: u.calls, denied: u.denied }] : [])),
  };
}
