// The per-hour roll-ups (rollups.ts) always equal the sums of the records they stand for, on the
// real app (SQLite, and PostgreSQL with SVC_TEST_POSTGRES_URL): after ingest of records that
// arrive late and out of order, after a resent batch (duplicates count once), after retention
// deleted records, and as the migration fills them for records stored before them. The console's
// activity and `svc usage` read them and give what the records give.
import { expect, test } from "bun:test";
import { eq, inArray, sql } from "drizzle-orm";
import type { AuditRecord } from "../../contract/audit.ts";
import { AuditChain } from "../../proxy/audit/chain.ts";
import { rawStatements, tables } from "../db/index.ts";
import { MIGRATIONS as PG_MIGRATIONS } from "../db/migrations-pg/index.ts";
import { MIGRATIONS as SQLITE_MIGRATIONS } from "../db/migrations/index.ts";
import { addInstallation } from "../runtime/fixtures.ts";
import { type TestControlPlane, testControlPlane } from "../testing.ts";
import { auditActivity } from "./activity.ts";
import { actingAsSystem } from "./admin-events.ts";
import { recordRow } from "./ingest.ts";
import { runRetention } from "./retention.ts";
import { foldPending } from "./rollup-fold.ts";
import { hourOf, rollupDeltas } from "./rollups.ts";
import { spendOf, usageBy, usageSeries } from "./usage.ts";
import { makeRecords } from "./rollup-fixtures.ts";

const DAY = 86_400_000;
const HOUR = 3_600_000;
const round = (x: number) => Math.round(x * 1e6) / 1e6;

/** The roll-up tables' rows, and what the stored records add up to, in one comparable form. */
async function rollupsAndRecords(cp: TestControlPlane) {
  const t = tables(cp.deps.db);
  const rows = await cp.deps.db.select().from(t.auditRecords).where(eq(t.auditRecords.orgId, cp.orgId));
  const expected = rollupDeltas(rows);
  const norm = (list: Array<Record<string, unknown>>) =>
    list
      .filter((r) => r.orgId === cp.orgId && (r.calls as number) !== 0)
      .map((r) =>
        JSON.stringify(
          Object.keys(r)
            .sort()
            .map((k) => [k, typeof r[k] === "number" ? round(r[k] as number) : r[k]]),
        ),
      )
      .sort();
  return {
    records: rows,
    actual: { calls: norm(await cp.deps.db.select().from(t.auditHourlyCalls)), usage: norm(await cp.deps.db.select().from(t.auditHourlyUsage)) },
    expected: { calls: norm(expected.calls), usage: norm(expected.usage) },
  };
}

async function expectRollupsMatch(cp: TestControlPlane): Promise<AuditRecordRow[]> {
  const { actual, expected, records } = await rollupsAndRecords(cp);
  expect(actual).toEqual(expected);
  return records;
}
type AuditRecordRow = Awaited<ReturnType<typeof rollupsAndRecords>>["records"][number];

/** Model usage summed straight from records, as `svc usage --by user` reports it. */
function usageOfRecords(records: AuditRecordRow[], since: number, until: number | null) {
  const out = new Map<string | null, { calls: number; tokens: number; cost: number }>();
  for (const r of records) {
    if (r.kind !== "outcome" || r.action !== "model:invoke" || r.ts < since || (until !== null && r.ts >= until)) continue;
    const u = out.get(r.userId) ?? { calls: 0, tokens: 0, cost: 0 };
    out.set(r.userId, { calls: u.calls + 1, tokens: u.tokens + (r.promptTokens ?? 0) + (r.completionTokens ?? 0), cost: round(u.cost + (r.cost ?? 0)) });
  }
  return [...out].map(([key, v]) => ({ key, ...v })).sort((x, y) => String(x.key).localeCompare(String(y.key)));
}

