// The two-person rule between people (issue 27) through the real app, on SQLite (and PostgreSQL
// with SVC_TEST_POSTGRES_URL), with the test's clock for membership ages and sign-in times: the
// sockpuppet path and its variants (invited, raised, added by a sockpuppet) are refused by
// provenance and recorded; a membership too young at request time is refused however long it
// then waits; a stale sign-in is refused with what to do, `svc login` tokens included; a second
// owner of more than 24 hours with a fresh sign-in approves. Same-IdP-subject: idp-subject.test.ts.
import { describe, expect, test } from "bun:test";
import { PASSWORD, accountWithRole, secondOrganization } from "../auth/test-fixtures.ts";
import { PRESESSION_COOKIE } from "../console/csrf.ts";
import { browser } from "../console/test-browser.ts";
import type { TestControlPlane } from "../testing.ts";
import { HOUR, addMemberAs, freshToken, requestBySecond, sessionHeaders, world } from "./test-fixtures.ts";

type Auth = { token?: string | null; headers?: Record<string, string> };

const approve = async (cp: TestControlPlane, id: string, auth: Auth) => cp.call("POST", cp.org(`/audit-recovery-requests/${id}/approve`), auth);
const adminEvents = async (cp: TestControlPlane) => (await cp.call("GET", cp.org("/audit-records?kind=admin"))).json.records as Array<Record<string, any>>;
const noticesOf = async (cp: TestControlPlane, token: string) =>
  (await cp.call("GET", cp.org("/notices"), { token })).json.notices as Array<{ id: string; action: string; result: string; text: string; ref: string | null }>;

