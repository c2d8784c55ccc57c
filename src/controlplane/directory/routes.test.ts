import { describe, expect, test } from "bun:test";
import { agentAndInstallation, revisionOf } from "../auth/test-fixtures.ts";
import { testControlPlane } from "../testing.ts";
import { identityMap, noteRemoteIdentity } from "./service.ts";

describe("users", () => {
  test("create, resolve by email, show by id or email", async () => {
    const cp = await testControlPlane();
    const created = await cp.call("POST", cp.org("/users"), { body: { email: "Alice@Example.com", display_name: "Alice" } });
    expect(created.status).toBe(201);
    expect(structuredClone(created.json)).toMatchObject({ id: expect.stringMatching(/^usr_/), email: "alice@example.com", display_name: "Alice", disabled: false, source: "manual", groups: [] });
    await cp.call("POST", cp.org("/users"), { body: { email: "bob@example.com" } });
    expect((await cp.call("GET", cp.org("/users"))).json.users.map((u: { email: string }) => u.email)).toEqual(["alice@example.com", "bob@example.com"]);
    const resolved = await cp.call("GET", cp.org("/users?email=ALICE@example.com"));
    expect(resolved.json.users.map((u: { id: string }) => u.id)).toEqual([created.json.id]);
    expect((await cp.call("GET", cp.org("/users?email=nobody@example.com"))).json.users).toEqual([]);
    expect((await cp.call("GET", cp.org(`/users/${created.json.id}`))).json.email).toBe("alice@example.com");
    expect((await cp.call("GET", cp.org("/users/alice%40example.com"))).json.id).toBe(created.json.id);
    expect((await cp.call("GET", cp.org("/users/usr_nope"))).status).toBe(404);
  });

  test("refuses a duplicate email and a malformed one", async () => {
    const cp = await testControlPlane();
    await cp.call("POST", cp.org("/users"), { body: { email: "a@example.com" } });
    expect((await cp.call("POST", cp.org("/users"), { body: { email: "A@example.com" } })).status).toBe(409);
    const bad = await cp.call("POST", cp.org("/users"), { body: { email: "not an email" } });
    expect(bad.status).toBe(422);
    expect(bad.json.errors[0].path).toBe("/email");
  });
});

describe("groups and members", () => {
  test("create, add and remove members (each bumps the revision), counts and user groups", async () => {
    const cp = await testControlPlane();
    const alice = (await cp.call("POST", cp.org("/users"), { body: { email: "alice@example.com" } })).json;
    const before = revisionOf(cp);
    const group = await cp.call("POST", cp.org("/groups"), { body: { name: "staff" } });
    expect(group.status).toBe(201);
    expect(structuredClone(group.json)).toMatchObject({ id: expect.stringMatching(/^grp_/), name: "staff", source: "manual", members: 0 });
    expect(revisionOf(cp)).toBe(before + 1);

    const added = await cp.call("POST", cp.org(`/groups/${group.json.id}/members`), { body: { user_id: alice.id } });
    expect(added.status).toBe(204);
    expect(revisionOf(cp)).toBe(before + 2);
    expect((await cp.call("GET", cp.org("/groups"))).json.groups).toEqual([expect.objectContaining({ name: "staff", members: 1 })]);
    expect((await cp.call("GET", cp.org(`/users/${alice.id}`))).json.groups).toEqual(["staff"]);
    // By name and by email work too.
    expect((await cp.call("POST", cp.org("/groups/staff/members"), { body: { user_id: "alice@example.com" } })).status).toBe(204);
    expect((await cp.call("GET", cp.org("/groups"))).json.groups[0].members).toBe(1);

    const removed = await cp.call("DELETE", cp.org(`/groups/${group.json.id}/members/${alice.id}`));
    expect(removed.status).toBe(204);
    expect((await cp.call("GET", cp.org(`/users/${alice.id}`))).json.groups).toEqual([]);
    expect(revisionOf(cp)).toBeGreaterThan(before + 2);

    expect((await cp.call("POST", cp.org("/groups/grp_nope/members"), { body: { user_id: alice.id } })).status).toBe(404);
    expect((await cp.call("POST", cp.org(`/groups/${group.json.id}/members`), { body: { user_id: "usr_nope" } })).status).toBe(404);
    expect((await cp.call("DELETE", cp.org(`/groups/${group.json.id}/members/usr_nope`))).status).toBe(404);
  });

  test("refuses a name unusable as group:<name>, and a duplicate", async () => {
    const cp = await testControlPlane();
    const bad = await cp.call("POST", cp.org("/groups"), { body: { name: "a:b" } });
    expect(bad.status).toBe(422);
    expect(bad.json.detail).toContain('contain ":"');
    await cp.call("POST", cp.org("/groups"), { body: { name: "staff" } });
    expect((await cp.call("POST", cp.org("/groups"), { body: { name: "staff" } })).status).toBe(409);
  });
});

