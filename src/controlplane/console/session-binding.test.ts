// Sessions remember how and for which organization they were authenticated. A single sign-on
// session is bound to the organization whose provider vouched for it (that provider is run by
// that organization's admins), and never speaks for an owner; only owners change the provider;
// a password session may switch among the account's organizations. Driven through the real app
// in-process, with a scripted identity provider that asserts whatever email its (malicious)
// admin wants.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { PASSWORD, accountWithRole, secondOrganization } from "../auth/test-fixtures.ts";
import { addMembership } from "../auth/service.ts";
import { inspectClaim } from "../claims/service.ts";
import { tables } from "../db/index.ts";
import { findRemoteIdentity } from "../directory/service.ts";
import { addInstallation } from "../runtime/fixtures.ts";
import { type TestControlPlane, testControlPlane } from "../testing.ts";
import { type ScriptedIdp, startScriptedIdp } from "./scripted-idp.ts";
import { PRESESSION_COOKIE } from "./csrf.ts";
import { saveOidcSettings } from "./oidc.ts";
import { type Browser, browser } from "./test-browser.ts";
import { openSession } from "./session.ts";
import { NO_ORIGIN } from "../http/request-gate.ts";
import { actingAsSystem } from "../audit/admin-events.ts";

let idp: ScriptedIdp;
beforeAll(async () => {
  idp = await startScriptedIdp();
});
afterAll(() => idp.stop());

const VICTIM = "owner@example.com";

/** Single sign-on into `orgId` with a provider that asserts `email` (verified). */
async function ssoSignIn(b: Browser, orgId: string, email: string, next = "/") {
  const start = await b.get(`/sso/start?org=${orgId}&next=${encodeURIComponent(next)}`);
  expect(start.status).toBe(303);
  const q = new URL(start.headers.get("location")!).searchParams;
  idp.nextIdToken = await idp.idToken({ nonce: q.get("nonce"), email, email_verified: true });
  const done = await b.get(`/sso/callback?state=${q.get("state")}&code=c`);
  expect(done.status).toBe(303);
  expect(b.jar.get("svc_session")).toStartWith("svc_ss_");
}

async function passwordSignIn(b: Browser, email: string, organizationId?: string) {
  await b.get("/sign-in");
  const res = await b.post("/sign-in", { email, password: PASSWORD, _csrf: b.jar.get(PRESESSION_COOKIE)!, ...(organizationId ? { organization_id: organizationId } : {}) });
  expect(res.status).toBe(303);
}

async function authMethodOf(cp: TestControlPlane, accountId: string): Promise<string[]> {
  const s = tables(cp.deps.db).sessions;
  return (await cp.deps.db.select({ m: s.authMethod }).from(s).where(eq(s.accountId, accountId)).orderBy(s.createdAt)).map((r) => r.m);
}

/** Org A (victim = its owner), org B whose admin added the victim and runs his own provider. */
async function attackSetup() {
  const cp = await testControlPlane();
  const b = await secondOrganization(cp);
  const added = await cp.call("POST", b.org("/members"), { body: { email: VICTIM, role: "member" }, token: b.token });
  expect(added.status).toBeLessThan(300);
  await saveOidcSettings(cp.deps, b.orgId, { issuer: idp.issuer, clientId: "console", clientSecret: "attacker" }, actingAsSystem(cp.deps, "controlplane"));
  return { cp, b };
}

