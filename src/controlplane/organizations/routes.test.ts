import { describe, expect, test } from "bun:test";
import { PASSWORD, accountWithRole, signInSession } from "../auth/test-fixtures.ts";
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
