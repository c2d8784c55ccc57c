import { describe, expect, test } from "bun:test";
import { Type } from "@sinclair/typebox";
import { Value } from "@sinclair/typebox/value";
import { PolicyBundle } from "../../contract/bundle.ts";
import { evaluate, indexBundle, resolveSubject } from "../../proxy/policy/policy-index.ts";
import { accountWithRole, agentAndInstallation, revisionOf, secondOrganization } from "../auth/test-fixtures.ts";
import { addInstallation } from "../runtime/fixtures.ts";
import { testControlPlane } from "../testing.ts";
import { disabledIdentities, identityMap, noteRemoteIdentity } from "./service.ts";

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

describe("concurrent creation", () => {
  test("of one email or one group name: one 201, the others 409, never a 500", async () => {
    const cp = await testControlPlane();
    const users = await Promise.all(Array.from({ length: 5 }, async () => cp.call("POST", cp.org("/users"), { body: { email: "same@example.com" } })));
    expect(users.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409]);
    const groups = await Promise.all(Array.from({ length: 5 }, async () => cp.call("POST", cp.org("/groups"), { body: { name: "same" } })));
    expect(groups.map((r) => r.status).sort()).toEqual([201, 409, 409, 409, 409]);
    expect((await cp.call("GET", cp.org("/users"))).json.users).toHaveLength(1);
    expect((await cp.call("GET", cp.org("/groups"))).json.groups).toHaveLength(1);
  });
});

