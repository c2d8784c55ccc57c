import { describe, expect, test } from "bun:test";
import { type DirectoryState, type GraphSnapshot, type GraphUser, DEFAULT_ACCESS_ROLE_ID, countChanges, plan } from "./plan.ts";

const R_USERS = "11111111-1111-1111-1111-111111111111";
const R_ADMINS = "22222222-2222-2222-2222-222222222222";
const R_OFF = "33333333-3333-3333-3333-333333333333";

function user(id: string, over: Partial<GraphUser> = {}): GraphUser {
  return { id, displayName: id.toUpperCase(), mail: `${id}@example.com`, userPrincipalName: `${id}@tenant.example`, accountEnabled: true, ...over };
}

function snapshot(over: Partial<GraphSnapshot> = {}): GraphSnapshot {
  return {
    appRoles: [
      { id: R_USERS, value: "chat-users", isEnabled: true },
      { id: R_ADMINS, value: "chat-admins", isEnabled: true },
      { id: R_OFF, value: "retired", isEnabled: false },
    ],
    assignments: [],
    groupMembers: {},
    users: {},
    ...over,
  };
}

const empty: DirectoryState = { users: [], groups: [], memberships: [] };

describe("plan", () => {
  test("creates one group per enabled role value, none for disabled roles or default access", () => {
    const changes = plan(snapshot({ appRoles: [...snapshot().appRoles, { id: DEFAULT_ACCESS_ROLE_ID, value: "default", isEnabled: true }] }), empty, { createUsers: true });
    expect(changes).toEqual([
      { kind: "create_group", group: "chat-admins" },
      { kind: "create_group", group: "chat-users" },
    ]);
  });

  test("directly assigned users are created with mail, else userPrincipalName, and added", () => {
    const s = snapshot({
      assignments: [
        { appRoleId: R_USERS, principalId: "alice", principalType: "User" },
        { appRoleId: R_ADMINS, principalId: "bob", principalType: "User" },
      ],
      users: { alice: user("alice"), bob: user("bob", { mail: null, userPrincipalName: "Bob@Tenant.Example" }) },
    });
    const changes = plan(
      s,
      {
        users: [],
        groups: [
          { id: "g1", name: "chat-users", source: "directory" },
          { id: "g2", name: "chat-admins", source: "directory" },
        ],
        memberships: [],
      },
      { createUsers: true },
    );
    expect(changes).toEqual([
      { kind: "create_user", email: "alice@example.com", display_name: "ALICE", external_id: "alice" },
      { kind: "create_user", email: "bob@tenant.example", display_name: "BOB", external_id: "bob" },
      { kind: "add_member", group: "chat-admins", email: "bob@tenant.example", user_id: null },
      { kind: "add_member", group: "chat-users", email: "alice@example.com", user_id: null },
    ]);
  });

  test("a group assignment covers the group's direct members", () => {
    const s = snapshot({
      assignments: [{ appRoleId: R_USERS, principalId: "sales", principalType: "Group" }],
      groupMembers: { sales: ["carol", "frank"] },
      users: { carol: user("carol"), frank: user("frank") },
    });
    const adds = plan(s, empty, { createUsers: true }).filter((c) => c.kind === "add_member");
    expect(adds.map((c) => c.email)).toEqual(["carol@example.com", "frank@example.com"]);
  });

  test("default-access and disabled-role assignments grant nothing; service principals are ignored", () => {
    const s = snapshot({
      assignments: [
        { appRoleId: DEFAULT_ACCESS_ROLE_ID, principalId: "erin", principalType: "User" },
        { appRoleId: R_OFF, principalId: "erin", principalType: "User" },
        { appRoleId: R_USERS, principalId: "robot", principalType: "ServicePrincipal" },
      ],
      users: { erin: user("erin") },
    });
    expect(plan(s, empty, { createUsers: true }).filter((c) => c.kind !== "create_group")).toEqual([]);
  });

  test("existing users are matched by Entra id, then by email; nothing to do when already members", () => {
    const s = snapshot({
      assignments: [
        { appRoleId: R_USERS, principalId: "alice", principalType: "User" },
        { appRoleId: R_USERS, principalId: "bob", principalType: "User" },
      ],
      users: { alice: user("alice", { mail: "alice.new@example.com" }), bob: user("bob", { mail: "BOB@example.com" }) },
    });
    const state: DirectoryState = {
      users: [
        { id: "usr_a", email: "alice@example.com", displayName: null, disabled: false, source: "directory", externalId: "alice" },
        { id: "usr_b", email: "bob@example.com", displayName: null, disabled: false, source: "manual", externalId: null },
      ],
      groups: [
        { id: "g1", name: "chat-users", source: "directory" },
        { id: "g2", name: "chat-admins", source: "directory" },
      ],
      memberships: [{ groupName: "chat-users", userId: "usr_a", source: "directory" }],
    };
    expect(plan(s, state, { createUsers: true })).toEqual([{ kind: "add_member", group: "chat-users", email: "bob@example.com", user_id: "usr_b" }]);
  });

  test("only directory memberships are removed; manual ones stay", () => {
    const state: DirectoryState = {
      users: [
        { id: "usr_a", email: "alice@example.com", displayName: null, disabled: false, source: "directory", externalId: "alice" },
        { id: "usr_m", email: "mallory@example.com", displayName: null, disabled: false, source: "manual", externalId: null },
      ],
      groups: [
        { id: "g1", name: "chat-users", source: "directory" },
        { id: "g2", name: "chat-admins", source: "directory" },
        { id: "g3", name: "old-role", source: "directory" },
      ],
      memberships: [
        { groupName: "old-role", userId: "usr_a", source: "directory" },
        { groupName: "chat-admins", userId: "usr_m", source: "manual" },
      ],
    };
    expect(plan(snapshot(), state, { createUsers: true })).toEqual([{ kind: "remove_member", group: "old-role", email: "alice@example.com", user_id: "usr_a" }]);
  });

  test("a disabled account loses its directory memberships and its user is disabled, never deleted", () => {
    const s = snapshot({ assignments: [{ appRoleId: R_USERS, principalId: "alice", principalType: "User" }], users: { alice: user("alice", { accountEnabled: false }) } });
    const state: DirectoryState = {
      users: [{ id: "usr_a", email: "alice@example.com", displayName: null, disabled: false, source: "directory", externalId: "alice" }],
      groups: [
        { id: "g1", name: "chat-users", source: "directory" },
        { id: "g2", name: "chat-admins", source: "manual" },
      ],
      memberships: [
        { groupName: "chat-users", userId: "usr_a", source: "directory" },
        { groupName: "chat-admins", userId: "usr_a", source: "manual" },
      ],
    };
    expect(plan(s, state, { createUsers: true })).toEqual([
      { kind: "disable_user", email: "alice@example.com", user_id: "usr_a" },
      { kind: "remove_member", group: "chat-users", email: "alice@example.com", user_id: "usr_a" },
    ]);
    // A disabled account is never created.
    expect(plan(s, { ...empty, groups: state.groups }, { createUsers: true })).toEqual([]);
  });

  test("a re-enabled account re-enables a directory user", () => {
    const s = snapshot({ assignments: [{ appRoleId: R_USERS, principalId: "alice", principalType: "User" }], users: { alice: user("alice") } });
    const state: DirectoryState = {
      users: [{ id: "usr_a", email: "alice@example.com", displayName: null, disabled: true, source: "directory", externalId: "alice" }],
      groups: [
        { id: "g1", name: "chat-users", source: "directory" },
        { id: "g2", name: "chat-admins", source: "directory" },
      ],
      memberships: [],
    };
    expect(plan(s, state, { createUsers: true })).toEqual([
      { kind: "enable_user", email: "alice@example.com", user_id: "usr_a" },
      { kind: "add_member", group: "chat-users", email: "alice@example.com", user_id: "usr_a" },
    ]);
  });

  test("without create-users, unknown users are skipped and reported", () => {
    const s = snapshot({
      assignments: [
        { appRoleId: R_USERS, principalId: "alice", principalType: "User" },
        { appRoleId: R_USERS, principalId: "ghost", principalType: "User" },
      ],
      users: { alice: user("alice") },
    });
    const changes = plan(s, empty, { createUsers: false });
    expect(changes.filter((c) => c.kind === "create_user" || c.kind === "add_member")).toEqual([]);
    expect(changes.filter((c) => c.kind === "skip_user")).toEqual([
      { kind: "skip_user", email: null, external_id: "ghost", reason: "not found in the directory" },
      { kind: "skip_user", email: "alice@example.com", external_id: "alice", reason: "no service user with this email and create-users is off" },
    ]);
  });

  test("a role removed from the app takes its directory memberships away; the group stays", () => {
    const s = snapshot({
      appRoles: [{ id: R_USERS, value: "chat-users", isEnabled: true }],
      assignments: [{ appRoleId: R_USERS, principalId: "alice", principalType: "User" }],
      users: { alice: user("alice") },
    });
    const state: DirectoryState = {
      users: [{ id: "usr_a", email: "alice@example.com", displayName: null, disabled: false, source: "directory", externalId: "alice" }],
      groups: [
        { id: "g1", name: "chat-users", source: "directory" },
        { id: "g2", name: "chat-admins", source: "directory" },
      ],
      memberships: [
        { groupName: "chat-users", userId: "usr_a", source: "directory" },
        { groupName: "chat-admins", userId: "usr_a", source: "directory" },
      ],
    };
    const changes = plan(s, state, { createUsers: true });
    expect(changes).toEqual([{ kind: "remove_member", group: "chat-admins", email: "alice@example.com", user_id: "usr_a" }]);
    expect(countChanges(changes)).toMatchObject({ memberships_removed: 1, memberships_added: 0, groups_created: 0 });
  });

  test("plan is idempotent once applied: the same inputs with the changes in place give nothing", () => {
    const s = snapshot({ assignments: [{ appRoleId: R_USERS, principalId: "alice", principalType: "User" }], users: { alice: user("alice") } });
    const state: DirectoryState = {
      users: [{ id: "usr_a", email: "alice@example.com", displayName: null, disabled: false, source: "directory", externalId: "alice" }],
      groups: [
        { id: "g1", name: "chat-users", source: "directory" },
        { id: "g2", name: "chat-admins", source: "directory" },
      ],
      memberships: [{ groupName: "chat-users", userId: "usr_a", source: "directory" }],
    };
    expect(plan(s, state, { createUsers: true })).toEqual([]);
  });
});