async function expectUsageFromRollupsEqualsRecords(cp: TestControlPlane, records: AuditRecordRow[], now: number) {
  // a range that starts and ends inside hours (parts from records) and one open at the end
  for (const [since, until] of [
    [now - 9 * DAY - 17 * 60_000, now - DAY + 7 * 60_000],
    [now - 30 * DAY, null],
    [hourOf(now - 3 * DAY), hourOf(now)],
    [now - 2 * HOUR + 1, now - HOUR - 1],
  ] as const) {
    const got = (await usageBy(cp.deps.db, cp.orgId, "user", { since, until }))
      .map((r) => ({ key: r.key, calls: r.calls, tokens: r.total_tokens, cost: round(r.cost) }))
      .sort((x, y) => String(x.key).localeCompare(String(y.key)));
    expect({ since, until, got }).toEqual({ since, until, got: usageOfRecords(records, since, until) });
  }
  const series = await usageSeries(cp.deps.db, cp.orgId, "model", "day", { since: now - 30 * DAY });
  expect(series.reduce((s, p) => s + p.total_tokens, 0)).toBe(usageOfRecords(records, 0, null).reduce((s, u) => s + u.tokens, 0));
  const spend = await spendOf(cp.deps.db, cp.orgId, { userIds: ["usr_a"] }, now - 5 * DAY - 1234);
  expect(spend.calls).toBe(usageOfRecords(records, now - 5 * DAY - 1234, null).find((u) => u.key === "usr_a")?.calls ?? 0);
}

test("roll-ups equal the records' sums through late, out-of-order and resent batches, and after retention", async () => {
  const cp = await testControlPlane();
  const inst = await addInstallation(cp);
  const chain = new AuditChain();
  const now = cp.deps.now();
  const records = makeRecords(inst, chain, now, 120);
  const ship = async (batch: AuditRecord[]) => (await cp.call("POST", "/api/v1/runtime/audit-records", { token: inst.token, body: { records: batch } })).json;
  expect((await ship(records.slice(0, 50))).inserted).toBe(50);
  expect((await ship(records.slice(50, 90))).inserted).toBe(40);
  // the proxy resends a batch it did not see acknowledged, with new records behind it
  const resent = await ship(records.slice(40, 120));
  expect(resent).toMatchObject({ inserted: 30, duplicates: 50 });
  let stored = await expectRollupsMatch(cp);
  expect(stored.filter((r) => r.kind !== "admin")).toHaveLength(120);
  await expectUsageFromRollupsEqualsRecords(cp, stored, now);

  // the console's activity: whole hours from the top of the hour its window starts in
  const activity = await auditActivity(cp.deps.db, cp.orgId, now - 7 * DAY, now);
  const counted = stored.filter((r) => (r.kind === "tool" || r.kind === "model") && r.task === null && r.ts >= hourOf(now - 7 * DAY));
  expect(activity.since).toBe(new Date(hourOf(now - 7 * DAY)).toISOString());
  expect(activity.hours.reduce((s, h) => s + h.permit + h.deny, 0)).toBe(counted.length);
  expect(activity.hours.reduce((s, h) => s + h.deny, 0)).toBe(counted.filter((r) => r.decision !== "permit").length);
  const mailSend = counted.filter((r) => r.toolName === "mail.send");
  expect(activity.top_tools.find((t) => t.tool === "mail.send")).toEqual({ tool: "mail.send", calls: mailSend.length, denied: mailSend.filter((r) => r.decision !== "permit").length });
  expect(activity.top_users.map((u) => u.user_id).sort()).toEqual(["usr_a", "usr_b"]);

  // retention: what it deletes leaves the roll-ups with it (records dated before the cut that
  // follow a newer one in their chain stay, and stay counted)
  expect((await cp.call("PATCH", cp.org("/settings"), { body: { audit_retention_days: 4 } })).status).toBe(200);
  const report = await runRetention(cp.deps, cp.orgId, actingAsSystem(cp.deps, "retention"));
  expect(report.deleted).toBeGreaterThan(0);
  stored = await expectRollupsMatch(cp);
  expect(stored.filter((r) => r.kind !== "admin").length).toBe(120 - report.deleted);
  await expectUsageFromRollupsEqualsRecords(cp, stored, now);
}, 60_000);