describe("groups and members", () => {
  test("create, add and remove members (each bumps the revision), counts and user groups", async () => {
    const cp = await testControlPlane();
    const alice = (await cp.call("POST", cp.org("/users"), { body: { email: "alice@example.com" } })).json;
    const before = await revisionOf(cp);
    const group = await cp.call("POST", cp.org("/groups"), { body: { name: "staff" } });
    expect(group.status).toBe(201);
    expect(structuredClone(group.json)).toMatchObject({ id: expect.stringMatching(/^grp_/), name: "staff", source: "manual", members: 0 });
    expect(await revisionOf(cp)).toBe(before + 1);

    const added = await cp.call("POST", cp.org(`/groups/${group.json.id}/members`), { body: { user_id: alice.id } });
    expect(added.status).toBe(204);
    expect(await revisionOf(cp)).toBe(before + 2);
    expect((await cp.call("GET", cp.org("/groups"))).json.groups).toEqual([expect.objectContaining({ name: "staff", members: 1 })]);
    expect((await cp.call("GET", cp.org(`/users/${alice.id}`))).json.groups).toEqual(["staff"]);
    // By name and by email work too.
    expect((await cp.call("POST", cp.org("/groups/staff/members"), { body: { user_id: "alice@example.com" } })).status).toBe(204);
    expect((await cp.call("GET", cp.org("/groups"))).json.groups[0].members).toBe(1);

    const removed = await cp.call("DELETE", cp.org(`/groups/${group.json.id}/members/${alice.id}`));
    expect(removed.status).toBe(204);
    expect((await cp.call("GET", cp.org(`/users/${alice.id}`))).json.groups).toEqual([]);
    expect(await revisionOf(cp)).toBeGreaterThan(before + 2);

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
    await noteRemoteIdentity(cp.deps.db, cp.orgId, { remoteUserId: "fe-unlinked", installationId });

    const before = await revisionOf(cp);
    const link = await cp.call("POST", cp.org(`/users/${alice.id}/remote-identities`), { body: { platform: "chatui", remote_user_id: "fe-alice" } });
    expect(link.status).toBe(201);
    expect(structuredClone(link.json)).toMatchObject({ id: expect.stringMatching(/^rid_/), platform: "chatui", remote_user_id: "fe-alice", user_id: alice.id, linked_at: expect.any(String) });
    expect(await revisionOf(cp)).toBe(before + 1);
    expect(await identityMap(cp.deps.db, cp.orgId)).toEqual([{ remote_user_id: "fe-alice", user_id: alice.id, email: "alice@example.com", groups: [], attributes: { source: "manual" } }]);

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

  test("unlink by hand: the identity stays, unlinked; it leaves the identity map; a claim link can be issued for it again", async () => {
    const cp = await testControlPlane();
    const inst = await addInstallation(cp);
    const carol = (await cp.call("POST", cp.org("/users"), { body: { email: "carol@example.com" } })).json;
    const bob = (await cp.call("POST", cp.org("/users"), { body: { email: "bob@example.com" } })).json;
    await cp.call("POST", cp.org(`/users/${carol.id}/remote-identities`), { body: { platform: "chatui", remote_user_id: "fe-carol" } });
    const claim = async () => cp.call("POST", "/api/v1/runtime/claims", { token: inst.token, body: { remote_user_id: "fe-carol" } });
    expect((await claim()).json.code).toBe("identity_already_linked");

    const before = await revisionOf(cp);
    const wrongUser = await cp.call("DELETE", cp.org(`/users/${bob.id}/remote-identities/fe-carol`));
    expect(wrongUser.status).toBe(404);
    expect(wrongUser.json.detail).toBe("front-end user fe-carol is not linked to bob@example.com");
    expect(await revisionOf(cp)).toBe(before);

    const gone = await cp.call("DELETE", cp.org(`/users/carol@example.com/remote-identities/fe-carol`));
    expect(gone.status).toBe(200);
    expect(structuredClone(gone.json)).toMatchObject({ remote_user_id: "fe-carol", user_id: null, linked_at: null });
    expect(await revisionOf(cp)).toBe(before + 1);
    expect(await identityMap(cp.deps.db, cp.orgId)).toEqual([]);
    expect((await cp.call("GET", cp.org("/remote-identities?linked=false"))).json.remote_identities.map((r: { remote_user_id: string }) => r.remote_user_id)).toEqual(["fe-carol"]);
    const issued = await claim();
    expect(issued.status).toBe(200);
    expect(issued.json.url).toContain("/claim/");
    expect((await cp.call("DELETE", cp.org(`/users/${carol.id}/remote-identities/fe-carol`))).status).toBe(404);
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

describe("disabling and enabling users", () => {
  test("a disabled user leaves the bundle's identity map for disabled_identities: an older proxy decides the identity as unlinked, even under a * permit", async () => {
    const cp = await testControlPlane();
    const inst = await addInstallation(cp);
    const alice = (await cp.call("POST", cp.org("/users"), { body: { email: "alice@example.com" } })).json;
    await cp.call("POST", cp.org(`/users/${alice.id}/remote-identities`), { body: { platform: "chatui", remote_user_id: "fe-alice" } });
    expect((await cp.call("POST", cp.org("/policies"), { body: { name: "everyone-reads", src: "*", dst: "tool:crm.read", effect: "permit", workspace: "default" } })).status).toBe(201);
    const decide = async () => {
      const bundle = await cp.call("GET", "/api/v1/runtime/policy-bundle", { token: inst.token });
      expect(bundle.status).toBe(200);
      const c = indexBundle(bundle.json);
      return { bundle: bundle.json, decision: evaluate(c, "tool:crm.read", resolveSubject(c, { id: "fe-alice" }), { args: {}, now: new Date() }) };
    };
    const before = await decide();
    expect(before.bundle.identities.map((i: { remote_user_id: string }) => i.remote_user_id)).toEqual(["fe-alice"]);
    expect(before.decision).toMatchObject({ decision: "permit", subject: { kind: "user", userId: alice.id } });

    const rev = await revisionOf(cp);
    const disabled = await cp.call("POST", cp.org(`/users/${alice.id}/disable`));
    expect(disabled.status).toBe(200);
    expect(structuredClone(disabled.json)).toMatchObject({ id: alice.id, email: "alice@example.com", disabled: true });
    expect(await revisionOf(cp)).toBe(rev + 1);
    expect(await identityMap(cp.deps.db, cp.orgId)).toEqual([]);
    const after = await decide();
    expect(after.bundle.revision).toBeGreaterThan(before.bundle.revision);
    expect(after.bundle.identities).toEqual([]);
    // Read as an older proxy reads it (the identity map alone): unlinked, refused, never linked.
    expect(after.decision).toMatchObject({ decision: "deny", code: "identity.unlinked", subject: { kind: "unlinked" } });
    // The proxy that knows it finds the user apart, to refuse them as disabled under their service user;
    // a proxy of 156695b's schema (no such field) still takes the bundle.
    expect(after.bundle.disabled_identities).toEqual([{ remote_user_id: "fe-alice", user_id: alice.id }]);
    expect(Value.Check(Type.Omit(PolicyBundle, ["disabled_identities"]), after.bundle)).toBe(true);
    expect(await disabledIdentities(cp.deps.db, cp.orgId, inst.installationId)).toEqual([{ remote_user_id: "fe-alice", user_id: alice.id }]);
    // The link stays, so the proxy's claim link for that identity is refused: nobody can take it over.
    const claim = await cp.call("POST", "/api/v1/runtime/claims", { token: inst.token, body: { remote_user_id: "fe-alice", email: "mallory@example.com" } });
    expect(claim.status).toBe(409);
    expect(claim.json.code).toBe("identity_already_linked");
    expect((await cp.call("GET", cp.org(`/users/${alice.id}/remote-identities`))).json.remote_identities).toHaveLength(1);

    // Disabling again changes nothing (no new revision); enabling restores the identity.
    expect((await cp.call("POST", cp.org("/users/alice@example.com/disable"))).json.disabled).toBe(true);
    expect(await revisionOf(cp)).toBe(rev + 1);
    const enabled = await cp.call("POST", cp.org(`/users/${alice.id}/enable`));
    expect(enabled.status).toBe(200);
    expect(enabled.json.disabled).toBe(false);
    expect(await revisionOf(cp)).toBe(rev + 2);
    const again = await decide();
    expect(again.decision).toMatchObject({ decision: "permit", subject: { kind: "user", userId: alice.id } });
    expect(again.bundle.disabled_identities).toEqual([]);
  });

  test("refusals: a member 403, an unknown user 404, another organization's user 404", async () => {
    const cp = await testControlPlane();
    const alice = (await cp.call("POST", cp.org("/users"), { body: { email: "alice@example.com" } })).json;
    const member = await accountWithRole(cp, "member");
    const byMember = await cp.call("POST", cp.org(`/users/${alice.id}/disable`), { token: member.token });
    expect(byMember.status).toBe(403);
    expect(byMember.json.code).toBe("forbidden");
    expect((await cp.call("POST", cp.org(`/users/${alice.id}/enable`), { token: member.token })).status).toBe(403);
    expect((await cp.call("POST", cp.org("/users/usr_nope/disable"))).status).toBe(404);
    const other = await secondOrganization(cp);
    const theirUser = (await cp.call("POST", other.org("/users"), { body: { email: "bob@example.org" }, token: other.token })).json;
    const cross = await cp.call("POST", cp.org(`/users/${theirUser.id}/disable`));
    expect(cross.status).toBe(404);
    expect(cross.json.code).toBe("not_found");
    expect((await cp.call("POST", other.org(`/users/${theirUser.id}/disable`))).status).toBe(404);
    expect((await cp.call("GET", other.org(`/users/${theirUser.id}`), { token: other.token })).json.disabled).toBe(false);
    expect((await cp.call("GET", cp.org(`/users/${alice.id}`))).json.disabled).toBe(false);
  });
});
