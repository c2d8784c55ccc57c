// The pure core of directory sync: from what Microsoft Graph says (app roles, their
// assignments, the assigned groups' direct members, the users) and what the service holds
// (users, groups, memberships), the list of changes that makes the service match. No I/O,
// no clock: the sync service fetches, this decides, the applier writes.
//
// Rules (docs/directory-sync.md): one group per enabled app role, named by the role's
// `value`; the all-zero role (default access) and disabled roles map to no group; a group
// assignment covers the group's direct members; users are matched by Entra object id, then
// by email (`mail`, else `userPrincipalName`), created only with create-users; only
// memberships whose source is "directory" are ever removed; a disabled account loses its
// directory memberships and its service user is disabled; nobody is deleted.

/** appRoleId of an assignment that grants default access, not a role. */
export const DEFAULT_ACCESS_ROLE_ID = "00000000-0000-0000-0000-000000000000";

export type GraphAppRole = { id: string; value: string | null; displayName?: string | null; isEnabled: boolean };
export type GraphAssignment = { appRoleId: string; principalId: string; principalType: string; principalDisplayName?: string | null };
export type GraphUser = { id: string; displayName: string | null; mail: string | null; userPrincipalName: string | null; accountEnabled: boolean | null };

export type GraphSnapshot = {
  appRoles: GraphAppRole[];
  assignments: GraphAssignment[];
  /** Direct user members (Entra user ids) of each group that holds a mapped role, by group id. */
  groupMembers: Record<string, string[]>;
  /** Every user named by an assignment or a membership that Graph returned, by id. */
  users: Record<string, GraphUser>;
};

export type DirectoryState = {
  users: { id: string; email: string; displayName: string | null; disabled: boolean; source: string; externalId: string | null }[];
  groups: { id: string; name: string; source: string }[];
  memberships: { groupName: string; userId: string; source: string }[];
};

export type PlanOptions = { createUsers: boolean };

export type Change =
  | { kind: "create_group"; group: string }
  | { kind: "create_user"; email: string; display_name: string | null; external_id: string }
  | { kind: "enable_user"; email: string; user_id: string }
  | { kind: "disable_user"; email: string; user_id: string }
  | { kind: "add_member"; group: string; email: string; user_id: string | null }
  | { kind: "remove_member"; group: string; email: string; user_id: string }
  | { kind: "skip_user"; email: string | null; external_id: string; reason: string };

export type ChangeKind = Change["kind"];

const ORDER: ChangeKind[] = ["create_group", "create_user", "enable_user", "disable_user", "add_member", "remove_member", "skip_user"];

/** Roles that map to a service group: enabled, with a value, not default access. id → group name. */
export function mappedRoles(appRoles: GraphAppRole[]): Map<string, string> {
  const out = new Map<string, string>();
  for (const r of appRoles) {
    if (r.id === DEFAULT_ACCESS_ROLE_ID || !r.isEnabled) continue;
    const value = r.value?.trim();
    if (value) out.set(r.id.toLowerCase(), value);
  }
  return out;
}

export function emailOf(u: GraphUser): string | null {
  const e = (u.mail?.trim() || u.userPrincipalName?.trim() || "").toLowerCase();
  return e || null;
}

/** Entra user id → the group names its assignments (direct, or through a group) grant. */
function rolesByUser(snapshot: GraphSnapshot, roles: Map<string, string>): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  const grant = (userId: string, group: string) => {
    const set = out.get(userId) ?? new Set<string>();
    set.add(group);
    out.set(userId, set);
  };
  for (const a of snapshot.assignments) {
    const group = roles.get(a.appRoleId.toLowerCase());
    if (!group) continue;
    if (a.principalType === "User") grant(a.principalId, group);
    else if (a.principalType === "Group") for (const member of snapshot.groupMembers[a.principalId] ?? []) grant(member, group);
  }
  return out;
}

