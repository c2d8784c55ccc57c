// Service users (keyed by email per organization), groups, and front-end identities
// (`chatui`, front-end user id) linked to users. Used by the admin API, claim links,
// directory sync and the policy bundle's identity map.
import { and, count, eq, inArray, isNotNull, isNull, or } from "drizzle-orm";
import type { BundleIdentity } from "../../contract/bundle.ts";
import { SvcError } from "../../contract/errors.ts";
import { newId } from "../../contract/ids.ts";
import { parseSource } from "../../contract/patterns.ts";
import { EMAIL_RE } from "../auth/bootstrap.ts";
import { type Db, schema } from "../db/index.ts";
import { bumpRevision } from "../organizations/service.ts";

export type UserSource = "manual" | "directory" | "claim";
export type GroupSource = "manual" | "directory";

export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

export function findUserByEmail(db: Db, orgId: string, email: string) {
  return db
    .select()
    .from(schema.users)
    .where(and(eq(schema.users.orgId, orgId), eq(schema.users.email, normalizeEmail(email))))
    .get();
}

export function getUser(db: Db, orgId: string, idOrEmail: string) {
  const u = schema.users;
  const row = idOrEmail.startsWith("usr_")
    ? db.select().from(u).where(and(eq(u.orgId, orgId), eq(u.id, idOrEmail))).get()
    : findUserByEmail(db, orgId, idOrEmail);
  if (!row) throw new SvcError("not_found", `user "${idOrEmail}" not found`);
  return row;
}

/** Returns the user with this email, creating it when absent. */
export function upsertUserByEmail(db: Db, orgId: string, input: { email: string; displayName?: string | null; source: UserSource; externalId?: string | null }) {
  const existing = findUserByEmail(db, orgId, input.email);
  if (existing) return { user: existing, created: false };
  const id = newId("user");
  db.insert(schema.users)
    .values({ id, orgId, email: normalizeEmail(input.email), displayName: input.displayName ?? null, source: input.source, externalId: input.externalId ?? null })
    .run();
  return { user: db.select().from(schema.users).where(eq(schema.users.id, id)).get()!, created: true };
}

export function setUserDisabled(db: Db, orgId: string, userId: string, disabled: boolean) {
  db.update(schema.users).set({ disabled }).where(and(eq(schema.users.orgId, orgId), eq(schema.users.id, userId))).run();
  bumpRevision(db, orgId);
}

export function findGroupByName(db: Db, orgId: string, name: string) {
  return db.select().from(schema.groups).where(and(eq(schema.groups.orgId, orgId), eq(schema.groups.name, name))).get();
}

export function ensureGroup(db: Db, orgId: string, name: string, source: GroupSource) {
  const existing = findGroupByName(db, orgId, name);
  if (existing) return { group: existing, created: false };
  const id = newId("group");
  db.insert(schema.groups).values({ id, orgId, name, source }).run();
  return { group: db.select().from(schema.groups).where(eq(schema.groups.id, id)).get()!, created: true };
}

export function groupMemberIds(db: Db, groupId: string): string[] {
  return db.select({ userId: schema.groupMembers.userId }).from(schema.groupMembers).where(eq(schema.groupMembers.groupId, groupId)).all().map((r) => r.userId);
}

export function addGroupMember(db: Db, orgId: string, groupId: string, userId: string, source: GroupSource) {
  db.insert(schema.groupMembers).values({ groupId, userId, source }).onConflictDoNothing().run();
  bumpRevision(db, orgId);
}

export function removeGroupMember(db: Db, orgId: string, groupId: string, userId: string) {
  db.delete(schema.groupMembers).where(and(eq(schema.groupMembers.groupId, groupId), eq(schema.groupMembers.userId, userId))).run();
  bumpRevision(db, orgId);
}

export function findRemoteIdentity(db: Db, orgId: string, remoteUserId: string) {
  const r = schema.remoteIdentities;
  return db.select().from(r).where(and(eq(r.orgId, orgId), eq(r.platform, "chatui"), eq(r.remoteUserId, remoteUserId))).get();
}

