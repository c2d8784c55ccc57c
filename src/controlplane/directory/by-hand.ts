// What an admin changes in the directory by hand (the admin API, `svc users …`, the console):
// users, their front-end identities, groups and group members. Each change and its admin event
// (audit/admin-events.ts) are one transaction. Directory sync and claim links change the same
// tables through service.ts; a sync run is one event of its own (directory-sync/).
import { and, eq } from "drizzle-orm";
import { SvcError } from "../../contract/errors.ts";
import { parseSource } from "../../contract/patterns.ts";
import { type Acting, recordChange } from "../audit/admin-events.ts";
import { EMAIL_RE } from "../auth/bootstrap.ts";
import { type Db, tables } from "../db/index.ts";
import { bumpRevision } from "../organizations/service.ts";
import {
  addGroupMember,
  ensureGroup,
  findRemoteIdentity,
  getUser,
  linkRemoteIdentity,
  normalizeEmail,
  presentGroup,
  presentRemoteIdentity,
  presentUser,
  removeGroupMember,
  resolveGroup,
  setUserDisabled,
  showUser,
  upsertUserByEmail,
} from "./service.ts";

const userTarget = (u: { id: string; email: string }) => ({ type: "user", id: u.id, name: u.email });
const identityTarget = (remoteUserId: string) => ({ type: "remote_identity", id: `chatui:${remoteUserId}`, name: remoteUserId });

export async function createUser(db: Db, orgId: string, input: { email: string; displayName?: string | null }, by: Acting) {
  const email = normalizeEmail(input.email);
  if (!EMAIL_RE.test(email)) throw new SvcError("validation_failed", `"${input.email}" is not an email address`, { errors: [{ path: "/email", message: "not an email address" }] });
  return db.transaction(async (tx) => {
    // The (org, email) unique index decides: of two concurrent creations one gets the conflict.
    const { user, created } = await upsertUserByEmail(tx, orgId, { email, displayName: input.displayName ?? null, source: "manual" });
    if (!created) throw new SvcError("conflict", `a user with email ${email} already exists (${user.id})`);
    const view = presentUser(user, []);
    await recordChange(tx, by, { orgId, action: "user.create", target: userTarget(user), after: view });
    return view;
  });
}

/**
 * An admin links (`chatui`, remote user id) to a user by hand. An identity already linked to
 * another user is moved only with `relink`, so a typo cannot silently take over someone's link.
 * The check and the link are one transaction: a link made meanwhile is not overwritten.
 */
export async function linkByHand(db: Db, orgId: string, idOrEmail: string, input: { platform: string; remoteUserId: string; relink?: boolean }, by: Acting) {
  if (input.platform !== "chatui") {
    const message = `platform must be exactly "chatui"; got "${input.platform}"`;
    throw new SvcError("invalid_platform", message, { errors: [{ path: "/platform", message }] });
  }
  const remoteUserId = input.remoteUserId.trim();
  if (!remoteUserId) throw new SvcError("validation_failed", "remote_user_id is empty", { errors: [{ path: "/remote_user_id", message: "empty" }] });
  const linked = await db.transaction(async (tx) => {
    const user = await getUser(tx, orgId, idOrEmail);
    const existing = await findRemoteIdentity(tx, orgId, remoteUserId);
    if (existing?.userId && existing.userId !== user.id && !input.relink) {
      throw new SvcError("conflict", `front-end user ${remoteUserId} is already linked to ${existing.userId}; send "relink": true to move the link`);
    }
    const row = await linkRemoteIdentity(tx, orgId, { remoteUserId, userId: user.id, now: by.at });
    await recordChange(tx, by, { orgId, action: "remote_identity.link", target: identityTarget(remoteUserId), before: { user_id: existing?.userId ?? null }, after: presentRemoteIdentity(row) });
    return row;
  });
  return presentRemoteIdentity(linked);
}

/**
 * An admin unlinks a front-end user from a service user: the identity stays (seen, unlinked), so
 * the proxy decides it as unlinked from the next bundle on and may offer that user a claim link
 * again. 404 when the identity is not linked to this user (nothing changes).
 */
