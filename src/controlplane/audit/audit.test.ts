// Audit ingest over the runtime API and the admin audit view.
import { describe, expect, test } from "bun:test";
import { Decrypter, Encrypter } from "age-encryption";
import { newId } from "../../contract/ids.ts";
import { upsertUserByEmail } from "../directory/service.ts";
import { addInstallation, addOrganization, auditRecord, newRecipient } from "../runtime/fixtures.ts";
import { testControlPlane } from "../testing.ts";

const ingest = (cp: Awaited<ReturnType<typeof testControlPlane>>, token: string, records: unknown[]) =>
  cp.call("POST", "/api/v1/runtime/audit-records", { token, body: { records } });

describe("POST /runtime/audit-records", () => {
  test("the same batch twice is stored once; the second time every id is acknowledged as a duplicate", async () => {
    const cp = await testControlPlane();
    const inst = await addInstallation(cp);
    const batch = [auditRecord(inst), auditRecord(inst, { decision: "deny", reason: "svc.denied" }), auditRecord(inst, { kind: "model", action: "model:invoke", tool_name: null })];
    const first = await ingest(cp, inst.token, batch);
    expect(first.status).toBe(200);
    expect(first.json).toEqual({ acknowledged: batch.map((r) => r.id), inserted: 3, duplicates: 0, rejected: [] });
    const second = await ingest(cp, inst.token, [...batch, auditRecord(inst)]);
    expect(second.json.inserted).toBe(1);
    expect(second.json.duplicates).toBe(3);
    expect(second.json.acknowledged).toHaveLength(4);
    const listed = await cp.call("GET", cp.org("/audit-records"));
    expect(listed.json.records).toHaveLength(4);
  });

  test("a record that is not the caller's is rejected by id; the rest of the batch is stored; resending answers the same", async () => {
    const cp = await testControlPlane();
    const inst = await addInstallation(cp);
    const other = await addInstallation(cp);
    const mine = auditRecord(inst);
    const foreign = auditRecord(other);
    const otherOrg = auditRecord(inst, { organization_id: "org_ELSEWHERE" });
    const res = await ingest(cp, inst.token, [mine, foreign, otherOrg]);
    expect(res.status).toBe(200);
    expect(res.json.acknowledged).toEqual([mine.id]);
    expect(res.json.inserted).toBe(1);
    expect(res.json.rejected.map((r: { id: string }) => r.id)).toEqual([foreign.id, otherOrg.id]);
    expect(res.json.rejected[0].reason).toContain(other.installationId);
    const stored = (await cp.call("GET", cp.org("/audit-records"))).json.records.map((r: { id: string }) => r.id);
    expect(stored).toEqual([mine.id]);
    // idempotent: the same batch again stores nothing new and gives the same verdicts
    const again = await ingest(cp, inst.token, [mine, foreign, otherOrg]);
    expect(again.json).toMatchObject({ acknowledged: [mine.id], inserted: 0, duplicates: 1 });
    expect(again.json.rejected.map((r: { id: string }) => r.id)).toEqual([foreign.id, otherOrg.id]);
  });

  test("an id already held by another installation's record is rejected, not acknowledged as a duplicate", async () => {
    const cp = await testControlPlane();
    const inst = await addInstallation(cp);
    const other = await addInstallation(cp);
    const theirs = auditRecord(other);
    expect((await ingest(cp, other.token, [theirs])).json.inserted).toBe(1);
    const clash = auditRecord(inst, { id: theirs.id });
    const res = await ingest(cp, inst.token, [clash]);
    expect(res.json).toMatchObject({ acknowledged: [], inserted: 0, duplicates: 0, rejected: [{ id: theirs.id, reason: expect.stringContaining("another installation") }] });
    expect((await cp.call("GET", cp.org(`/audit-records/${theirs.id}`))).json.installation_id).toBe(other.installationId);
  });

  test("malformed records are 422 validation_failed", async () => {
    const cp = await testControlPlane();
    const inst = await addInstallation(cp);
    expect((await ingest(cp, inst.token, [auditRecord(inst, { id: "not-an-id" })])).status).toBe(422);
    expect((await ingest(cp, inst.token, [auditRecord(inst, { args_digest: "sha1:abc" })])).status).toBe(422);
    expect((await ingest(cp, inst.token, [])).status).toBe(422);
  });

  test("an outcome record sets outcome and exit code on its decision, once", async () => {
    const cp = await testControlPlane();
    const inst = await addInstallation(cp);
    const decision = auditRecord(inst);
    await ingest(cp, inst.token, [decision]);
    const outcome = auditRecord(inst, { kind: "outcome", ref: decision.id, outcome: "error", exit_code: 2 });
    await ingest(cp, inst.token, [outcome]);
    const rec = (await cp.call("GET", cp.org(`/audit-records/${decision.id}`))).json;
    expect(rec.outcome).toBe("error");
    expect(rec.exit_code).toBe(2);
    // another installation cannot set outcomes on this installation's records
    const other = await addInstallation(cp);
    await ingest(cp, other.token, [auditRecord(other, { kind: "outcome", ref: decision.id, outcome: "ok", exit_code: 0 })]);
    expect((await cp.call("GET", cp.org(`/audit-records/${decision.id}`))).json.outcome).toBe("error");
  });
});