describe("recovery approval between people", () => {
  test("the sockpuppet path (an owner adds an admin with a password of their choosing, signs in as it, approves) is refused with the provenance code, recorded and announced", async () => {
    const w = await world();
    const { cp } = w;
    const puppetId = await addMemberAs(cp, cp.adminToken, "ops.helper@example.com", "admin");
    w.clock.advance(48 * HOUR); // old enough: the age rule is not what refuses it
    const id = (await cp.call("POST", cp.org("/audit-recovery-requests"), { body: { record_id: w.escrowed.id, reason: "curious" } })).json.id as string;
    const res = await approve(cp, id, await sessionHeaders(cp, "ops.helper@example.com"));
    expect(res.status).toBe(403);
    expect(res.json.code).toBe("recovery_approver_provenance");
    expect(res.json.detail).toContain("ops.helper@example.com was created as admin by owner@example.com");
    expect((await cp.call("GET", cp.org(`/audit-recovery-requests/${id}`))).json.status).toBe("pending");

    const [refusal] = await adminEvents(cp);
    expect(refusal).toMatchObject({ action: "audit:recovery.approve", decision: "deny", actor_id: puppetId, target: `recovery_request:${id}` });
    expect(refusal!.admin).toMatchObject({
      result: "refused",
      status: 403,
      code: "recovery_approver_provenance",
      severity: "high",
      actor: { email: "ops.helper@example.com", credential: { kind: "session" } },
    });
    // The others are told: the requester and the second owner see the refusal; the puppet not its own.
    for (const token of [cp.adminToken, w.second.token]) expect((await noticesOf(cp, token)).map((n) => [n.action, n.result, n.ref])).toContainEqual(["audit:recovery.approve", "refused", id]);
    expect((await noticesOf(cp, w.second.token)).map((n) => n.action)).toContain("audit:recovery.request");
    expect((await noticesOf(cp, cp.adminToken)).find((n) => n.result === "refused")!.text).toBe(
      `ops.helper@example.com was refused approving escrow recovery ${id} of record ${w.escrowed.id}: the requester created, invited, added or raised their membership (directly or through accounts the requester granted) (recovery_approver_provenance)`,
    );
    expect(refusal!.reason).toContain(`Told: ops.helper@example.com cannot approve ${id}: ops.helper@example.com was created as admin by owner@example.com`);
    expect((await noticesOf(cp, await freshToken(cp, puppetId))).map((n) => n.action)).toEqual(["audit:recovery.request"]);

    // A sockpuppet's own sockpuppet, aged: the path through the first is followed.
    const puppet2Id = await addMemberAs(cp, await freshToken(cp, puppetId), "ops.helper2@example.com", "admin");
    w.clock.advance(48 * HOUR);
    const id2 = (await cp.call("POST", cp.org("/audit-recovery-requests"), { body: { record_id: w.escrowed.id, reason: "still curious" } })).json.id as string;
    const res2 = await approve(cp, id2, { token: await freshToken(cp, puppet2Id) });
    expect(res2.json.code).toBe("recovery_approver_provenance");
    expect(res2.json.detail).toContain("ops.helper2@example.com was created as admin by ops.helper@example.com");
    expect(res2.json.detail).toContain("and ops.helper@example.com was created as admin by owner@example.com");
  });

  test("an admin the requester invited is refused; one the requester never granted approves", async () => {
    const w = await world();
    const { cp } = w;
    const invitedId = await addMemberAs(cp, w.second.token, "invited@example.com", "admin", null);
    w.clock.advance(25 * HOUR);
    const id = await requestBySecond(w);
    const res = await approve(cp, id, { token: await freshToken(cp, invitedId) });
    expect(res.status).toBe(403);
    expect(res.json.code).toBe("recovery_approver_provenance");
    expect(res.json.detail).toContain("invited@example.com was invited as admin by second.owner@example.com");
    expect((await approve(cp, id, { token: await freshToken(cp, cp.accountId) })).json.status).toBe("approved");
  });

  test("a member the requester raised to admin is refused; a role the requester lowered grants nothing", async () => {
    const w = await world();
    const { cp } = w;
    const raisedId = await addMemberAs(cp, cp.adminToken, "raised@example.com", "member");
    await addMemberAs(cp, w.second.token, "raised@example.com", "admin", null);
    const loweredId = await addMemberAs(cp, cp.adminToken, "lowered@example.com", "admin");
    await addMemberAs(cp, w.second.token, "lowered@example.com", "member", null);
    await addMemberAs(cp, cp.adminToken, "lowered@example.com", "admin", null);
    w.clock.advance(25 * HOUR);
    const id = await requestBySecond(w);
    const raised = await approve(cp, id, { token: await freshToken(cp, raisedId) });
    expect(raised.json.code).toBe("recovery_approver_provenance");
    expect(raised.json.detail).toContain("raised@example.com was raised to admin by second.owner@example.com");
    expect((await approve(cp, id, { token: await freshToken(cp, loweredId) })).json.status).toBe("approved");
  });

  test("an approver whose membership was younger than 24 h when the request was made is refused, however long it then waits", async () => {
    const w = await world();
    const { cp } = w;
    const youngId = await addMemberAs(cp, cp.adminToken, "young@example.com", "admin");
    w.clock.advance(23 * HOUR);
    const early = await requestBySecond(w);
    const res = await approve(cp, early, { token: await freshToken(cp, youngId) });
    expect(res.status).toBe(403);
    expect(res.json.code).toBe("recovery_approver_too_new");
    expect(res.json.detail).toContain("at least 24 hours when the request was made");
    expect(res.json.detail).toMatch(/had a membership of 23(\.\d)? hours/);
    w.clock.advance(2 * HOUR);
    expect((await approve(cp, early, { token: await freshToken(cp, youngId) })).json.code).toBe("recovery_approver_too_new");
    const later = await requestBySecond(w);
    expect((await approve(cp, later, { token: await freshToken(cp, youngId) })).json.status).toBe("approved");
    expect((await adminEvents(cp)).filter((e) => e.admin.code === "recovery_approver_too_new")).toHaveLength(2);
  });

  test("a stale sign-in is refused with what to do, `svc login` tokens carrying the approving session's sign-in; a fresh one is accepted", async () => {
    const w = await world();
    const { cp } = w;
    const id = await requestBySecond(w);
    // The bootstrap token comes from a sign-in 25 hours ago.
    const stale = await approve(cp, id, {});
    expect(stale.status).toBe(403);
    expect(stale.json.code).toBe("recovery_stale_sign_in");
    expect(stale.json.detail).toContain(`run \`svc login\` again (sign in afresh on the page it opens), then approve within 5 minutes: \`svc audit recover approve ${id}\``);
    // A console session signed in 6 minutes ago.
    const session = await sessionHeaders(cp, "owner@example.com");
    w.clock.advance(6 * 60_000);
    const old = await approve(cp, id, session);
    expect(old.json.code).toBe("recovery_stale_sign_in");
    expect(old.json.detail).toContain("your console session signed in 6 minutes ago");
    expect(old.json.detail).toContain("sign out, sign in again, then approve within 5 minutes");
    // `svc login` approved from that session now: the token is new, its sign-in is not.
    const login = (await cp.call("POST", "/api/v1/auth/login-requests", { token: null, body: {} })).json;
    expect((await cp.call("POST", `/api/v1/auth/login-requests/${login.id}/approve`, { ...session, body: {} })).status).toBe(200);
    const cliToken = (await cp.call("POST", `/api/v1/auth/login-requests/${login.id}/token`, { token: null, body: { poll_secret: login.poll_secret } })).json.token as string;
    expect((await approve(cp, id, { token: cliToken })).json.code).toBe("recovery_stale_sign_in");
    // Nor does a token issued by a stale token renew it.
    const issued = (await cp.call("POST", cp.org("/api-tokens"), { token: cliToken, body: { name: "again" } })).json.token as string;
    expect((await approve(cp, id, { token: issued })).json.code).toBe("recovery_stale_sign_in");
    // Switching organization is no sign-in: the session keeps the time the password was typed.
    const globex = await secondOrganization(cp);
    expect((await cp.call("POST", globex.org("/members"), { token: globex.token, body: { email: "owner@example.com", role: "admin" } })).status).toBe(201);
    const b = browser(cp);
    await b.get("/sign-in");
    await b.post("/sign-in", { email: "owner@example.com", password: PASSWORD, organization_id: cp.orgId, _csrf: b.jar.get(PRESESSION_COOKIE)! });
    w.clock.advance(6 * 60_000);
    for (const to of [globex.orgId, cp.orgId]) expect((await b.post("/switch-org", { organization_id: to, _csrf: await b.csrf() })).status).toBe(303);
    expect((await b.api("GET", "/api/v1/me")).json.organization.id).toBe(cp.orgId);
    expect(await (await b.post(`/audit-recovery/${id}/approve`, { _csrf: await b.csrf() })).text()).toContain("(recovery_stale_sign_in)");
    expect((await cp.call("GET", cp.org(`/audit-recovery-requests/${id}`))).json.status).toBe("pending");

    // Signed in again: a session, and a token `svc login` gets from it, are fresh for 5 minutes.
    const fresh = await sessionHeaders(cp, "owner@example.com");
    w.clock.advance(4 * 60_000);
    const login2 = (await cp.call("POST", "/api/v1/auth/login-requests", { token: null, body: {} })).json;
    await cp.call("POST", `/api/v1/auth/login-requests/${login2.id}/approve`, { ...fresh, body: {} });
    const freshCli = (await cp.call("POST", `/api/v1/auth/login-requests/${login2.id}/token`, { token: null, body: { poll_secret: login2.poll_secret } })).json.token as string;
    const ok = await approve(cp, id, { token: freshCli });
    expect(ok.status).toBe(200);
    expect(ok.json.status).toBe("approved");
    expect((await adminEvents(cp)).filter((e) => e.admin.code === "recovery_stale_sign_in")).toHaveLength(5);
  });

  test("a second owner of more than 24 hours, freshly signed in, approves; the requester fetches once", async () => {
    const w = await world();
    const { cp } = w;
    const id = await requestBySecond(w);
    const res = await approve(cp, id, await sessionHeaders(cp, "owner@example.com"));
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({ status: "approved", approved_by: { email: "owner@example.com" } });
    const [event] = await adminEvents(cp);
    expect(event!.admin).toMatchObject({ result: "ok", severity: "high", after: { status: "approved", approver_provenance: "recorded" } });
    expect((await cp.call("POST", cp.org(`/audit-recovery-requests/${id}/fetch`), { token: w.second.token })).status).toBe(200);
    expect((await cp.call("POST", cp.org(`/audit-recovery-requests/${id}/fetch`), { token: w.second.token })).json.code).toBe("recovery_consumed");
  });
});