describe("remote identities", () => {
  test("link by hand, list per user and org-wide with the linked filter", async () => {
    const cp = await testControlPlane();
    const { installationId } = await agentAndInstallation(cp);
    const alice = (await cp.call("POST", cp.org("/users"), { body: { email: "alice@example.com" } })).json;
    noteRemoteIdentity(cp.deps.db, cp.orgId, { remoteUserId: "fe-unlinked", installationId });

    const before = revisionOf(cp);
    const link = await cp.call("POST", cp.org(`/users/${alice.id}/remote-identities`), { body: { platform: "chatui", remote_user_id: "fe-alice" } });
    expect(link.status).toBe(201);
    expect(structuredClone(link.json)).toMatchObject({ id: expect.stringMatching(/^rid_/), platform: "chatui", remote_user_id: "fe-alice", user_id: alice.id, linked_at: expect.any(String) });
    expect(revisionOf(cp)).toBe(before + 1);
    expect(identityMap(cp.deps.db, cp.orgId)).toEqual([{ remote_user_id: "fe-alice", user_id: alice.id, email: "alice@example.com", groups: [] }]);

    const mine = await cp.call("GET", cp.org(`/users/${alice.id}/remote-identities`));
    expect(mine.json.remote_identities).toEqual([expect.objectContaining({ remote_user_id: "fe-alice", platform: "chatui", installation_id: null })]);
    const ids = async (q: string) => (await cp.call("GET", cp.org(`/remote-identities${q}`))).json.remote_identities.map((r: { remote_user_id: string }) => r.remote_user_id).sort();
    expect(await ids("")).toEqual(["fe-alice", "fe-unlinked"]);
    expect(await ids("?linked=true")).toEqual(["fe-alice"]);
    expect(await ids("?linked=false")).toEqual(["fe-unlinked"]);

    // Linking a seen identity keeps its installation.
    const seen = await cp.call("POST", cp.org("/users/alice@example.com/remote-identities"), { body: { platform: "chatui", remote_user_id: "fe-unlinked" } });
    expect(structuredClone(seen.json)).toMatchObject({ installation_id: installationId, user_id: alice.id });
    expect(await ids("?linked=false")).toEqual([]);
  });

  test("refuses another platform, and moving a link without relink", async () => {
    const cp = await testControlPlane();
    const alice = (await cp.call("POST", cp.org("/users"), { body: { email: "alice@example.com" } })).json;
    const bob = (await cp.call("POST", cp.org("/users"), { body: { email: "bob@example.com" } })).json;
    const platform = await cp.call("POST", cp.org(`/users/${alice.id}/remote-identities`), { body: { platform: "slack", remote_user_id: "x" } });
    expect(platform.status).toBe(422);
    expect(platform.json.code).toBe("invalid_platform");
    await cp.call("POST", cp.org(`/users/${alice.id}/remote-identities`), { body: { platform: "chatui", remote_user_id: "fe-1" } });
    const takeover = await cp.call("POST", cp.org(`/users/${bob.id}/remote-identities`), { body: { platform: "chatui", remote_user_id: "fe-1" } });
    expect(takeover.status).toBe(409);
    expect(takeover.json.detail).toContain(alice.id);
    const moved = await cp.call("POST", cp.org(`/users/${bob.id}/remote-identities`), { body: { platform: "chatui", remote_user_id: "fe-1", relink: true } });
    expect(moved.json.user_id).toBe(bob.id);
    expect((await cp.call("GET", cp.org(`/users/${alice.id}/remote-identities`))).json.remote_identities).toEqual([]);
    expect((await cp.call("POST", cp.org("/users/usr_nope/remote-identities"), { body: { platform: "chatui", remote_user_id: "z" } })).status).toBe(404);
    expect((await cp.call("GET", cp.org("/remote-identities?linked=maybe"))).status).toBe(422);
  });
});
