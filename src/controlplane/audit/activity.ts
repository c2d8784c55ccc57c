// Audit activity for the console's overview (issue 15): decisions per hour (permits and
// denies), and the most called tools and the most active users, over a recent window. Only
// decision records count (tool and model calls, never outcomes or the admin trail's events),
// and Open WebUI's background tasks are left out: the figures are about what people and their
// models asked to do.
import type { Activity } from "../../contract/admin-audit.ts";
import { and, desc, eq, gte, ne, sql } from "drizzle-orm";
import { type Db, tables } from "../db/index.ts";
import { emailsOfUsers } from "../directory/service.ts";
import { HOUR, hourOf } from "./rollups.ts";

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
 * Read from the per-hour roll-ups (rollups.ts), never from the records: the window starts at the
 * top of the hour `since` falls in, so every bar, the first one too, counts its whole hour.
 */
export async function auditActivity(db: Db, orgId: string, since: number, now: number): Promise<Activity> {
  const hc = tables(db).auditHourlyCalls;
  const from = hourOf(since);
  const where = and(eq(hc.orgId, orgId), gte(hc.hour, from));
  const n = sql<number>`sum(${hc.calls})`.mapWith(Number);
  const denied = sql<number>`sum(case when ${hc.decision} = 'permit' then 0 else ${hc.calls} end)`.mapWith(Number);
  const [hours, tools, users] = await Promise.all([
    db.select({ h: hc.hour, decision: hc.decision, n }).from(hc).where(where).groupBy(hc.hour, hc.decision),
    db
      .select({ tool: hc.toolName, calls: n, denied })
      .from(hc)
      .where(and(where, eq(hc.kind, "tool"), ne(hc.toolName, "")))
      .groupBy(hc.toolName)
      .orderBy(desc(n), hc.toolName)
      .limit(TOP),
    db
      .select({ user: hc.userId, calls: n, denied })
      .from(hc)
      .where(and(where, ne(hc.userId, "")))
      .groupBy(hc.userId)
      .orderBy(desc(n), hc.userId)
      .limit(TOP),
  ]);
  const emails = await emailsOfUsers(
    db,
    orgId,
    users.map((u) => u.user),
  );
  return {
    since: new Date(from).toISOString(),
    hours: fillHours(
      hours.map((r) => ({ ...r, h: r.h / HOUR })),
      from,
      now,
    ),
    top_tools: tools.map((t) => ({ tool: t.tool, calls: t.calls, denied: t.denied })),
    top_users: users.map((u) => ({ user_id: u.user, email: emails.get(u.user) ?? null, calls: u.calls, denied: u.denied })),
  };
}
