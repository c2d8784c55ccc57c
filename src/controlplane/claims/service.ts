// Claim links: a one-time URL that lets an unlinked front-end user link (`chatui`, their
// front-end user id) to the service user with their email, by signing in to the console.
// The token is shown once (in the front-end notification) and stored hashed. Redemption is
// one conditional UPDATE in the redeeming transaction, so a link is redeemed once even when two
// requests (on any replicas) race.
//
// A runtime token speaks for one installation only, so a link never moves an identity that is
// not that installation's to give: no link is issued for an identity already linked (409
// identity_already_linked) or first seen through another installation (409
// identity_other_installation), and redemption re-checks both (the identity may have changed
// since the link was issued). Redeeming for the user the identity is already linked to is a no-op.
//
// Who may redeem: a console session (password, or the claim organization's single sign-on) for
// its account's email, or — for chat users without a console account, such as service users
// that directory sync created — the organization's single sign-on alone, which vouches for a
// verified email (redeemClaimByVerifiedEmail). That path opens no console session, creates no
// account and no membership; it links only to an existing, enabled service user with that
// email (or, for a member's email, the service user it creates, as a member's sign-in would),
// and never to an owner's (single sign-on does not speak for owners: owners use the password).
//
// The proxy asks for a link on every call of an unlinked user. A live link (unused, and valid
// for at least CLAIM_REUSE_MIN_MS more) is handed out again rather than a new one: its token is
// kept wrapped by the KMS (token_sealed, bound to the link's id), so a retry, another proxy
// replica or a restarted proxy brings the same URL and no new row. Rows stay bounded anyway: at most
// `maxLiveClaimLinks` unused links per (installation, front-end user) are kept (creating one
// deletes the oldest unused ones beyond that, in the same transaction, so concurrent requests
// cannot leave more), and links expired or used more than a day ago are purged as new ones are
// created.
import { and, desc, eq, gt, inArray, isNotNull, isNull, lt, or } from "drizzle-orm";
import { SvcError } from "../../contract/errors.ts";
import { newId } from "../../contract/ids.ts";
import { findAccountByEmail, membership, ssoMayOpen } from "../auth/service.ts";
import { hashSecret, isKind, newSecret } from "../auth/tokens.ts";
import { type Db, tables } from "../db/index.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { findRemoteIdentity, findUserByEmail, linkRemoteIdentity, noteRemoteIdentity, upsertUserByEmail } from "../directory/service.ts";
import type { RuntimeCaller } from "../installations/runtime-auth.ts";
import { verifyChatPassword } from "../invites/service.ts";
import { type RequestOrigin, holderActor, recordAdminEvent } from "../audit/admin-events.ts";
import { NO_ORIGIN } from "../http/request-gate.ts";

export const CLAIM_PATH = "/claim/";
/** Expired or used links are deleted this long after they expired or were used. */
export const CLAIM_PURGE_AFTER_MS = 24 * 3600 * 1000;
/** A live link is handed out again while it stays valid at least this long (time to open it). */
export const CLAIM_REUSE_MIN_MS = 2 * 60 * 1000;

const sealContext = (id: string) => `claim-link:${id}`;

/** The newest live link of this (installation, front-end user), its token unwrapped, if any. */
async function liveClaim(deps: ControlPlaneDeps, caller: RuntimeCaller, remoteUserId: string, now: number) {
  const c = tables(deps.db).claimLinks;
  const [row] = await deps.db
    .select({ id: c.id, tokenSealed: c.tokenSealed, expiresAt: c.expiresAt })
    .from(c)
    .where(and(eq(c.installationId, caller.installationId), eq(c.remoteUserId, remoteUserId), isNull(c.usedAt), gt(c.expiresAt, now + CLAIM_REUSE_MIN_MS), isNotNull(c.tokenSealed)))
    .orderBy(desc(c.createdAt), desc(c.id))
    .limit(1);
  if (!row?.tokenSealed) return undefined;
  try {
    return { token: new TextDecoder().decode(deps.kms.unwrap(row.tokenSealed, sealContext(row.id))), expiresAt: row.expiresAt };
  } catch {
    return undefined; // wrapped under another master key: issue a new link
  }
}

export type ClaimInfo = {
  id: string;
  orgId: string;
  installationId: string;
  remoteUserId: string;
  expiresAt: number;
  /** What the front end told us about the user (a hint for the sign-in page, not trusted). */
  remoteEmail: string | null;
  remoteDisplayName: string | null;
};

