// Service users (keyed by email per organization), groups, and front-end identities
// (`chatui`, front-end user id) linked to users. Used by the admin API, claim links,
// directory sync and the policy bundle's identity map.
import { and, count, eq, inArray, isNotNull, isNull, or, sql } from "drizzle-orm";
import type { BundleDisabledIdentity, BundleIdentity } from "../../contract/bundle.ts";
import { SvcError } from "../../contract/errors.ts";
import { newId } from "../../contract/ids.ts";
import { type Db, type Tables, tables } from "../db/index.ts";
import { bumpRevision } from "../organizations/service.ts";

export type UserSource = "manual" | "directory" | "claim";
export type GroupSource = "manual" | "directory";

export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

export async function findUserByEmail(db: Db, orgId: string, email: string) {
  const u = tables(db).users;
  const [row] = await db
    .select()
    .from(u)
    .where(and(eq(u.orgId, orgId), eq(u.email, normalizeEmail(email))));
  return row;
}

/** The organization's user with this id (`usr_…`), or undefined. */
export async function findUserById(db: Db, orgId: string, id: string) {
  const u = tables(db).users;
  return (
    await db
      .select()
      .from(u)
      .where(and(eq(u.orgId, orgId), eq(u.id, id)))
  )[0];
}

export async function getUser(db: Db, orgId: string, idOrEmail: string) {
  const row = idOrEmail.startsWith("usr_") ? await findUserById(db, orgId, idOrEmail) : await findUserByEmail(db, orgId, idOrEmail);
  if (!row) throw new SvcError("not_found", `user "${idOrEmail}" not found`);
  return row;
}

/** The emails of the organization's users among `userIds` (others are left out). */
export async function emailsOfUsers(db: Db, orgId: string, userIds: readonly string[]): Promise<Map<string, string>> {
  const ids = [...new Set(userIds)];
  if (ids.length === 0) return new Map();
  const u = tables(db).users;
  const rows = await db
    .select({ id: u.id, email: u.email })
    .from(u)
    .where(and(eq(u.orgId, orgId), inArray(u.id, ids)));
  return new Map(rows.map((r) => [r.id, r.email]));
}

/** The organization's users, groups and memberships (with their source), as directory sync plans from them. */
export async function directoryState(db: Db, orgId: string) {
  const { users: u, groups: g, groupMembers: gm } = tables(db);
  const users = await db.select({ id: u.id, email: u.email, displayName: u.displayName, disabled: u.disabled, source: u.source, externalId: u.externalId }).from(u).where(eq(u.orgId, orgId));
  const groups = await db.select({ id: g.id, name: g.name, source: g.source }).from(g).where(eq(g.orgId, orgId));
  const memberships = await db.select({ groupName: g.name, userId: gm.userId, source: gm.source }).from(gm).innerJoin(g, eq(g.id, gm.groupId)).where(eq(g.orgId, orgId));
  return { users, groups, memberships };
}

/**
 * Returns the user with this email, creating it when absent. The (org, email) unique index
 * decides between concurrent creations: the insert that loses does nothing and the winner's
 * row is returned.
 */
export async function upsertUserByEmail(db: Db, orgId: string, input: { email: string; displayName?: string | null; source: UserSource; externalId?: string | null }) {
  const found = await findUserByEmail(db, orgId, input.email);
  if (found) return { user: found, created: false };
  const u = tables(db).users;
  const [created] = await db
    .insert(u)
    .values({ id: newId("user"), orgId, email: normalizeEmail(input.email), displayName: input.displayName ?? null, source: input.source, externalId: input.externalId ?? null })
    .onConflictDoNothing()
    .returning();
  if (created) return { user: created, created: true };
  const existing = await findUserByEmail(db, orgId, input.email);
  if (!existing) throw new SvcError("internal", `user ${normalizeEmail(input.email)} could be neither created nor found`);
  return { user: existing, created: false };
}

