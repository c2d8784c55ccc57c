import { describe, expect, test } from "bun:test";
import { accountWithRole, secondOrganization, signInSession } from "../auth/test-fixtures.ts";
import { testControlPlane } from "../testing.ts";
import { jsonDepthExceeds, MAX_JSON_DEPTH } from "./request-gate.ts";

const enc = new TextEncoder();
const deep = (n: number) => `${'{"a":'.repeat(n)}1${"}".repeat(n)}`;

/** A body that counts the bytes pulled from it. */
function countingBody(total: number, chunk = 16 * 1024) {
  let pulled = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(c) {
      if (pulled >= total) return c.close();
      pulled += chunk;
      c.enqueue(new Uint8Array(chunk).fill(0x20));
    },
  });
  return { body, pulled: () => pulled };
}

describe("jsonDepthExceeds", () => {
  test("counts arrays and objects, not brackets inside strings", () => {
    expect(jsonDepthExceeds(enc.encode(deep(MAX_JSON_DEPTH)), MAX_JSON_DEPTH)).toBe(false);
    expect(jsonDepthExceeds(enc.encode(deep(MAX_JSON_DEPTH + 1)), MAX_JSON_DEPTH)).toBe(true);
    expect(jsonDepthExceeds(enc.encode(JSON.stringify({ s: "[".repeat(100) + '\\"{{{{' })), 2)).toBe(false);
    expect(jsonDepthExceeds(enc.encode("[[[]]]"), 2)).toBe(true);
    // a string ending in an escaped backslash ends at its quote; an escaped quote does not end it
    expect(jsonDepthExceeds(enc.encode(JSON.stringify({ s: "a\\", t: [[[1]]] })), 3)).toBe(true);
    expect(jsonDepthExceeds(enc.encode(JSON.stringify({ s: 'a\\"[[[[', t: [[1]] })), 3)).toBe(false);
    expect(jsonDepthExceeds(enc.encode('["unterminated [[[['), 2)).toBe(false);
  });
});

describe("the gate in front of the app", () => {
  test("deep JSON is 400 body_too_deep on signed-in and anonymous routes, never 500", async () => {
    const cp = await testControlPlane();
    for (const [path, token] of [
      [cp.org("/agents"), cp.adminToken],
      ["/api/v1/auth/sessions", null],
      ["/api/v1/auth/login-requests", null],
    ] as const) {
      for (const body of [deep(5000), "[".repeat(60_000)]) {
        const res = await cp.app.handle(
          new Request(`http://localhost${path}`, { method: "POST", headers: { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) }, body }),
        );
        expect({ path, status: res.status, code: ((await res.json()) as { code: string }).code }).toEqual({ path, status: 400, code: "body_too_deep" });
      }
    }
  });

  test("unknown body fields are refused with a problem naming them", async () => {
    const cp = await testControlPlane();
    const admin = await cp.call("POST", cp.org("/agents"), { body: { name: "a", workspace: "default", colour: "red" } });
    expect(admin.status).toBe(422);
    expect(admin.headers.get("content-type")).toContain("application/problem+json");
    expect(admin.json.errors).toContainEqual({ path: "/colour", message: expect.stringContaining("colour") });
    const signIn = await cp.call("POST", "/api/v1/auth/sessions", { token: null, body: { email: "owner@example.com", password: "x", remember: true } });
    expect(signIn.status).toBe(422);
    expect(signIn.json.detail).toContain("remember");
  });

  test("credentials are checked before the body: wrong principals never see validation details", async () => {
    const cp = await testControlPlane();
    const invalid = { name: 42, extra: true };
    // none: 401; another organization's token: 404; a member without admin role: 403; a session without CSRF: 403
    expect((await cp.call("POST", cp.org("/agents"), { token: null, body: invalid })).status).toBe(401);
    const other = await secondOrganization(cp);
    expect((await cp.call("POST", cp.org("/agents"), { token: other.token, body: invalid })).status).toBe(404);
    const member = await accountWithRole(cp, "member");
    expect((await cp.call("POST", cp.org("/agents"), { token: member.token, body: invalid })).status).toBe(403);
    const session = await signInSession(cp);
    expect((await cp.call("POST", cp.org("/agents"), { token: null, headers: { cookie: session.cookie }, body: invalid })).status).toBe(403);
    expect((await cp.call("POST", "/api/v1/runtime/bootstrap", { token: "svc_rt_wrong", body: invalid })).status).toBe(401);
    // the right principal gets the validation details
    expect((await cp.call("POST", cp.org("/agents"), { body: invalid })).status).toBe(422);
  });

  test("an unauthenticated body to a signed-in route is not read; an anonymous one is cut at its limit", async () => {
    const cp = await testControlPlane();
    const anon = countingBody(50 * 1024 * 1024);
    const res = await cp.app.handle(new Request(`http://localhost${cp.org("/agents")}`, { method: "POST", headers: { "content-type": "application/json" }, body: anon.body }));
    expect(res.status).toBe(401);
    expect(anon.pulled()).toBeLessThanOrEqual(64 * 1024);
    const big = countingBody(50 * 1024 * 1024);
    const cut = await cp.app.handle(new Request("http://localhost/api/v1/auth/sessions", { method: "POST", headers: { "content-type": "application/json" }, body: big.body }));
    expect(cut.status).toBe(413);
    expect(big.pulled()).toBeLessThan(1024 * 1024);
  });

  test("TRACE and unknown methods are 405 with Allow, not 404", async () => {
    const cp = await testControlPlane();
    for (const method of ["TRACE", "PROPFIND"]) {
      const res = await cp.call(method, "/api/v1/me");
      expect(res.status).toBe(405);
      expect(res.headers.get("allow")).toContain("POST");
      expect(res.json.code).toBe("method_not_allowed");
    }
  });
});
