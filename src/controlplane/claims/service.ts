// Claim links: a one-time URL that lets an unlinked front-end user link (`chatui`, their
// front-end user id) to the service user with their email, by signing in to the console.
// The token is shown once (in the front-end notification) and stored hashed. Redemption is
// one conditional UPDATE, so a link is redeemed once even when two requests race.
import { and, eq, gt, isNull } from "drizzle-orm";
import { SvcError } from "../../contract/errors.ts";
import { newId } from "../../contract/ids.ts";
import { hashSecret, isKind, newSecret } from "../auth/tokens.ts";
import { type Db, schema } from "../db/index.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { linkRemoteIdentity, noteRemoteIdentity, upsertUserByEmail } from "../directory/service.ts";
import type { RuntimeCaller } from "../installations/runtime-auth.ts";

export const CLAIM_PATH = "/claim/";

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
    noteRemoteIdentity(tx as unknown as Db, caller.orgId, {
      remoteUserId: input.remoteUserId,
      installationId: caller.installationId,
      email: input.email ?? null,
      displayName: input.name ?? null,
    });
    tx.insert(schema.claimLinks)
      .values({ id: newId("claim", now), orgId: caller.orgId, installationId: caller.installationId, remoteUserId: input.remoteUserId, tokenHash: hashSecret(token), expiresAt, createdAt: now })
      .run();
  });
  return { url: `${deps.config.publicUrl}${CLAIM_PATH}${token}`, expires_at: new Date(expiresAt).toISOString() };
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
    tx.update(c).set({ usedByUserId: user.id }).where(eq(c.id, row.id)).run();
    const identity = linkRemoteIdentity(db, row.orgId, { remoteUserId: row.remoteUserId, userId: user.id, installationId: row.installationId, now });
    return { orgId: row.orgId, userId: user.id, email: user.email, userCreated: created, remoteIdentityId: identity.id, remoteUserId: row.remoteUserId };
  });
}