export function plan(snapshot: GraphSnapshot, state: DirectoryState, options: PlanOptions): Change[] {
  const roles = mappedRoles(snapshot.appRoles);
  const changes: Change[] = [];

  const existingGroups = new Set(state.groups.map((g) => g.name));
  for (const name of new Set(roles.values())) if (!existingGroups.has(name)) changes.push({ kind: "create_group", group: name });

  const byExternalId = new Map(state.users.filter((u) => u.externalId).map((u) => [u.externalId!, u]));
  const byEmail = new Map(state.users.map((u) => [u.email.toLowerCase(), u]));
  const byId = new Map(state.users.map((u) => [u.id, u]));

  // Desired directory memberships, keyed "group\0user" where user is a service user id, or
  // "email:<address>" for a user this plan creates.
  const desired = new Map<string, { group: string; email: string; userId: string | null }>();
  for (const [entraId, groups] of rolesByUser(snapshot, roles)) {
    const gu = snapshot.users[entraId];
    if (!gu) {
      changes.push({ kind: "skip_user", email: null, external_id: entraId, reason: "not found in the directory" });
      continue;
    }
    const email = emailOf(gu);
    if (!email) {
      changes.push({ kind: "skip_user", email: null, external_id: entraId, reason: "has neither mail nor userPrincipalName" });
      continue;
    }
    const existing = byExternalId.get(entraId) ?? byEmail.get(email);
    if (gu.accountEnabled === false) {
      // Disabled in the directory: no memberships wanted, so the removal pass takes them away.
      if (existing && !existing.disabled) changes.push({ kind: "disable_user", email: existing.email, user_id: existing.id });
      continue;
    }
    if (!existing) {
      if (!options.createUsers) {
        changes.push({ kind: "skip_user", email, external_id: entraId, reason: "no service user with this email and create-users is off" });
        continue;
      }
      changes.push({ kind: "create_user", email, display_name: gu.displayName, external_id: entraId });
    } else if (existing.disabled && existing.source === "directory") {
      changes.push({ kind: "enable_user", email: existing.email, user_id: existing.id });
    }
    for (const group of groups) {
      const key = `${group}\0${existing ? existing.id : `email:${email}`}`;
      desired.set(key, { group, email: existing?.email ?? email, userId: existing?.id ?? null });
    }
  }

  const current = new Map(state.memberships.map((m) => [`${m.groupName}\0${m.userId}`, m]));
  for (const [key, d] of desired) if (!current.has(key)) changes.push({ kind: "add_member", group: d.group, email: d.email, user_id: d.userId });
  for (const [key, m] of current) {
    if (m.source !== "directory" || desired.has(key)) continue;
    changes.push({ kind: "remove_member", group: m.groupName, email: byId.get(m.userId)?.email ?? m.userId, user_id: m.userId });
  }

  return changes.sort((a, b) => ORDER.indexOf(a.kind) - ORDER.indexOf(b.kind) || compare(sortKey(a), sortKey(b)));
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function sortKey(c: Change): string {
  return `${"group" in c ? c.group : ""}\0${"email" in c ? (c.email ?? "") : ""}\0${"external_id" in c ? c.external_id : ""}`;
}

export type SyncCounts = Record<"groups_created" | "users_created" | "users_enabled" | "users_disabled" | "memberships_added" | "memberships_removed" | "users_skipped", number>;

const COUNTED: Record<ChangeKind, keyof SyncCounts> = {
  create_group: "groups_created",
  create_user: "users_created",
  enable_user: "users_enabled",
  disable_user: "users_disabled",
  add_member: "memberships_added",
  remove_member: "memberships_removed",
  skip_user: "users_skipped",
};

export function countChanges(changes: Change[]): SyncCounts {
  const counts = Object.fromEntries(Object.values(COUNTED).map((k) => [k, 0])) as SyncCounts;
  for (const c of changes) counts[COUNTED[c.kind]]++;
  return counts;
}
