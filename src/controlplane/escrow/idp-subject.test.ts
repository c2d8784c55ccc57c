// With single sign-on configured, the approver and the requester must be two people at the
// identity provider (issue 27): the provider's `sub` is remembered at each SSO sign-in, and an
// approver the provider knows by the requester's subject (the same person, another email) is
// refused with recovery_same_idp_subject, on the console's Approve button; the provider's
// `auth_time` is the session's sign-in time. Driven through the real app with the scripted
// provider the console tests use, on the test's clock.
import { afterAll, beforeAll, expect, test } from "bun:test";
import { PRESESSION_COOKIE } from "../console/csrf.ts";
import { saveOidcSettings } from "../console/oidc.ts";
import { type ScriptedIdp, startScriptedIdp } from "../console/scripted-idp.ts";
import { type Browser, browser } from "../console/test-browser.ts";
import type { TestControlPlane } from "../testing.ts";
import { HOUR, addMemberAs, freshToken, world } from "./test-fixtures.ts";

let idp: ScriptedIdp;
beforeAll(async () => {
  idp = await startScriptedIdp();
});
afterAll(() => idp.stop());

/** Signs in through the organization's provider, which asserts `email` (verified) for subject `sub`. */
async function ssoSignIn(cp: TestControlPlane, email: string, sub: string, authTime?: number): Promise<Browser> {
  const b = browser(cp);
  await b.get("/sign-in");
  expect(b.jar.get(PRESESSION_COOKIE)).toBeDefined();
  const start = await b.get(`/sso/start?org=${cp.orgId}&next=/audit-keys`);
  const q = new URL(start.headers.get("location")!).searchParams;
  const claims = { nonce: q.get("nonce"), email, email_verified: true, ...(authTime ? { auth_time: Math.floor(authTime / 1000) } : {}) };
  idp.nextIdToken = await idp.idToken(claims, { sub, at: cp.deps.now() });
  expect((await b.get(`/sso/callback?state=${q.get("state")}&code=c`)).status).toBe(303);
  return b;
}

test("an approver the identity provider knows as the requester is refused; another person at the provider approves once the provider's sign-in is fresh", async () => {
  const w = await world();
  const { cp } = w;
  await saveOidcSettings(cp.deps, cp.orgId, { issuer: idp.issuer, clientId: "console", clientSecret: "acme-secret" });
  // The requester signed in through SSO as an admin (subject person-1), then became an owner.
  const requesterId = await addMemberAs(cp, cp.adminToken, "rita@example.com", "admin", null);
  await ssoSignIn(cp, "rita@example.com", "person-1");
  await addMemberAs(cp, cp.adminToken, "rita@example.com", "owner", null);
  // Two admins the requester never granted: one is rita again at the provider, with another email.
  await addMemberAs(cp, cp.adminToken, "rita.alt@example.com", "admin", null);
  await addMemberAs(cp, cp.adminToken, "bob@example.com", "admin", null);
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