/** Disables or enables a user and bumps the revision; call inside a transaction. */
export async function setUserDisabled(db: Db, orgId: string, userId: string, disabled: boolean) {
  const u = tables(db).users;
  await db
    .update(u)
    .set({ disabled })
    .where(and(eq(u.orgId, orgId), eq(u.id, userId)));
  await bumpRevision(db, orgId);
}

export async function findGroupByName(db: Db, orgId: string, name: string) {
  const g = tables(db).groups;
  const [row] = await db
    .select()
    .from(g)
    .where(and(eq(g.orgId, orgId), eq(g.name, name)));
  return row;
}

/** The group with this name, created when absent; the (org, name) unique index decides between concurrent creations. */
export async function ensureGroup(db: Db, orgId: string, name: string, source: GroupSource) {
  const found = await findGroupByName(db, orgId, name);
  if (found) return { group: found, created: false };
  const g = tables(db).groups;
  const [created] = await db
    .insert(g)
    .values({ id: newId("group"), orgId, name, source })
    .onConflictDoNothing()
    .returning();
  if (created) return { group: created, created: true };
  const existing = await findGroupByName(db, orgId, name);
  if (!existing) throw new SvcError("internal", `group "${name}" could be neither created nor found`);
  return { group: existing, created: false };
}

export async function groupMemberIds(db: Db, groupId: string): Promise<string[]> {
  const gm = tables(db).groupMembers;
  const rows = await db.select({ userId: gm.userId }).from(gm).where(eq(gm.groupId, groupId));
  return rows.map((r) => r.userId);
}

/** Adds a user to a group (nothing when already a member) and bumps the revision; call inside a transaction. */
export async function addGroupMember(db: Db, orgId: string, groupId: string, userId: string, source: GroupSource) {
  await db.insert(tables(db).groupMembers).values({ groupId, userId, source }).onConflictDoNothing();
  await bumpRevision(db, orgId);
}

/** Removes a user from a group and bumps the revision; call inside a transaction. */
export async function removeGroupMember(db: Db, orgId: string, groupId: string, userId: string) {
  const gm = tables(db).groupMembers;
  await db.delete(gm).where(and(eq(gm.groupId, groupId), eq(gm.userId, userId)));
  await bumpRevision(db, orgId);
}

export async function findRemoteIdentity(db: Db, orgId: string, remoteUserId: string) {
  const r = tables(db).remoteIdentities;
  const [row] = await db
    .select()
    .from(r)
    .where(and(eq(r.orgId, orgId), eq(r.platform, "chatui"), eq(r.remoteUserId, remoteUserId)));
  return row;
}

/** Records that a front-end user was seen (unlinked until claimed or linked by an admin). */
export async function noteRemoteIdentity(db: Db, orgId: string, input: { remoteUserId: string; installationId: string; email?: string | null; displayName?: string | null }) {
  const existing = await findRemoteIdentity(db, orgId, input.remoteUserId);
  if (existing) return existing;
  const r = tables(db).remoteIdentities;
  // A concurrent first sighting may insert the same identity: the unique key keeps one.
  const [created] = await db
    .insert(r)
    .values({
      id: newId("remoteIdentity"),
      orgId,
      platform: "chatui",
      remoteUserId: input.remoteUserId,
      installationId: input.installationId,
      email: input.email ?? null,
      displayName: input.displayName ?? null,
    })
    .onConflictDoNothing()
    .returning();
  const row = created ?? (await findRemoteIdentity(db, orgId, input.remoteUserId));
  if (!row) throw new SvcError("internal", `front-end user ${input.remoteUserId} could be neither noted nor found`);
  return row;
}

/**
 * Links (`chatui`, remoteUserId) to a service user; the next bundle carries the link. One
 * upsert on the identity's unique key, so a concurrent first sighting cannot make it fail.
 * Call inside a transaction (it bumps the revision too).
 */
