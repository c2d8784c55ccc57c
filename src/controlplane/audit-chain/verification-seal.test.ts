// A verification's finding cannot be lifted by someone with write access to the database
// (verification-seal.ts, verify-trail.ts, rollup-trust.ts), on the real app (SQLite, and
// PostgreSQL with SVC_TEST_POSTGRES_URL). The attack: lower a roll-up by SQL (budgets widen),
// and once a run has named it (budgets sum the records again), make the finding go away by
// inserting a later "equal" run, editing the finding, or deleting it. Each path keeps budgets
// on the records; every run is an admin event of the trail with its seal.
import { expect, test } from "bun:test";
import { generateKeyPairSync } from "node:crypto";
import { and, desc, eq } from "drizzle-orm";
import { publicKeyText } from "../../contract/audit-chain.ts";
import { AuditChain } from "../../proxy/audit/chain.ts";
import { recordAdminEvent, systemActor } from "../audit/admin-events.ts";
import { lowerUsage, makeRecords } from "../audit/rollup-fixtures.ts";
import { spendOf } from "../audit/usage.ts";
import { tables } from "../db/index.ts";
import { addInstallation } from "../runtime/fixtures.ts";
import { type TestControlPlane, testControlPlane } from "../testing.ts";
import { rollupsDistrusted } from "./rollup-trust.ts";
import { sealVerification } from "./verification-seal.ts";
import { verifyDueOrganizations } from "./verify-schedule.ts";
import { verificationSettled } from "./verify-store.ts";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

async function verifyNow(cp: TestControlPlane) {
  expect((await cp.call("POST", cp.org("/audit-verifications"))).status).toBe(202);
  await verificationSettled(cp.orgId);
  return (await cp.call("GET", cp.org("/audit-verifications/latest"))).json as { id: string; state: string; problems: number; detail: string | null; rollup_mismatches: number };
}

/** A store whose roll-ups were lowered by SQL and a run that found it: budgets sum the records. */
async function findingMade() {
  const cp = await testControlPlane();
  const inst = await addInstallation(cp);
  const now = cp.deps.now();
  const records = makeRecords(inst, new AuditChain(), now, 60);
  expect((await cp.call("POST", "/api/v1/runtime/audit-records", { token: inst.token, body: { records } })).json.inserted).toBe(60);
  expect((await cp.call("POST", cp.org("/audit-checkpoints"))).status).toBe(201);
  expect((await verifyNow(cp)).state).toBe("verified");
  const since = now - 30 * DAY;
  const spend = async () => (await spendOf(cp.deps.db, cp.orgId, { userIds: ["usr_a"] }, since)).calls;
  const honest = await spend();
  expect(honest).toBeGreaterThan(0);
  await lowerUsage(cp.deps.db, cp.orgId, "usr_a", { calls: 1 });
  const lowered = await spend();
  expect(lowered).toBeLessThan(honest);
  const finding = await verifyNow(cp);
  expect(finding).toMatchObject({ state: "tampered" });
  expect(finding.rollup_mismatches).toBeGreaterThan(0);
  expect(await spend()).toBe(honest);
  return { cp, spend, honest, lowered, finding };
}

const v = (cp: TestControlPlane) => tables(cp.deps.db).auditVerifications;

/** What an attacker writes: a run after the finding that says all is equal. */
const equalRun = (cp: TestControlPlane, at: number) => ({
  id: "aver_01FORGED00000000000000000",
  orgId: cp.orgId,
  startedAt: at,
  finishedAt: at + 1,
  state: "verified" as const,
  records: 60,
  checkpoint: null,
  problems: 0,
  detail: null,
  rollupMismatches: 0,
  rollupDetail: "",
});

test("a later 'equal' run inserted by SQL does not lift the finding, unsigned, with a copied seal, or sealed by a key of the attacker's", async () => {
  const { cp, spend, honest } = await findingMade();
  const at = cp.deps.now() + 1000;
  const [finding] = await cp.deps.db
    .select()
    .from(v(cp))
    .where(eq(v(cp).orgId, cp.orgId))
    .orderBy(desc(v(cp).startedAt))
    .limit(1);
  const forged = equalRun(cp, at);
  await cp.deps.db.insert(v(cp)).values(forged);
  expect(await spend()).toBe(honest);
  // the finding's own seal copied onto it
  await cp.deps.db
    .update(v(cp))
    .set({ signature: finding!.signature })
    .where(eq(v(cp).id, forged.id));
  expect(await spend()).toBe(honest);
  // sealed by a key the attacker made, and that key's public half written where the key is stored
  const mine = generateKeyPairSync("ed25519");
  await cp.deps.db
    .update(tables(cp.deps.db).auditSigningKeys)
    .set({ publicKey: publicKeyText(mine.publicKey) })
    .where(eq(tables(cp.deps.db).auditSigningKeys.orgId, cp.orgId));
  await cp.deps.db
    .update(v(cp))
    .set({ signature: sealVerification(forged, mine.privateKey) })
    .where(eq(v(cp).id, forged.id));
  expect(await spend()).toBe(honest);
}, 60_000);

test("the finding edited into 'equal' by SQL does not lift it, and the next run names the change", async () => {
  const { cp, spend, honest, finding } = await findingMade();
  await cp.deps.db
    .update(v(cp))
    .set({ state: "verified", problems: 0, rollupMismatches: 0, rollupDetail: "", detail: null })
    .where(eq(v(cp).id, finding.id));
  expect(await spend()).toBe(honest);
  const next = await verifyNow(cp);
  expect(next.state).toBe("tampered");
  expect(next.detail).toBe(
    `verification ${finding.id} in audit_verifications (verified, 0 roll-up mismatches) is not what the admin trail recorded (tampered, ${finding.rollup_mismatches} roll-up mismatches): it was changed in the store`,
  );
}, 60_000);

