// Claim links for chat users without a console account (spec §3 "user opens claim link and
// signs in"): a service user — here one that directory sync created — redeems the link through
// the organization's single sign-on, matched by the provider's verified email. No console
// session, account or membership comes of it. Driven through the real app in-process with a
// scripted identity provider.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { accountWithRole } from "../../auth/test-fixtures.ts";
import { findAccountByEmail } from "../../auth/service.ts";
import { inspectClaim, redeemClaimByVerifiedEmail } from "../../claims/service.ts";
import { tables } from "../../db/index.ts";
import { findRemoteIdentity, findUserByEmail, setUserDisabled, upsertUserByEmail } from "../../directory/service.ts";
import { addInstallation, addOrganization } from "../../runtime/fixtures.ts";
import { type TestControlPlane, testControlPlane } from "../../testing.ts";
import { PRESESSION_COOKIE } from "../csrf.ts";
import { saveOidcSettings } from "../oidc.ts";
import { type ScriptedIdp, startScriptedIdp } from "../scripted-idp.ts";
import { type Browser, browser } from "../test-browser.ts";
import { actingAsSystem } from "../../audit/admin-events.ts";

let idp: ScriptedIdp;
beforeAll(async () => {
  idp = await startScriptedIdp();
});
afterAll(() => idp.stop());

const DIRECTORY_USER = "dora@example.com";

async function setup() {
  const cp = await testControlPlane();
  await saveOidcSettings(cp.deps, cp.orgId, { issuer: idp.issuer, clientId: "console", clientSecret: "s" }, actingAsSystem(cp.deps, "controlplane"));
  // A service user as directory sync makes them: no console account, no membership.
  const { user } = await upsertUserByEmail(cp.deps.db, cp.orgId, { email: DIRECTORY_USER, displayName: "Dora", source: "directory", externalId: "entra-dora" });
  const inst = await addInstallation(cp);
  const link = async (remoteUserId: string) => {
    const res = await cp.call("POST", "/api/v1/runtime/claims", { token: inst.token, body: { remote_user_id: remoteUserId } });
    expect(res.status).toBe(200);
    const path = new URL(res.json.url).pathname;
    return { path, token: path.slice("/claim/".length) };
  };
  return { cp, user, link };
}

/** Opens the link, presses its single sign-on button, and comes back with the provider asserting `email`. */
async function claimWithSso(b: Browser, path: string, email: string, claims: Record<string, unknown> = {}) {
  const shown = await (await b.get(path)).text();
  expect(shown).toContain('name="action" value="sso"');
  const started = await b.post(path, { action: "sso", _csrf: b.jar.get(PRESESSION_COOKIE)! });
  expect(started.status).toBe(303);
  const location = new URL(started.headers.get("location")!);
  expect(location.origin).toBe(idp.issuer);
  idp.nextIdToken = await idp.idToken({ nonce: location.searchParams.get("nonce"), email, email_verified: true, ...claims });
  return b.get(`/sso/callback?state=${location.searchParams.get("state")}&code=c`);
}

async function sessionsOf(cp: TestControlPlane) {
  return cp.deps.db.select().from(tables(cp.deps.db).sessions);
}

