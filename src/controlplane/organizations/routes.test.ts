import { describe, expect, test } from "bun:test";
import { PASSWORD, accountWithRole, secondOrganization, signInSession } from "../auth/test-fixtures.ts";
import { addMembership } from "../auth/service.ts";
import { issueApiToken } from "../auth/api-tokens.ts";
import { actingAsSystem } from "../audit/admin-events.ts";
import { testControlPlane } from "../testing.ts";

describe("workspaces", () => {
  test("lists the default workspace and creates more", async () => {
    const cp = await testControlPlane();
    const list = await cp.call("GET", cp.org("/workspaces"));
    expect(list.status).toBe(200);
    expect(list.json.workspaces).toEqual([{ id: cp.workspaceId, name: "default", created_at: expect.any(String) }]);
    const created = await cp.call("POST", cp.org("/workspaces"), { body: { name: "support" } });
    expect(created.status).toBe(201);
    expect(structuredClone(created.json)).toMatchObject({ id: expect.stringMatching(/^ws_/), name: "support" });
    expect(Number.isNaN(Date.parse(created.json.created_at))).toBe(false);
    const names = (await cp.call("GET", cp.org("/workspaces"))).json.workspaces.map((w: { name: string }) => w.name);
    expect(names).toEqual(["default", "support"]);
  });

  test("refuses a bad or duplicate name", async () => {
    const cp = await testControlPlane();
    const bad = await cp.call("POST", cp.org("/workspaces"), { body: { name: "has space" } });
    expect(bad.status).toBe(422);
    expect(bad.json.code).toBe("validation_failed");
    const dup = await cp.call("POST", cp.org("/workspaces"), { body: { name: "default" } });
    expect(dup.status).toBe(409);
    expect(dup.json.code).toBe("conflict");
    const missing = await cp.call("POST", cp.org("/workspaces"), { body: {} });
    expect(missing.status).toBe(422);
    expect(missing.json.errors[0].path).toBe("/name");
  });
});

describe("members", () => {
  test("adds a new account that can then sign in", async () => {
    const cp = await testControlPlane();
    const added = await cp.call("POST", cp.org("/members"), { body: { email: "Ada@Example.com", role: "admin", password: PASSWORD } });
    expect(added.status).toBe(201);
    expect(structuredClone(added.json)).toMatchObject({ account_id: expect.stringMatching(/^acc_/), email: "ada@example.com", role: "admin" });
    const list = await cp.call("GET", cp.org("/members"));
    expect(list.json.members).toEqual(
      expect.arrayContaining([
        { account_id: cp.accountId, email: "owner@example.com", role: "owner" },
        { account_id: added.json.account_id, email: "ada@example.com", role: "admin" },
      ]),
    );
    const s = await signInSession(cp, "ada@example.com");
    expect(s.body.role).toBe("admin");
  });

  test("changes a role; refuses a short password, a password for an existing account, a bad email", async () => {
    const cp = await testControlPlane();
    await cp.call("POST", cp.org("/members"), { body: { email: "m@example.com", role: "member" } });
    const promoted = await cp.call("POST", cp.org("/members"), { body: { email: "m@example.com", role: "admin" } });
    expect(promoted.json.role).toBe("admin");
    expect((await cp.call("POST", cp.org("/members"), { body: { email: "n@example.com", role: "member", password: "short" } })).status).toBe(422);
    const reset = await cp.call("POST", cp.org("/members"), { body: { email: "m@example.com", role: "admin", password: "another long password" } });
    expect(reset.status).toBe(409);
    expect((await cp.call("POST", cp.org("/members"), { body: { email: "not-an-email", role: "member" } })).json.code).toBe("validation_failed");
    expect((await cp.call("POST", cp.org("/members"), { body: { email: "x@example.com", role: "root" } })).status).toBe(422);
  });

  test("only an owner grants the owner role; the last owner stays", async () => {
    const cp = await testControlPlane();
    const admin = await accountWithRole(cp, "admin");
    const byAdmin = await cp.call("POST", cp.org("/members"), { body: { email: "boss@example.com", role: "owner" }, token: admin.token });
    expect(byAdmin.status).toBe(403);
    const demoteOwner = await cp.call("POST", cp.org("/members"), { body: { email: "owner@example.com", role: "member" }, token: admin.token });
    expect(demoteOwner.status).toBe(403);
    const selfDemote = await cp.call("POST", cp.org("/members"), { body: { email: "owner@example.com", role: "admin" } });
    expect(selfDemote.status).toBe(409);
    expect(selfDemote.json.detail).toContain("last owner");
  });
});

