// The tables of admin notices (issue 27): what the console shows every owner and admin until
// each of them dismisses it (the steps of an escrow recovery, a change of its rule). Declared
// once for both stores (db/table.ts, db/README.md).
import { accounts } from "../auth/tables.ts";
import { table } from "../db/table.ts";
import { organizations } from "../organizations/tables.ts";

export const adminNotices = table(
  "admin_notices",
  (c) => ({
    id: c.text("id").primaryKey(),
    orgId: c
      .text("org_id")
      .notNull()
      .references(() => organizations.id),
    /** The admin event's action (`audit:recovery.approve`) and result: the notice announces that event. */
    action: c.text("action").notNull(),
    result: c.text("result", { enum: ["ok", "refused"] }).notNull(),
    /** Who acted: they are not notified of their own step. */
    actorAccountId: c
      .text("actor_account_id")
      .notNull()
      .references(() => accounts.id),
    /** What happened, in words; never secret material. */
    text: c.text("text").notNull(),
    /** The object it is about (a recovery request id), and the admin event's audit record id. */
    ref: c.text("ref"),
    eventId: c.text("event_id"),
    createdAt: c.millis("created_at").notNull(),
  }),
  (t, c) => [c.index("admin_notices_org_id").on(t.orgId, t.id)],
);

/** Who dismissed which notice: each owner and admin dismisses it for themselves. */
export const adminNoticeDismissals = table(
  "admin_notice_dismissals",
  (c) => ({
    noticeId: c
      .text("notice_id")
      .notNull()
      .references(() => adminNotices.id),
    accountId: c
      .text("account_id")
      .notNull()
      .references(() => accounts.id),
    dismissedAt: c.millis("dismissed_at").notNull(),
  }),
  (t, c) => [c.primaryKey({ columns: [t.noticeId, t.accountId] })],
);
