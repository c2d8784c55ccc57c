// Service users (keyed by email per organization), groups, and front-end identities
// (`chatui`, front-end user id) linked to users. Used by the admin API, claim links,
// directory sync and the policy bundle's identity map.
import { and, eq, inArray, isNotNull } from "drizzle-orm";
import type { BundleIdentity } from "../../contract/bundle.ts";
import { SvcError } from "../../contract/errors.ts";
import { newId } from "../../contract/ids.ts";
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
    db.update(r).set({ userId: input.userId, linkedAt: input.now }).where(eq(r.id, existing.id)).run();
  } else {
    db.insert(r)
      .values({ id: newId("remoteIdentity"), orgId, platform: "chatui", remoteUserId: input.remoteUserId, installationId: input.installationId ?? null, userId: input.userId, linkedAt: input.now })
      .run();
  }
  bumpRevision(db, orgId);
  return findRemoteIdentity(db, orgId, input.remoteUserId)!;
}

/** Front-end user id → service user and group names, for every linked, enabled user of the organization. */
export function identityMap(db: Db, orgId: string): BundleIdentity[] {
  const r = schema.remoteIdentities;
  const u = schema.users;
  const links = db
    .select({ remote_user_id: r.remoteUserId, user_id: u.id, email: u.email })
    .from(r)
    .innerJoin(u, eq(u.id, r.userId))
    .where(and(eq(r.orgId, orgId), isNotNull(r.userId), eq(u.disabled, false)))
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
