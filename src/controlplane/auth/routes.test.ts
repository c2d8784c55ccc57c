import { describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { tables } from "../db/index.ts";
import { testControlPlane } from "../testing.ts";
import { PASSWORD, accountWithRole, signInSession } from "./test-fixtures.ts";
import { hashSecret } from "./tokens.ts";

describe("POST /auth/sessions", () => {
  test("a wrong password is 401 and sets no cookie", async () => {
    const cp = await testControlPlane();
    const res = await cp.call("POST", "/api/v1/auth/sessions", { body: { email: "owner@example.com", password: "wrong password!!" }, token: null });
    expect(res.status).toBe(401);
    expect(res.json.code).toBe("unauthorized");
    expect(res.headers.get("set-cookie")).toBeNull();
    const unknown = await cp.call("POST", "/api/v1/auth/sessions", { body: { email: "nobody@example.com", password: PASSWORD }, token: null });
    expect(unknown.status).toBe(401);
  });

  test("sets an HttpOnly SameSite=Lax cookie and returns the CSRF token", async () => {
    const cp = await testControlPlane();
    const s = await signInSession(cp);
    expect(s.cookie).toMatch(/^svc_session=svc_ss_/);
    expect(s.setCookie).toContain("HttpOnly");
    expect(s.setCookie).toContain("SameSite=Lax");
    expect(s.setCookie).toContain("Path=/");
    expect(s.setCookie).not.toContain("Secure"); // http://127.0.0.1 public URL
    expect(structuredClone(s.body)).toMatchObject({ account: { email: "owner@example.com" }, organization_id: cp.orgId, role: "owner" });
    expect(s.csrf.length).toBeGreaterThan(16);
    // The table holds only the session id's hash.
    const raw = s.cookie.split("=")[1]!;
    expect(
      (
        await cp.deps.db
          .select()
          .from(tables(cp.deps.db).sessions)
          .where(eq(tables(cp.deps.db).sessions.idHash, hashSecret(raw)))
      )[0],
    ).toBeDefined();
  });

  test("the cookie is Secure when the config says so", async () => {
    const cp = await testControlPlane();
    cp.deps.config.secureCookies = true;
    const s = await signInSession(cp);
    expect(s.setCookie).toContain("Secure");
  });

  test("login CSRF: a cross-site form post (urlencoded, text/plain, no type) is refused before sign-in", async () => {
    const cp = await testControlPlane();
    const post = async (headers: Record<string, string>, body: string) => cp.app.handle(new Request("http://localhost/api/v1/auth/sessions", { method: "POST", headers, body }));
    const json = JSON.stringify({ email: "owner@example.com", password: PASSWORD });
    for (const [headers, body] of [
      [{ "content-type": "application/x-www-form-urlencoded" }, new URLSearchParams({ email: "owner@example.com", password: PASSWORD }).toString()],
      [{ "content-type": "text/plain" }, json],
      [{ "content-type": "multipart/form-data; boundary=x" }, `--x\r\nContent-Disposition: form-data; name="email"\r\n\r\nowner@example.com\r\n--x--\r\n`],
      [{}, json],
    ] as const) {
      const res = await post(headers, body);
      expect(res.status).toBe(422);
      expect(((await res.json()) as { code: string; detail: string }).detail).toContain("application/json");
      expect(res.headers.get("set-cookie")).toBeNull();
    }
    // A browser's Origin, when sent, must be the console's own (the public URL's origin).
    const foreign = await post({ "content-type": "application/json", origin: "https://evil.example" }, json);
    expect(foreign.status).toBe(403);
    expect(foreign.headers.get("set-cookie")).toBeNull();
    expect((await post({ "content-type": "application/json", origin: "null" }, json)).status).toBe(403);
    const same = await post({ "content-type": "application/json; charset=utf-8", origin: "http://127.0.0.1:8420" }, json);
    expect(same.status).toBe(200);
    expect(same.headers.get("set-cookie")).toStartWith("svc_session=svc_ss_");
  });

  test("organization_id must be one of the account's organizations", async () => {
    const cp = await testControlPlane();
    const res = await cp.call("POST", "/api/v1/auth/sessions", { body: { email: "owner@example.com", password: PASSWORD, organization_id: "org_nope" }, token: null });
    expect(res.status).toBe(403);
  });
});

describe("session use, /me and sign-out", () => {
  test("/me answers for a token and for a session", async () => {
    const cp = await testControlPlane();
    const byToken = await cp.call("GET", "/api/v1/me");
    expect(byToken.status).toBe(200);
    expect(byToken.json).toEqual({ account: { id: cp.accountId, email: "owner@example.com" }, organization: { id: cp.orgId, name: "Acme" }, role: "owner", token_expires_at: expect.any(String) });
    const s = await signInSession(cp);
    const bySession = await cp.call("GET", "/api/v1/me", { token: null, headers: { cookie: s.cookie } });
    expect(bySession.json.account.id).toBe(cp.accountId);
    expect(bySession.json.token_expires_at).toBeUndefined();
    expect((await cp.call("GET", "/api/v1/me", { token: null })).status).toBe(401);
  });

  test("a cookie-authenticated write needs the CSRF header", async () => {
    const cp = await testControlPlane();
    const s = await signInSession(cp);
    const without = await cp.call("POST", cp.org("/workspaces"), { body: { name: "ops" }, token: null, headers: { cookie: s.cookie } });
    expect(without.status).toBe(403);
    const withCsrf = await cp.call("POST", cp.org("/workspaces"), { body: { name: "ops" }, token: null, headers: { cookie: s.cookie, "x-csrf-token": s.csrf } });
    expect(withCsrf.status).toBe(201);
  });

  test("DELETE /auth/sessions ends the session", async () => {
    const cp = await testControlPlane();
    const s = await signInSession(cp);
    const out = await cp.call("DELETE", "/api/v1/auth/sessions", { token: null, headers: { cookie: s.cookie, "x-csrf-token": s.csrf } });
    expect(out.status).toBe(204);
    expect(out.headers.get("set-cookie")).toContain("Max-Age=0");
    expect((await cp.call("GET", "/api/v1/me", { token: null, headers: { cookie: s.cookie } })).status).toBe(401);
  });
});

describe("svc login: login requests", () => {
  test("pending 428, approve by a session with CSRF, token exactly once, then 410", async () => {
    let clock = Date.now();
    const cp = await testControlPlane({ now: () => clock });
    const created = await cp.call("POST", "/api/v1/auth/login-requests", { body: {}, token: null });
    expect(created.status).toBe(201);
    const lr = created.json;
    expect(lr.id).toMatch(/^lrq_/);
    expect(lr.user_code).toMatch(/^[A-Z]{4}-[A-Z]{4}$/);
    expect(lr.poll_secret).toMatch(/^svc_lp_/);
    expect(lr.approve_url).toBe(`http://127.0.0.1:8420/login/approve?request=${lr.id}`);
    expect(Date.parse(lr.expires_at)).toBeGreaterThan(Date.now());
    expect(lr.interval_seconds).toBeGreaterThan(0);

    // The poll secret is stored hashed.
    const row = (
      await cp.deps.db
        .select()
        .from(tables(cp.deps.db).loginRequests)
        .where(eq(tables(cp.deps.db).loginRequests.id, lr.id))
    )[0]!;
    expect(row.pollSecretHash).toBe(hashSecret(lr.poll_secret));
    expect(JSON.stringify(row)).not.toContain(lr.poll_secret);

    // Polls come at the advertised interval (faster ones are refused: see the rate-limit tests).
    const poll = async () => {
      clock += lr.interval_seconds * 1000;
      return cp.call("POST", `/api/v1/auth/login-requests/${lr.id}/token`, { body: { poll_secret: lr.poll_secret }, token: null });
    };
    const pending = await poll();
    expect(pending.status).toBe(428);
    expect(pending.json.code).toBe("authorization_pending");

    // Only a console session approves; an API token or a missing CSRF header does not.
    expect((await cp.call("POST", `/api/v1/auth/login-requests/${lr.id}/approve`, { body: {} })).status).toBe(403);
    const s = await signInSession(cp);
    expect((await cp.call("POST", `/api/v1/auth/login-requests/${lr.id}/approve`, { body: {}, token: null, headers: { cookie: s.cookie } })).status).toBe(403);
    const shown = await cp.call("GET", `/api/v1/auth/login-requests/${lr.id}`, { token: null, headers: { cookie: s.cookie } });
    expect(structuredClone(shown.json)).toMatchObject({ user_code: lr.user_code, status: "pending" });
    const approved = await cp.call("POST", `/api/v1/auth/login-requests/${lr.id}/approve`, { body: {}, token: null, headers: { cookie: s.cookie, "x-csrf-token": s.csrf } });
    expect(approved.status).toBe(200);
    expect(approved.json).toEqual({ approved: true });

    const wrong = await cp.call("POST", `/api/v1/auth/login-requests/${lr.id}/token`, { body: { poll_secret: "svc_lp_wrong" }, token: null });
    expect(wrong.status).toBe(404);

    const got = await poll();
    expect(got.status).toBe(200);
    expect(structuredClone(got.json)).toMatchObject({ organization_id: cp.orgId, email: "owner@example.com" });
    expect(got.json.token).toMatch(/^svc_at_/);
    const me = await cp.call("GET", "/api/v1/me", { token: got.json.token });
    expect(me.json.role).toBe("owner");

    const again = await poll();
    expect(again.status).toBe(410);
    expect(again.json.code).toBe("login_expired");
  });

  test("an expired request answers 410 login_expired and cannot be approved", async () => {
    let clock = Date.now();
    const cp = await testControlPlane({ now: () => clock });
    const lr = (await cp.call("POST", "/api/v1/auth/login-requests", { body: {}, token: null })).json;
    const s = await signInSession(cp);
    clock += cp.deps.config.loginRequestTtlSeconds * 1000 + 1;
    const poll = await cp.call("POST", `/api/v1/auth/login-requests/${lr.id}/token`, { body: { poll_secret: lr.poll_secret }, token: null });
    expect(poll.status).toBe(410);
    expect(poll.json.code).toBe("login_expired");
    // Sessions last longer than login requests, so this session is still valid.
    const approve = await cp.call("POST", `/api/v1/auth/login-requests/${lr.id}/approve`, { body: {}, token: null, headers: { cookie: s.cookie, "x-csrf-token": s.csrf } });
    expect(approve.status).toBe(410);
  });

  test("requests expired for a day are purged when new ones are created", async () => {
    let clock = Date.now();
    const cp = await testControlPlane({ now: () => clock });
    const old = (await cp.call("POST", "/api/v1/auth/login-requests", { body: {}, token: null })).json;
    clock += cp.deps.config.loginRequestTtlSeconds * 1000 + 25 * 3600 * 1000;
    await cp.call("POST", "/api/v1/auth/login-requests", { body: {}, token: null });
    expect(
      (
        await cp.deps.db
          .select()
          .from(tables(cp.deps.db).loginRequests)
          .where(eq(tables(cp.deps.db).loginRequests.id, old.id))
      )[0],
    ).toBeUndefined();
    expect(await cp.deps.db.select().from(tables(cp.deps.db).loginRequests)).toHaveLength(1);
  });

  test("a member's session cannot approve", async () => {
    const cp = await testControlPlane();
    const member = await accountWithRole(cp, "member");
    const lr = (await cp.call("POST", "/api/v1/auth/login-requests", { body: {}, token: null })).json;
    const s = await signInSession(cp, member.email);
    const res = await cp.call("POST", `/api/v1/auth/login-requests/${lr.id}/approve`, { body: {}, token: null, headers: { cookie: s.cookie, "x-csrf-token": s.csrf } });
    expect(res.status).toBe(403);
    expect(res.json.code).toBe("forbidden");
  });
});

describe("POST /organizations/{org}/api-tokens", () => {
  test("issues a working token for the caller, shown once and stored hashed", async () => {
    const cp = await testControlPlane();
    const res = await cp.call("POST", cp.org("/api-tokens"), { body: { name: "ci" } });
    expect(res.status).toBe(201);
    expect(res.json.id).toMatch(/^tok_/);
    expect(res.json.token).toMatch(/^svc_at_/);
    const row = (
      await cp.deps.db
        .select()
        .from(tables(cp.deps.db).apiTokens)
        .where(eq(tables(cp.deps.db).apiTokens.id, res.json.id))
    )[0]!;
    expect(row.tokenHash).toBe(hashSecret(res.json.token));
    expect((await cp.call("GET", "/api/v1/me", { token: res.json.token })).json.account.id).toBe(cp.accountId);
  });

  test("members get 403 on admin routes but may read /me", async () => {
    const cp = await testControlPlane();
    const member = await accountWithRole(cp, "member");
    const denied = await cp.call("POST", cp.org("/api-tokens"), { body: { name: "x" }, token: member.token });
    expect(denied.status).toBe(403);
    expect(denied.json.code).toBe("forbidden");
    for (const path of ["/workspaces", "/members", "/agents", "/installations", "/model-profiles", "/policies", "/users", "/groups", "/remote-identities"]) {
      expect((await cp.call("GET", cp.org(path), { token: member.token })).status).toBe(403);
    }
    expect((await cp.call("GET", "/api/v1/me", { token: member.token })).json.role).toBe("member");
    // A member's console session is refused the same way.
    const s = await signInSession(cp, member.email);
    expect((await cp.call("GET", cp.org("/workspaces"), { token: null, headers: { cookie: s.cookie } })).status).toBe(403);
  });

  test("a runtime token never reaches the admin API", async () => {
    const cp = await testControlPlane();
    const agent = await cp.call("POST", cp.org("/agents"), { body: { name: "a", workspace: "default" } });
    const inst = await cp.call("POST", cp.org("/installations"), { body: { platform: "chatui", name: "b", agent_id: agent.json.id, workspace: "default" } });
    const cred = await cp.call("POST", cp.org(`/installations/${inst.json.id}/credential`), { body: {} });
    expect((await cp.call("GET", cp.org("/agents"), { token: cred.json.token })).status).toBe(401);
  });
});