describe("single sign-on sessions are bound to their organization", () => {
  test("another organization's SSO cannot switch into the victim's organization (cross-org takeover)", async () => {
    const { cp, b } = await attackSetup();
    const attacker = browser(cp);
    await ssoSignIn(attacker, b.orgId, VICTIM);
    expect(await authMethodOf(cp, cp.accountId)).toEqual(["sso"]);
    expect((await attacker.api("GET", "/api/v1/me")).json.organization.id).toBe(b.orgId);

    const before = attacker.jar.get("svc_session");
    const sw = await attacker.post("/switch-org", { organization_id: cp.orgId, _csrf: await attacker.csrf() });
    expect(sw.status).toBe(303);
    expect(sw.headers.get("location")).toBe(`/sign-in?org=${cp.orgId}&done=reauth`);
    expect(sw.headers.getSetCookie().some((c) => c.startsWith("svc_session="))).toBe(false);
    expect(attacker.jar.get("svc_session")).toBe(before);
    expect(await authMethodOf(cp, cp.accountId)).toEqual(["sso"]); // no session was opened in A
    const me = await attacker.api("GET", "/api/v1/me");
    expect(me.json.organization.id).toBe(b.orgId);
    expect(me.json.role).toBe("member");
    expect((await attacker.api("GET", cp.org("/members"))).status).toBe(404);

    // The re-authentication page explains why, and asks for a real sign-in for A.
    const page = await (await attacker.get(sw.headers.get("location")!)).text();
    expect(page).toContain("does not open this organization");
    expect(page).toContain('name="password"');
  });

  test("an SSO session of another organization cannot redeem the victim organization's claim link", async () => {
    const { cp, b } = await attackSetup();
    const inst = await addInstallation(cp);
    const link = await cp.call("POST", "/api/v1/runtime/claims", { token: inst.token, body: { remote_user_id: "attacker-chat" } });
    const path = new URL(link.json.url).pathname;
    const token = path.slice("/claim/".length);

    const attacker = browser(cp);
    await ssoSignIn(attacker, b.orgId, VICTIM);
    const shown = await (await attacker.get(path)).text();
    expect(shown).not.toContain("Link my chat account");
    expect(shown).toContain("does not count here");
    const csrf = await attacker.csrf();
    const res = await attacker.post(path, { action: "link", _csrf: csrf });
    expect(res.status).toBe(403);
    expect(await res.text()).toContain("not signed in for this organization");
    expect((await inspectClaim(cp.deps, token)).remoteUserId).toBe("attacker-chat"); // still unused
    expect((await findRemoteIdentity(cp.deps.db, cp.orgId, "attacker-chat"))?.userId ?? null).toBeNull();
  });

  test("the organization's own SSO session redeems its claim link; the SSO session stays in that organization", async () => {
    const { cp } = await attackSetup();
    await saveOidcSettings(cp.deps, cp.orgId, { issuer: idp.issuer, clientId: "console", clientSecret: "acme" }, actingAsSystem(cp.deps, "controlplane"));
    const staff = await accountWithRole(cp, "member", "staff@example.com");
    const inst = await addInstallation(cp);
    const path = new URL((await cp.call("POST", "/api/v1/runtime/claims", { token: inst.token, body: { remote_user_id: "own-chat" } })).json.url).pathname;
    const me = browser(cp);
    await ssoSignIn(me, cp.orgId, staff.email, path);
    expect(await (await me.get(path)).text()).toContain(`Link my chat account to ${staff.email}`);
    const res = await me.post(path, { action: "link", _csrf: await me.csrf() });
    expect(res.status).toBe(200);
    expect(await res.text()).toContain("Your chat account is linked");
    expect((await findRemoteIdentity(cp.deps.db, cp.orgId, "own-chat"))?.userId).toBeTruthy();
  });
});

