// `svc login`: a device-style browser approval. The CLI creates a request and gets a poll
// secret (stored only hashed) plus a console URL; an owner or admin signed in to the console
// approves it; the CLI's next poll receives an API token for the approver in the approver's
// organization, exactly once. Expired or already fetched requests answer 410 login_expired.
// The token carries the approving session's sign-in time, not the time it was issued: a
// `svc login` approved from a session signed in hours ago is not a fresh sign-in (escrow
// approval needs one within 5 minutes; escrow/approval-rules.ts).
import { randomInt } from "node:crypto";
import { and, eq, isNull, lt, lte, or } from "drizzle-orm";
import { SvcError } from "../../contract/errors.ts";
import { newId } from "../../contract/ids.ts";
import { tables } from "../db/index.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { limiters, rateLimited } from "../http/rate-limit.ts";
import { type RequestOrigin, actorOf, holderActor, recordAdminEvent } from "../audit/admin-events.ts";
import { issueApiToken } from "./api-tokens.ts";
import { type Principal, membership } from "./service.ts";
import { hashSecret, newSecret, safeEqual } from "./tokens.ts";

/** How often the CLI should poll for the token. */
export const LOGIN_POLL_INTERVAL_SECONDS = 2;
/** Unambiguous letters for the code the user compares between terminal and browser. */
const USER_CODE_ALPHABET = "BCDFGHJKLMNPQRSTVWXZ";

export function newUserCode(): string {
  let s = "";
  for (let i = 0; i < 8; i++) s += USER_CODE_ALPHABET[randomInt(USER_CODE_ALPHABET.length)];
  return `${s.slice(0, 4)}-${s.slice(4)}`;
}

/** Requests are created without authentication; those expired for a day are purged as new ones come in. */
const PURGE_AFTER_MS = 24 * 3600 * 1000;

/** A poll this much earlier than the interval is still accepted (timer jitter). */
const POLL_GRACE_MS = 200;

/** Creates a request; unauthenticated, so limited per client IP (when known). */
export async function createLoginRequest(deps: ControlPlaneDeps, opts: { clientIp?: string | null } = {}) {
  const ip = opts.clientIp ?? null;
  if (ip) {
    // Counted first, refused past the limit: one atomic step, however many replicas race.
    const wait = await limiters(deps).loginRequestIp.hit(ip);
    if (wait > 0) throw rateLimited(`too many login requests from this address; wait ${wait} seconds and run \`svc login\` again`, wait);
  }
  const lr = tables(deps.db).loginRequests;
  await deps.db.delete(lr).where(lt(lr.expiresAt, deps.now() - PURGE_AFTER_MS));
  const id = newId("loginRequest");
  const userCode = newUserCode();
  const pollSecret = newSecret("loginPoll");
  const expiresAt = deps.now() + deps.config.loginRequestTtlSeconds * 1000;
  await deps.db.insert(lr).values({ id, userCode, pollSecretHash: hashSecret(pollSecret), expiresAt });
  return {
    id,
    user_code: userCode,
    poll_secret: pollSecret,
    approve_url: `${deps.config.publicUrl}/login/approve?request=${encodeURIComponent(id)}`,
    expires_at: new Date(expiresAt).toISOString(),
    interval_seconds: LOGIN_POLL_INTERVAL_SECONDS,
  };
}

async function findRequest(deps: ControlPlaneDeps, id: string) {
  const lr = tables(deps.db).loginRequests;
  const [row] = await deps.db.select().from(lr).where(eq(lr.id, id));
  if (!row) throw new SvcError("not_found", `login request ${id} not found; run \`svc login\` again`);
  return row;
}

function expired(deps: ControlPlaneDeps, row: { expiresAt: number; completedAt: number | null }): boolean {
  return row.completedAt !== null || row.expiresAt <= deps.now();
}

/** What the console's approval page shows: the code to compare and whether it can still be approved. */
export async function describeLoginRequest(deps: ControlPlaneDeps, id: string) {
  const row = await findRequest(deps, id);
  const status = expired(deps, row) ? ("expired" as const) : row.approvedByAccountId ? ("approved" as const) : ("pending" as const);
  return { id: row.id, user_code: row.userCode, expires_at: new Date(row.expiresAt).toISOString(), status };
}