export async function linkRemoteIdentity(db: Db, orgId: string, input: { remoteUserId: string; userId: string; installationId?: string | null; now: number }) {
  const r = tables(db).remoteIdentities;
  const [row] = await db
    .insert(r)
    .values({ id: newId("remoteIdentity"), orgId, platform: "chatui", remoteUserId: input.remoteUserId, installationId: input.installationId ?? null, userId: input.userId, linkedAt: input.now })
    .onConflictDoUpdate({
      target: [r.orgId, r.platform, r.remoteUserId],
      // An identity seen without an installation takes the one it is linked through, if any.
      set: { userId: input.userId, linkedAt: input.now, installationId: sql`coalesce(${r.installationId}, excluded.installation_id)` },
    })
    .returning();
  await bumpRevision(db, orgId);
  return row!;
}

/**
 * Front-end user id → service user and group names, for every linked, enabled user of the
 * organization. With `installationId` (an installation's bundle): only the identities of that
 * installation and those an admin linked without one — a front-end user id means something
 * only in the front end it came from, so no installation can act as another one's users.
 */
/** Links of the organization (of one installation, plus those made without one) to users disabled or not. */
function linkConditions(db: Db, orgId: string, disabled: boolean, installationId?: string) {
  const { remoteIdentities: r, users: u } = tables(db);
  const conds = [eq(r.orgId, orgId), isNotNull(r.userId), eq(u.disabled, disabled)];
  if (installationId !== undefined) conds.push(or(isNull(r.installationId), eq(r.installationId, installationId))!);
  return and(...conds);
}

/**
 * The front-end users linked to disabled service users, as the bundle carries them apart from
 * the identity map (`disabled_identities`): the proxy refuses them as disabled, under their
 * service user, and a proxy that does not know the field reads them as unlinked.
 */
export async function disabledIdentities(db: Db, orgId: string, installationId?: string): Promise<BundleDisabledIdentity[]> {
  const { remoteIdentities: r, users: u } = tables(db);
  return db
    .select({ remote_user_id: r.remoteUserId, user_id: u.id })
    .from(r)
    .innerJoin(u, eq(u.id, r.userId))
    .where(linkConditions(db, orgId, true, installationId));
}

export async function identityMap(db: Db, orgId: string, installationId?: string): Promise<BundleIdentity[]> {
  const { remoteIdentities: r, users: u, groupMembers: gm, groups: g } = tables(db);
  const links = await db
    .select({ remote_user_id: r.remoteUserId, user_id: u.id, email: u.email, displayName: u.displayName, source: u.source, externalId: u.externalId })
    .from(r)
    .innerJoin(u, eq(u.id, r.userId))
    .where(linkConditions(db, orgId, false, installationId));
  if (links.length === 0) return [];
  const memberships = await db
    .select({ userId: gm.userId, name: g.name })
    .from(gm)
    .innerJoin(g, eq(g.id, gm.groupId))
    .where(inArray(gm.userId, [...new Set(links.map((l) => l.user_id))]));
  const groupsOf = new Map<string, string[]>();
  for (const m of memberships) groupsOf.set(m.userId, [...(groupsOf.get(m.userId) ?? []), m.name]);
  return links.map((l) => ({
    remote_user_id: l.remote_user_id,
    user_id: l.user_id,
    email: l.email,
    groups: (groupsOf.get(l.user_id) ?? []).sort(),
    // What the directory knows of the user, for policy conditions (`user.attributes.source`).
    attributes: { source: l.source, ...(l.displayName ? { display_name: l.displayName } : {}), ...(l.externalId ? { external_id: l.externalId } : {}) },
  }));
}

// ── admin API ──────────────────────────────────────────────────────────────────────────

export type UserRow = Tables["users"]["$inferSelect"];
export type GroupRow = Tables["groups"]["$inferSelect"];
export type RemoteIdentityRow = Tables["remoteIdentities"]["$inferSelect"];

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
const isoTime = (ms: number) => new Date(ms).toISOString();

async function groupNamesOf(db: Db, userIds: string[]): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  if (userIds.length === 0) return out;
  const { groupMembers: gm, groups: g } = tables(db);
  const rows = await db.select({ userId: gm.userId, name: g.name }).from(gm).innerJoin(g, eq(g.id, gm.groupId)).where(inArray(gm.userId, userIds));
  for (const r of rows) out.set(r.userId, [...(out.get(r.userId) ?? []), r.name].sort());
  return out;
}