/** Creates a claim link for a front-end user of the calling installation. */
export async function createClaim(deps: ControlPlaneDeps, caller: RuntimeCaller, input: { remoteUserId: string; email?: string | null; name?: string | null }) {
  const now = deps.now();
  const existing = await findRemoteIdentity(deps.db, caller.orgId, input.remoteUserId);
  const refusedNow = existing ? identityRefusal(existing, caller.installationId) : null;
  if (refusedNow) throw refusedNow;
  const live = await liveClaim(deps, caller, input.remoteUserId, now);
  if (live) return { url: `${deps.config.publicUrl}${CLAIM_PATH}${live.token}`, expires_at: new Date(live.expiresAt).toISOString() };
  const token = newSecret("claim");
  const id = newId("claim", now);
  const expiresAt = now + deps.config.claimTtlSeconds * 1000;
  const tokenSealed = deps.kms.wrap(new TextEncoder().encode(token), sealContext(id));
  await deps.db.transaction(async (tx) => {
    const existing = await findRemoteIdentity(tx, caller.orgId, input.remoteUserId);
    if (existing) {
      const refused = identityRefusal(existing, caller.installationId);
      if (refused) throw refused;
    }
    await noteRemoteIdentity(tx, caller.orgId, {
      remoteUserId: input.remoteUserId,
      installationId: caller.installationId,
      email: input.email ?? null,
      displayName: input.name ?? null,
    });
    const c = tables(tx).claimLinks;
    await tx
      .insert(c)
      .values({ id, orgId: caller.orgId, installationId: caller.installationId, remoteUserId: input.remoteUserId, tokenHash: hashSecret(token), tokenSealed, expiresAt, createdAt: now });
    // Keep the newest unused links of this pair (this one included) up to the cap.
    const unused = await tx
      .select({ id: c.id })
      .from(c)
      .where(and(eq(c.installationId, caller.installationId), eq(c.remoteUserId, input.remoteUserId), isNull(c.usedAt)))
      .orderBy(desc(c.createdAt), desc(c.id));
    const surplus = unused.slice(Math.max(1, deps.config.maxLiveClaimLinks)).map((r) => r.id);
    if (surplus.length) await tx.delete(c).where(inArray(c.id, surplus));
    const cutoff = now - CLAIM_PURGE_AFTER_MS;
    await tx.delete(c).where(or(lt(c.expiresAt, cutoff), and(isNotNull(c.usedAt), lt(c.usedAt, cutoff))));
  });
  return { url: `${deps.config.publicUrl}${CLAIM_PATH}${token}`, expires_at: new Date(expiresAt).toISOString() };
}

/**
 * Why an installation may not hand out a link for this identity: it is already linked to a
 * service user, or it was first seen through (or linked for) another installation. An identity
 * an admin linked without an installation counts as linked.
 */
function identityRefusal(identity: { remoteUserId: string; userId: string | null; installationId: string | null }, installationId: string): SvcError | null {
  if (identity.installationId !== null && identity.installationId !== installationId) {
    return new SvcError(
      "identity_other_installation",
      `front-end user ${identity.remoteUserId} belongs to another installation of this organization; this installation cannot issue or redeem a claim link for it`,
    );
  }
  if (identity.userId !== null) {
    return new SvcError("identity_already_linked", `front-end user ${identity.remoteUserId} is already linked to a service user; a claim link cannot move the link (an admin can relink it)`);
  }
  return null;
}

async function existingUser(db: Db, orgId: string, email: string) {
  const user = await findUserByEmail(db, orgId, email);
  if (!user) throw new SvcError("not_found", `${email} is not a user of this organization; ask an admin to add you (or to sync the directory), then use the link again`);
  return { user, created: false };
}

async function findClaim(db: Db, token: string) {
  if (!isKind(token, "claim")) return undefined;
  const c = tables(db).claimLinks;
  const [row] = await db
    .select()
    .from(c)
    .where(eq(c.tokenHash, hashSecret(token)));
  return row;
}

function refusal(row: { usedAt: number | null; expiresAt: number }, now: number): SvcError | null {
  if (row.usedAt !== null) {
    return new SvcError("claim_used", "this claim link was already used; links work once. Ask the assistant again in the chat to get a new link if your account is still not linked");
  }
  if (row.expiresAt <= now) {
    return new SvcError("claim_expired", "this claim link has expired; ask the assistant again in the chat to get a new link");
  }
  return null;
}

/** What a claim link is for, before sign-in. 404 when unknown; 410 claim_used / claim_expired. */
export async function inspectClaim(deps: ControlPlaneDeps, token: string): Promise<ClaimInfo> {
  const row = await findClaim(deps.db, token);
  if (!row) throw new SvcError("not_found", "this claim link is not valid; check that the whole link was opened");
  const refused = refusal(row, deps.now());
  if (refused) throw refused;
  const ident = await findRemoteIdentity(deps.db, row.orgId, row.remoteUserId);
  return {
    id: row.id,
    orgId: row.orgId,
    installationId: row.installationId,
    remoteUserId: row.remoteUserId,
    expiresAt: row.expiresAt,
    remoteEmail: ident?.email ?? null,
    remoteDisplayName: ident?.displayName ?? null,
  };
}