/** Approval by a signed-in owner or admin: the token will act for them in their organization. */
export async function approveLoginRequest(deps: ControlPlaneDeps, id: string, by: Principal) {
  if (by.via !== "session") throw new SvcError("forbidden", "approve login requests in the console, signed in with your password or SSO");
  const row = await findRequest(deps, id);
  if (expired(deps, row)) throw new SvcError("login_expired", "this login request has expired or was already used; run `svc login` again");
  await deps.db.transaction(async (tx) => {
    const lr = tables(tx).loginRequests;
    // Approved once: a second approver (or the same one in another organization) never takes it over.
    const [approved] = await tx
      .update(lr)
      .set({ approvedByAccountId: by.accountId, orgId: by.orgId, approverAuthenticatedAt: by.authenticatedAt ?? null, approverIdp: by.idp ?? null })
      .where(and(eq(lr.id, id), isNull(lr.completedAt), or(isNull(lr.approvedByAccountId), and(eq(lr.approvedByAccountId, by.accountId), eq(lr.orgId, by.orgId)))))
      .returning({ id: lr.id });
    if (!approved) throw new SvcError("conflict", "this login request was already approved by another account");
    // Approving it again (the same approver) changes nothing.
    if (row.approvedByAccountId === null) {
      await recordAdminEvent(
        tx,
        {
          orgId: by.orgId,
          action: "login_request.approve",
          actor: actorOf(by),
          target: { type: "login_request", id, name: row.userCode },
          after: { user_code: row.userCode, expires_at: new Date(row.expiresAt).toISOString() },
        },
        deps.now(),
      );
    }
  });
  return { approved: true as const };
}

/** The CLI's poll: 428 until approved, the token once, then 410. */
export async function redeemLoginRequest(deps: ControlPlaneDeps, id: string, pollSecret: string, origin: RequestOrigin) {
  const lr = tables(deps.db).loginRequests;
  const [row] = await deps.db.select().from(lr).where(eq(lr.id, id));
  // An unknown id and a wrong secret look the same: nothing to learn by guessing.
  if (!row || !safeEqual(hashSecret(pollSecret), row.pollSecretHash)) throw new SvcError("not_found", `login request ${id} not found; run \`svc login\` again`);
  if (expired(deps, row)) throw new SvcError("login_expired", "this login request has expired or its token was already fetched; run `svc login` again");
  // The advertised interval is enforced (like OAuth's slow_down): a faster poll changes nothing.
  // Counted only for pollers that know the secret, so nobody else can slow the CLI down. The
  // poll is stamped on the request by a conditional update, so every replica sees it.
  const now = deps.now();
  const [accepted] = await deps.db
    .update(lr)
    .set({ lastPolledAt: now })
    .where(and(eq(lr.id, id), or(isNull(lr.lastPolledAt), lte(lr.lastPolledAt, now - (LOGIN_POLL_INTERVAL_SECONDS * 1000 - POLL_GRACE_MS)))))
    .returning({ id: lr.id });
  if (!accepted) {
    // Refused: the last poll is the one read above, or one that came in since (just now).
    const last = row.lastPolledAt ?? now;
    const wait = Math.max(1, Math.ceil((last + LOGIN_POLL_INTERVAL_SECONDS * 1000 - now) / 1000));
    throw rateLimited(`polling too fast: poll at most every ${LOGIN_POLL_INTERVAL_SECONDS} seconds`, wait, { interval_seconds: LOGIN_POLL_INTERVAL_SECONDS });
  }
  if (!row.approvedByAccountId || !row.orgId) {
    throw new SvcError("authorization_pending", "waiting for approval in the browser", { interval_seconds: LOGIN_POLL_INTERVAL_SECONDS });
  }
  const accountId = row.approvedByAccountId;
  const orgId = row.orgId;
  return deps.db.transaction(async (tx) => {
    const { loginRequests: lr, accounts: a } = tables(tx);
    const claimed = await tx
      .update(lr)
      .set({ completedAt: deps.now() })
      .where(and(eq(lr.id, id), isNull(lr.completedAt)))
      .returning({ id: lr.id });
    if (claimed.length !== 1) throw new SvcError("login_expired", "the token of this login request was already fetched; run `svc login` again");
    const role = (await membership(tx, accountId, orgId))?.role;
    if (role !== "owner" && role !== "admin") throw new SvcError("forbidden", "the approving account is no longer an owner or admin of the organization");
    const [account] = await tx.select().from(a).where(eq(a.id, accountId));
    // The token acts for the approver; the CLI that redeems it proves only the poll secret.
    const by = { actor: holderActor("login_request", { id: accountId, email: account!.email, role, credentialId: id }, origin), at: deps.now() };
    const issued = await issueApiToken(
      { db: tx, now: deps.now, config: deps.config },
      { accountId, orgId, name: `svc login ${row.userCode}`, signIn: { at: row.approverAuthenticatedAt, idp: row.approverIdp } },
      by,
    );
    await tx.update(lr).set({ tokenId: issued.id }).where(eq(lr.id, id));
    return { token: issued.token, organization_id: orgId, email: account!.email, expires_at: new Date(issued.expiresAt).toISOString() };
  });
}