test("the finding deleted by SQL does not lift it: this process saw it, and the next run names it missing", async () => {
  const { cp, spend, honest, finding } = await findingMade();
  await cp.deps.db.delete(v(cp)).where(eq(v(cp).id, finding.id));
  // the clean run before it is the latest again, sealed; this process has seen a newer one
  expect(await spend()).toBe(honest);
  const next = await verifyNow(cp);
  expect(next.state).toBe("tampered");
  expect(next.detail).toBe(
    `verification ${finding.id} of the admin trail (tampered, ${finding.rollup_mismatches} roll-up mismatches) is missing from audit_verifications: it was deleted from the store`,
  );
  expect(await spend()).toBe(honest);
}, 60_000);

test("every run is an admin event of the trail with its outcome and seal; a run of an older release (no seal) distrusts the roll-ups and is due at once", async () => {
  const { cp, spend, honest, lowered, finding } = await findingMade();
  const a = tables(cp.deps.db).auditRecords;
  const events = await cp.deps.db
    .select()
    .from(a)
    .where(and(eq(a.orgId, cp.orgId), eq(a.kind, "admin"), eq(a.action, "audit_verification.run")))
    .orderBy(a.id);
  expect(events.map((e) => e.target)).toEqual([expect.stringMatching(/^audit_verification:/), `audit_verification:${finding.id}`]);
  const [row] = await cp.deps.db
    .select()
    .from(v(cp))
    .where(eq(v(cp).id, finding.id));
  expect(JSON.parse(events[1]!.detail!)).toMatchObject({
    actor: { id: cp.accountId },
    after: { state: "tampered", rollup_mismatches: finding.rollup_mismatches, signature: row!.signature },
    severity: "high",
  });
  expect(events[1]!.storeChain).toBe("admin");

  // Repaired (the roll-ups put back) a day later; then a replica of the release before writes a
  // run without a seal: budgets keep summing the records, and a sealed run is due at once.
  await lowerUsage(cp.deps.db, cp.orgId, "usr_a", { calls: -1 });
  expect(honest).toBeGreaterThan(lowered);
  await cp.deps.db
    .update(v(cp))
    .set({ startedAt: cp.deps.now() - 25 * HOUR })
    .where(eq(v(cp).orgId, cp.orgId));
  await cp.deps.db.insert(v(cp)).values(equalRun(cp, cp.deps.now() - 1000));
  expect(await rollupsDistrusted(cp.deps.db, cp.orgId)).toBe(true);
  expect(await verifyDueOrganizations(cp.deps)).toEqual([cp.orgId]);
  // the scheduled run is the control plane's own, sealed, and finds the roll-ups equal: lifted
  const [scheduled] = await cp.deps.db
    .select()
    .from(a)
    .where(and(eq(a.orgId, cp.orgId), eq(a.action, "audit_verification.run")))
    .orderBy(desc(a.id))
    .limit(1);
  expect(scheduled!.actorId).toBe("system:controlplane");
  expect(await rollupsDistrusted(cp.deps.db, cp.orgId)).toBe(false);
  expect(await spend()).toBe(honest);
}, 60_000);

test("every run deleted by SQL, in a process that never saw one: the admin trail still names a run, so the roll-ups are distrusted", async () => {
  // A store never verified: the roll-ups are read, as before any run.
  const fresh = await testControlPlane();
  expect(await rollupsDistrusted(fresh.deps.db, fresh.orgId)).toBe(false);
  // A store after another replica's run whose row was then deleted: only its admin event
  // is left (written here as that replica wrote it, in the admin chains), and this process never saw the run.
  const cp = await testControlPlane();
  await cp.deps.db.transaction(async (tx) =>
    recordAdminEvent(
      tx,
      {
        orgId: cp.orgId,
        action: "audit_verification.run",
        actor: systemActor("controlplane"),
        target: { type: "audit_verification", id: "aver_01GONE0000000000000000000" },
        after: { state: "tampered" },
      },
      cp.deps.now(),
    ),
  );
  expect(
    await cp.deps.db
      .select()
      .from(v(cp))
      .where(eq(v(cp).orgId, cp.orgId)),
  ).toEqual([]);
  expect(await rollupsDistrusted(cp.deps.db, cp.orgId)).toBe(true);
}, 60_000);

test("a run that fails (the KMS down) is stored failed, in the trail, unsealed, and changes nothing budgets decide", async () => {
  const cp = await testControlPlane();
  expect(await verifyNow(cp)).toMatchObject({ state: "unsigned" });
  expect(await rollupsDistrusted(cp.deps.db, cp.orgId)).toBe(false);
  const kms = cp.deps.kms;
  cp.deps.kms = Object.assign(Object.create(kms) as typeof kms, {
    keyId: "down",
    unwrap: () => {
      throw new Error("the KMS is down");
    },
  });
  try {
    const failed = await verifyNow(cp);
    expect(failed).toMatchObject({ state: "failed", detail: "the KMS is down" });
    const [row] = await cp.deps.db
      .select()
      .from(v(cp))
      .where(eq(v(cp).id, failed.id));
    expect(row!.signature).toBeNull();
    const a = tables(cp.deps.db).auditRecords;
    const [event] = await cp.deps.db
      .select()
      .from(a)
      .where(and(eq(a.orgId, cp.orgId), eq(a.target, `audit_verification:${failed.id}`)));
    expect(JSON.parse(event!.detail!)).toMatchObject({ after: { state: "failed", signature: null } });
    // the run before it still decides: it checked, this one did not
    expect(await rollupsDistrusted(cp.deps.db, cp.orgId)).toBe(false);
  } finally {
    cp.deps.kms = kms;
  }
}, 60_000);