/**
 * Redeems a claim link for the signed-in person: marks it used and links the front-end user to
 * the service user with that email (created with source "claim" when absent), in one
 * transaction. The link is consumed by a conditional UPDATE (unused and unexpired), so of two
 * concurrent redemptions exactly one gets it; any refusal after that rolls the use back.
 * With `createUser: false` the service user must exist already (404 otherwise).
 */
export async function redeemClaim(deps: ControlPlaneDeps, token: string, who: { email: string; displayName?: string | null; origin?: RequestOrigin }, opts: { createUser?: boolean } = {}) {
  const now = deps.now();
  const hash = isKind(token, "claim") ? hashSecret(token) : null;
  return deps.db.transaction(async (tx) => {
    const c = tables(tx).claimLinks;
    const [row] = hash ? await tx.select().from(c).where(eq(c.tokenHash, hash)) : [];
    if (!row) throw new SvcError("not_found", "this claim link is not valid; check that the whole link was opened");
    const claimed = await tx
      .update(c)
      .set({ usedAt: now })
      .where(and(eq(c.id, row.id), isNull(c.usedAt), gt(c.expiresAt, now)))
      .returning({ id: c.id });
    if (claimed.length === 0) throw refusal(row, now) ?? new SvcError("claim_used", "this claim link was already used");
    const { user, created } =
      opts.createUser === false ? await existingUser(tx, row.orgId, who.email) : await upsertUserByEmail(tx, row.orgId, { email: who.email, displayName: who.displayName ?? null, source: "claim" });
    if (user.disabled) throw new SvcError("forbidden", `the service user ${user.email} is disabled; ask an admin of the organization`);
    const current = await findRemoteIdentity(tx, row.orgId, row.remoteUserId);
    if (current) {
      const refused = current.userId === user.id ? null : identityRefusal(current, row.installationId);
      if (refused) throw refused; // the transaction rolls back: the link stays unused
    }
    await tx.update(c).set({ usedByUserId: user.id }).where(eq(c.id, row.id));
    const identity =
      current?.userId === user.id
        ? current // already linked to this very user: nothing changes
        : await linkRemoteIdentity(tx, row.orgId, { remoteUserId: row.remoteUserId, userId: user.id, installationId: row.installationId, now });
    if (identity !== current) {
      // The person who held the link, as the service user it linked (never the link's token).
      const actor = holderActor("link", { id: user.id, email: user.email, credentialId: row.id }, who.origin ?? NO_ORIGIN);
      const target = { type: "remote_identity", id: `chatui:${row.remoteUserId}`, name: row.remoteUserId };
      await recordAdminEvent(
        tx,
        {
          orgId: row.orgId,
          action: "remote_identity.claim",
          actor,
          target,
          before: { user_id: current?.userId ?? null },
          after: { user_id: user.id, email: user.email, installation_id: row.installationId, user_created: created },
        },
        now,
      );
    }
    return { orgId: row.orgId, userId: user.id, email: user.email, userCreated: created, remoteIdentityId: identity.id, remoteUserId: row.remoteUserId };
  });
}

/**
 * Redeems a claim link for an email the organization's single sign-on verified, without a
 * console session: the link's organization must be the provider's; an owner's email is refused
 * (owners link with their password); a member's email links like a member's sign-in; any other
 * email links only to an existing, enabled service user (a directory user, for example).
 */
export async function redeemClaimByVerifiedEmail(deps: ControlPlaneDeps, token: string, verified: { orgId: string; email: string; origin?: RequestOrigin }) {
  const info = await inspectClaim(deps, token);
  if (info.orgId !== verified.orgId) {
    throw new SvcError("forbidden", "this link belongs to another organization than the single sign-on that was used; open the link again and use its own sign-in");
  }
  const email = verified.email.trim().toLowerCase();
  const account = await findAccountByEmail(deps.db, email);
  const member = account ? await membership(deps.db, account.id, info.orgId) : undefined;
  if (member && !ssoMayOpen(member.role)) {
    throw new SvcError("forbidden", `${email} is an owner of this organization: owners link their chat account by signing in with their password`);
  }
  return redeemClaim(deps, token, { email, displayName: account?.displayName ?? null, ...(verified.origin ? { origin: verified.origin } : {}) }, { createUser: !!member });
}

/**
 * Redeems a claim link with a chat password (set through an invitation, invites/service.ts):
 * no console session, no account, no membership; it links only to the service user whose chat
 * password it is, in the link's organization.
 */
export async function redeemClaimWithChatPassword(deps: ControlPlaneDeps, token: string, input: { email: string; password: string; origin: RequestOrigin }) {
  const info = await inspectClaim(deps, token);
  const user = await verifyChatPassword(deps, info.orgId, input.email, input.password, input.origin.ip);
  return redeemClaim(deps, token, { email: user.email, displayName: user.displayName, origin: input.origin }, { createUser: false });
}