describe("removing members", () => {
  test("ends the account's sessions and revokes its tokens in this organization only", async () => {
    const cp = await testControlPlane();
    const admin = await accountWithRole(cp, "admin", "ada@example.com");
    const session = await signInSession(cp, "ada@example.com");
    expect((await cp.call("GET", "/api/v1/me", { token: null, headers: { cookie: session.cookie } })).status).toBe(200);
    // The same account in another organization keeps its access there.
    const other = await secondOrganization(cp);
    await addMembership(cp.deps.db, admin.accountId, other.orgId, "admin", { by: null, join: "added", at: cp.deps.now() });
    const elsewhere = await issueApiToken(cp.deps, { accountId: admin.accountId, orgId: other.orgId, name: "other", signIn: { at: cp.deps.now() } }, actingAsSystem(cp.deps, "controlplane"));

    const removed = await cp.call("DELETE", cp.org(`/members/${admin.accountId}`));
    expect(removed.status).toBe(204);
    expect((await cp.call("GET", cp.org("/members"))).json.members.map((m: { email: string }) => m.email)).toEqual(["owner@example.com"]);
    expect((await cp.call("GET", cp.org("/workspaces"), { token: admin.token })).status).toBe(401);
    expect((await cp.call("GET", "/api/v1/me", { token: null, headers: { cookie: session.cookie } })).status).toBe(401);
    const tokens = (await cp.call("GET", cp.org("/api-tokens"))).json.api_tokens.filter((t: { account_email: string }) => t.account_email === "ada@example.com");
    expect(tokens).toHaveLength(1);
    expect(tokens[0].revoked_at).toEqual(expect.any(String));
    expect((await cp.call("GET", other.org("/workspaces"), { token: elsewhere.token })).status).toBe(200);

    // Adding the account back does not revive the old token or session.
    await cp.call("POST", cp.org("/members"), { body: { email: "ada@example.com", role: "admin" } });
    expect((await cp.call("GET", cp.org("/workspaces"), { token: admin.token })).status).toBe(401);
    expect((await cp.call("GET", "/api/v1/me", { token: null, headers: { cookie: session.cookie } })).status).toBe(401);
  });

  test("only an owner removes an owner; the last owner stays (409); members get 403", async () => {
    const cp = await testControlPlane();
    const admin = await accountWithRole(cp, "admin");
    const member = await accountWithRole(cp, "member");
    const byMember = await cp.call("DELETE", cp.org(`/members/${admin.accountId}`), { token: member.token });
    expect(byMember.status).toBe(403);
    expect(byMember.json.code).toBe("forbidden");

    const ownerByAdmin = await cp.call("DELETE", cp.org(`/members/${cp.accountId}`), { token: admin.token });
    expect(ownerByAdmin.status).toBe(403);
    expect(ownerByAdmin.json.detail).toContain("only an owner");

    const last = await cp.call("DELETE", cp.org(`/members/${cp.accountId}`));
    expect(last.status).toBe(409);
    expect(last.json.code).toBe("conflict");
    expect(last.json.detail).toContain("last owner");
    expect((await cp.call("GET", cp.org("/workspaces"))).status).toBe(200);

    const second = await accountWithRole(cp, "owner");
    expect((await cp.call("DELETE", cp.org(`/members/${second.accountId}`))).status).toBe(204);
    expect((await cp.call("GET", cp.org("/workspaces"), { token: second.token })).status).toBe(401);
    // An admin removes a member (and itself).
    expect((await cp.call("DELETE", cp.org(`/members/${member.accountId}`), { token: admin.token })).status).toBe(204);
    expect((await cp.call("DELETE", cp.org(`/members/${admin.accountId}`), { token: admin.token })).status).toBe(204);
    expect((await cp.call("GET", cp.org("/members"), { token: admin.token })).status).toBe(401);
  });

  test("an account of another organization, or an unknown one, is 404; another organization's path is 404", async () => {
    const cp = await testControlPlane();
    const other = await secondOrganization(cp);
    const otherOwner = (await cp.call("GET", other.org("/members"), { token: other.token })).json.members[0];
    const cross = await cp.call("DELETE", cp.org(`/members/${otherOwner.account_id}`));
    expect(cross.status).toBe(404);
    expect(cross.json.code).toBe("not_found");
    expect((await cp.call("DELETE", cp.org("/members/acc_nope"))).status).toBe(404);
    expect((await cp.call("DELETE", other.org(`/members/${otherOwner.account_id}`))).status).toBe(404);
    expect((await cp.call("GET", other.org("/members"), { token: other.token })).json.members).toHaveLength(1);
  });
});