describe("claim links through single sign-on, without a console account", () => {
  test("a directory service user links their chat account and gets no console access", async () => {
    const { cp, user, link } = await setup();
    const { path, token } = await link("chat-dora");
    const sessionsBefore = (await sessionsOf(cp)).length;
    const b = browser(cp);
    const done = await claimWithSso(b, path, "Dora@Example.com");
    expect(done.status).toBe(200);
    const text = await done.text();
    expect(text).toContain("Your chat account is linked");
    expect(text).toContain(DIRECTORY_USER);
    expect((await findRemoteIdentity(cp.deps.db, cp.orgId, "chat-dora"))?.userId).toBe(user.id);
    await expect(inspectClaim(cp.deps, token)).rejects.toThrow(/already used/);
    // No console session, account or membership.
    expect(b.jar.get("svc_session")).toBeUndefined();
    expect((await sessionsOf(cp)).length).toBe(sessionsBefore);
    expect(await findAccountByEmail(cp.deps.db, DIRECTORY_USER)).toBeUndefined();
    const home = await b.get("/");
    expect(home.status).toBe(303);
    expect(home.headers.get("location")).toStartWith("/sign-in");
    expect((await b.api("GET", "/api/v1/me")).status).toBe(401);
    // The identity map now resolves the chat user to the directory user.
    expect((await findUserByEmail(cp.deps.db, cp.orgId, DIRECTORY_USER))?.source).toBe("directory");
  });

  test("an email with no service user here is refused and the link stays usable", async () => {
    const { cp, link } = await setup();
    const { path, token } = await link("chat-stranger");
    const done = await claimWithSso(browser(cp), path, "stranger@example.com");
    expect(done.status).toBe(404);
    expect(await done.text()).toContain("stranger@example.com is not a user of this organization");
    expect((await inspectClaim(cp.deps, token)).remoteUserId).toBe("chat-stranger");
    expect(await findUserByEmail(cp.deps.db, cp.orgId, "stranger@example.com")).toBeUndefined();
    expect((await findRemoteIdentity(cp.deps.db, cp.orgId, "chat-stranger"))?.userId ?? null).toBeNull();
  });

  test("a disabled service user, an unverified email, or an owner's email is refused", async () => {
    const { cp, user, link } = await setup();
    await cp.deps.db.transaction(async (tx) => setUserDisabled(tx, cp.orgId, user.id, true));
    let l = await link("chat-1");
    let done = await claimWithSso(browser(cp), l.path, DIRECTORY_USER);
    expect(done.status).toBe(403);
    expect(await done.text()).toContain("disabled");

    l = await link("chat-2");
    done = await claimWithSso(browser(cp), l.path, "someone@example.com", { email_verified: false });
    expect(done.status).toBe(400);
    expect(await done.text()).toContain("has not verified");

    // Single sign-on never speaks for an owner, in the console or for chat links.
    await upsertUserByEmail(cp.deps.db, cp.orgId, { email: "owner@example.com", source: "manual" });
    l = await link("chat-3");
    done = await claimWithSso(browser(cp), l.path, "owner@example.com");
    expect(done.status).toBe(403);
    expect(await done.text()).toContain("owners link their chat account by signing in with their password");
    for (const id of ["chat-1", "chat-2", "chat-3"]) expect((await findRemoteIdentity(cp.deps.db, cp.orgId, id))?.userId ?? null).toBeNull();
  });

  test("a member's email links (the service user is made), still without opening a session", async () => {
    const { cp, link } = await setup();
    const member = await accountWithRole(cp, "member", "mia@example.com");
    const { path } = await link("chat-mia");
    const b = browser(cp);
    const done = await claimWithSso(b, path, member.email);
    expect(done.status).toBe(200);
    const u = await findUserByEmail(cp.deps.db, cp.orgId, member.email);
    expect(u?.source).toBe("claim");
    expect((await findRemoteIdentity(cp.deps.db, cp.orgId, "chat-mia"))?.userId).toBe(u!.id);
    expect(b.jar.get("svc_session")).toBeUndefined();
  });

  test("starting it needs this page's form token: another site cannot start it for you", async () => {
    const { cp, link } = await setup();
    const { path, token } = await link("chat-csrf");
    const b = browser(cp);
    await b.get(path);
    const forged = await b.post(path, { action: "sso", _csrf: "x".repeat(32) });
    expect(forged.status).toBe(403);
    expect(forged.headers.get("location")).toBeNull();
    expect((await inspectClaim(cp.deps, token)).remoteUserId).toBe("chat-csrf");
  });

  test("an organization without single sign-on offers only the password form", async () => {
    const { cp, link } = await setup();
    await cp.deps.db.delete(tables(cp.deps.db).oidcConfigs).where(eq(tables(cp.deps.db).oidcConfigs.orgId, cp.orgId));
    const { path } = await link("chat-nosso");
    const html = await (await browser(cp).get(path)).text();
    expect(html).not.toContain('value="sso"');
    expect(html).toContain('name="password"');
  });

  test("another organization's verified email never redeems this organization's link", async () => {
    const { cp, link } = await setup();
    const other = await addOrganization(cp);
    const { token } = await link("chat-x");
    await expect(redeemClaimByVerifiedEmail(cp.deps, token, { orgId: other.orgId, email: DIRECTORY_USER })).rejects.toThrow(/another organization/);
    expect((await inspectClaim(cp.deps, token)).remoteUserId).toBe("chat-x");
  });
});
