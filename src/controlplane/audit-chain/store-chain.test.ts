// The control plane's store chains on the real app (SQLite; PostgreSQL with
// SVC_TEST_POSTGRES_URL): every row linked at write time, in commit order; the checkpoint signs
// them; someone with write access to the database cannot change a field of a signed row, insert
// a row, or swap the signing key without `verify` naming it (the CLI's run of the same, with
// the built binary: test/integration/cli-audit-verify.test.ts).
import { describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import type { AuditRecord } from "../../contract/audit.ts";
import { generateKeyPairSync } from "node:crypto";
import { publicKeyText } from "../../contract/audit-chain.ts";
import type { ExportLine } from "../../contract/stored-line.ts";
import { verifyLines } from "../../contract/verify/index.ts";
import { AuditChain } from "../../proxy/audit/chain.ts";
import { accountWithRole } from "../auth/test-fixtures.ts";
import { tables } from "../db/index.ts";
import { addInstallation, auditRecord } from "../runtime/fixtures.ts";
import { type TestControlPlane, testControlPlane } from "../testing.ts";
import { verificationSettled } from "./verify-store.ts";

async function ship(cp: TestControlPlane, token: string, records: AuditRecord[]) {
  const r = await cp.call("POST", "/api/v1/runtime/audit-records", { token, body: { records } });
  expect(r.status).toBe(200);
  return r.json;
}

async function exported(cp: TestControlPlane, order: "id" | "chain" = "chain"): Promise<ExportLine[]> {
  return (await cp.call("GET", cp.org(`/audit-records/export?order=${order}`))).text
    .split("\n")
    .filter(Boolean)
    .map((l) => JSON.parse(l) as ExportLine);
}

async function verify(cp: TestControlPlane, pinned?: string) {
  const list = (await cp.call("GET", cp.org("/audit-checkpoints"))).json;
  return verifyLines(await exported(cp), list, { pinned: pinned ?? list.public_key, orgId: cp.orgId });
}

async function setup() {
  const cp = await testControlPlane();
  const inst = await addInstallation(cp);
  const chain = new AuditChain();
  const records = Array.from({ length: 6 }, (_, i) => chain.stamp(auditRecord(inst, { decision: i === 2 ? "deny" : "permit", reason: i === 2 ? "svc.denied" : "policy" })));
  await ship(cp, inst.token, records.slice(0, 4));
  await ship(cp, inst.token, records.slice(2));
  return { cp, inst, records };
}

const a = (cp: TestControlPlane) => tables(cp.deps.db).auditRecords;

describe("store chains", () => {
  test("each row is linked at ingest in commit order (a resent record is not linked twice); a checkpoint signs the heads; the export verifies", async () => {
    const { cp, records } = await setup();
    // the organization's bootstrap event is the admin chain's first; the runtime records make the store chain
    const lines = (await exported(cp)).filter((l) => l.store?.chain === "store");
    expect(lines.map((l) => [l.id, l.store?.chain, l.store?.seq])).toEqual(records.map((r, i) => [r.id, "store", i + 1]));
    expect(lines[0]!.store!.prev).toBeNull();
    expect((await verify(cp)).state).toBe("unsigned");
    expect((await cp.call("POST", cp.org("/audit-checkpoints"))).status).toBe(201);
    const body = JSON.parse((await cp.call("GET", cp.org("/audit-checkpoints"))).json.checkpoints[0].body);
    expect(body.heads.find((h: { chain_id: string }) => h.chain_id === "store")).toMatchObject({ seq: 6 });
    expect(body.adoption).toBe("complete");
    expect(await verify(cp)).toMatchObject({ state: "verified", problems: [], covered: 7, uncovered: 0 });
  });

  test("an old and a new proxy replica of one installation mix: the old one's unchained records are reported as such, never as tampered (issue 29)", async () => {
    const cp = await testControlPlane();
    const inst = await addInstallation(cp);
    const chain = new AuditChain();
    for (let i = 0; i < 4; i++) await ship(cp, inst.token, [chain.stamp(auditRecord(inst)), auditRecord(inst, { replica_id: "rep_OLD" })]);
    await cp.call("POST", cp.org("/audit-checkpoints"));
    expect(await verify(cp)).toMatchObject({ state: "verified", problems: [], covered: 9, unchained: 4, chains: 2 }); // + the bootstrap event, in the admin chain
  });

  test("an edit of a column outside the proxy's chain (task, harness, received_at), a back-dated unchained insert and a decision's outcome are each named", async () => {
    const { cp, records } = await setup();
    await cp.call("POST", cp.org("/audit-checkpoints"));
    const db = cp.deps.db;
    for (const [field, value] of [
      ["task", "title_generation"],
      ["harness", "other"],
      ["receivedAt", 1],
    ] as const) {
      await db
        .update(a(cp))
        .set({ [field]: value })
        .where(eq(a(cp).id, records[2]!.id));
      const r = await verify(cp);
      expect({ field, state: r.state, named: r.problems.map((p) => p.record_id) }).toEqual({ field, state: "tampered", named: [records[2]!.id] });
      const [orig] = await db
        .select()
        .from(a(cp))
        .where(eq(a(cp).id, records[3]!.id));
      await db
        .update(a(cp))
        .set({ task: null, harness: "chatui", receivedAt: orig!.receivedAt })
        .where(eq(a(cp).id, records[2]!.id));
    }
    expect((await verify(cp)).state).toBe("verified");

    // a record inserted straight into the store, dated before the chains began, with no link
    const [row] = await db
      .select()
      .from(a(cp))
      .where(eq(a(cp).id, records[0]!.id));
    const forged = "rec_00000000000000000000000001";
    await db.insert(a(cp)).values({ ...row!, id: forged, ts: 1_000, receivedAt: 1_000, chainId: null, chainSeq: null, chainPrev: null, storeChain: null, storeSeq: null, storePrev: null });
    let r = await verify(cp);
    expect(r.problems.map((p) => [p.kind, p.record_id])).toEqual([["inserted", forged]]);
    // or given a chain of its own, as if it were chained but not yet signed
    await db
      .update(a(cp))
      .set({ storeChain: "zzz", storeSeq: 1 })
      .where(eq(a(cp).id, forged));
    r = await verify(cp);
    expect(r.problems.map((p) => [p.kind, p.record_id])).toEqual([["inserted", forged]]);
    expect(r.state).toBe("tampered");
    // or a chain and number below any cursor the export pages on: its first page is read without one
    await db
      .update(a(cp))
      .set({ storeChain: "", storeSeq: 0 })
      .where(eq(a(cp).id, forged));
    r = await verify(cp);
    expect(r.problems.map((p) => [p.kind, p.record_id])).toEqual([["inserted", forged]]);
    await db.delete(a(cp)).where(eq(a(cp).id, forged));

    // a decision's outcome, filled in from its outcome record, changed afterwards
    await db
      .update(a(cp))
      .set({ outcome: "ok", exitCode: 0 })
      .where(eq(a(cp).id, records[1]!.id));
    r = await verify(cp);
    expect(r.problems.map((p) => [p.kind, p.record_id])).toEqual([["changed", records[1]!.id]]);
    expect(r.problems[0]!.detail).toContain("carries an outcome (ok, exit code 0) that no outcome record reports");
  });

  test("an admin event is linked in the admin chain; an edit of its detail or actor is named", async () => {
    const cp = await testControlPlane();
    expect((await cp.call("POST", cp.org("/audit-signing-key/rotate"))).status).toBe(200);
    const [event] = await cp.deps.db
      .select()
      .from(a(cp))
      .where(eq(a(cp).action, "signing_key.rotate"));
    expect(event).toMatchObject({ kind: "admin", storeChain: "admin", storeSeq: 2, actorId: cp.accountId }); // 1: the bootstrap event
    await cp.call("POST", cp.org("/audit-checkpoints"));
    expect((await verify(cp)).state).toBe("verified");
    for (const change of [{ detail: event!.detail!.replace('"result":"ok"', '"result":"refused"') }, { actorId: "acc_SOMEONE_ELSE" }, { target: "policy:pol_X" }]) {
      await cp.deps.db
        .update(a(cp))
        .set(change)
        .where(eq(a(cp).id, event!.id));
      const r = await verify(cp);
      expect({ change, named: r.problems.map((p) => p.record_id) }).toEqual({ change, named: [event!.id] });
      await cp.deps.db
        .update(a(cp))
        .set({ detail: event!.detail, actorId: event!.actorId, target: event!.target })
        .where(eq(a(cp).id, event!.id));
    }
  });

  test("the key the control plane names is derived from its private key: a key swapped in the stored column changes nothing", async () => {
    const cp = await testControlPlane();
    const before = (await cp.call("GET", cp.org("/audit-signing-key"))).json;
    const attacker = publicKeyText(generateKeyPairSync("ed25519").publicKey);
    const k = tables(cp.deps.db).auditSigningKeys;
    await cp.deps.db.update(k).set({ publicKey: attacker }).where(eq(k.orgId, cp.orgId));
    expect((await cp.call("GET", cp.org("/audit-signing-key"))).json.public_key).toBe(before.public_key);
    const cp1 = (await cp.call("POST", cp.org("/audit-checkpoints"))).json;
    expect(JSON.parse(cp1.body).public_key).toBe(before.public_key);
    expect((await cp.call("GET", cp.org("/audit-checkpoints"))).json.public_key).toBe(before.public_key);
  });

  test("rotation: an owner's admin event and a checkpoint signed by the old key naming the new one; a verifier with the old pin follows; an admin is refused", async () => {
    const { cp } = await setup();
    await cp.call("POST", cp.org("/audit-checkpoints"));
    const old = (await cp.call("GET", cp.org("/audit-signing-key"))).json.public_key as string;
    const admin = await accountWithRole(cp, "admin");
    const refused = await cp.call("POST", cp.org("/audit-signing-key/rotate"), { token: admin.token });
    expect(refused.status).toBe(403);
    const rotated = await cp.call("POST", cp.org("/audit-signing-key/rotate"));
    expect(rotated.status).toBe(200);
    expect(rotated.json.public_key).not.toBe(old);
    const list = (await cp.call("GET", cp.org("/audit-checkpoints"))).json;
    const handover = JSON.parse(list.checkpoints[rotated.json.handover_checkpoint - 1].body);
    expect(handover).toMatchObject({ public_key: old, next_key: rotated.json.public_key });
    expect(list.public_key).toBe(rotated.json.public_key);
    await cp.call("POST", cp.org("/audit-checkpoints"));
    const r = await verify(cp, old);
    expect(r).toMatchObject({ state: "verified", keyChange: null, key: rotated.json.public_key });
    expect(r.rotations).toHaveLength(1);
    const events = await cp.deps.db
      .select()
      .from(a(cp))
      .where(eq(a(cp).action, "signing_key.rotate"));
    expect(events.map((e) => [e.actorId, e.decision])).toEqual(
      expect.arrayContaining([
        [admin.accountId, "deny"],
        [cp.accountId, "permit"],
      ]),
    );
  });

  test("a running control plane refuses to sign over a checkpoint it knew that was deleted or changed in the store", async () => {
    const { cp } = await setup();
    expect((await cp.call("POST", cp.org("/audit-checkpoints"))).status).toBe(201);
    const c = tables(cp.deps.db).auditCheckpoints;
    const [first] = await cp.deps.db.select().from(c).where(eq(c.orgId, cp.orgId));
    await cp.deps.db
      .update(c)
      .set({ body: first!.body.replace('"number":1', '"number":1 ') })
      .where(eq(c.id, first!.id));
    let r = await cp.call("POST", cp.org("/audit-checkpoints"));
    expect(r.status).toBe(409);
    expect(r.json.detail).toContain("checkpoint #1, which this control plane signed or read before, is changed in the store");
    // deleted, so the next would be signed as #1 over a history rewritten meanwhile
    await cp.deps.db.delete(c).where(eq(c.orgId, cp.orgId));
    r = await cp.call("POST", cp.org("/audit-checkpoints"));
    expect(r.status).toBe(409);
    expect(r.json.detail).toContain("is gone in the store");
    expect(await cp.deps.db.select().from(c).where(eq(c.orgId, cp.orgId))).toEqual([]);
  });

  test("the control plane verifies its own store in the background: verified, then tampered naming the record", async () => {
    const { cp, records } = await setup();
    await cp.call("POST", cp.org("/audit-checkpoints"));
    expect((await cp.call("GET", cp.org("/audit-verifications/latest"))).status).toBe(404);
    expect((await cp.call("POST", cp.org("/audit-verifications"))).status).toBe(202);
    await verificationSettled(cp.orgId);
    expect((await cp.call("GET", cp.org("/audit-verifications/latest"))).json).toMatchObject({ state: "verified", records: 7, problems: 0 }); // + the bootstrap event
    await cp.deps.db
      .update(a(cp))
      .set({ decision: "permit" })
      .where(eq(a(cp).id, records[2]!.id));
    await cp.call("POST", cp.org("/audit-verifications"));
    await verificationSettled(cp.orgId);
    const latest = (await cp.call("GET", cp.org("/audit-verifications/latest"))).json;
    expect(latest).toMatchObject({ state: "tampered" });
    expect(latest.detail).toContain(records[2]!.id);
  });
});