test("the migration fills the roll-ups for records stored before them", async () => {
  const cp = await testControlPlane();
  const inst = await addInstallation(cp);
  const now = cp.deps.now();
  expect((await cp.call("POST", "/api/v1/runtime/audit-records", { token: inst.token, body: { records: makeRecords(inst, new AuditChain(), now, 60) } })).json.inserted).toBe(60);
  const t = tables(cp.deps.db);
  // as before the migration: records, and no roll-ups
  await cp.deps.db.delete(t.auditHourlyCalls);
  await cp.deps.db.delete(t.auditHourlyUsage);
  const migration = (cp.store.dialect === "postgres" ? PG_MIGRATIONS : SQLITE_MIGRATIONS).find((m) =>
    m.tag.endsWith(cp.store.dialect === "postgres" ? "_audit_rollups_fill" : "_audit_rollup_pending"),
  )!;
  const fills = migration.sql.split("--> statement-breakpoint").filter((s) => /INSERT INTO "audit_hourly_/.test(s));
  expect(fills).toHaveLength(2);
  for (const statement of fills) await rawStatements(cp.deps.db).rows(statement, []);
  const stored = await expectRollupsMatch(cp);
  await expectUsageFromRollupsEqualsRecords(cp, stored, now);
}, 60_000);

test("records an older replica stores during a rolling upgrade count in budgets and usage at once, and in the roll-ups once folded", async () => {
  const cp = await testControlPlane();
  const inst = await addInstallation(cp);
  const chain = new AuditChain();
  const now = cp.deps.now();
  const records = makeRecords(inst, chain, now, 200);
  expect((await cp.call("POST", "/api/v1/runtime/audit-records", { token: inst.token, body: { records: records.slice(0, 100) } })).json.inserted).toBe(100);
  // An older release's INSERT names the columns it knows: not rollup_pending, and it adds nothing
  // to the roll-ups. On PostgreSQL the column's default marks such rows pending; SQLite has no
  // older writer (one replica), so there the test marks them as PostgreSQL would.
  const t = tables(cp.deps.db);
  const older = records.slice(100).map((r) => {
    const { rollupPending: _, ...row } = recordRow(r, now);
    return row;
  });
  await cp.deps.db.insert(t.auditRecords).values(older);
  const ids = older.map((r) => r.id);
  if (cp.store.dialect === "sqlite") await cp.deps.db.update(t.auditRecords).set({ rollupPending: true }).where(inArray(t.auditRecords.id, ids));
  const pending = await cp.deps.db.select({ id: t.auditRecords.id }).from(t.auditRecords).where(sql`${t.auditRecords.rollupPending}`);
  expect(pending.map((r) => r.id).sort()).toEqual([...ids].sort());

  // budgets and usage count them at once: a budget never sees less than was spent
  let stored = (await rollupsAndRecords(cp)).records;
  expect(stored.filter((r) => r.kind !== "admin")).toHaveLength(200);
  await expectUsageFromRollupsEqualsRecords(cp, stored, now);
  const spent = usageOfRecords(stored, now - 30 * DAY, null).find((u) => u.key === "usr_b")!;
  expect((await spendOf(cp.deps.db, cp.orgId, { userIds: ["usr_b"] }, now - 30 * DAY)).calls).toBe(spent.calls);

  // two replicas folding at once count each row once; then the roll-ups hold everything
  const folded = await Promise.all([foldPending(cp.deps.db, { slice: 7 }), foldPending(cp.deps.db, { slice: 7 })]);
  expect(folded[0] + folded[1]).toBe(100);
  expect(await foldPending(cp.deps.db)).toBe(0);
  stored = await expectRollupsMatch(cp);
  await expectUsageFromRollupsEqualsRecords(cp, stored, now);

  // retention takes away only what the roll-ups hold: a pending row deleted takes nothing
  const late = makeRecords(inst, chain, now, 40, 200).map((r) => {
    const { rollupPending: _, ...row } = recordRow(r, now);
    return { ...row, chainId: null, chainSeq: null, chainPrev: null, rollupPending: true };
  });
  await cp.deps.db.insert(t.auditRecords).values(late);
  expect((await cp.call("PATCH", cp.org("/settings"), { body: { audit_retention_days: 4 } })).status).toBe(200);
  expect((await runRetention(cp.deps, cp.orgId, actingAsSystem(cp.deps, "retention"))).deleted).toBeGreaterThan(0);
  await foldPending(cp.deps.db);
  stored = await expectRollupsMatch(cp);
  await expectUsageFromRollupsEqualsRecords(cp, stored, now);
}, 60_000);
