// Chat invites (issue 19): how a chat user without a console account links their chat account
// when the organization has no single sign-on. An admin runs `svc users invite <email>`: the
// service user with that email is created when absent, and a one-time link (`/invite/<token>`,
// valid 7 days, token stored hashed) lets the person set a chat password. That password opens
// no console session and grants no membership: it only redeems claim links for that very
// service user (claims/service.ts `redeemClaimWithChatPassword`). Wrong chat passwords count
// against the same per-email and per-IP limits as console sign-ins (keys prefixed "chat:").
import { and, eq, gt, isNull } from "drizzle-orm";
import { SvcError } from "../../contract/errors.ts";
import { newId } from "../../contract/ids.ts";
import { PASSWORD_SET } from "../../contract/admin-event.ts";
import { type Acting, type RequestOrigin, holderActor, recordAdminEvent, recordChange } from "../audit/admin-events.ts";
import { hashPassword } from "../auth/service.ts";
import { hashSecret, isKind, newSecret } from "../auth/tokens.ts";
import { tables } from "../db/index.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { findUserByEmail, findUserById, upsertUserByEmail } from "../directory/service.ts";
import { limiters, rateLimited } from "../http/rate-limit.ts";
import { bumpRevision } from "../organizations/service.ts";

export const INVITE_PATH = "/invite/";
export const INVITE_TTL_MS = 7 * 24 * 3600 * 1000;
export const MIN_CHAT_PASSWORD = 12;
const EMAIL_RE = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
// A real argon2id hash of a random string: a check for an unknown email costs the same time.
const DUMMY_HASH = await Bun.password.hash(crypto.randomUUID(), { algorithm: "argon2id" });

export type InviteInfo = { id: string; orgId: string; userId: string; email: string; expiresAt: number };

/** Creates the service user when absent and a one-time link to set their chat password. */
export async function createInvite(deps: ControlPlaneDeps, orgId: string, rawEmail: string, by: Acting) {
  const email = rawEmail.trim().toLowerCase();
  if (!EMAIL_RE.test(email)) throw new SvcError("validation_failed", `"${rawEmail}" is not an email address`, { errors: [{ path: "/email", message: "not an email address" }] });
  const now = deps.now();
  const token = newSecret("invite");
  const expiresAt = now + INVITE_TTL_MS;
  const out = await deps.db.transaction(async (tx) => {
    const { user, created } = await upsertUserByEmail(tx, orgId, { email, source: "manual" });
    if (user.disabled) throw new SvcError("conflict", `the service user ${email} is disabled; enable it first (svc users enable)`);
    if (created) await bumpRevision(tx, orgId);
    const id = newId("invite", now);
    await tx.insert(tables(tx).chatInvites).values({ id, orgId, userId: user.id, tokenHash: hashSecret(token), expiresAt, createdAt: now });
    const view = { user_id: user.id, email: user.email, user_created: created };
    await recordChange(tx, by, { orgId, action: "invite.create", target: { type: "invite", id, name: user.email }, after: { ...view, expires_at: new Date(expiresAt).toISOString() } });
    return view;
  });
  return { ...out, url: `${deps.config.publicUrl}${INVITE_PATH}${token}`, expires_at: new Date(expiresAt).toISOString() };
}

/** What an invite link is for. 404 unknown; 410 invite_used / invite_expired. */
export async function inspectInvite(deps: ControlPlaneDeps, token: string): Promise<InviteInfo> {
  const i = tables(deps.db).chatInvites;
  const [row] = isKind(token, "invite")
    ? await deps.db
        .select()
        .from(i)
        .where(eq(i.tokenHash, hashSecret(token)))
    : [];
  const user = row ? await findUserById(deps.db, row.orgId, row.userId) : undefined;
  if (!row || !user) throw new SvcError("not_found", "this invitation link is not valid; check that the whole link was opened");
  if (row.usedAt !== null) throw new SvcError("invite_used", "this invitation link was already used; ask an admin for a new one if you need to set your chat password again");
  if (row.expiresAt <= deps.now()) throw new SvcError("invite_expired", "this invitation link has expired; ask an admin for a new one (svc users invite)");
  return { id: row.id, orgId: row.orgId, userId: row.userId, email: user.email, expiresAt: row.expiresAt };
}

/** Sets the chat password of the invite's service user and uses the link up, once. */
export async function acceptInvite(deps: ControlPlaneDeps, token: string, password: string, confirm: string, origin: RequestOrigin) {
  const info = await inspectInvite(deps, token);
  if (password.length < MIN_CHAT_PASSWORD) throw new SvcError("validation_failed", `the password must have at least ${MIN_CHAT_PASSWORD} characters`);
  if (password !== confirm) throw new SvcError("validation_failed", "the two passwords differ; type the same password twice");
  const passwordHash = await hashPassword(password);
  const now = deps.now();
  await deps.db.transaction(async (tx) => {
    const i = tables(tx).chatInvites;
    const used = await tx
      .update(i)
      .set({ usedAt: now })
      .where(and(eq(i.id, info.id), isNull(i.usedAt), gt(i.expiresAt, now)))
      .returning({ id: i.id });
    if (used.length === 0) throw new SvcError("invite_used", "this invitation link was already used");
    const p = tables(tx).chatPasswords;
    await tx
      .insert(p)
      .values({ userId: info.userId, passwordHash, updatedAt: now })
      .onConflictDoUpdate({ target: p.userId, set: { passwordHash, updatedAt: now } });
    const actor = holderActor("link", { id: info.userId, email: info.email, credentialId: info.id }, origin);
    await recordAdminEvent(tx, { orgId: info.orgId, action: "invite.accept", actor, target: { type: "invite", id: info.id, name: info.email }, after: { chat_password: PASSWORD_SET } }, now);
  });
  return info;
}

/**
 * The enabled service user of `orgId` with this email and chat password, or 401. Attempts are
 * limited like console sign-ins (429 rate_limited at the limit).
 */
export async function verifyChatPassword(deps: ControlPlaneDeps, orgId: string, rawEmail: string, password: string, clientIp: string | null) {
  const email = rawEmail.trim().toLowerCase();
  const l = limiters(deps);
  const wait = Math.max(...(await Promise.all([l.signInEmail.hit(`chat:${email}`), clientIp ? l.signInIp.hit(clientIp) : 0])));
  if (wait > 0) throw rateLimited(`too many failed attempts; wait ${wait} seconds and try again`, wait);
  const user = await findUserByEmail(deps.db, orgId, email);
  const p = tables(deps.db).chatPasswords;
  const [row] = user ? await deps.db.select().from(p).where(eq(p.userId, user.id)) : [];
  const ok = await Bun.password.verify(password, row?.passwordHash ?? DUMMY_HASH).catch(() => false);
  if (!user || !row || !ok) throw new SvcError("unauthorized", "wrong email or chat password");
  if (user.disabled) throw new SvcError("forbidden", `the service user ${user.email} is disabled; ask an admin of the organization`);
  await Promise.all([l.signInEmail.reset(`chat:${email}`), clientIp ? l.signInIp.unhit(clientIp) : undefined]);
  return user;
}
