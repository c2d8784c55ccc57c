// Claim links: a one-time URL that lets an unlinked front-end user link (`chatui`, their
// front-end user id) to the service user with their email, by signing in to the console.
// The token is shown once (in the front-end notification) and stored hashed. Redemption is
// one conditional UPDATE, so a link is redeemed once even when two requests race.
//
// A runtime token speaks for one installation only, so a link never moves an identity that is
// not that installation's to give: no link is issued for an identity already linked (409
// identity_already_linked) or first seen through another installation (409
// identity_other_installation), and redemption re-checks both (the identity may have changed
// since the link was issued). Redeeming for the user the identity is already linked to is a no-op.
//
// The proxy asks for a link on every call of an unlinked user, so rows are bounded: at most
// `maxLiveClaimLinks` unused links per (installation, front-end user) are kept (creating one
// deletes the oldest unused ones beyond that), and links expired or used more than a day ago
// are purged as new ones are created.
import { and, desc, eq, gt, inArray, isNotNull, isNull, lt, or } from "drizzle-orm";
import { SvcError } from "../../contract/errors.ts";
import { newId } from "../../contract/ids.ts";
import { hashSecret, isKind, newSecret } from "../auth/tokens.ts";
import { type Db, schema } from "../db/index.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { findRemoteIdentity, linkRemoteIdentity, noteRemoteIdentity, upsertUserByEmail } from "../directory/service.ts";
import type { RuntimeCaller } from "../installations/runtime-auth.ts";

export const CLAIM_PATH = "/claim/";
/** Expired or used links are deleted this long after they expired or were used. */
export const CLAIM_PURGE_AFTER_MS = 24 * 3600 * 1000;

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
export function createClaim(deps: ControlPlaneDeps, caller: RuntimeCaller, input: { remoteUserId: string; email?: string | null; name?: string | null }) {
  const now = deps.now();
  const token = newSecret("claim");
  const expiresAt = now + deps.config.claimTtlSeconds * 1000;
  deps.db.transaction((tx) => {
    const existing = findRemoteIdentity(tx as unknown as Db, caller.orgId, input.remoteUserId);
    if (existing) {
      const refused = identityRefusal(existing, caller.installationId);
      if (refused) throw refused;
    }
    noteRemoteIdentity(tx as unknown as Db, caller.orgId, {
      remoteUserId: input.remoteUserId,
      installationId: caller.installationId,
      email: input.email ?? null,
      displayName: input.name ?? null,
    });
    tx.insert(schema.claimLinks)
      .values({ id: newId("claim", now), orgId: caller.orgId, installationId: caller.installationId, remoteUserId: input.remoteUserId, tokenHash: hashSecret(token), expiresAt, createdAt: now })
      .run();
    const c = schema.claimLinks;
    // Keep the newest unused links of this pair (this one included) up to the cap.
    const unused = tx
      .select({ id: c.id })
      .from(c)
      .where(and(eq(c.installationId, caller.installationId), eq(c.remoteUserId, input.remoteUserId), isNull(c.usedAt)))
      .orderBy(desc(c.createdAt), desc(c.id))
      .all();
    const surplus = unused.slice(Math.max(1, deps.config.maxLiveClaimLinks)).map((r) => r.id);
    if (surplus.length) tx.delete(c).where(inArray(c.id, surplus)).run();
    const cutoff = now - CLAIM_PURGE_AFTER_MS;
    tx.delete(c)
      .where(or(lt(c.expiresAt, cutoff), and(isNotNull(c.usedAt), lt(c.usedAt, cutoff))))
      .run();
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
    return new SvcError("identity_other_installation", `front-end user ${identity.remoteUserId} belongs to another installation of this organization; this installation cannot issue or redeem a claim link for it`);
  }
  if (identity.userId !== null) {
    return new SvcError("identity_already_linked", `front-end user ${identity.remoteUserId} is already linked to a service user; a claim link cannot move the link (an admin can relink it)`);
  }
  return null;
}

function findClaim(db: Db, token: string) {
  if (!isKind(token, "claim")) return undefined;
  return db.select().from(schema.claimLinks).where(eq(schema.claimLinks.tokenHash, hashSecret(token))).get();
}

function refusal(row: NonNullable<ReturnType<typeof findClaim>>, now: number): SvcError | null {
  if (row.usedAt !== null) {
    return new SvcError("claim_used", "this claim link was already used; links work once. Ask the assistant again in the chat to get a new link if your account is still not linked");
  }
  if (row.expiresAt <= now) {
    return new SvcError("claim_expired", "this claim link has expired; ask the assistant again in the chat to get a new link");
  }
  return null;
}

/** What a claim link is for, before sign-in. 404 when unknown; 410 claim_used / claim_expired. */
export function inspectClaim(deps: ControlPlaneDeps, token: string): ClaimInfo {
  const row = findClaim(deps.db, token);
  if (!row) throw new SvcError("not_found", "this claim link is not valid; check that the whole link was opened");
  const refused = refusal(row, deps.now());
  if (refused) throw refused;
  const ident = deps.db
    .select({ email: schema.remoteIdentities.email, displayName: schema.remoteIdentities.displayName })
    .from(schema.remoteIdentities)
    .where(and(eq(schema.remoteIdentities.orgId, row.orgId), eq(schema.remoteIdentities.remoteUserId, row.remoteUserId)))
    .get();
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
 * the service user with that email (created with source "claim" when absent), atomically.
 */
export function redeemClaim(deps: ControlPlaneDeps, token: string, who: { email: string; displayName?: string | null }) {
  const now = deps.now();
  const hash = isKind(token, "claim") ? hashSecret(token) : null;
  return deps.db.transaction((tx) => {
    const db = tx as unknown as Db;
    const c = schema.claimLinks;
    const row = hash ? tx.select().from(c).where(eq(c.tokenHash, hash)).get() : undefined;
    if (!row) throw new SvcError("not_found", "this claim link is not valid; check that the whole link was opened");
    const claimed = tx
      .update(c)
      .set({ usedAt: now })
      .where(and(eq(c.id, row.id), isNull(c.usedAt), gt(c.expiresAt, now)))
      .returning({ id: c.id })
      .all();
    if (claimed.length === 0) throw refusal(row, now) ?? new SvcError("claim_used", "this claim link was already used");
    const { user, created } = upsertUserByEmail(db, row.orgId, { email: who.email, displayName: who.displayName ?? null, source: "claim" });
    if (user.disabled) throw new SvcError("forbidden", `the service user ${user.email} is disabled; ask an admin of the organization`);
    const current = findRemoteIdentity(db, row.orgId, row.remoteUserId);
    if (current) {
      const refused = current.userId === user.id ? null : identityRefusal(current, row.installationId);
      if (refused) throw refused; // the transaction rolls back: the link stays unused
    }
    tx.update(c).set({ usedByUserId: user.id }).where(eq(c.id, row.id)).run();
    const identity =
      current?.userId === user.id
        ? current // already linked to this very user: nothing changes
        : linkRemoteIdentity(db, row.orgId, { remoteUserId: row.remoteUserId, userId: user.id, installationId: row.installationId, now });
    return { orgId: row.orgId, userId: user.id, email: user.email, userCreated: created, remoteIdentityId: identity.id, remoteUserId: row.remoteUserId };
  });
}
