// Admin notices (issue 27): the steps that two people must see, shown in the console to every
// owner and admin of the organization but the one who acted, on the overview (what they see on
// sign-in) and on the escrow page, until each dismisses it for themselves. A notice is posted
// in the transaction of the step it announces, beside that step's admin event; the event is
// what the SIEM sinks deliver (at severity high), the notice is what the people see.
import { and, desc, eq, isNull, ne } from "drizzle-orm";
import { SvcError } from "../../contract/errors.ts";
import { newId } from "../../contract/ids.ts";
import { type Db, tables } from "../db/index.ts";

/** The newest notices shown; older undismissed ones wait behind them. */
export const NOTICES_SHOWN = 20;

export type Notice = { id: string; action: string; result: "ok" | "refused"; text: string; ref: string | null; event_id: string | null; created_at: string };

/** Posts a notice in the caller's transaction; returns its id. */
export async function postNotice(
  tx: Db,
  n: { orgId: string; action: string; result: "ok" | "refused"; actorAccountId: string; text: string; ref?: string | null; eventId?: string | null },
  now: number,
): Promise<string> {
  const id = newId("notice", now);
  await tx
    .insert(tables(tx).adminNotices)
    .values({ id, orgId: n.orgId, action: n.action, result: n.result, actorAccountId: n.actorAccountId, text: n.text, ref: n.ref ?? null, eventId: n.eventId ?? null, createdAt: now });
  return id;
}

/** The notices `accountId` has not dismissed and did not cause, newest first. */
export async function openNotices(db: Db, orgId: string, accountId: string): Promise<Notice[]> {
  const { adminNotices: n, adminNoticeDismissals: d } = tables(db);
  const rows = await db
    .select({ id: n.id, action: n.action, result: n.result, text: n.text, ref: n.ref, eventId: n.eventId, createdAt: n.createdAt })
    .from(n)
    .leftJoin(d, and(eq(d.noticeId, n.id), eq(d.accountId, accountId)))
    .where(and(eq(n.orgId, orgId), ne(n.actorAccountId, accountId), isNull(d.noticeId)))
    .orderBy(desc(n.id))
    .limit(NOTICES_SHOWN);
  return rows.map((r) => ({ id: r.id, action: r.action, result: r.result, text: r.text, ref: r.ref, event_id: r.eventId, created_at: new Date(r.createdAt).toISOString() }));
}

/** Dismisses a notice for `accountId` alone; dismissing it twice keeps the first time. */
export async function dismissNotice(db: Db, orgId: string, accountId: string, id: string, now: number): Promise<void> {
  const { adminNotices: n, adminNoticeDismissals: d } = tables(db);
  const [row] = await db
    .select({ id: n.id })
    .from(n)
    .where(and(eq(n.orgId, orgId), eq(n.id, id)));
  if (!row) throw new SvcError("not_found", `notice ${id} not found`);
  await db.insert(d).values({ noticeId: id, accountId, dismissedAt: now }).onConflictDoNothing();
}
