// Listing and revoking the organization's API tokens: `GET|DELETE /organizations/{org}/api-tokens`.
import { describe, expect, test } from "bun:test";
import { testControlPlane } from "../testing.ts";
import { accountWithRole, secondOrganization } from "./test-fixtures.ts";
import { issueApiToken } from "./api-tokens.ts";
import { actingAsSystem } from "../audit/admin-events.ts";

describe("GET /organizations/{org}/api-tokens", () => {
  test("lists every token of the organization with its account, never the token or its hash", async () => {
    let now = 1_750_000_000_000;
    const cp = await testControlPlane({ now: () => now });
    const admin = await accountWithRole(cp, "admin", "ada@example.com");
    const expiring = await issueApiToken(
      cp.deps,
      { accountId: admin.accountId, orgId: cp.orgId, name: "ci", ttlSeconds: 3600, signIn: { at: cp.deps.now() } },
      actingAsSystem(cp.deps, "controlplane"),
    );
    now += 120_000;
    expect((await cp.call("GET", "/api/v1/me", { token: admin.token })).status).toBe(200);
    const res = await cp.call("GET", cp.org("/api-tokens"));
    expect(res.status).toBe(200);
    const tokens = res.json.api_tokens;
    expect(tokens).toHaveLength(3);
    for (const t of tokens) expect(Object.keys(t).sort()).toEqual(["account_email", "created_at", "expires_at", "id", "last_used_at", "name", "revoked_at"]);
    const mine = tokens.find((t: { account_email: string; name: string }) => t.account_email === "ada@example.com" && t.name === "test");
    expect(mine.last_used_at).toBe(new Date(now).toISOString());
    expect(mine.revoked_at).toBeNull();
    expect(tokens.find((t: { id: string }) => t.id === expiring.id).expires_at).toBe(new Date(now - 120_000 + 3600_000).toISOString());
    expect(tokens.map((t: { account_email: string }) => t.account_email)).toContain("owner@example.com");
    for (const secret of [cp.adminToken, admin.token, expiring.token]) expect(res.text).not.toContain(secret.slice(7));
    expect(res.text).not.toContain("hash");
  });

  test("members get 403; another organization's path is 404 and its tokens are not listed", async () => {
    const cp = await testControlPlane();
    const member = await accountWithRole(cp, "member");
    expect((await cp.call("GET", cp.org("/api-tokens"), { token: member.token })).status).toBe(403);
    const other = await secondOrganization(cp);
    const cross = await cp.call("GET", other.org("/api-tokens"));
    expect(cross.status).toBe(404);
    expect(cross.json.code).toBe("not_found");
    const ours = (await cp.call("GET", cp.org("/api-tokens"))).json.api_tokens.map((t: { account_email: string }) => t.account_email);
    expect(ours).not.toContain("other-owner@example.org");
  });
});

describe("DELETE /organizations/{org}/api-tokens/{id}", () => {
  test("an admin revokes another account's token: it fails with 401 at once, on every route", async () => {
    const cp = await testControlPlane();
    const admin = await accountWithRole(cp, "admin");
    const ownerCi = await issueApiToken(cp.deps, { accountId: cp.accountId, orgId: cp.orgId, name: "ci", signIn: { at: cp.deps.now() } }, actingAsSystem(cp.deps, "controlplane"));
    expect((await cp.call("GET", cp.org("/workspaces"), { token: ownerCi.token })).status).toBe(200);

    const del = await cp.call("DELETE", cp.org(`/api-tokens/${ownerCi.id}`), { token: admin.token });
    expect(del.status).toBe(204);
    const after = await cp.call("GET", cp.org("/workspaces"), { token: ownerCi.token });
    expect(after.status).toBe(401);
    expect(after.json.code).toBe("unauthorized");
    expect((await cp.call("POST", cp.org("/workspaces"), { token: ownerCi.token, body: { name: "x" } })).status).toBe(401);
    expect((await cp.call("GET", "/api/v1/me", { token: ownerCi.token })).status).toBe(401);

    const listed = (await cp.call("GET", cp.org("/api-tokens"))).json.api_tokens.find((t: { id: string }) => t.id === ownerCi.id);
    expect(listed.revoked_at).toEqual(expect.any(String));
    // Revoking again changes nothing; the other tokens still work.
    expect((await cp.call("DELETE", cp.org(`/api-tokens/${ownerCi.id}`))).status).toBe(204);
    expect((await cp.call("GET", cp.org("/api-tokens"))).json.api_tokens.find((t: { id: string }) => t.id === ownerCi.id).revoked_at).toBe(listed.revoked_at);
    expect((await cp.call("GET", cp.org("/workspaces"))).status).toBe(200);
    expect((await cp.call("GET", cp.org("/workspaces"), { token: admin.token })).status).toBe(200);
  });

  test("an admin may revoke its own token, which fails from the next request", async () => {
    const cp = await testControlPlane();
    const admin = await accountWithRole(cp, "admin");
    const id = (await cp.call("GET", cp.org("/api-tokens"), { token: admin.token })).json.api_tokens.find((t: { name: string; account_email: string }) => t.account_email === admin.email).id;
    expect((await cp.call("DELETE", cp.org(`/api-tokens/${id}`), { token: admin.token })).status).toBe(204);
    expect((await cp.call("GET", cp.org("/api-tokens"), { token: admin.token })).status).toBe(401);
  });

  test("refusals: a member 403, an unknown id 404, another organization's token 404 (and it keeps working)", async () => {
    const cp = await testControlPlane();
    const member = await accountWithRole(cp, "member");
    const ownerCi = await issueApiToken(cp.deps, { accountId: cp.accountId, orgId: cp.orgId, name: "ci", signIn: { at: cp.deps.now() } }, actingAsSystem(cp.deps, "controlplane"));
    const byMember = await cp.call("DELETE", cp.org(`/api-tokens/${ownerCi.id}`), { token: member.token });
    expect(byMember.status).toBe(403);
    expect(byMember.json.code).toBe("forbidden");
    expect((await cp.call("GET", cp.org("/workspaces"), { token: ownerCi.token })).status).toBe(200);

    const unknown = await cp.call("DELETE", cp.org("/api-tokens/tok_nope"));
    expect(unknown.status).toBe(404);
    expect(unknown.json.code).toBe("not_found");

    const other = await secondOrganization(cp);
    const otherId = (await cp.call("GET", other.org("/api-tokens"), { token: other.token })).json.api_tokens[0].id;
    expect((await cp.call("DELETE", cp.org(`/api-tokens/${otherId}`))).status).toBe(404);
    expect((await cp.call("DELETE", other.org(`/api-tokens/${otherId}`))).status).toBe(404);
    expect((await cp.call("GET", other.org("/workspaces"), { token: other.token })).status).toBe(200);
  });
});
