// Chat invites (issue 19): a chat user who is not a console member, in an organization without
// single sign-on, sets a chat password through an admin's one-time invitation and links their
// chat account on the claim page with it; no console session, account or membership comes of
// it. Driven through the real app in-process.
import { describe, expect, test } from "bun:test";
import { findAccountByEmail } from "../auth/service.ts";
import { inspectClaim } from "../claims/service.ts";
import { PRESESSION_COOKIE } from "../console/csrf.ts";
import { browser } from "../console/test-browser.ts";
import { tables } from "../db/index.ts";
import { findRemoteIdentity, findUserByEmail } from "../directory/service.ts";
import { addInstallation, addOrganization } from "../runtime/fixtures.ts";
import { testControlPlane } from "../testing.ts";
import { INVITE_TTL_MS, inspectInvite } from "./service.ts";

const BOB = "bob@example.com";
const PASSWORD = "a long chat password";

async function setup(now = { t: 1_750_000_000_000 }) {
  const cp = await testControlPlane({ now: () => now.t });
  const inst = await addInstallation(cp);
  const claim = async (remoteUserId: string) => {
    const res = await cp.call("POST", "/api/v1/runtime/claims", { token: inst.token, body: { remote_user_id: remoteUserId } });
    expect(res.status).toBe(200);
    return new URL(res.json.url).pathname;
  };
  const invite = async (email = BOB) => cp.call("POST", `/api/v1/organizations/${cp.orgId}/invites`, { body: { email } });
  return { cp, claim, invite, now };
}

const tokenOf = (url: string) => url.slice(url.lastIndexOf("/") + 1);