/** Records that a front-end user was seen (unlinked until claimed or linked by an admin). */
export function noteRemoteIdentity(db: Db, orgId: string, input: { remoteUserId: string; installationId: string; email?: string | null; displayName?: string | null }) {
  const existing = findRemoteIdentity(db, orgId, input.remoteUserId);
  if (existing) return existing;
  const id = newId("remoteIdentity");
  db.insert(schema.remoteIdentities)
    .values({ id, orgId, platform: "chatui", remoteUserId: input.remoteUserId, installationId: input.installationId, email: input.email ?? null, displayName: input.displayName ?? null })
    .onConflictDoNothing()
    .run();
  return findRemoteIdentity(db, orgId, input.remoteUserId)!;
}

/** Links (`chatui`, remoteUserId) to a service user; the next bundle carries the link. */
export function linkRemoteIdentity(db: Db, orgId: string, input: { remoteUserId: string; userId: string; installationId?: string | null; now: number }) {
  const r = schema.remoteIdentities;
  const existing = findRemoteIdentity(db, orgId, input.remoteUserId);
  if (existing) {
    // An identity seen without an installation takes the one it is linked through, if any.
    db.update(r)
      .set({ userId: input.userId, linkedAt: input.now, installationId: existing.installationId ?? input.installationId ?? null })
      .where(eq(r.id, existing.id))
      .run();
  } else {
    db.insert(r)
      .values({ id: newId("remoteIdentity"), orgId, platform: "chatui", remoteUserId: input.remoteUserId, installationId: input.installationId ?? null, userId: input.userId, linkedAt: input.now })
      .run();
  }
  bumpRevision(db, orgId);
  return findRemoteIdentity(db, orgId, input.remoteUserId)!;
}

/**
 * Front-end user id → service user and group names, for every linked, enabled user of the
 * organization. With `installationId` (an installation's bundle): only the identities of that
 * installation and those an admin linked without one — a front-end user id means something
 * only in the front end it came from, so no installation can act as another one's users.
 */
export function identityMap(db: Db, orgId: string, installationId?: string): BundleIdentity[] {
  const r = schema.remoteIdentities;
  const u = schema.users;
  const conds = [eq(r.orgId, orgId), isNotNull(r.userId), eq(u.disabled, false)];
  if (installationId !== undefined) conds.push(or(isNull(r.installationId), eq(r.installationId, installationId))!);
  const links = db
    .select({ remote_user_id: r.remoteUserId, user_id: u.id, email: u.email })
    .from(r)
    .innerJoin(u, eq(u.id, r.userId))
    .where(and(...conds))
    .all();
  if (links.length === 0) return [];
  const memberships = db
    .select({ userId: schema.groupMembers.userId, name: schema.groups.name })
    .from(schema.groupMembers)
    .innerJoin(schema.groups, eq(schema.groups.id, schema.groupMembers.groupId))
    .where(inArray(schema.groupMembers.userId, [...new Set(links.map((l) => l.user_id))]))
    .all();
  const groupsOf = new Map<string, string[]>();
  for (const m of memberships) groupsOf.set(m.userId, [...(groupsOf.get(m.userId) ?? []), m.name]);
  return links.map((l) => ({ ...l, groups: (groupsOf.get(l.user_id) ?? []).sort() }));
}

// ── admin API ──────────────────────────────────────────────────────────────────────────

export type UserRow = typeof schema.users.$inferSelect;
export type GroupRow = typeof schema.groups.$inferSelect;
export type RemoteIdentityRow = typeof schema.remoteIdentities.$inferSelect;

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

