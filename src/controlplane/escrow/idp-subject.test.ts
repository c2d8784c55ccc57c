// With single sign-on configured, the approver and the requester must be two people at the
// identity provider (issue 27): the provider's `sub` is remembered at each SSO sign-in, and an
// approver the provider knows by the requester's subject (the same person, another email) is
// refused with recovery_same_idp_subject, on the console's Approve button; the provider's
// `auth_time` is the session's sign-in time. And an owner who points the organization at a
// provider of their own, which vouches for any admin's email, cannot approve as that admin:
// the identity is new (recovery_idp_identity_too_new). Driven through the real app with the
// scripted providers the console tests use, on the test's clock.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { PASSWORD } from "../auth/test-fixtures.ts";
import { PRESESSION_COOKIE } from "../console/csrf.ts";
import { saveOidcSettings } from "../console/oidc.ts";
import { type ScriptedIdp, startScriptedIdp } from "../console/scripted-idp.ts";
import { type Browser, browser } from "../console/test-browser.ts";
import type { TestControlPlane } from "../testing.ts";
import { HOUR, addMemberAs, freshToken, world } from "./test-fixtures.ts";
import { actingAsSystem } from "../audit/admin-events.ts";

let idp: ScriptedIdp;
let evil: ScriptedIdp;
beforeAll(async () => {
  idp = await startScriptedIdp();
  evil = await startScriptedIdp();
});
afterAll(() => {
  idp.stop();
  evil.stop();
});

/** Signs in through the organization's provider, which asserts `email` (verified) for subject `sub`. */
async function ssoSignIn(cp: TestControlPlane, email: string, sub: string, authTime?: number, provider = idp): Promise<Browser> {
  const b = browser(cp);
  await b.get("/sign-in");
  expect(b.jar.get(PRESESSION_COOKIE)).toBeDefined();
  const start = await b.get(`/sso/start?org=${cp.orgId}&next=/audit-keys`);
  const q = new URL(start.headers.get("location")!).searchParams;
  const claims = { nonce: q.get("nonce"), email, email_verified: true, ...(authTime ? { auth_time: Math.floor(authTime / 1000) } : {}) };
  provider.nextIdToken = await provider.idToken(claims, { sub, at: cp.deps.now() });
  expect((await b.get(`/sso/callback?state=${q.get("state")}&code=c`)).status).toBe(303);
  return b;
}

test("an approver the identity provider knows as the requester is refused; another person at the provider approves once the provider's sign-in is fresh", async () => {
  const w = await world();
  const { cp } = w;
  await saveOidcSettings(cp.deps, cp.orgId, { issuer: idp.issuer, clientId: "console", clientSecret: "acme-secret" }, actingAsSystem(cp.deps, "controlplane"));
  // The requester signed in through SSO as an admin (subject person-1), then became an owner.
  const requesterId = await addMemberAs(cp, cp.adminToken, "rita@example.com", "admin", null);
  await ssoSignIn(cp, "rita@example.com", "person-1");
  await addMemberAs(cp, cp.adminToken, "rita@example.com", "owner", null);
  // Two admins the requester never granted: one is rita again at the provider, with another email.
  await addMemberAs(cp, cp.adminToken, "rita.alt@example.com", "admin", null);
  await addMemberAs(cp, cp.adminToken, "bob@example.com", "admin", null);
  await ssoSignIn(cp, "bob@example.com", "person-2"); // bob has used single sign-on for a day and more
  w.clock.advance(25 * HOUR);
  const id = (await cp.call("POST", cp.org("/audit-recovery-requests"), { token: await freshToken(cp, requesterId), body: { record_id: w.escrowed.id, reason: "incident" } })).json.id as string;

  const alt = await ssoSignIn(cp, "rita.alt@example.com", "person-1");
  const refused = await alt.post(`/audit-recovery/${id}/approve`, { _csrf: await alt.csrf() });
  expect(refused.status).toBe(403);
  const page = await refused.text();
  expect(page).toContain("recovery_same_idp_subject");
  expect(page).toContain("knows rita.alt@example.com and the requester rita@example.com as the same person (subject person-1)");
  const [event] = (await cp.call("GET", cp.org("/audit-records?kind=admin"))).json.records as Array<Record<string, any>>;
  expect(event!.admin).toMatchObject({ result: "refused", code: "recovery_same_idp_subject", severity: "high", actor: { email: "rita.alt@example.com" } });
  expect((await cp.call("GET", cp.org(`/audit-recovery-requests/${id}`))).json.status).toBe("pending");

  // A provider that answers from its own session of 10 minutes ago is no fresh sign-in either.
  const old = await ssoSignIn(cp, "bob@example.com", "person-2", cp.deps.now() - 10 * 60_000);
  expect(await (await old.post(`/audit-recovery/${id}/approve`, { _csrf: await old.csrf() })).text()).toContain("(recovery_stale_sign_in)");
  const bob = await ssoSignIn(cp, "bob@example.com", "person-2", cp.deps.now());
  expect((await bob.post(`/audit-recovery/${id}/approve`, { _csrf: await bob.csrf() })).status).toBe(303);
  expect((await cp.call("GET", cp.org(`/audit-recovery-requests/${id}`))).json).toMatchObject({ status: "approved", approved_by: { email: "bob@example.com" } });
});

