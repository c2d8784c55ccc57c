// The control plane's verification checks the per-hour roll-ups against the records (rollup-check.ts),
// on the real app (SQLite, and PostgreSQL with SVC_TEST_POSTGRES_URL). The red team's path:
// someone with write access to the database lowers a count in audit_hourly_usage (or marks
// counted rows as pending, or unmarks pending ones) to widen budgets without touching a record,
// so the chains and checkpoints still verify. Verify now must name it, and budgets must stop
// reading the roll-ups until a run finds them equal again. An untouched store (several hours,
// retention cutting inside an hour, rows an older replica left pending) has no finding.
import { expect, test } from "bun:test";
import { and, eq, inArray } from "drizzle-orm";
import { AuditChain } from "../../proxy/audit/chain.ts";
import { verificationSettled } from "../audit-chain/verify-store.ts";
import { tables } from "../db/index.ts";
import { addInstallation } from "../runtime/fixtures.ts";
import { type TestControlPlane, testControlPlane } from "../testing.ts";
import { actingAsSystem } from "./admin-events.ts";
import { recordRow } from "./ingest.ts";
import { runRetention } from "./retention.ts";
import { checkRollups } from "./rollup-check.ts";
import { lowerCalls, lowerUsage, makeRecords } from "./rollup-fixtures.ts";
import { spendOf } from "./usage.ts";

const DAY = 86_400_000;

async function storeWithRecords(n = 120) {
  const cp = await testControlPlane();
  const inst = await addInstallation(cp);
  const chain = new AuditChain();
  const now = cp.deps.now();
  const records = makeRecords(inst, chain, now, n);
  expect((await cp.call("POST", "/api/v1/runtime/audit-records", { token: inst.token, body: { records } })).json.inserted).toBe(n);
  expect((await cp.call("POST", cp.org("/audit-checkpoints"))).status).toBe(201);
  return { cp, inst, chain, now, records };
}

async function verifyNow(cp: TestControlPlane) {
  expect((await cp.call("POST", cp.org("/audit-verifications"))).status).toBe(202);
  await verificationSettled(cp.orgId);
  return (await cp.call("GET", cp.org("/audit-verifications/latest"))).json as {
    state: string;
    problems: number;
    detail: string | null;
    rollup_mismatches: number;
    rollup_detail: string | null;
  };
}

test("a count lowered in audit_hourly_usage fails Verify now as rollup_mismatch, and budgets then sum the records", async () => {
  const { cp, now } = await storeWithRecords();
  const clean = await verifyNow(cp);
  expect(clean).toMatchObject({ state: "verified", problems: 0, rollup_mismatches: 0, rollup_detail: null });
  const since = now - 30 * DAY;
  const spent = await spendOf(cp.deps.db, cp.orgId, { userIds: ["usr_a"] }, since);
  expect(spent.calls).toBeGreaterThan(0);

  // The attack: one hour of usr_a's usage made smaller, by SQL; no record touched.
  const row = await lowerUsage(cp.deps.db, cp.orgId, "usr_a", { calls: 1, promptTokens: 5 });
  // the hole: budgets read the roll-ups, so usr_a's spend shrank
  expect((await spendOf(cp.deps.db, cp.orgId, { userIds: ["usr_a"] }, since)).calls).toBe(spent.calls - 1);

  const run = await verifyNow(cp);
  expect(run).toMatchObject({ state: "tampered", problems: 1, rollup_mismatches: 1 });
  const hour = new Date(row!.hour).toISOString();
  expect(run.rollup_detail).toBe(
    `roll-up audit_hourly_usage of organization ${cp.orgId} for the hour from ${hour} (user_id usr_a, model ${row!.model}, agent_id ${row!.agentId}, replica_id ${row!.replicaId || "(none)"}) holds ${row!.calls - 1} calls, ${row!.promptTokens - 5} prompt tokens, ${row!.completionTokens} completion tokens, cost ${row!.cost}; its records give ${row!.calls} calls, ${row!.promptTokens} prompt tokens, ${row!.completionTokens} completion tokens, cost ${row!.cost}`,
  );
  expect(run.detail).toBe(run.rollup_detail);
  // budgets no longer trust the roll-ups: the spend is the records' again
  expect((await spendOf(cp.deps.db, cp.orgId, { userIds: ["usr_a"] }, since)).calls).toBe(spent.calls);

  // A rolling upgrade: a replica of the release before the check finishes a run after this one.
  // It writes no rollup_detail and 0 mismatches (the column's default); it must not lift the finding.
  const later = cp.deps.now() + 1000;
  await cp.deps.db.insert(tables(cp.deps.db).auditVerifications).values({ id: "aver_01OLDRELEASE000000000000", orgId: cp.orgId, startedAt: later, finishedAt: later, state: "verified" });
  expect((await spendOf(cp.deps.db, cp.orgId, { userIds: ["usr_a"] }, since)).calls).toBe(spent.calls);
}, 60_000);

