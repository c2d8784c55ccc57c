// API tokens expire (issue 20): a default TTL from config, shown by GET /me, refused after it;
// tokens stored before expiry existed last the default TTL from their creation.
import { describe, expect, test } from "bun:test";
import { eq } from "drizzle-orm";
import { tables } from "../db/index.ts";
import { testControlPlane } from "../testing.ts";
import { issueApiToken } from "./api-tokens.ts";
import { actingAsSystem } from "../audit/admin-events.ts";

const DAY = 24 * 3600 * 1000;

describe("API token expiry", () => {
  test("every token gets the default TTL, /me shows it, and it is refused once past", async () => {
    let now = Date.parse("2026-01-01T00:00:00Z");
    const cp = await testControlPlane({ now: () => now });
    const ttl = cp.deps.config.apiTokenTtlSeconds * 1000;
    expect(ttl).toBe(30 * DAY);
    const me = await cp.call("GET", "/api/v1/me");
    expect(me.status).toBe(200);
    expect(me.json.token_expires_at).toBe(new Date(now + ttl).toISOString());
    const issued = await cp.call("POST", cp.org("/api-tokens"), { body: { name: "ci" } });
    expect(issued.json.expires_at).toBe(new Date(now + ttl).toISOString());
    now += ttl - 1000;
    expect((await cp.call("GET", "/api/v1/me")).status).toBe(200);
    now += 2000;
    expect((await cp.call("GET", "/api/v1/me")).status).toBe(401);
    expect((await cp.call("GET", "/api/v1/me", { token: issued.json.token })).status).toBe(401);
  });

  test("a token stored without an expiry lasts the default TTL from its creation", async () => {
    let now = Date.now();
    const cp = await testControlPlane({ now: () => now });
    const { id, token } = await issueApiToken(cp.deps, { accountId: cp.accountId, orgId: cp.orgId, name: "old", signIn: { at: cp.deps.now() } }, actingAsSystem(cp.deps, "controlplane"));
    const t = tables(cp.deps.db).apiTokens;
    const [row] = await cp.deps.db.update(t).set({ expiresAt: null }).where(eq(t.id, id)).returning();
    expect((await cp.call("GET", "/api/v1/me", { token })).status).toBe(200);
    now = row!.createdAt + cp.deps.config.apiTokenTtlSeconds * 1000 + 1;
    expect((await cp.call("GET", "/api/v1/me", { token })).status).toBe(401);
  });

  test("API answers are not cacheable", async () => {
    const cp = await testControlPlane();
    for (const [method, path, token] of [
      ["GET", "/api/v1/me", undefined],
      ["GET", "/api/v1/me", null],
      ["POST", cp.org("/api-tokens"), undefined],
    ] as const) {
      const res = await cp.call(method, path, { token, ...(method === "POST" ? { body: { name: "x" } } : {}) });
      expect({ path, status: res.status, cacheControl: res.headers.get("cache-control") }).toEqual({ path, status: res.status, cacheControl: "no-store" });
    }
  });
});