test("an owner who points the organization at a provider of their own cannot approve as an admin it vouches for", async () => {
  const w = await world();
  const { cp } = w;
  await saveOidcSettings(cp.deps, cp.orgId, { issuer: idp.issuer, clientId: "console", clientSecret: "acme-secret" }, actingAsSystem(cp.deps, "controlplane"));
  await addMemberAs(cp, cp.adminToken, "ada@example.com", "admin", null);
  await ssoSignIn(cp, "ada@example.com", "ada-1");
  w.clock.advance(25 * HOUR);
  const id = (await cp.call("POST", cp.org("/audit-recovery-requests"), { token: w.second.token, body: { record_id: w.escrowed.id, reason: "curious" } })).json.id as string;

  // The requester, an owner, swaps in a provider they run, which asserts ada's verified email.
  const owner2 = browser(cp);
  await owner2.get("/sign-in");
  await owner2.post("/sign-in", { email: w.second.email, password: PASSWORD, _csrf: owner2.jar.get(PRESESSION_COOKIE)! });
  expect((await owner2.post("/settings/sso", { issuer: evil.issuer, client_id: "console", client_secret: "evil", _csrf: await owner2.csrf() })).status).toBe(303);
  // The other owner is told on the page they sign in to.
  expect((await cp.call("GET", cp.org("/notices"))).json.notices.map((n: { text: string }) => n.text)).toContain(
    `${w.second.email} pointed single sign-on at ${evil.issuer} (client console): whoever runs that provider can sign in as any member it names`,
  );
  const asAda = await ssoSignIn(cp, "ada@example.com", "ada-1", cp.deps.now(), evil);
  const refused = await asAda.post(`/audit-recovery/${id}/approve`, { _csrf: await asAda.csrf() });
  expect(refused.status).toBe(403);
  const text = await refused.text();
  expect(text).toContain(`you signed in through single sign-on as ada-1 of ${evil.issuer}, first seen at `);
  expect(text).toContain("(recovery_idp_identity_too_new)");
  // Nor through a token: `svc login` approved from that session carries its provider identity.
  const login = (await cp.call("POST", "/api/v1/auth/login-requests", { token: null, body: {} })).json;
  const approveLogin = await asAda.send(`/api/v1/auth/login-requests/${login.id}/approve`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-csrf-token": await asAda.csrf() },
    body: "{}",
  });
  expect(approveLogin.status).toBe(200);
  const token = (await cp.call("POST", `/api/v1/auth/login-requests/${login.id}/token`, { token: null, body: { poll_secret: login.poll_secret } })).json.token as string;
  const issued = (await cp.call("POST", cp.org("/api-tokens"), { token, body: { name: "laundered" } })).json.token as string;
  for (const t of [token, issued]) expect((await cp.call("POST", cp.org(`/audit-recovery-requests/${id}/approve`), { token: t })).json.code).toBe("recovery_idp_identity_too_new");
  expect((await cp.call("GET", cp.org(`/audit-recovery-requests/${id}`))).json.status).toBe("pending");

  // The real provider back (by the other owner), ada signs in through it and approves.
  await saveOidcSettings(cp.deps, cp.orgId, { issuer: idp.issuer, clientId: "console", clientSecret: "acme-secret" }, actingAsSystem(cp.deps, "controlplane"));
  const ada = await ssoSignIn(cp, "ada@example.com", "ada-1");
  expect((await ada.post(`/audit-recovery/${id}/approve`, { _csrf: await ada.csrf() })).status).toBe(303);
});
