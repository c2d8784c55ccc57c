// The periodic verification (verify-schedule.ts), on the real app (SQLite, and PostgreSQL with
// SVC_TEST_POSTGRES_URL). The red team's path it closes: someone with write access to the
// database lowers a per-hour roll-up to widen budgets, and nobody presses Verify now. The
// scheduled run finds it within the period, and budgets sum the records again.
import { expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { CommandFailure } from "../../command/index.ts";
import { AuditChain } from "../../proxy/audit/chain.ts";
import { lowerUsage, makeRecords } from "../audit/rollup-fixtures.ts";
import { spendOf } from "../audit/usage.ts";
import { serveSettings } from "../config.ts";
import { tables } from "../db/index.ts";
import { addInstallation } from "../runtime/fixtures.ts";
import { type TestControlPlane, testControlPlane } from "../testing.ts";
import { verifyDueOrganizations } from "./verify-schedule.ts";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/** The control plane's clock, moved on by `later` (a run's seal covers its start: a row aged by SQL no longer counts). */
let clock = Date.now();
const later = (ms: number) => (clock += ms);

async function storeWithRecords(config: { auditVerifyHours?: number } = {}) {
  clock = Date.now();
  const cp = await testControlPlane({ config, now: () => clock });
  const inst = await addInstallation(cp);
  const now = cp.deps.now();
  const records = makeRecords(inst, new AuditChain(), now, 60);
  expect((await cp.call("POST", "/api/v1/runtime/audit-records", { token: inst.token, body: { records } })).json.inserted).toBe(60);
  return { cp, now };
}

const latest = async (cp: TestControlPlane) => (await cp.call("GET", cp.org("/audit-verifications/latest"))).json as { state: string; started_at: string; rollup_mismatches: number } | null;

/** Rewrites every run's start by SQL to `ago` before now, as someone with database access could. */
async function redateRuns(cp: TestControlPlane, ago: number) {
  const v = tables(cp.deps.db).auditVerifications;
  await cp.deps.db
    .update(v)
    .set({ startedAt: cp.deps.now() - ago })
    .where(eq(v.orgId, cp.orgId));
}

test("an organization never verified is verified on schedule; within the period it is not verified again; after it, it is", async () => {
  const { cp } = await storeWithRecords();
  expect((await cp.call("GET", cp.org("/audit-verifications/latest"))).status).toBe(404);
  expect(await verifyDueOrganizations(cp.deps)).toEqual([cp.orgId]);
  const first = await latest(cp);
  expect(first).toMatchObject({ state: "unsigned", rollup_mismatches: 0 });
  // within the default period of 24 hours: nothing new
  later(23 * HOUR);
  expect(await verifyDueOrganizations(cp.deps)).toEqual([]);
  // past it: a new run
  later(2 * HOUR);
  const before = Date.parse((await latest(cp))!.started_at);
  expect(await verifyDueOrganizations(cp.deps)).toEqual([cp.orgId]);
  expect(Date.parse((await latest(cp))!.started_at)).toBeGreaterThan(before);
});

test("a roll-up lowered by SQL is found by the scheduled run, with nobody pressing Verify now, and budgets sum the records again", async () => {
  const { cp, now } = await storeWithRecords();
  expect(await verifyDueOrganizations(cp.deps)).toEqual([cp.orgId]);
  const since = now - 30 * DAY;
  const spent = await spendOf(cp.deps.db, cp.orgId, { userIds: ["usr_a"] }, since);
  expect(spent.calls).toBeGreaterThan(0);

  await lowerUsage(cp.deps.db, cp.orgId, "usr_a", { calls: 1 });
  expect((await spendOf(cp.deps.db, cp.orgId, { userIds: ["usr_a"] }, since)).calls).toBe(spent.calls - 1);

  later(25 * HOUR);
  expect(await verifyDueOrganizations(cp.deps)).toEqual([cp.orgId]);
  expect(await latest(cp)).toMatchObject({ state: "tampered", rollup_mismatches: 1 });
  expect((await spendOf(cp.deps.db, cp.orgId, { userIds: ["usr_a"] }, since)).calls).toBe(spent.calls);
});

test("a run dated in the future, written into the store by someone with database access, does not postpone the schedule", async () => {
  const { cp } = await storeWithRecords();
  expect(await verifyDueOrganizations(cp.deps)).toEqual([cp.orgId]);
  await redateRuns(cp, -365 * DAY);
  expect(await verifyDueOrganizations(cp.deps)).toEqual([cp.orgId]);
});

test("a run written into the store by someone with database access (running, or finished and equal, dated now) does not postpone the schedule", async () => {
  const { cp } = await storeWithRecords();
  expect(await verifyDueOrganizations(cp.deps)).toEqual([cp.orgId]);
  later(25 * HOUR);
  const v = tables(cp.deps.db).auditVerifications;
  const real = (await cp.deps.db.select().from(v).where(eq(v.orgId, cp.orgId)))[0]!;
  await cp.deps.db.insert(v).values([
    { id: "avr_forged_running", orgId: cp.orgId, startedAt: cp.deps.now(), state: "running" },
    // a finished look-alike, with the real run's seal copied onto it
    { ...real, id: "avr_forged_equal", startedAt: cp.deps.now() - HOUR, finishedAt: cp.deps.now() },
  ]);
  expect(await verifyDueOrganizations(cp.deps)).toEqual([cp.orgId]);
  // the run that just finished, sealed, does postpone it
  expect(await verifyDueOrganizations(cp.deps)).toEqual([]);
});

test("SVC_CP_AUDIT_VERIFY_HOURS=0 turns the schedule off", async () => {
  const { cp } = await storeWithRecords({ auditVerifyHours: 0 });
  expect(await verifyDueOrganizations(cp.deps)).toEqual([]);
  expect((await cp.call("GET", cp.org("/audit-verifications/latest"))).status).toBe(404);
});

test("SVC_CP_AUDIT_VERIFY_HOURS is read from the environment and a bad value is refused, naming it", () => {
  const settings = (v: string | undefined) => serveSettings({ dataDir: "/tmp/svc-verify-schedule" }, { SVC_CP_AUDIT_VERIFY_HOURS: v } as NodeJS.ProcessEnv);
  expect(settings(undefined).config.auditVerifyHours).toBe(24);
  expect(settings("168").config.auditVerifyHours).toBe(168);
  expect(settings("0").config.auditVerifyHours).toBe(0);
  for (const bad of ["-1", "721", "1.5", "daily"]) {
    expect(() => settings(bad)).toThrow(CommandFailure);
    expect(() => settings(bad)).toThrow(`SVC_CP_AUDIT_VERIFY_HOURS="${bad}" must be a whole number of hours from 0 (never) to 720`);
  }
});
