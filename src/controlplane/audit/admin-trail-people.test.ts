// The admin trail (issue 27), people and their credentials: every admin action on members,
// roles, invites, API tokens, sessions (sign-in, failures in each organization of the account,
// the lockout, sign-out), `svc login` approvals, the directory and single sign-on becomes
// exactly one admin event naming the right actor with their address and user agent, through
// the API or the console, and no secret the test used is found anywhere the audit reaches.
// Runs on SQLite, and on PostgreSQL with SVC_TEST_POSTGRES_URL.
import { expect, test } from "bun:test";
import { PASSWORD_SET } from "../../contract/admin-event.ts";
import { addMembership } from "../auth/service.ts";
import { secondOrganization } from "../auth/test-fixtures.ts";
import { PRESESSION_COOKIE } from "../console/csrf.ts";
import { browser } from "../console/test-browser.ts";
import { addInstallation } from "../runtime/fixtures.ts";
import { FROM, IP, PEOPLE_ACTIONS, UA, scanForSecrets, trailWorld } from "./trail-fixtures.ts";

const FORM = { "content-type": "application/x-www-form-urlencoded", ...FROM };

test("members, tokens, sessions, login approvals, directory, invites, claims and single sign-on: one event each, the right actor, no secret", async () => {
  const w = await trailWorld();
  const { cp, api, step, secrets } = w;

  // bootstrap: the organization, its first owner and token, told once by system:bootstrap
  const [boot] = await w.fresh();
  expect(boot).toMatchObject({ action: "organization.bootstrap", actor_id: "system:bootstrap", admin: { actor: { credential: { kind: "system" } }, severity: "high", status: 0 } });
  expect(boot!.admin.after).toMatchObject({ owner: { email: "owner@example.com", password: PASSWORD_SET }, api_token: { name: "bootstrap" } });
  w.covered.add("organization.bootstrap");

  await step("workspace.create", async () => expect((await api("POST", "/workspaces", { name: "ops" })).status).toBe(201));
  secrets.set("Bea's password", "bea-picked-this-password");
  const bea = (await step("member.add", async () => api("POST", "/members", { email: "bea@example.com", role: "admin", password: "bea-picked-this-password" }))).out.json;
  const role = await step("member.role_change", async () => api("POST", "/members", { email: "bea@example.com", role: "member" }));
  expect(role.event.admin).toMatchObject({ before: { role: "admin" }, after: { role: "member" }, target: { type: "member", id: bea.account_id, name: "bea@example.com" } });
  // Nothing changes: nothing told.
  expect((await api("POST", "/members", { email: "bea@example.com", role: "member" })).status).toBe(201);
  expect(await w.fresh()).toEqual([]);

  const ci = (await step("api_token.create", async () => api("POST", "/api-tokens", { name: "ci" }))).out.json;
  secrets.set("the ci API token", ci.token);
  const revoked = await step("api_token.revoke", async () => api("DELETE", `/api-tokens/${ci.id}`));
  expect(revoked.event.admin.target).toEqual({ type: "api_token", id: ci.id, name: "ci" });

  // Sessions: sign-in names the new session (never its cookie), sign-out names it too.
  const signIn = async (password: string, email = "owner@example.com") => cp.call("POST", "/api/v1/auth/sessions", { body: { email, password }, token: null, headers: FROM });
  let session!: Awaited<ReturnType<typeof signIn>>;
  const opened = await step("session.sign_in", async () => (session = await signIn("correct horse battery staple")), {
    id: cp.accountId,
    email: "owner@example.com",
    role: "owner",
    credential: { kind: "session", id: expect.stringMatching(/^[0-9a-f]{16}$/) },
    ip: IP,
    user_agent: UA,
  });
  const cookie = session.headers.get("set-cookie")!.split(";")[0]!;
  secrets.set("the session cookie", cookie.split("=")[1]!);
  const asSession = { cookie, "x-csrf-token": session.json.csrf_token, ...FROM };

  // `svc login`: the approval in the console session, then the token the CLI redeems.
  const lr = (await cp.call("POST", "/api/v1/auth/login-requests", { body: {}, token: null })).json;
  secrets.set("the login poll secret", lr.poll_secret);
  await step(
    "login_request.approve",
    async () => expect((await cp.call("POST", `/api/v1/auth/login-requests/${lr.id}/approve`, { body: {}, token: null, headers: asSession })).status).toBe(200),
    opened.event.admin.actor,
  );
  const redeemed = await step(
    "api_token.create",
    async () =>
      cp.call("POST", `/api/v1/auth/login-requests/${lr.id}/token`, { body: { poll_secret: lr.poll_secret }, token: null, headers: { "x-forwarded-for": "203.0.113.9", "user-agent": "svc-cli" } }),
    { id: cp.accountId, email: "owner@example.com", credential: { kind: "login_request", id: lr.id }, ip: "203.0.113.9", user_agent: "svc-cli" },
  );
  secrets.set("the svc login token", redeemed.out.json.token);
  await step("session.sign_out", async () => expect((await cp.call("DELETE", "/api/v1/auth/sessions", { token: null, headers: asSession })).status).toBe(204), {
    id: cp.accountId,
    credential: opened.event.admin.actor.credential,
    ip: IP,
  });

  // A failed sign-in is told in every organization of the account; an unknown email nowhere.
  const globex = await secondOrganization(cp);
  await addMembership(cp.deps.db, cp.accountId, globex.orgId, "admin", { by: null, join: "added", at: cp.deps.now() });
  await w.fresh(globex.org, globex.token);
  const anonymous = { id: "anonymous", email: "owner@example.com", credential: { kind: "none" as const, id: null }, ip: IP, user_agent: UA };
  const failed = await step("session.sign_in_failed", async () => expect((await signIn("wrong password, twice")).status).toBe(401), anonymous);
  expect(failed.event.admin).toMatchObject({ result: "refused", status: 401, code: "unauthorized", target: { type: "account", id: cp.accountId } });
  expect((await w.fresh(globex.org, globex.token)).map((e) => [e.action, e.admin.actor.ip])).toEqual([["session.sign_in_failed", IP]]);
  expect((await signIn("anything at all", "nobody@example.com")).status).toBe(401);
  expect(await w.fresh()).toEqual([]);
  // The lockout: told once per window, in each organization, however many attempts it refuses.
  for (let i = 0; i < 2; i++) expect((await signIn("wrong password, again")).status).toBe(401);
  await w.fresh();
  await w.fresh(globex.org, globex.token);
  const locked = await step("session.locked_out", async () => expect((await signIn("correct horse battery staple")).status).toBe(429), anonymous);
  expect(locked.event.admin).toMatchObject({ result: "refused", status: 429, severity: "high" });
  expect((await signIn("correct horse battery staple")).status).toBe(429);
  expect(await w.fresh()).toEqual([]);
  expect((await w.fresh(globex.org, globex.token)).map((e) => e.action)).toEqual(["session.locked_out"]);
  w.advance(61_000);

  // The directory, by hand.
  const dora = (await step("user.create", async () => api("POST", "/users", { email: "dora@example.com" }))).out.json;
  await step("user.disable", async () => api("POST", `/users/${dora.id}/disable`));
  await step("user.enable", async () => api("POST", `/users/${dora.id}/enable`));
  const link = await step("remote_identity.link", async () => api("POST", `/users/${dora.id}/remote-identities`, { platform: "chatui", remote_user_id: "fe-dora" }));
  expect(link.event.admin).toMatchObject({ before: { user_id: null }, after: { user_id: dora.id, remote_user_id: "fe-dora" } });
  await step("remote_identity.unlink", async () => api("DELETE", `/users/${dora.id}/remote-identities/fe-dora`));
  const staff = (await step("group.create", async () => api("POST", "/groups", { name: "staff" }))).out.json;
  await step("group.member_add", async () => api("POST", `/groups/${staff.id}/members`, { user_id: dora.id }));
  await step("group.member_remove", async () => api("DELETE", `/groups/${staff.id}/members/${dora.id}`));

  // An invite, accepted on its console page by the invited person (the link's holder).
  const invite = (await step("invite.create", async () => api("POST", "/invites", { email: "chat.user@example.com" }))).out.json;
  const inviteToken = new URL(invite.url).pathname.split("/").pop()!;
  secrets.set("the invite token", inviteToken);
  secrets.set("the chat password", "a chat password for me");
  const guest = browser(cp);
  await guest.send(`/invite/${inviteToken}`, { headers: FROM });
  await step(
    "invite.accept",
    async () =>
      expect(
        (
          await guest.send(`/invite/${inviteToken}`, {
            method: "POST",
            headers: FORM,
            body: new URLSearchParams({ _csrf: guest.jar.get(PRESESSION_COOKIE)!, password: "a chat password for me", confirm: "a chat password for me" }),
          })
        ).status,
      ).toBe(200),
    { id: invite.user_id, email: "chat.user@example.com", credential: { kind: "link", id: expect.stringMatching(/^inv_/) }, ip: IP, user_agent: UA },
  );

  // The console: sign-in (its in-process API calls carry the browser's address), a claim link
  // linked as the signed-in person, single sign-on set up and removed, switching organization, sign-out.
  const b = browser(cp);
  await b.send("/sign-in", { headers: FROM });
  const viaConsole = await step(
    "session.sign_in",
    async () =>
      b.send("/sign-in", { method: "POST", headers: FORM, body: new URLSearchParams({ email: "owner@example.com", password: "correct horse battery staple", _csrf: b.jar.get(PRESESSION_COOKIE)! }) }),
    { id: cp.accountId, ip: IP, user_agent: UA },
  );
  const csrf = await b.csrf();
  await w.fresh();
  const inst = await addInstallation(cp);
  const claimUrl = (await cp.call("POST", "/api/v1/runtime/claims", { token: inst.token, body: { remote_user_id: "fe-owner" } })).json.url as string;
  const claimToken = new URL(claimUrl).pathname.split("/").pop()!;
  secrets.set("the claim token", claimToken);
  await step("remote_identity.claim", async () => b.send(`/claim/${claimToken}`, { method: "POST", headers: FORM, body: new URLSearchParams({ action: "link", _csrf: csrf }) }), {
    email: "owner@example.com",
    credential: { kind: "link", id: expect.stringMatching(/^clm_/) },
    ip: IP,
  });
  secrets.set("the SSO client secret", "sso-client-secret-value");
  const sso = await step(
    "sso.configure",
    async () =>
      expect(
        (
          await b.send("/settings/sso", {
            method: "POST",
            headers: FORM,
            body: new URLSearchParams({ issuer: "http://127.0.0.1:9", client_id: "console", client_secret: "sso-client-secret-value", _csrf: csrf }),
          })
        ).status,
      ).toBe(303),
    { ...viaConsole.event.admin.actor },
  );
  expect(sso.event.admin.after).toMatchObject({ issuer: "http://127.0.0.1:9", client_secret: expect.stringMatching(/^sha256:[0-9a-f]{16}$/) });
  await step("sso.remove", async () => b.send("/settings/sso/delete", { method: "POST", headers: FORM, body: new URLSearchParams({ _csrf: csrf }) }), viaConsole.event.admin.actor);
  // A change the console makes through the admin API (in-process) names the person's session,
  // address and browser, not the control plane's own process.
  const sam = await step(
    "member.add",
    async () => expect((await b.send("/members", { method: "POST", headers: FORM, body: new URLSearchParams({ _csrf: csrf, email: "sam@example.com", role: "admin" }) })).status).toBe(303),
    { ...viaConsole.event.admin.actor },
  );
  expect(sam.event.admin.actor.credential.kind).toBe("session");
  await step("member.remove", async () => api("DELETE", `/members/${bea.account_id}`));
  await w.fresh(globex.org, globex.token);
  expect((await b.send("/switch-org", { method: "POST", headers: FORM, body: new URLSearchParams({ organization_id: globex.orgId, _csrf: csrf }) })).status).toBe(303);
  const switched = await w.fresh(globex.org, globex.token);
  expect(switched.map((e) => [e.action, e.admin.actor.ip, (e.admin.after as { switched_from?: string }).switched_from])).toEqual([["session.sign_in", IP, cp.orgId]]);
  // Signing out of the session now in Globex is an event of Globex.
  expect((await b.send("/sign-out", { method: "POST", headers: FORM, body: new URLSearchParams({ _csrf: await b.csrf() }) })).status).toBe(303);
  expect((await w.fresh(globex.org, globex.token)).map((e) => [e.action, e.admin.actor.id, e.admin.actor.ip])).toEqual([["session.sign_out", cp.accountId, IP]]);

  await scanForSecrets(cp, secrets);
  // What this test covers of the catalogue: the people actions (admin-trail-resources.test.ts covers the rest).
  expect([...w.covered].sort()).toEqual([...PEOPLE_ACTIONS].sort());
}, 120_000);