test("a decision count lowered, a roll-up row deleted, or a row's rollup_pending flipped either way: each is a finding", async () => {
  const { cp, inst, chain, now } = await storeWithRecords();
  const t = tables(cp.deps.db);
  const db = cp.deps.db;
  const calls = await db.select().from(t.auditHourlyCalls).where(eq(t.auditHourlyCalls.orgId, cp.orgId)).orderBy(t.auditHourlyCalls.hour).limit(2);
  await lowerCalls(db, calls[0]!);
  let check = await checkRollups(db, cp.orgId);
  expect(check.mismatches).toBe(1);
  expect(check.first[0]).toMatchObject({
    kind: "rollup_mismatch",
    table: "audit_hourly_calls",
    org_id: cp.orgId,
    hour: new Date(calls[0]!.hour).toISOString(),
    rollup: { calls: calls[0]!.calls - 1 },
    records: { calls: calls[0]!.calls },
  });
  await db.delete(t.auditHourlyUsage).where(eq(t.auditHourlyUsage.orgId, cp.orgId));
  check = await checkRollups(db, cp.orgId);
  expect(check.mismatches).toBeGreaterThan(1);
  expect(check.first.some((m) => m.table === "audit_hourly_usage" && m.rollup.calls === 0 && m.records.calls > 0)).toBe(true);

  // rollup_pending, which no chain covers: a counted outcome marked pending (budgets would add it
  // twice, and the roll-ups now hold a row the records do not give)…
  const fresh = await storeWithRecords();
  const a = tables(fresh.cp.deps.db).auditRecords;
  const [outcome] = await fresh.cp.deps.db
    .select({ id: a.id })
    .from(a)
    .where(and(eq(a.orgId, fresh.cp.orgId), eq(a.kind, "outcome")))
    .limit(1);
  await fresh.cp.deps.db.update(a).set({ rollupPending: true }).where(eq(a.id, outcome!.id));
  expect((await checkRollups(fresh.cp.deps.db, fresh.cp.orgId)).mismatches).toBe(1);
  // …and an older replica's pending rows marked counted without being added (budgets would leave them out)
  const older = makeRecords(inst, chain, now, 20, 500).map((r) => ({ ...recordRow(r, now), rollupPending: true }));
  await db.insert(t.auditRecords).values(older);
  const before = (await checkRollups(db, cp.orgId)).mismatches;
  await db
    .update(t.auditRecords)
    .set({ rollupPending: false })
    .where(
      inArray(
        t.auditRecords.id,
        older.map((r) => r.id),
      ),
    );
  expect((await checkRollups(db, cp.orgId)).mismatches).toBeGreaterThan(before);
}, 60_000);

test("an untouched store has no finding: many hours, retention cutting inside an hour, rows an older replica left pending", async () => {
  const { cp, inst, chain, now } = await storeWithRecords(200);
  const t = tables(cp.deps.db);
  // rows an older replica stored without counting them (rollup-fold.ts), not folded yet
  const older = makeRecords(inst, chain, now, 40, 200).map((r) => ({ ...recordRow(r, now), chainId: null, chainSeq: null, chainPrev: null, rollupPending: true }));
  await cp.deps.db.insert(t.auditRecords).values(older);
  // retention at a cut that is not the top of an hour
  expect((await cp.call("PATCH", cp.org("/settings"), { body: { audit_retention_days: 4 } })).status).toBe(200);
  expect((await runRetention(cp.deps, cp.orgId, actingAsSystem(cp.deps, "retention"))).deleted).toBeGreaterThan(0);
  const check = await checkRollups(cp.deps.db, cp.orgId);
  expect(check).toMatchObject({ mismatches: 0, first: [] });
  expect(check.hours).toBeGreaterThan(20);
  // the whole run: the rows inserted here by hand are in no store chain (a chain finding of its
  // own, which this test does not look at), and never a roll-up finding
  expect((await verifyNow(cp)).rollup_mismatches).toBe(0);
}, 60_000);
