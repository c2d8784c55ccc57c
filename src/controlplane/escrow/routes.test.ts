// Escrow recovery (break-glass) through the real app, on SQLite (and PostgreSQL with
// SVC_TEST_POSTGRES_URL): the requester cannot approve their own request, only the requester
// fetches, once, and the request, approval (and refused approval) and decryption are chained
// admin audit events. The rules between people are in two-person.test.ts.
import { describe, expect, test } from "bun:test";
import { accountWithRole } from "../auth/test-fixtures.ts";
import { escrowProblem } from "./service.ts";
import { ARGS, HOUR, freshToken, requestBySecond, world } from "./test-fixtures.ts";

describe("escrow recovery", () => {
  test("request → refused self-approval → approval by the other owner → one fetch by the requester; chained admin events", async () => {
    const w = await world();
    const { cp, escrowed, second } = w;
    const created = await cp.call("POST", cp.org("/audit-recovery-requests"), { token: second.token, body: { record_id: escrowed.id, reason: "incident 4711" } });
    expect(created.status).toBe(201);
    expect(created.json).toMatchObject({ record_id: escrowed.id, status: "pending", reason: "incident 4711", requested_by: { email: second.email }, approved_by: null });
    const id = created.json.id as string;

    // Not yet approved: no plaintext.
    const early = await cp.call("POST", cp.org(`/audit-recovery-requests/${id}/fetch`), { token: second.token });
    expect(early.status).toBe(409);
    expect(early.json.code).toBe("recovery_not_approved");
    // The requester alone is not enough.
    const self = await cp.call("POST", cp.org(`/audit-recovery-requests/${id}/approve`), { token: second.token });
    expect(self.status).toBe(403);
    expect(self.json.code).toBe("recovery_self_approval");
    expect(self.json.detail).toContain("so you cannot approve it; another person must, an owner or admin whose membership you never granted");
    expect((await cp.call("GET", cp.org(`/audit-recovery-requests/${id}`))).json.status).toBe("pending");

    const ownerToken = await freshToken(cp, cp.accountId);
    const approved = await cp.call("POST", cp.org(`/audit-recovery-requests/${id}/approve`), { token: ownerToken });
    expect(approved.status).toBe(200);
    expect(approved.json).toMatchObject({ status: "approved", approved_by: { email: "owner@example.com" } });
    expect((await cp.call("POST", cp.org(`/audit-recovery-requests/${id}/approve`), { token: ownerToken })).status).toBe(409);

    // The approver cannot fetch: only the requester.
    const other = await cp.call("POST", cp.org(`/audit-recovery-requests/${id}/fetch`), { token: ownerToken });
    expect(other.status).toBe(403);
    const fetched = await cp.app.handle(new Request(`http://localhost${cp.org(`/audit-recovery-requests/${id}/fetch`)}`, { method: "POST", headers: { authorization: `Bearer ${second.token}` } }));
    expect(fetched.status).toBe(200);
    expect(fetched.headers.get("cache-control")).toBe("no-store");
    expect(await fetched.text()).toBe(ARGS);
    const again = await cp.call("POST", cp.org(`/audit-recovery-requests/${id}/fetch`), { token: second.token });
    expect(again.status).toBe(410);
    expect(again.json.code).toBe("recovery_consumed");
    expect((await cp.call("GET", cp.org(`/audit-recovery-requests/${id}`))).json.status).toBe("consumed");

    const events = (await cp.call("GET", cp.org("/audit-records?action=audit:recovery.*"))).json.records as Array<Record<string, any>>;
    expect(events.map((e) => [e.action, e.admin.result])).toEqual([
      ["audit:recovery.decrypt", "ok"],
      ["audit:recovery.approve", "ok"],
      ["audit:recovery.approve", "refused"],
      ["audit:recovery.request", "ok"],
    ]);
    for (const e of events) expect(e).toMatchObject({ kind: "admin", ref: escrowed.id, installation_id: "controlplane", chain_id: "controlplane", admin: { severity: "high" } });
    // in the organization's control-plane chain, in order (the admin trail's other events between them)
    const seqs = events.map((e) => e.chain_seq as number);
    expect(seqs).toEqual([...seqs].sort((x, y) => y - x));
    expect(events[3]!.reason).toContain("incident 4711");
    expect(events[2]).toMatchObject({ decision: "deny", admin: { code: "recovery_self_approval", status: 403, actor: { email: second.email } } });
    expect(events[1]!.reason).toContain("owner@example.com");
    // The two-person rule records its refusal itself: the HTTP hook does not record it again;
    // the approver's refused fetch is an ordinary refusal of the trail, naming who tried.
    const refused = (await cp.call("GET", cp.org("/audit-records?action=access.refused"))).json.records as Array<Record<string, any>>;
    expect(refused.map((e) => [e.admin.code, e.admin.actor.email, e.admin.status])).toEqual([["forbidden", "owner@example.com", 403]]);
    // The plaintext is in no stored event.
    expect(JSON.stringify(events)).not.toContain("ACME-4711");
    // Only admin events under --kind admin.
    expect((await cp.call("GET", cp.org("/audit-records?kind=tool"))).json.records.every((r: { kind: string }) => r.kind === "tool")).toBe(true);
  });

  test("records not encrypted to escrow are refused naming why; only owners request; members nothing", async () => {
    const { cp, before, digestOnly } = await world();
    const admin = await accountWithRole(cp, "admin", "an.admin@example.com");
    const notEscrowed = await cp.call("POST", cp.org("/audit-recovery-requests"), { body: { record_id: before.id, reason: "r" } });
    expect(notEscrowed.status).toBe(409);
    expect(notEscrowed.json.code).toBe("record_not_escrowed");
    expect(notEscrowed.json.detail).toContain("is not encrypted to the escrow key");
    const digest = await cp.call("POST", cp.org("/audit-recovery-requests"), { body: { record_id: digestOnly.id, reason: "r" } });
    expect(digest.status).toBe(409);
    expect(digest.json.detail).toContain("digest-only");
    expect((await cp.call("POST", cp.org("/audit-recovery-requests"), { body: { record_id: "rec_NOPE", reason: "r" } })).status).toBe(404);
    const byAdmin = await cp.call("POST", cp.org("/audit-recovery-requests"), { token: admin.token, body: { record_id: before.id, reason: "r" } });
    expect(byAdmin.status).toBe(403);
    expect(byAdmin.json.detail).toContain("only an owner");
    expect((await cp.call("POST", cp.org("/audit-recovery-requests"), { body: { record_id: before.id, reason: "   " } })).status).toBe(422);
    expect((await cp.call("GET", cp.org("/audit-records?action=audit:recovery.*"))).json.records).toEqual([]);
    expect((await cp.call("POST", cp.org("/audit-recovery-requests/rrq_NOPE/approve"), { token: admin.token })).status).toBe(404);
  });

  test("an admin of long standing approves as well as an owner; the escrow key is listed as kind escrow", async () => {
    const w = await world();
    const { cp, escrowKeyId, second } = w;
    const keys = (await cp.call("GET", cp.org("/audit-encryption-keys"))).json.keys as Array<{ id: string; kind: string; status: string }>;
    expect(keys.find((k) => k.id === escrowKeyId)).toMatchObject({ kind: "escrow", status: "active" });
    // An admin the bootstrap owner added two days ago approves the second owner's request.
    const admin = await accountWithRole(cp, "admin", "old.admin@example.com", cp.accountId);
    w.clock.advance(48 * HOUR);
    const id = await requestBySecond(w, "legal hold");
    expect((await cp.call("POST", cp.org(`/audit-recovery-requests/${id}/approve`), { token: await freshToken(cp, admin.accountId) })).json.status).toBe("approved");
    const listed = (await cp.call("GET", cp.org("/audit-recovery-requests?status=approved"))).json.requests;
    expect(listed.map((r: { id: string }) => r.id)).toEqual([id]);
    expect((await cp.call("POST", cp.org(`/audit-recovery-requests/${id}/fetch`))).status).toBe(403);
    expect((await cp.call("POST", cp.org(`/audit-recovery-requests/${id}/fetch`), { token: second.token })).status).toBe(200);
  });
});

test("escrowProblem names why a record cannot be recovered (pure)", () => {
  expect(escrowProblem("rec_A", { mode: "digest-only" }, "key_E")).toContain("digest-only");
  expect(escrowProblem("rec_A", { mode: "recipients", key_ids: ["key_C"] }, "key_E")).toContain("not encrypted to the escrow key key_E (its recipients: key_C)");
  expect(escrowProblem("rec_A", { mode: "recipients", key_ids: ["key_C"] }, null)).toContain("escrow was never enabled");
  expect(escrowProblem("rec_A", { mode: "recipients", key_ids: ["key_C", "key_E"] }, "key_E")).toBeNull();
});