describe("single sign-on never speaks for an owner, and only owners change it", () => {
  async function ssoSettingsSetup() {
    const cp = await testControlPlane();
    const admin = await accountWithRole(cp, "admin", "admin@example.com");
    return { cp, admin };
  }
  const oidcRow = async (cp: TestControlPlane) => (await cp.deps.db.select().from(tables(cp.deps.db).oidcConfigs))[0];
  const ssoForm = { issuer: "", client_id: "console", client_secret: "attacker-secret" };

  test("an admin cannot configure, replace or remove single sign-on; an owner can", async () => {
    const { cp } = await ssoSettingsSetup();
    const admin = browser(cp);
    await passwordSignIn(admin, "admin@example.com");
    const page = await (await admin.get("/settings")).text();
    expect(page).toContain("Only an owner can change single sign-on");
    expect(page).not.toContain('action="/settings/sso"');
    const tried = await admin.post("/settings/sso", { ...ssoForm, issuer: idp.issuer, _csrf: await admin.csrf() });
    expect(tried.status).toBe(403);
    expect(await tried.text()).toContain("Only an owner of Acme can change single sign-on");
    expect(await oidcRow(cp)).toBeUndefined();

    const owner = browser(cp);
    await passwordSignIn(owner, VICTIM);
    expect(await (await owner.get("/settings")).text()).toContain('action="/settings/sso"');
    const saved = await owner.post("/settings/sso", { ...ssoForm, issuer: idp.issuer, client_secret: "owner-secret", _csrf: await owner.csrf() });
    expect(saved.status).toBe(303);
    expect((await oidcRow(cp))?.issuer).toBe(idp.issuer);

    // The admin can neither point it elsewhere nor remove it.
    expect((await admin.post("/settings/sso", { ...ssoForm, issuer: "http://127.0.0.1:9", _csrf: await admin.csrf() })).status).toBe(403);
    expect((await admin.post("/settings/sso/delete", { _csrf: await admin.csrf() })).status).toBe(403);
    expect((await oidcRow(cp))?.issuer).toBe(idp.issuer);
    expect((await owner.post("/settings/sso/delete", { _csrf: await owner.csrf() })).status).toBe(303);
    expect(await oidcRow(cp)).toBeUndefined();
  });

  test("a provider asserting an owner's email opens no session; an admin's email does", async () => {
    const { cp } = await ssoSettingsSetup();
    // As if an admin had pointed the organization at their own provider (before owners alone could).
    await saveOidcSettings(cp.deps, cp.orgId, { issuer: idp.issuer, clientId: "console", clientSecret: "attacker" }, actingAsSystem(cp.deps, "controlplane"));
    const attacker = browser(cp);
    const start = await attacker.get(`/sso/start?org=${cp.orgId}`);
    const q = new URL(start.headers.get("location")!).searchParams;
    idp.nextIdToken = await idp.idToken({ nonce: q.get("nonce"), email: VICTIM, email_verified: true });
    const done = await attacker.get(`/sso/callback?state=${q.get("state")}&code=c`);
    expect(done.status).toBe(400);
    expect(await done.text()).toContain("owners sign in with their password");
    expect(attacker.jar.get("svc_session")).toBeUndefined();
    expect(await authMethodOf(cp, cp.accountId)).toEqual([]);

    const admin = browser(cp);
    await ssoSignIn(admin, cp.orgId, "admin@example.com");
    expect((await admin.api("GET", "/api/v1/me")).json.role).toBe("admin");
  });

  test("an SSO session ends when its account becomes owner, and so do the account's API tokens", async () => {
    const { cp, admin } = await ssoSettingsSetup();
    await saveOidcSettings(cp.deps, cp.orgId, { issuer: idp.issuer, clientId: "console", clientSecret: "s" }, actingAsSystem(cp.deps, "controlplane"));
    const me = browser(cp);
    await ssoSignIn(me, cp.orgId, admin.email);
    // A token minted from the SSO session must not become an owner token later.
    const minted = await me.send("/api/v1/organizations/" + cp.orgId + "/api-tokens", {
      method: "POST",
      headers: { "content-type": "application/json", "x-csrf-token": await me.csrf() },
      body: JSON.stringify({ name: "from sso" }),
    });
    expect(minted.status).toBe(201);
    const mintedToken = ((await minted.json()) as { token: string }).token;
    const promoted = await cp.call("POST", cp.org("/members"), { body: { email: admin.email, role: "owner" } });
    expect(promoted.status).toBe(201);
    expect((await me.api("GET", "/api/v1/me")).status).toBe(401);
    for (const token of [mintedToken, admin.token]) expect((await cp.call("GET", "/api/v1/me", { token })).status).toBe(401);
    // Signing in again: the password works, single sign-on no longer does.
    const again = browser(cp);
    await passwordSignIn(again, admin.email);
    expect((await again.api("GET", "/api/v1/me")).json.role).toBe("owner");
  });

  test("an SSO session does not carry the owner role however the membership changed", async () => {
    const { cp, admin } = await ssoSettingsSetup();
    await saveOidcSettings(cp.deps, cp.orgId, { issuer: idp.issuer, clientId: "console", clientSecret: "s" }, actingAsSystem(cp.deps, "controlplane"));
    const me = browser(cp);
    await ssoSignIn(me, cp.orgId, admin.email);
    await addMembership(cp.deps.db, admin.accountId, cp.orgId, "owner", { by: null, join: "added", at: cp.deps.now() }); // bypassing the members route
    expect((await me.api("GET", "/api/v1/me")).status).toBe(401);
    expect((await me.get("/members")).status).toBe(303); // back to sign-in
    expect(await openSession(cp.deps, admin.accountId, cp.orgId, "sso", NO_ORIGIN, { authenticatedAt: cp.deps.now() })).toBeNull();
    expect((await openSession(cp.deps, admin.accountId, cp.orgId, "password", NO_ORIGIN, { authenticatedAt: cp.deps.now() }))?.orgId).toBe(cp.orgId);
  });
});