function groupNamesOf(db: Db, userIds: string[]): Map<string, string[]> {
  const out = new Map<string, string[]>();
  if (userIds.length === 0) return out;
  const rows = db
    .select({ userId: schema.groupMembers.userId, name: schema.groups.name })
    .from(schema.groupMembers)
    .innerJoin(schema.groups, eq(schema.groups.id, schema.groupMembers.groupId))
    .where(inArray(schema.groupMembers.userId, userIds))
    .all();
  for (const r of rows) out.set(r.userId, [...(out.get(r.userId) ?? []), r.name].sort());
  return out;
}

export function presentUser(u: UserRow, groups: string[]) {
  return { id: u.id, email: u.email, display_name: u.displayName, disabled: u.disabled, source: u.source, groups, created_at: iso(u.createdAt) };
}

export function listUsers(db: Db, orgId: string, email?: string) {
  const u = schema.users;
  const rows = db
    .select()
    .from(u)
    .where(email ? and(eq(u.orgId, orgId), eq(u.email, normalizeEmail(email))) : eq(u.orgId, orgId))
    .orderBy(u.email)
    .all();
  const groups = groupNamesOf(db, rows.map((r) => r.id));
  return rows.map((r) => presentUser(r, groups.get(r.id) ?? []));
}

export function showUser(db: Db, orgId: string, idOrEmail: string) {
  const user = getUser(db, orgId, idOrEmail);
  return presentUser(user, groupNamesOf(db, [user.id]).get(user.id) ?? []);
}

export function createUser(db: Db, orgId: string, input: { email: string; displayName?: string | null }) {
  const email = normalizeEmail(input.email);
  if (!EMAIL_RE.test(email)) throw new SvcError("validation_failed", `"${input.email}" is not an email address`, { errors: [{ path: "/email", message: "not an email address" }] });
  const existing = findUserByEmail(db, orgId, email);
  if (existing) throw new SvcError("conflict", `a user with email ${email} already exists (${existing.id})`);
  const { user } = upsertUserByEmail(db, orgId, { email, displayName: input.displayName ?? null, source: "manual" });
  return presentUser(user, []);
}

export function presentRemoteIdentity(r: RemoteIdentityRow) {
  return {
    id: r.id,
    platform: r.platform,
    remote_user_id: r.remoteUserId,
    installation_id: r.installationId,
    user_id: r.userId,
    email: r.email,
    display_name: r.displayName,
    linked_at: iso(r.linkedAt),
    created_at: iso(r.createdAt),
  };
}

export function remoteIdentitiesOfUser(db: Db, orgId: string, idOrEmail: string) {
  const user = getUser(db, orgId, idOrEmail);
  const r = schema.remoteIdentities;
  return db.select().from(r).where(and(eq(r.orgId, orgId), eq(r.userId, user.id))).orderBy(r.id).all().map(presentRemoteIdentity);
}

/** Every front-end identity the organization has seen or linked; `linked` filters on having a user. */
export function listRemoteIdentities(db: Db, orgId: string, linked?: boolean) {
  const r = schema.remoteIdentities;
  const conds = [eq(r.orgId, orgId)];
  if (linked === true) conds.push(isNotNull(r.userId));
  if (linked === false) conds.push(isNull(r.userId));
  return db.select().from(r).where(and(...conds)).orderBy(r.id).all().map(presentRemoteIdentity);
}

/**
 * An admin links (`chatui`, remote user id) to a user by hand. An identity already linked to
 * another user is moved only with `relink`, so a typo cannot silently take over someone's link.
 */
export function linkByHand(db: Db, orgId: string, idOrEmail: string, input: { platform: string; remoteUserId: string; relink?: boolean }, now: number) {
  if (input.platform !== "chatui") {
    const message = `platform must be exactly "chatui"; got "${input.platform}"`;
    throw new SvcError("invalid_platform", message, { errors: [{ path: "/platform", message }] });
  }
  const remoteUserId = input.remoteUserId.trim();
  if (!remoteUserId) throw new SvcError("validation_failed", "remote_user_id is empty", { errors: [{ path: "/remote_user_id", message: "empty" }] });
  const user = getUser(db, orgId, idOrEmail);
  const existing = findRemoteIdentity(db, orgId, remoteUserId);
  if (existing?.userId && existing.userId !== user.id && !input.relink) {
    throw new SvcError("conflict", `front-end user ${remoteUserId} is already linked to ${existing.userId}; send "relink": true to move the link`);
  }
  const linked = db.transaction(() => linkRemoteIdentity(db, orgId, { remoteUserId, userId: user.id, now }));
  return presentRemoteIdentity(linked);
}

