// SIEM delivery in commit order (issue 28, item 7). Before, a sink read records by receipt time
// and left the last 2 s for later: a record whose commit landed more than 2 s after its receipt
// stamp, or one stored by a control-plane replica whose clock runs behind, had a receipt time
// the cursor had already passed, and was never delivered (10 stored, 8 delivered). Now a sink
// reads by the number each record gets in its organization's store chain inside the storing
// transaction, so every record stored is delivered, whatever the clocks say. Two replicas are
// two sets of deps with their own clocks over one store (SQLite; PostgreSQL with
// SVC_TEST_POSTGRES_URL), as several `svc controlplane serve` share one database.
import { expect, test } from "bun:test";
import type { AuditRecord } from "../../contract/audit.ts";
import { ingestBatch } from "../audit/ingest.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import type { RuntimeCaller } from "../installations/runtime-auth.ts";
import { type Installation, addInstallation, auditRecord } from "../runtime/fixtures.ts";
import { type TestControlPlane, testControlPlane } from "../testing.ts";
import { deliverDue } from "./deliver.ts";
import type { SinkRow } from "./service.ts";

const SECRET = "a-webhook-hmac-secret-of-some-length";

const caller = (i: Installation): RuntimeCaller =>
  ({ installationId: i.installationId, orgId: i.orgId, workspaceId: i.workspaceId, agentId: i.agentId, name: i.name, replicaId: null }) as RuntimeCaller;

/** A control-plane replica over the same store whose clock reads `clock()`. */
const replica = (cp: TestControlPlane, clock: () => number): ControlPlaneDeps => ({ ...cp.deps, now: clock });

async function withSink(cp: TestControlPlane) {
  const made = await cp.call("POST", cp.org("/siem-sinks"), { body: { name: "siem", kind: "webhook", endpoint: "https://siem.example.com/hec", secret: SECRET } });
  expect(made.status).toBe(201);
  // the sink's own creation event (siem_sink.create, in the admin chain) is delivered too: kept apart
  const got: string[] = [];
  const events: string[] = [];
  const sendFor = (_row: SinkRow) => async (records: readonly { id: string; kind: string; action: string | null }[]) => {
    for (const r of records) r.kind === "admin" ? events.push(r.action ?? "") : got.push(r.id);
  };
  return { got, events, deliver: async (deps: ControlPlaneDeps) => deliverDue(deps, { owner: "replica", sendFor, batchSize: 3 }) };
}

async function store(deps: ControlPlaneDeps, inst: Installation, records: AuditRecord[]) {
  const r = await ingestBatch(deps, caller(inst), records);
  expect(r.inserted).toBe(records.length);
}

test("a record whose commit lands more than 2 s after its receipt stamp is delivered", async () => {
  const t0 = Date.now();
  const cp = await testControlPlane();
  const inst = await addInstallation(cp);
  const { got, events, deliver } = await withSink(cp);
  const early = auditRecord(inst);
  const late = auditRecord(inst);
  // `late` is stamped at t0 but its transaction commits only after `early`, stamped at t0 + 3 s,
  // was stored and delivered at t0 + 6 s: its stamp is behind the cursor when it appears.
  await store(
    replica(cp, () => t0 + 3000),
    inst,
    [early],
  );
  await deliver(replica(cp, () => t0 + 6000));
  await store(
    replica(cp, () => t0),
    inst,
    [late],
  );
  for (const at of [10_000, 20_000, 30_000]) await deliver(replica(cp, () => t0 + at));
  expect(got).toEqual([early.id, late.id]);
  expect(events).toEqual(["siem_sink.create"]);
});

test("two replicas whose clocks differ by 10 s: every record stored is delivered, once", async () => {
  const t0 = Date.now();
  const cp = await testControlPlane();
  const inst = await addInstallation(cp);
  const { got, deliver } = await withSink(cp);
  let tick = 0;
  const ahead = replica(cp, () => t0 + 10_000 + tick * 100);
  const behind = replica(cp, () => t0 + tick * 100);
  const stored: string[] = [];
  for (let i = 0; i < 10; i++) {
    tick++;
    const r = auditRecord(inst);
    await store(i % 2 === 0 ? ahead : behind, inst, [r]);
    stored.push(r.id);
    // each replica delivers in turn, long after the 2 s the old order waited for
    tick += 30;
    await deliver(i % 2 === 0 ? behind : ahead);
  }
  tick += 1000;
  await deliver(ahead);
  await deliver(behind);
  expect(got).toEqual(stored);
});
