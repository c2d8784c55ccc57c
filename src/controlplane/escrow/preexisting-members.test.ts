// Memberships made before grants were recorded (issue 27): the migration gives each one grant
// of kind "unknown" with no grantor, so the provenance rule cannot refuse their approvals (the
// chain stops there; the age, IdP and sign-in rules still hold), and the approval says so in
// its admin event and notice. The migration's own SQL is run, on SQLite and on PostgreSQL.
import { expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { rawStatements, tables } from "../db/index.ts";
import { MIGRATIONS as PG_MIGRATIONS } from "../db/migrations-pg/index.ts";
import { MIGRATIONS as SQLITE_MIGRATIONS } from "../db/migrations/index.ts";
import { addMemberAs, freshToken, world } from "./test-fixtures.ts";

/** The statement of the two-person migration that back-fills grants for existing memberships. */
function backfill(dialect: "sqlite" | "postgres"): string {
  const m = (dialect === "postgres" ? PG_MIGRATIONS : SQLITE_MIGRATIONS).find((x) => x.tag.endsWith("_two_person_rule"))!;
  return m.sql.split("--> statement-breakpoint").find((s) => s.includes("INSERT INTO"))!;
}

test("memberships from before the grant records count as of unknown provenance: approvals pass that rule and say so", async () => {
  const w = await world();
  const { cp } = w;
  // An admin the owner made, before grants were recorded: the record of who made it is gone.
  const legacyId = await addMemberAs(cp, cp.adminToken, "legacy.admin@example.com", "admin");
  w.clock.advance(25 * 3_600_000);
  const db = cp.deps.db;
  const { membershipGrants: g, memberships: m } = tables(db);
  await db.delete(g);
  const raw = rawStatements(db);
  await raw.rows(backfill(raw.dialect), []);
  const members = await db.select().from(m).where(eq(m.orgId, cp.orgId));
  const grants = await db.select().from(g);
  expect(grants).toHaveLength(members.length);
  for (const mb of members) {
    expect(grants.filter((x) => x.accountId === mb.accountId)).toEqual([
      { id: `mgr_unknown_${cp.orgId}_${mb.accountId}`, orgId: cp.orgId, accountId: mb.accountId, kind: "unknown", role: mb.role, previousRole: null, byAccountId: null, at: mb.createdAt },
    ]);
  }

  const id = (await cp.call("POST", cp.org("/audit-recovery-requests"), { body: { record_id: w.escrowed.id, reason: "incident" } })).json.id as string;
  // The other rules still hold for it: a sign-in 6 minutes old is refused.
  const earlier = await freshToken(cp, legacyId);
  w.clock.advance(6 * 60_000);
  expect((await cp.call("POST", cp.org(`/audit-recovery-requests/${id}/approve`), { token: earlier })).json.code).toBe("recovery_stale_sign_in");
  const res = await cp.call("POST", cp.org(`/audit-recovery-requests/${id}/approve`), { token: await freshToken(cp, legacyId) });
  expect(res.status).toBe(200);
  const [event] = (await cp.call("GET", cp.org("/audit-records?kind=admin"))).json.records as Array<Record<string, any>>;
  expect(event!.admin).toMatchObject({ result: "ok", after: { approver_provenance: "unknown" } });
  expect(event!.reason).toContain("who granted legacy.admin@example.com's membership is not known");
  const notices = (await cp.call("GET", cp.org("/notices"))).json.notices as Array<{ action: string; text: string }>;
  expect(notices.find((n) => n.action === "audit:recovery.approve")!.text).toContain("is not known");

  // Grants made after the upgrade are recorded again: one the owner makes now is refused.
  const puppetId = await addMemberAs(cp, cp.adminToken, "new.puppet@example.com", "admin");
  w.clock.advance(25 * 3_600_000);
  const id2 = (await cp.call("POST", cp.org("/audit-recovery-requests"), { body: { record_id: w.escrowed.id, reason: "again" } })).json.id as string;
  expect((await cp.call("POST", cp.org(`/audit-recovery-requests/${id2}/approve`), { token: await freshToken(cp, puppetId) })).json.code).toBe("recovery_approver_provenance");
});