describe("GET /organizations/{org}/audit-records", () => {
  test("filters by tool, decision, user (id or email), installation, kind, from/to; shows encryption, never ciphertext", async () => {
    const cp = await testControlPlane();
    const a = await addInstallation(cp);
    const b = await addInstallation(cp);
    const { user } = await upsertUserByEmail(cp.deps.db, cp.orgId, { email: "ada@example.com", source: "manual" });
    const t0 = Date.UTC(2025, 0, 1);
    const at = (min: number) => new Date(t0 + min * 60_000).toISOString();
    const ct = Buffer.from("age-encryption.org/v1\nfake").toString("base64");
    await ingest(cp, a.token, [
      auditRecord(a, { ts: at(0), tool_name: "crm.update", action: "tool:crm.update", decision: "permit", subject: { user_id: user.id, remote_user_id: "fe-ada", via_installation: false }, recipient_key_ids: ["key_A", "key_B"], ciphertext: ct, args_digest: null, digest_key_id: null }),
      auditRecord(a, { ts: at(1), tool_name: "crm.update", action: "tool:crm.update", decision: "deny", reason: "svc.denied" }),
      auditRecord(a, { ts: at(2), tool_name: "crm.lookup", decision: "deny", subject: { user_id: null, remote_user_id: null, via_installation: true } }),
      auditRecord(a, { ts: at(3), kind: "model", action: "model:invoke", tool_name: null, model: "gpt-x" }),
    ]);
    await ingest(cp, b.token, [auditRecord(b, { ts: at(4), tool_name: "crm.update", action: "tool:crm.update", decision: "deny" })]);

    const q = async (qs: string) => (await cp.call("GET", cp.org(`/audit-records${qs}`))).json.records as Array<Record<string, any>>;
    expect((await q("?tool=crm.update&decision=deny")).map((r) => r.installation_id)).toEqual([b.installationId, a.installationId]);
    expect(await q("?tool=crm.update&decision=ask")).toEqual([]);
    expect((await q(`?user=${user.id}`)).map((r) => r.subject.email)).toEqual(["ada@example.com"]);
    expect((await q("?user=ADA@example.com")).map((r) => r.subject.user_id)).toEqual([user.id]);
    expect(await q("?user=nobody@example.com")).toEqual([]);
    expect(await q(`?installation=${b.installationId}`)).toHaveLength(1);
    expect((await q("?kind=model")).map((r) => r.model)).toEqual(["gpt-x"]);
    expect(await q(`?from=${encodeURIComponent(at(1))}&to=${encodeURIComponent(at(3))}`)).toHaveLength(3);

    const all = await q("");
    expect(all).toHaveLength(5);
    for (const r of all) {
      expect(r).not.toHaveProperty("ciphertext");
      expect(JSON.stringify(r)).not.toContain(ct);
    }
    const encrypted = all.find((r) => r.subject.user_id === user.id)!;
    expect(encrypted.encryption).toEqual({ mode: "recipients", key_ids: ["key_A", "key_B"] });
    expect(encrypted.subject).toEqual({ user_id: user.id, email: "ada@example.com", remote_user_id: "fe-ada", via_installation: false });
    const viaInstallation = all.find((r) => r.subject.via_installation)!;
    expect(viaInstallation.encryption).toEqual({ mode: "digest-only" });
    expect(viaInstallation.args_digest).toBe(`hmac-sha256:${"ab".repeat(32)}`);
    expect(viaInstallation.digest_key_id).toBe("dk_TEST");

    expect((await cp.call("GET", cp.org("/audit-records?decision=maybe"))).status).toBe(422);
    expect((await cp.call("GET", cp.org("/audit-records?limit=501"))).status).toBe(422);
    expect((await cp.call("GET", cp.org("/audit-records?from=yesterday"))).status).toBe(422);
    expect((await cp.call("GET", cp.org("/audit-records?cursor=garbage"))).status).toBe(422);
  });

  test("pages newest first with an opaque cursor", async () => {
    const cp = await testControlPlane();
    const inst = await addInstallation(cp);
    const t0 = Date.now() - 10_000;
    const ids = Array.from({ length: 7 }, (_, i) => newId("auditRecord", t0 + i));
    await ingest(cp, inst.token, ids.map((id) => auditRecord(inst, { id })));
    const seen: string[] = [];
    let cursor: string | null = null;
    let pages = 0;
    do {
      const res: { json: { records: Array<{ id: string }>; next_cursor: string | null } } = await cp.call("GET", cp.org(`/audit-records?limit=3${cursor ? `&cursor=${cursor}` : ""}`));
      seen.push(...res.json.records.map((r) => r.id));
      cursor = res.json.next_cursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(3);
    expect(seen).toEqual([...ids].reverse());
    expect((await cp.call("GET", cp.org("/audit-records?limit=7"))).json.next_cursor).toBeNull();
  });

  test("the ciphertext route returns the exact age bytes; digest-only is 404 explained", async () => {
    const cp = await testControlPlane();
    const inst = await addInstallation(cp);
    const { identity, recipient } = await newRecipient();
    const enc = new Encrypter();
    enc.addRecipient(recipient);
    const bytes = await enc.encrypt(JSON.stringify({ arguments: { id: 7 }, payload: null }));
    const rec = auditRecord(inst, { recipient_key_ids: ["key_X"], ciphertext: Buffer.from(bytes).toString("base64"), args_digest: null, digest_key_id: null });
    const plain = auditRecord(inst);
    await ingest(cp, inst.token, [rec, plain]);

    const res = await cp.app.handle(new Request(`http://localhost${cp.org(`/audit-records/${rec.id}/ciphertext`)}`, { headers: { authorization: `Bearer ${cp.adminToken}` } }));
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("application/octet-stream");
    const got = new Uint8Array(await res.arrayBuffer());
    expect(Buffer.from(got).equals(Buffer.from(bytes))).toBe(true);
    const dec = new Decrypter();
    dec.addIdentity(identity);
    expect(JSON.parse(await dec.decrypt(got, "text"))).toEqual({ arguments: { id: 7 }, payload: null });

    const none = await cp.call("GET", cp.org(`/audit-records/${plain.id}/ciphertext`));
    expect(none.status).toBe(404);
    expect(none.json.code).toBe("not_found");
    expect(none.json.detail).toContain("digest-only");
    expect((await cp.call("GET", cp.org("/audit-records/rec_NOPE"))).status).toBe(404);
  });

  test("another organization sees none of these records", async () => {
    const cp = await testControlPlane();
    const inst = await addInstallation(cp);
    const rec = auditRecord(inst, { recipient_key_ids: ["key_X"], ciphertext: Buffer.from("age").toString("base64") });
    await ingest(cp, inst.token, [rec]);
    const other = await addOrganization(cp);
    expect((await cp.call("GET", cp.org("/audit-records"), { token: other.adminToken })).status).toBe(404);
    expect((await cp.call("GET", other.org("/audit-records"), { token: other.adminToken })).json.records).toEqual([]);
    expect((await cp.call("GET", other.org(`/audit-records/${rec.id}`), { token: other.adminToken })).status).toBe(404);
    expect((await cp.call("GET", other.org(`/audit-records/${rec.id}/ciphertext`), { token: other.adminToken })).status).toBe(404);
  });
});
