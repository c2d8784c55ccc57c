// Sessions remember how and for which organization they were authenticated. A single sign-on
// session is bound to the organization whose provider vouched for it (that provider is run by
// that organization's admins); a password session may switch among the account's
// organizations. Driven through the real app in-process, with a scripted identity provider
// that asserts whatever email its (malicious) admin wants.
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { PASSWORD, secondOrganization } from "../auth/test-fixtures.ts";
import { inspectClaim } from "../claims/service.ts";
import { tables } from "../db/index.ts";
import { findRemoteIdentity } from "../directory/service.ts";
import { addInstallation } from "../runtime/fixtures.ts";
import { type TestControlPlane, testControlPlane } from "../testing.ts";
import { type ScriptedIdp, startScriptedIdp } from "./scripted-idp.ts";
import { PRESESSION_COOKIE } from "./csrf.ts";
import { saveOidcSettings } from "./oidc.ts";
import { openSession } from "./session.ts";

let idp: ScriptedIdp;
beforeAll(async () => {
  idp = await startScriptedIdp();
});
afterAll(() => idp.stop());

const VICTIM = "owner@example.com";
const FORM = { "content-type": "application/x-www-form-urlencoded" };

/** A browser: a cookie jar over the in-process app. */
function browser(cp: TestControlPlane) {
  const jar = new Map<string, string>();
  const cookie = () => [...jar].map(([k, v]) => `${k}=${v}`).join("; ");
  const keep = (res: Response) => {
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(";");
      const i = pair!.indexOf("=");
      const name = pair!.slice(0, i);
      const value = pair!.slice(i + 1);
      if (/Max-Age=0/.test(c) || value === "") jar.delete(name);
      else jar.set(name, value);
    }
    return res;
  };
  const send = async (path: string, init: RequestInit = {}) => {
    const headers = new Headers(init.headers);
    if (jar.size) headers.set("cookie", cookie());
    return keep(await cp.app.handle(new Request(`http://localhost${path}`, { ...init, headers })));
  };
  return {
    jar,
    get: (path: string) => send(path),
    post: (path: string, form: Record<string, string>) => send(path, { method: "POST", headers: FORM, body: new URLSearchParams(form) }),
    api: async (method: string, path: string) => {
      const res = await send(path, { method });
      return { status: res.status, json: (await res.json().catch(() => null)) as any };
    },
    /** The session's CSRF token, read from the page header's sign-out form. */
    csrf: async () => /action="\/sign-out">\s*<input type="hidden" name="_csrf" value="([^"]+)"/.exec(await (await send("/")).text())![1]!,
  };
}
type Browser = ReturnType<typeof browser>;

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
  await saveOidcSettings(cp.deps, b.orgId, { issuer: idp.issuer, clientId: "console", clientSecret: "attacker" });
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
    await saveOidcSettings(cp.deps, cp.orgId, { issuer: idp.issuer, clientId: "console", clientSecret: "acme" });
    const inst = await addInstallation(cp);
    const path = new URL((await cp.call("POST", "/api/v1/runtime/claims", { token: inst.token, body: { remote_user_id: "own-chat" } })).json.url).pathname;
    const me = browser(cp);
    await ssoSignIn(me, cp.orgId, VICTIM, path);
    expect(await (await me.get(path)).text()).toContain(`Link my chat account to ${VICTIM}`);
    const res = await me.post(path, { action: "link", _csrf: await me.csrf() });
    expect(res.status).toBe(200);
    expect(await res.text()).toContain("Your chat account is linked");
    expect((await findRemoteIdentity(cp.deps.db, cp.orgId, "own-chat"))?.userId).toBeTruthy();
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
    expect(await openSession(cp.deps, outsider.json.account_id, cp.orgId, "sso")).toBeNull();
    expect(await openSession(cp.deps, outsider.json.account_id, "", "sso")).toBeNull();
    expect((await openSession(cp.deps, cp.accountId, b.orgId, "sso"))?.orgId).toBe(b.orgId);
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
