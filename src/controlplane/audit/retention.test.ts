// Retention on the real app (SQLite, and PostgreSQL with SVC_TEST_POSTGRES_URL): records older
// than the period are deleted in bounded batches, chain by chain from the oldest; the checkpoint
// signed after the run carries the chains' floors, so verification of what remains passes and
// still catches a remaining row changed or removed directly in the store.
import { expect, test } from "bun:test";
import { and, eq } from "drizzle-orm";
import type { AuditRecord } from "../../contract/audit.ts";
import type { ExportLine } from "../../contract/stored-line.ts";
import { verifyLines } from "../../contract/verify/index.ts";
import { AuditChain } from "../../proxy/audit/chain.ts";
import { tables } from "../db/index.ts";
import { addInstallation, auditRecord } from "../runtime/fixtures.ts";
import { type TestControlPlane, testControlPlane } from "../testing.ts";
import { runRetention } from "./retention.ts";
import { retentionSettled } from "./retention-runs.ts";
import { actingAsSystem } from "./admin-events.ts";

const DAY = 86_400_000;

async function setup() {
  const cp = await testControlPlane();
  const inst = await addInstallation(cp);
  const chain = new AuditChain();
  const now = cp.deps.now();
  // #1–#6 are 10 days old, #7–#10 one day old; plus an old and a recent record written before chaining.
  const chained = Array.from({ length: 10 }, (_, i) => chain.stamp(auditRecord(inst, { ts: new Date(now - (i < 6 ? 10 : 1) * DAY + i * 1000).toISOString() })));
  const oldUnchained = auditRecord(inst, { ts: new Date(now - 20 * DAY).toISOString() });
  // (a recent unchained record comes from another installation: one that chains flags it as inserted)
  const other = await addInstallation(cp);
  const newUnchained = auditRecord(other, { ts: new Date(now - 2 * DAY).toISOString() });
  const shipped = await cp.call("POST", "/api/v1/runtime/audit-records", { token: inst.token, body: { records: [oldUnchained, ...chained] } });
  expect(shipped.json.inserted).toBe(11);
  expect((await cp.call("POST", "/api/v1/runtime/audit-records", { token: other.token, body: { records: [newUnchained] } })).json.inserted).toBe(1);
  expect((await cp.call("POST", cp.org("/audit-checkpoints"))).status).toBe(201);
  return { cp, chain, chained, oldUnchained, newUnchained };
}

async function verify(cp: TestControlPlane) {
  const text = (await cp.call("GET", cp.org("/audit-records/export"))).text;
  const lines = text
    .split("\n")
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as ExportLine);
  return verifyLines(lines, (await cp.call("GET", cp.org("/audit-checkpoints"))).json);
}

async function ids(cp: TestControlPlane): Promise<string[]> {
  // (the runtimes' records: the admin events of the setup and of each run are not what is cut here)
  return ((await cp.call("GET", cp.org("/audit-records?limit=100"))).json.records as AuditRecord[])
    .filter((r) => (r.kind as string) !== "admin")
    .map((r) => r.id)
    .sort();
}

test("retention deletes expired records in batches and verification of what remains passes", async () => {
  const { cp, chained, newUnchained } = await setup();
  expect((await verify(cp)).ok).toBe(true);
  // No period: nothing is deleted.
  expect(await runRetention(cp.deps, cp.orgId, actingAsSystem(cp.deps, "retention"))).toMatchObject({ retention_days: null, deleted: 0 });

  const set = await cp.call("PATCH", cp.org("/settings"), { body: { audit_retention_days: 5 } });
  expect(set.status).toBe(200);
  expect(set.json.audit_retention_days).toBe(5);
  const report = await runRetention(cp.deps, cp.orgId, actingAsSystem(cp.deps, "retention"), { batch: 4 });
  expect(report).toMatchObject({ retention_days: 5, deleted: 7, chains_cut: 1, checkpoint: 2 });
  expect(await ids(cp)).toEqual([newUnchained.id, ...chained.slice(6).map((r) => r.id)].sort());
  const body = JSON.parse((await cp.call("GET", cp.org("/audit-checkpoints"))).json.checkpoints[1].body);
  expect(body.floors).toEqual([{ chain_id: chained[0]!.chain_id, seq: 7, prev: chained[6]!.chain_prev }]);

  const after = await verify(cp);
  expect(after.problems).toEqual([]);
  // (the four chained records kept, and the unchained one of the other installation: all five in the
  // store chain; and three admin events: the bootstrap, the settings change and the run)
  expect(after).toMatchObject({ ok: true, state: "verified", covered: 5 + 3 });
  // A second run finds nothing more; the route starts it in the background, and shows it when done.
  const again = await cp.call("POST", cp.org("/audit-retention/run"));
  expect(again.status).toBe(202);
  expect(again.json).toMatchObject({ state: "running", deleted: 0 });
  await retentionSettled(cp.orgId);
  expect((await cp.call("GET", cp.org("/audit-retention/run"))).json).toMatchObject({ id: again.json.id, state: "done", deleted: 0, checkpoint: null, retention_days: 5 });
  expect((await verify(cp)).ok).toBe(true);
});