export async function unlinkByHand(db: Db, orgId: string, idOrEmail: string, remoteUserId: string, by: Acting) {
  const unlinked = await db.transaction(async (tx) => {
    const user = await getUser(tx, orgId, idOrEmail);
    const r = tables(tx).remoteIdentities;
    const [row] = await tx
      .update(r)
      .set({ userId: null, linkedAt: null })
      .where(and(eq(r.orgId, orgId), eq(r.platform, "chatui"), eq(r.remoteUserId, remoteUserId), eq(r.userId, user.id)))
      .returning();
    if (!row) throw new SvcError("not_found", `front-end user ${remoteUserId} is not linked to ${user.email}`);
    await bumpRevision(tx, orgId);
    await recordChange(tx, by, { orgId, action: "remote_identity.unlink", target: identityTarget(remoteUserId), before: { user_id: user.id, email: user.email }, after: presentRemoteIdentity(row) });
    return row;
  });
  return presentRemoteIdentity(unlinked);
}

/**
 * An admin disables or enables a service user. A disabled user leaves every bundle's identity
 * map for its `disabled_identities` (so the proxy refuses their front-end identities as
 * disabled, recorded under the user; an older proxy as unlinked), but their links stay: a claim link cannot re-link those identities to anyone (409
 * identity_already_linked), and enabling restores them. A directory-synced user follows the
 * directory again on the next sync run. Setting the state it already has changes nothing (and
 * writes no event).
 */
export async function setUserDisabledByHand(db: Db, orgId: string, idOrEmail: string, disabled: boolean, by: Acting) {
  const userId = await db.transaction(async (tx) => {
    const user = await getUser(tx, orgId, idOrEmail);
    if (user.disabled !== disabled) {
      await setUserDisabled(tx, orgId, user.id, disabled);
      await recordChange(tx, by, { orgId, action: disabled ? "user.disable" : "user.enable", target: userTarget(user), before: { disabled: user.disabled }, after: { disabled } });
    }
    return user.id;
  });
  return showUser(db, orgId, userId);
}

export async function createGroup(db: Db, orgId: string, rawName: string, by: Acting) {
  const name = rawName.trim();
  // The name must be usable as a policy subject `group:<name>`.
  const parsed = parseSource(`group:${name}`);
  if (!parsed.ok) throw new SvcError("validation_failed", parsed.error, { errors: [{ path: "/name", message: parsed.error }] });
  // The (org, name) unique index decides between concurrent creations; the loser gets the conflict.
  return db.transaction(async (tx) => {
    const { group, created } = await ensureGroup(tx, orgId, name, "manual");
    if (!created) throw new SvcError("conflict", `group "${name}" already exists (${group.id})`);
    await bumpRevision(tx, orgId);
    const view = presentGroup(group, 0);
    await recordChange(tx, by, { orgId, action: "group.create", target: { type: "group", id: group.id, name: group.name }, after: view });
    return view;
  });
}

/** Adds (or removes) a user to (from) a group; the event names both. */
async function changeGroupMember(db: Db, orgId: string, groupIdOrName: string, userIdOrEmail: string, add: boolean, by: Acting): Promise<void> {
  await db.transaction(async (tx) => {
    const group = await resolveGroup(tx, orgId, groupIdOrName);
    const user = await getUser(tx, orgId, userIdOrEmail);
    if (add) await addGroupMember(tx, orgId, group.id, user.id, "manual");
    else await removeGroupMember(tx, orgId, group.id, user.id);
    const member = { user_id: user.id, email: user.email };
    await recordChange(tx, by, {
      orgId,
      action: add ? "group.member_add" : "group.member_remove",
      target: { type: "group", id: group.id, name: group.name },
      ...(add ? { after: { member } } : { before: { member } }),
    });
  });
}

export async function addGroupMemberByHand(db: Db, orgId: string, groupIdOrName: string, userIdOrEmail: string, by: Acting): Promise<void> {
  await changeGroupMember(db, orgId, groupIdOrName, userIdOrEmail, true, by);
}

export async function removeGroupMemberByHand(db: Db, orgId: string, groupIdOrName: string, userIdOrEmail: string, by: Acting): Promise<void> {
  await changeGroupMember(db, orgId, groupIdOrName, userIdOrEmail, false, by);
}