describe("notices of recovery steps", () => {
  test("each step reaches every other owner and admin until each dismisses it for themselves", async () => {
    const w = await world();
    const { cp } = w;
    const admin = await accountWithRole(cp, "admin", "third@example.com", cp.accountId);
    const id = await requestBySecond(w);
    await approve(cp, id, { token: await freshToken(cp, cp.accountId) });
    await cp.call("POST", cp.org(`/audit-recovery-requests/${id}/fetch`), { token: w.second.token });
    const steps = (n: Array<{ action: string }>) => n.map((x) => x.action);
    expect(steps(await noticesOf(cp, admin.token))).toEqual(["audit:recovery.decrypt", "audit:recovery.approve", "audit:recovery.request"]);
    expect(steps(await noticesOf(cp, cp.adminToken))).toEqual(["audit:recovery.decrypt", "audit:recovery.request"]);
    expect(steps(await noticesOf(cp, w.second.token))).toEqual(["audit:recovery.approve"]);
    const [fetchNotice] = await noticesOf(cp, admin.token);
    expect(fetchNotice!.text).toContain(`were decrypted and handed to ${w.second.email}, once`);
    expect((await cp.call("POST", cp.org(`/notices/${fetchNotice!.id}/dismiss`), { token: admin.token })).status).toBe(204);
    expect((await cp.call("POST", cp.org(`/notices/${fetchNotice!.id}/dismiss`), { token: admin.token })).status).toBe(204);
    expect(steps(await noticesOf(cp, admin.token))).toEqual(["audit:recovery.approve", "audit:recovery.request"]);
    expect(steps(await noticesOf(cp, cp.adminToken))).toEqual(["audit:recovery.decrypt", "audit:recovery.request"]);
    expect((await cp.call("POST", cp.org("/notices/ntc_NOPE/dismiss"), { token: admin.token })).status).toBe(404);
    const member = await accountWithRole(cp, "member", "just.member@example.com", cp.accountId);
    expect((await cp.call("GET", cp.org("/notices"), { token: member.token })).status).toBe(403);
  });
});
