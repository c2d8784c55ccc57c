// Retention runs in the background (issue 30): what `svc audit retention status` shows. A run
// whose control plane stopped shows as interrupted and a start begins another; the hourly run
// shows once it deletes something, and one that found nothing leaves an admin's last run shown.
// On SQLite and, with SVC_TEST_POSTGRES_URL, PostgreSQL.
import { expect, test } from "bun:test";
import { AuditChain } from "../../proxy/audit/chain.ts";
import { tables } from "../db/index.ts";
import { addInstallation, auditRecord } from "../runtime/fixtures.ts";
import { testControlPlane } from "../testing.ts";
import { STALE_MS, retentionSettled, startRetentionScheduler } from "./retention-runs.ts";

const DAY = 86_400_000;

async function withOldRecords(config = {}) {
  const cp = await testControlPlane({ config });
  const inst = await addInstallation(cp);
  const chain = new AuditChain();
  const ship = async (n: number, ageDays: number) => {
    const records = Array.from({ length: n }, (_, i) => chain.stamp(auditRecord(inst, { ts: new Date(Date.now() - ageDays * DAY + i).toISOString() })));
    expect((await cp.call("POST", "/api/v1/runtime/audit-records", { token: inst.token, body: { records } })).status).toBe(200);
  };
  await ship(10, 10);
  await cp.call("PATCH", cp.org("/settings"), { body: { audit_retention_days: 5 } });
  return { cp, ship };
}

test("a run whose control plane stopped shows as interrupted; a start begins another, which finishes it", async () => {
  const { cp } = await withOldRecords();
  expect((await cp.call("GET", cp.org("/audit-retention/run"))).status).toBe(404);
  const now = Date.now();
  await cp.deps.db
    .insert(tables(cp.deps.db).auditRetentionRuns)
    .values({ orgId: cp.orgId, id: "ret_DEAD", state: "running", actor: "acc_X", startedAt: now - STALE_MS - 5000, updatedAt: now - STALE_MS - 1000, deleted: 4 });
  expect((await cp.call("GET", cp.org("/audit-retention/run"))).json).toMatchObject({ id: "ret_DEAD", state: "interrupted", deleted: 4 });
  const started = await cp.call("POST", cp.org("/audit-retention/run"));
  expect(started.status).toBe(202);
  expect(started.json.id).not.toBe("ret_DEAD");
  await retentionSettled(cp.orgId);
  expect((await cp.call("GET", cp.org("/audit-retention/run"))).json).toMatchObject({ id: started.json.id, state: "done", deleted: 10, chains_cut: 1 });
  // a live run is not taken over: a start shows it
  await cp.deps.db.update(tables(cp.deps.db).auditRetentionRuns).set({ id: "ret_LIVE", state: "running", updatedAt: Date.now() });
  expect((await cp.call("POST", cp.org("/audit-retention/run"))).json).toMatchObject({ id: "ret_LIVE", state: "running" });
});

test("the hourly run shows once it deletes something; one that found nothing leaves the last run shown", async () => {
  const { cp, ship } = await withOldRecords({ auditCheckpointSeconds: 0.05 });
  const stop = startRetentionScheduler(cp.deps);
  try {
    const shown = async () => (await cp.call("GET", cp.org("/audit-retention/run"))).json;
    for (let i = 0; i < 200 && (await shown())?.state !== "done"; i++) await Bun.sleep(25);
    const hourly = await shown();
    expect(hourly).toMatchObject({ state: "done", actor: "system:retention", deleted: 10 });
    // an admin's run, then hourly runs with nothing to delete: the admin's stays shown
    const mine = await cp.call("POST", cp.org("/audit-retention/run"));
    await retentionSettled(cp.orgId);
    await Bun.sleep(300);
    expect(await shown()).toMatchObject({ id: mine.json.id, state: "done", deleted: 0 });
    expect((await shown()).actor).toStartWith("acc_");
    // more to delete: the next hourly run shows again
    await ship(3, 10);
    for (let i = 0; i < 200 && (await shown()).id === mine.json.id; i++) await Bun.sleep(25);
    for (let i = 0; i < 200 && (await shown()).state === "running"; i++) await Bun.sleep(25);
    expect(await shown()).toMatchObject({ state: "done", actor: "system:retention", deleted: 3 });
  } finally {
    await stop();
  }
});