/**
 * An admin disables or enables a service user. A disabled user leaves every bundle's identity
 * map (so the proxy treats their front-end identities as unlinked and refuses them), but their
 * links stay: a claim link cannot re-link those identities to anyone (409
 * identity_already_linked), and enabling restores them. A directory-synced user follows the
 * directory again on the next sync run. Setting the state it already has changes nothing.
 */
export function setUserDisabledByHand(db: Db, orgId: string, idOrEmail: string, disabled: boolean) {
  const user = getUser(db, orgId, idOrEmail);
  if (user.disabled !== disabled) db.transaction(() => setUserDisabled(db, orgId, user.id, disabled));
  return showUser(db, orgId, user.id);
}

function memberCounts(db: Db, groupIds: string[]): Map<string, number> {
  if (groupIds.length === 0) return new Map();
  const rows = db
    .select({ groupId: schema.groupMembers.groupId, n: count() })
    .from(schema.groupMembers)
    .where(inArray(schema.groupMembers.groupId, groupIds))
    .groupBy(schema.groupMembers.groupId)
    .all();
  return new Map(rows.map((r) => [r.groupId, r.n]));
}

export function presentGroup(g: GroupRow, members: number) {
  return { id: g.id, name: g.name, source: g.source, members, created_at: iso(g.createdAt) };
}

export function listGroups(db: Db, orgId: string) {
  const rows = db.select().from(schema.groups).where(eq(schema.groups.orgId, orgId)).orderBy(schema.groups.name).all();
  const counts = memberCounts(db, rows.map((g) => g.id));
  return rows.map((g) => presentGroup(g, counts.get(g.id) ?? 0));
}

export function createGroup(db: Db, orgId: string, rawName: string) {
  const name = rawName.trim();
  // The name must be usable as a policy subject `group:<name>`.
  const parsed = parseSource(`group:${name}`);
  if (!parsed.ok) throw new SvcError("validation_failed", parsed.error, { errors: [{ path: "/name", message: parsed.error }] });
  const existing = findGroupByName(db, orgId, name);
  if (existing) throw new SvcError("conflict", `group "${name}" already exists (${existing.id})`);
  const group = db.transaction(() => {
    const { group } = ensureGroup(db, orgId, name, "manual");
    bumpRevision(db, orgId);
    return group;
  });
  return presentGroup(group, 0);
}

/** A group by id (`grp_…`) or name; 404 otherwise. */
export function resolveGroup(db: Db, orgId: string, idOrName: string): GroupRow {
  const g = schema.groups;
  const row = idOrName.startsWith("grp_") ? db.select().from(g).where(and(eq(g.orgId, orgId), eq(g.id, idOrName))).get() : findGroupByName(db, orgId, idOrName);
  if (!row) throw new SvcError("not_found", `group "${idOrName}" not found`);
  return row;
}

export function addGroupMemberByHand(db: Db, orgId: string, groupIdOrName: string, userIdOrEmail: string): void {
  const group = resolveGroup(db, orgId, groupIdOrName);
  const user = getUser(db, orgId, userIdOrEmail);
  db.transaction(() => addGroupMember(db, orgId, group.id, user.id, "manual"));
}

export function removeGroupMemberByHand(db: Db, orgId: string, groupIdOrName: string, userIdOrEmail: string): void {
  const group = resolveGroup(db, orgId, groupIdOrName);
  const user = getUser(db, orgId, userIdOrEmail);
  db.transaction(() => removeGroupMember(db, orgId, group.id, user.id));
}