test("after retention, a remaining row changed or the first one kept removed is still caught", async () => {
  const { cp, chained } = await setup();
  await cp.call("PATCH", cp.org("/settings"), { body: { audit_retention_days: 5 } });
  await runRetention(cp.deps, cp.orgId, actingAsSystem(cp.deps, "retention"), { batch: 2 });
  const a = tables(cp.deps.db).auditRecords;
  await cp.deps.db.update(a).set({ reason: "forged" }).where(eq(a.id, chained[8]!.id));
  const changed = await verify(cp);
  expect(changed.ok).toBe(false);
  expect(changed.problems[0]).toMatchObject({ kind: "changed", record_id: chained[8]!.id });
  await cp.deps.db.update(a).set({ reason: chained[8]!.reason }).where(eq(a.id, chained[8]!.id));
  expect((await verify(cp)).ok).toBe(true);

  // The first record kept, deleted as if retention had taken it: the floor says it must be there.
  await cp.deps.db.delete(a).where(and(eq(a.orgId, cp.orgId), eq(a.id, chained[6]!.id)));
  const removed = await verify(cp);
  expect(removed.ok).toBe(false);
  expect(removed.problems.map((p) => [p.kind, p.seq])).toContainEqual(["removed", 7]);
});

/**
 * A chain of 20 records, #1–#16 ten days old (but `recentAt`'s), #17–#20 one day old; every one
 * shipped but #6, which is shipped late: once the run has cut past it (after its second batch
 * of 4, the floor at #10).
 */
async function lateRecordRun(recentAt: number | null) {
  const cp = await testControlPlane();
  const inst = await addInstallation(cp);
  const chain = new AuditChain();
  const now = cp.deps.now();
  const records = Array.from({ length: 20 }, (_, i) => chain.stamp(auditRecord(inst, { ts: new Date(now - (i >= 16 || i + 1 === recentAt ? 1 : 10) * DAY + i * 1000).toISOString() })));
  const late = records[5]!;
  const ship = async (rs: typeof records) => expect((await cp.call("POST", "/api/v1/runtime/audit-records", { token: inst.token, body: { records: rs } })).status).toBe(200);
  await ship(records.filter((r) => r !== late));
  await cp.call("PATCH", cp.org("/settings"), { body: { audit_retention_days: 5 } });
  let shipped = false;
  const report = await runRetention(cp.deps, cp.orgId, actingAsSystem(cp.deps, "retention"), {
    batch: 4,
    progress: async (deleted) => {
      if (deleted >= 8 && !shipped) {
        shipped = true;
        await ship([late]);
      }
    },
  });
  expect(shipped).toBe(true);
  const a = tables(cp.deps.db).auditRecords;
  const lateRow = await cp.deps.db.select({ id: a.id }).from(a).where(eq(a.id, late.id));
  return { cp, records, report, lateKept: lateRow.length === 1 };
}

test("a late record below the raised floor, older than the period, is deleted with the rest: verification passes", async () => {
  const { cp, records, report, lateKept } = await lateRecordRun(null);
  // the run's batches read on from where the last one stopped, past #6: the late one is found below the floor
  expect(lateKept).toBe(false);
  expect(report).toMatchObject({ deleted: 16, chains_cut: 1 });
  expect(await ids(cp)).toEqual(
    records
      .slice(16)
      .map((r) => r.id)
      .sort(),
  );
  const body = JSON.parse((await cp.call("GET", cp.org("/audit-checkpoints"))).json.checkpoints.at(-1).body);
  expect(body.floors).toEqual([{ chain_id: records[0]!.chain_id, seq: 17, prev: records[16]!.chain_prev }]);
  const after = await verify(cp);
  expect(after.problems).toEqual([]);
  expect(after.ok).toBe(true);
  // and the roll-ups count the four records kept, not it
  const hc = tables(cp.deps.db).auditHourlyCalls;
  const counts = await cp.deps.db.select({ calls: hc.calls }).from(hc).where(eq(hc.orgId, cp.orgId));
  expect(counts.reduce((n, r) => n + r.calls, 0)).toBe(4);
});

test("a late record below the raised floor inside the period neither stops the cut nor hides: verification reports it", async () => {
  const { cp, records, report, lateKept } = await lateRecordRun(6);
  // (the cut goes on above it: before, a read from the chain's bottom stopped at it, and the chain was never cut further)
  expect(lateKept).toBe(true);
  expect(report).toMatchObject({ deleted: 15, chains_cut: 1 });
  expect(await ids(cp)).toEqual([records[5]!.id, ...records.slice(16).map((r) => r.id)].sort());
  const after = await verify(cp);
  expect(after.ok).toBe(false);
  expect(after.problems.map((p) => [p.kind, p.record_id, p.seq])).toEqual([["inserted", records[5]!.id, 6]]);
});

test("the retention period is validated: 1–36500 days or null", async () => {
  const cp = await testControlPlane();
  expect((await cp.call("PATCH", cp.org("/settings"), { body: { audit_retention_days: 0 } })).status).toBe(422);
  expect((await cp.call("PATCH", cp.org("/settings"), { body: { audit_retention_days: 1.5 } })).status).toBe(422);
  expect((await cp.call("PATCH", cp.org("/settings"), { body: { audit_retention_days: 400 } })).json.audit_retention_days).toBe(400);
  expect((await cp.call("PATCH", cp.org("/settings"), { body: { audit_retention_days: null } })).json.audit_retention_days).toBeNull();
});
