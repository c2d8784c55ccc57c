// Round trips of an ingest batch on PostgreSQL (issue 30). A batch's transaction holds its
// organization's store-chain head from the lock to the COMMIT, and every round trip in between
// is time the head's next writer waits (the connection idle in transaction while the control
// plane's event loop serves other requests). It was about 8 round trips (BEGIN, SET
// TRANSACTION, the head's lock, the insert, roll-ups, the chains' heads read and moved, the
// store head moved, COMMIT) and one more per outcome record; it is now 3: BEGIN; the head's lock
// with the proxy chains' heads read behind it; every write with the COMMIT behind it. Counted on
// the wire by a relay in front of the server (db/round-trip-counter.ts), one connection, warm
// (statements prepared). Runs with SVC_TEST_POSTGRES_URL.
import { expect, test } from "bun:test";
import { and, eq } from "drizzle-orm";
import type { AuditRecord } from "../../contract/audit.ts";
import { AuditChain } from "../../proxy/audit/chain.ts";
import { openStore, tables } from "../db/index.ts";
import { roundTripCounter } from "../db/round-trip-counter.ts";
import { TEST_POSTGRES_URL } from "../db/test-store.ts";
import type { RuntimeCaller } from "../installations/runtime-auth.ts";
import { type Installation, addInstallation, auditRecord } from "../runtime/fixtures.ts";
import { testControlPlane } from "../testing.ts";
import { ingestBatch } from "./ingest.ts";

const pg = TEST_POSTGRES_URL ? test : test.skip;

const caller = (i: Installation): RuntimeCaller =>
  ({ installationId: i.installationId, orgId: i.orgId, workspaceId: i.workspaceId, agentId: i.agentId, name: i.name, replicaId: null }) as RuntimeCaller;

/** 500 chained records: tool decisions, each followed by its outcome, and model calls' outcomes (usage roll-ups). */
function batch(inst: Installation, chain: AuditChain): AuditRecord[] {
  const out: AuditRecord[] = [];
  for (let i = 0; out.length < 500; i++) {
    const decision = chain.stamp(auditRecord(inst));
    out.push(decision);
    out.push(chain.stamp(auditRecord(inst, { kind: "outcome", ref: decision.id, reason: "outcome", outcome: i % 2 ? "ok" : "error", exit_code: i % 2 ? 0 : 1 })));
    if (i % 10 === 0)
      out.push(
        chain.stamp(
          auditRecord(inst, { kind: "outcome", action: "model:invoke", tool_name: null, model: "gpt", reason: "outcome", outcome: "ok", prompt_tokens: 10, completion_tokens: 2, cost: 0.5 }),
        ),
      );
  }
  return out.slice(0, 500);
}

/** A control plane whose ingest goes through the counting relay on one connection: `deps` ingests, `cp.deps.db` checks. */
async function throughRelay(
  body: (t: { cp: Awaited<ReturnType<typeof testControlPlane>>; inst: Installation; deps: Parameters<typeof ingestBatch>[0]; relay: ReturnType<typeof roundTripCounter> }) => Promise<void>,
) {
  const cp = await testControlPlane();
  const inst = await addInstallation(cp);
  const relay = roundTripCounter(cp.store.location);
  const store = openStore(relay.url, { maxConnections: 1 });
  try {
    await body({ cp, inst, deps: { ...cp.deps, db: store.db }, relay });
  } finally {
    await store.close();
    relay.close();
  }
}

pg("a 500-record batch of tool decisions, as a shipper sends them, is 3 round trips", async () =>
  throughRelay(async ({ inst, deps, relay }) => {
    const chain = new AuditChain();
    const decisions = () => Array.from({ length: 500 }, () => chain.stamp(auditRecord(inst)));
    for (let i = 0; i < 2; i++) expect((await ingestBatch(deps, caller(inst), decisions())).inserted).toBe(500);
    const before = relay.turns();
    expect((await ingestBatch(deps, caller(inst), decisions())).inserted).toBe(500);
    expect(relay.turns() - before).toBe(3);
  }),
);

pg("a 500-record batch with outcomes and model usage is 3 round trips", async () =>
  throughRelay(async ({ cp, inst, deps, relay }) => {
    const chain = new AuditChain();
    // the first batches make the heads and prepare the statements on the connection
    for (let i = 0; i < 2; i++) expect((await ingestBatch(deps, caller(inst), batch(inst, chain))).inserted).toBe(500);
    const records = batch(inst, chain);
    const before = relay.turns();
    const answer = await ingestBatch(deps, caller(inst), records);
    expect(relay.turns() - before).toBe(3);
    expect(answer).toMatchObject({ inserted: 500, duplicates: 0, rejected: [] });

    // every write of the batch is there: the records numbered, the decisions completed by their outcomes, the heads moved
    const db = cp.deps.db;
    const { auditRecords: a, auditChainHeads: h, auditChainFlags: f } = tables(db);
    const decision = records.find((r) => r.kind === "tool")!;
    const [completed] = await db.select({ outcome: a.outcome, exitCode: a.exitCode }).from(a).where(eq(a.id, decision.id));
    const outcome = records.find((r) => r.ref === decision.id)!;
    expect(completed).toEqual({ outcome: outcome.outcome!, exitCode: outcome.exit_code! });
    const heads = await db.select({ chainId: h.chainId, seq: h.seq }).from(h).where(eq(h.orgId, inst.orgId));
    expect(heads.find((x) => x.chainId === "store")!.seq).toBeGreaterThanOrEqual(1500);
    expect(heads.find((x) => x.chainId === records[0]!.chain_id)!.seq).toBe(records[499]!.chain_seq!);
    expect(await db.select().from(f).where(eq(f.orgId, inst.orgId))).toEqual([]);

    // the same batch again: every id a duplicate, nothing stored twice, in one more transaction that reads the held ids first
    const again = await ingestBatch(deps, caller(inst), records);
    expect(again).toMatchObject({ inserted: 0, duplicates: 500 });
    // its first run failed at the insert with its roll-ups and heads already sent: all rolled back, nothing counted twice
    const { auditHourlyCalls: hc } = tables(db);
    const counted = (await db.select({ calls: hc.calls }).from(hc).where(eq(hc.orgId, inst.orgId))).reduce((n, r) => n + r.calls, 0);
    const tools = (
      await db
        .select({ id: a.id })
        .from(a)
        .where(and(eq(a.orgId, inst.orgId), eq(a.kind, "tool")))
    ).length;
    expect(counted).toBe(tools);
    expect(tools).toBe(records.filter((r) => r.kind === "tool").length * 3);
    expect(
      (
        await db
          .select({ seq: h.seq })
          .from(h)
          .where(eq(h.id, `${inst.orgId}:store`))
      )[0]!.seq,
    ).toBe(1500);
  }),
);