describe("chat invites", () => {
  test("invite → set a chat password → link on the claim page with it; no console access", async () => {
    const { cp, claim, invite } = await setup();
    const res = await invite("Bob@Example.com");
    expect(res.status).toBe(201);
    expect(res.json).toMatchObject({ email: BOB, user_created: true });
    expect(res.json.url).toStartWith(`${cp.deps.config.publicUrl}/invite/svc_iv_`);
    const user = (await findUserByEmail(cp.deps.db, cp.orgId, BOB))!;
    expect(res.json.user_id).toBe(user.id);
    // the token is stored hashed only
    const [row] = await cp.deps.db.select().from(tables(cp.deps.db).chatInvites);
    expect(JSON.stringify(row)).not.toContain(tokenOf(res.json.url));

    const b = browser(cp);
    const invitePath = new URL(res.json.url).pathname;
    const shown = await (await b.get(invitePath)).text();
    expect(shown).toContain("Set your chat password");
    expect(shown).toContain("gives no access to it");
    // too short, and two different passwords: explained, nothing set
    let r = await b.post(invitePath, { _csrf: b.jar.get(PRESESSION_COOKIE)!, password: "short", confirm: "short" });
    expect(r.status).toBe(422);
    expect(await r.text()).toContain("at least 12 characters");
    r = await b.post(invitePath, { _csrf: b.jar.get(PRESESSION_COOKIE)!, password: PASSWORD, confirm: `${PASSWORD}!` });
    expect(r.status).toBe(422);
    expect(await cp.deps.db.select().from(tables(cp.deps.db).chatPasswords)).toEqual([]);
    // without the form's token: refused
    r = await b.post(invitePath, { _csrf: "forged", password: PASSWORD, confirm: PASSWORD });
    expect(r.status).toBe(403);
    r = await b.post(invitePath, { _csrf: b.jar.get(PRESESSION_COOKIE)!, password: PASSWORD, confirm: PASSWORD });
    expect(r.status).toBe(200);
    expect(await r.text()).toContain("Your chat password is set");
    // once only
    expect((await b.get(invitePath)).status).toBe(410);

    // the claim page explains the way and takes the chat password
    const path = await claim("chat-bob");
    const page = await (await b.get(path)).text();
    expect(page).toContain("Link with your chat password");
    expect(page).toContain("svc users invite");
    const wrong = await b.post(path, { action: "chat-password", _csrf: b.jar.get(PRESESSION_COOKIE)!, email: BOB, password: "not the password!" });
    expect(wrong.status).toBe(401);
    expect(await wrong.text()).toContain("wrong email or chat password");
    const done = await b.post(path, { action: "chat-password", _csrf: b.jar.get(PRESESSION_COOKIE)!, email: "BOB@example.com", password: PASSWORD });
    expect(done.status).toBe(200);
    expect(await done.text()).toContain("Your chat account is linked");
    expect((await findRemoteIdentity(cp.deps.db, cp.orgId, "chat-bob"))?.userId).toBe(user.id);
    await expect(inspectClaim(cp.deps, tokenOf(path))).rejects.toThrow(/already used/);
    // no console session, account or membership
    expect(b.jar.get("svc_session")).toBeUndefined();
    expect(await findAccountByEmail(cp.deps.db, BOB)).toBeUndefined();
    expect((await b.get("/")).headers.get("location")).toStartWith("/sign-in");
    expect((await b.api("GET", "/api/v1/me")).status).toBe(401);
    // the chat password does not sign in to the console
    const signIn = await b.post("/sign-in", { _csrf: b.jar.get(PRESESSION_COOKIE)!, email: BOB, password: PASSWORD });
    expect(signIn.status).not.toBe(303);
    expect(b.jar.get("svc_session")).toBeUndefined();
  });

  test("a chat password links only its own user, in its own organization", async () => {
    const { cp, claim, invite } = await setup();
    const inv = await invite();
    const b = browser(cp);
    const invitePath = new URL(inv.json.url).pathname;
    await b.get(invitePath);
    await b.post(invitePath, { _csrf: b.jar.get(PRESESSION_COOKIE)!, password: PASSWORD, confirm: PASSWORD });
    // another email with Bob's password: refused, the link stays usable
    const path = await claim("chat-x");
    await b.get(path);
    const other = await b.post(path, { action: "chat-password", _csrf: b.jar.get(PRESESSION_COOKIE)!, email: "alice@example.com", password: PASSWORD });
    expect(other.status).toBe(401);
    expect((await inspectClaim(cp.deps, tokenOf(path))).remoteUserId).toBe("chat-x");
    // a claim link of another organization: Bob is not a user there
    const org2 = await addOrganization(cp);
    const inst2 = await addInstallation(cp, { orgId: org2.orgId, workspaceId: org2.workspaceId });
    const res2 = await cp.call("POST", "/api/v1/runtime/claims", { token: inst2.token, body: { remote_user_id: "chat-y" } });
    const path2 = new URL(res2.json.url).pathname;
    await b.get(path2);
    const foreign = await b.post(path2, { action: "chat-password", _csrf: b.jar.get(PRESESSION_COOKIE)!, email: BOB, password: PASSWORD });
    expect(foreign.status).toBe(401);
  });

  test("expired, unknown and bad input: explained, nothing written", async () => {
    const { cp, invite, now } = await setup();
    expect((await invite("not-an-email")).status).toBe(422);
    expect(await cp.deps.db.select().from(tables(cp.deps.db).chatInvites)).toEqual([]);
    const inv = await invite();
    now.t += INVITE_TTL_MS + 1;
    await expect(inspectInvite(cp.deps, tokenOf(inv.json.url))).rejects.toThrow(/expired/);
    const b = browser(cp);
    expect((await b.get(new URL(inv.json.url).pathname)).status).toBe(410);
    expect((await b.get("/invite/svc_iv_nope")).status).toBe(404);
    // an existing user is reused, not duplicated
    const again = await invite();
    expect(again.json).toMatchObject({ user_id: inv.json.user_id, user_created: false });
    // only admins invite: a runtime token cannot
    expect((await cp.call("POST", `/api/v1/organizations/${cp.orgId}/invites`, { token: "svc_rt_nope", body: { email: BOB } })).status).toBe(401);
  });
});