export function presentUser(u: UserRow, groups: string[]) {
  return { id: u.id, email: u.email, display_name: u.displayName, disabled: u.disabled, source: u.source, groups, created_at: isoTime(u.createdAt) };
}

export async function listUsers(db: Db, orgId: string, email?: string) {
  const u = tables(db).users;
  const rows = await db
    .select()
    .from(u)
    .where(email ? and(eq(u.orgId, orgId), eq(u.email, normalizeEmail(email))) : eq(u.orgId, orgId))
    .orderBy(u.email);
  const groups = await groupNamesOf(
    db,
    rows.map((r) => r.id),
  );
  return rows.map((r) => presentUser(r, groups.get(r.id) ?? []));
}

export async function showUser(db: Db, orgId: string, idOrEmail: string) {
  const user = await getUser(db, orgId, idOrEmail);
  return presentUser(user, (await groupNamesOf(db, [user.id])).get(user.id) ?? []);
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
    created_at: isoTime(r.createdAt),
  };
}

export async function remoteIdentitiesOfUser(db: Db, orgId: string, idOrEmail: string) {
  const user = await getUser(db, orgId, idOrEmail);
  const r = tables(db).remoteIdentities;
  const rows = await db
    .select()
    .from(r)
    .where(and(eq(r.orgId, orgId), eq(r.userId, user.id)))
    .orderBy(r.id);
  return rows.map(presentRemoteIdentity);
}

/** Every front-end identity the organization has seen or linked; `linked` filters on having a user. */
export async function listRemoteIdentities(db: Db, orgId: string, linked?: boolean) {
  const r = tables(db).remoteIdentities;
  const conds = [eq(r.orgId, orgId)];
  if (linked === true) conds.push(isNotNull(r.userId));
  if (linked === false) conds.push(isNull(r.userId));
  const rows = await db
    .select()
    .from(r)
    .where(and(...conds))
    .orderBy(r.id);
  return rows.map(presentRemoteIdentity);
}

async function memberCounts(db: Db, groupIds: string[]): Promise<Map<string, number>> {
  if (groupIds.length === 0) return new Map();
  const gm = tables(db).groupMembers;
  const rows = await db.select({ groupId: gm.groupId, n: count() }).from(gm).where(inArray(gm.groupId, groupIds)).groupBy(gm.groupId);
  return new Map(rows.map((r) => [r.groupId, r.n]));
}

export function presentGroup(g: GroupRow, members: number) {
  return { id: g.id, name: g.name, source: g.source, members, created_at: isoTime(g.createdAt) };
}

export async function listGroups(db: Db, orgId: string) {
  const g = tables(db).groups;
  const rows = await db.select().from(g).where(eq(g.orgId, orgId)).orderBy(g.name);
  const counts = await memberCounts(
    db,
    rows.map((row) => row.id),
  );
  return rows.map((row) => presentGroup(row, counts.get(row.id) ?? 0));
}

/** A group by id (`grp_…`) or name; 404 otherwise. */
export async function resolveGroup(db: Db, orgId: string, idOrName: string): Promise<GroupRow> {
  const g = tables(db).groups;
  const row = idOrName.startsWith("grp_")
    ? (
        await db
          .select()
          .from(g)
          .where(and(eq(g.orgId, orgId), eq(g.id, idOrName)))
      )[0]
    : await findGroupByName(db, orgId, idOrName);
  if (!row) throw new SvcError("not_found", `group "${idOrName}" not found`);
  return row;
}

/** Every (group, member) pair of the organization: what usage by group and group budgets add up. */
export async function groupMemberships(db: Db, orgId: string): Promise<{ groupId: string; name: string; userId: string }[]> {
  const { groups: g, groupMembers: gm } = tables(db);
  return db.select({ groupId: g.id, name: g.name, userId: gm.userId }).from(gm).innerJoin(g, eq(g.id, gm.groupId)).where(eq(g.orgId, orgId));
}