describe("password sessions", () => {
  test("may switch among the account's organizations; the new session is a password session", async () => {
    const { cp, b } = await attackSetup();
    const me = browser(cp);
    await passwordSignIn(me, VICTIM);
    expect((await me.api("GET", "/api/v1/me")).json.organization.id).toBe(cp.orgId);
    const first = me.jar.get("svc_session");
    const sw = await me.post("/switch-org", { organization_id: b.orgId, _csrf: await me.csrf() });
    expect(sw.status).toBe(303);
    expect(sw.headers.get("location")).toBe("/");
    expect(me.jar.get("svc_session")).not.toBe(first);
    expect((await me.api("GET", "/api/v1/me")).json.organization.id).toBe(b.orgId);
    expect(await authMethodOf(cp, cp.accountId)).toEqual(["password"]); // the old one was ended
  });

  test("a password session of the account redeems a claim link of another of its organizations", async () => {
    const { cp, b } = await attackSetup();
    const inst = await addInstallation(cp);
    const path = new URL((await cp.call("POST", "/api/v1/runtime/claims", { token: inst.token, body: { remote_user_id: "pw-chat" } })).json.url).pathname;
    const me = browser(cp);
    await passwordSignIn(me, VICTIM, b.orgId);
    expect((await me.api("GET", "/api/v1/me")).json.organization.id).toBe(b.orgId);
    const res = await me.post(path, { action: "link", _csrf: await me.csrf() });
    expect(res.status).toBe(200);
    expect((await findRemoteIdentity(cp.deps.db, cp.orgId, "pw-chat"))?.userId).toBeTruthy();
  });

  test("signing in again ends the session it replaces", async () => {
    const { cp, b } = await attackSetup();
    const me = browser(cp);
    await ssoSignIn(me, b.orgId, VICTIM);
    await passwordSignIn(me, VICTIM, cp.orgId);
    expect(await authMethodOf(cp, cp.accountId)).toEqual(["password"]);
    expect((await me.api("GET", "/api/v1/me")).json.organization.id).toBe(cp.orgId);
  });
});

describe("openSession", () => {
  test("opens exactly the organization asked for, never a fallback", async () => {
    const { cp, b } = await attackSetup();
    const outsider = await cp.call("POST", b.org("/members"), { body: { email: "only-b@example.org", role: "member" }, token: b.token });
    expect(await openSession(cp.deps, outsider.json.account_id, cp.orgId, "sso", NO_ORIGIN, { authenticatedAt: cp.deps.now() })).toBeNull();
    expect(await openSession(cp.deps, outsider.json.account_id, "", "sso", NO_ORIGIN, { authenticatedAt: cp.deps.now() })).toBeNull();
    expect((await openSession(cp.deps, cp.accountId, b.orgId, "sso", NO_ORIGIN, { authenticatedAt: cp.deps.now() }))?.orgId).toBe(b.orgId);
  });
});

describe("claim page", () => {
  test("does not present the front end's self-declared name or email, does not pre-fill it, and warns", async () => {
    const cp = await testControlPlane();
    const inst = await addInstallation(cp);
    const res = await cp.call("POST", "/api/v1/runtime/claims", { token: inst.token, body: { remote_user_id: "fe-9", email: "ceo@example.com", name: "The CEO" } });
    const visitor = browser(cp);
    const html = await (await visitor.get(new URL(res.json.url).pathname)).text();
    expect(html).not.toContain("The CEO");
    expect(html).not.toContain("ceo@example.com");
    expect(html).toMatch(/<input[^>]*name="email"[^>]*value=""/);
    expect(html).toContain("Use this link only if you asked for it in the chat just now.");
  });
});
