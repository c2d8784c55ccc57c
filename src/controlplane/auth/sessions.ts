// Console sessions: sign-in with email and password (checks the password, picks the
// organization and opens a password session, which may later switch among the account's
// organizations), opening and ending sessions. The cookie carries the raw session id; the
// table holds only its hash.
// Wrong passwords are limited per email and per client IP (http/rate-limit.ts, shared by every
// replica): at the limit every attempt, right or wrong, is refused with 429 rate_limited until
// the window ends. Each attempt is counted before the password is checked (check and count are
// one atomic upsert), so a burst of concurrent guesses cannot all pass a check made before any
// of them was counted; the right password then takes its attempt back.
// The admin trail (issue 27): opening and signing out a session are events of the session's
// organization; a failed password and the first refusal past the email's limit are events of
// every organization the account belongs to (sign-in names none), and of none for an email no
// account has. The per-email limit bounds how many such events one email can cause.
import { eq } from "drizzle-orm";
import type { AdminAction } from "../../contract/admin-event.ts";
import { SvcError } from "../../contract/errors.ts";
import { type RequestOrigin, anonymousActor, recordAdminEvent } from "../audit/admin-events.ts";
import { type Db, tables } from "../db/index.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { limiters, rateLimited } from "../http/rate-limit.ts";
import { NO_ORIGIN } from "../http/request-gate.ts";
import { type AuthMethod, type SignIn, defaultOrganization, findAccountByEmail, membership, membershipsOf, sessionCredentialId, verifyPassword } from "./service.ts";
import { hashSecret, newSecret } from "./tokens.ts";

type SessionDeps = Pick<ControlPlaneDeps, "db" | "now" | "config">;

/**
 * Opens a session of the account in `orgId`, recording how and when the person proved who they
 * are (`signIn`: now for a sign-in, the replaced session's for a switch of organization), and
 * writes its `session.sign_in` event in the same transaction. `switchedFrom`: the organization
 * a password session switched away from.
 */
export async function createSession(deps: SessionDeps, accountId: string, orgId: string, authMethod: AuthMethod, signIn: SignIn, origin: RequestOrigin, opts: { switchedFrom?: string } = {}) {
  const raw = newSecret("session");
  const csrfToken = newSecret("session").slice(7, 39);
  const idHash = hashSecret(raw);
  const now = deps.now();
  const expiresAt = now + deps.config.sessionTtlSeconds * 1000;
  await deps.db.transaction(async (tx) => {
    await tx.insert(tables(tx).sessions).values({ idHash, accountId, orgId, csrfToken, authMethod, authenticatedAt: signIn.at, idp: signIn.idp ?? null, expiresAt });
    const who = await accountIn(tx, accountId, orgId);
    const id = sessionCredentialId(idHash);
    await recordAdminEvent(
      tx,
      {
        orgId,
        action: "session.sign_in",
        actor: { id: accountId, email: who.email, role: who.role, credential: { kind: "session", id }, ip: origin.ip, user_agent: origin.userAgent },
        target: { type: "session", id, name: who.email },
        after: { auth_method: authMethod, expires_at: new Date(expiresAt).toISOString(), ...(opts.switchedFrom ? { switched_from: opts.switchedFrom } : {}) },
      },
      now,
    );
  });
  return { raw, csrfToken };
}

async function accountIn(db: Db, accountId: string, orgId: string): Promise<{ email: string | null; role: string | null }> {
  const a = tables(db).accounts;
  const [row] = await db.select({ email: a.email }).from(a).where(eq(a.id, accountId));
  return { email: row?.email ?? null, role: (await membership(db, accountId, orgId))?.role ?? null };
}

/** Deletes a session with no event: one replaced by another (switching, signing in again). */
export async function deleteSession(db: Db, raw: string) {
  const s = tables(db).sessions;
  await db.delete(s).where(eq(s.idHash, hashSecret(raw)));
}

/** Signs a session out (the API's DELETE /auth/sessions, the console's sign-out): `session.sign_out`. */
export async function signOutSession(deps: SessionDeps, raw: string, origin: RequestOrigin): Promise<void> {
  await deps.db.transaction(async (tx) => {
    const s = tables(tx).sessions;
    const [gone] = await tx
      .delete(s)
      .where(eq(s.idHash, hashSecret(raw)))
      .returning();
    if (!gone) return;
    const who = await accountIn(tx, gone.accountId, gone.orgId);
    const id = sessionCredentialId(gone.idHash);
    await recordAdminEvent(
      tx,
      {
        orgId: gone.orgId,
        action: "session.sign_out",
        actor: { id: gone.accountId, email: who.email, role: who.role, credential: { kind: "session", id }, ip: origin.ip, user_agent: origin.userAgent },
        target: { type: "session", id, name: who.email },
        before: { auth_method: gone.authMethod },
      },
      deps.now(),
    );
  });
}

/**
 * A refused password sign-in, as an event in every organization of the account with this email
 * (none when no account has it). Written in a transaction of its own: nothing else changed.
 */
async function recordSignInRefusal(
  deps: ControlPlaneDeps,
  email: string,
  origin: RequestOrigin,
  action: Extract<AdminAction, "session.sign_in_failed" | "session.locked_out">,
  retryAfter?: number,
): Promise<void> {
  const account = await findAccountByEmail(deps.db, email);
  if (!account) return;
  const orgs = await membershipsOf(deps.db, account.id);
  if (orgs.length === 0) return;
  const now = deps.now();
  const locked = action === "session.locked_out";
  await deps.db.transaction(async (tx) => {
    for (const org of orgs) {
      await recordAdminEvent(
        tx,
        {
          orgId: org.orgId,
          action,
          actor: anonymousActor({ ...origin, email: account.email }),
          target: { type: "account", id: account.id, name: account.email },
          result: "refused",
          status: locked ? 429 : 401,
          code: locked ? "rate_limited" : "unauthorized",
          severity: locked ? "high" : "notice",
          ...(locked ? { after: { retry_after_seconds: retryAfter ?? null } } : {}),
        },
        now,
      );
    }
  });
}

export async function signIn(deps: ControlPlaneDeps, input: { email: string; password: string; organizationId?: string; origin?: RequestOrigin }) {
  const email = input.email.trim();
  const emailKey = email.toLowerCase();
  const origin = input.origin ?? NO_ORIGIN;
  const ip = origin.ip;
  const l = limiters(deps);
  const [byEmail, byIp] = await Promise.all([l.signInEmail.count(emailKey), ip ? l.signInIp.hit(ip) : 0]);
  const wait = Math.max(byEmail.wait, byIp);
  if (wait > 0) {
    deps.log.warn("sign-in rate limited", { email: emailKey, ip });
    // Once per window: the attempt that first went past the email's limit.
    if (byEmail.count === l.signInEmail.limit + 1) await recordSignInRefusal(deps, emailKey, origin, "session.locked_out", byEmail.wait);
    throw rateLimited(`too many failed sign-in attempts; wait ${wait} seconds and try again`, wait);
  }
  const account = await verifyPassword(deps.db, email, input.password);
  if (!account) {
    await recordSignInRefusal(deps, emailKey, origin, "session.sign_in_failed");
    throw new SvcError("unauthorized", "wrong email or password");
  }
  // The right password clears the email's failures, and takes this attempt back from the IP's
  // count (only this one: one known account must not reset the count of guesses against others).
  await Promise.all([l.signInEmail.reset(emailKey), ip ? l.signInIp.unhit(ip) : undefined]);
  const orgs = await membershipsOf(deps.db, account.id);
  const chosen = input.organizationId ? orgs.find((o) => o.orgId === input.organizationId) : defaultOrganization(orgs);
  if (!chosen) {
    throw new SvcError("forbidden", input.organizationId ? `${account.email} is not a member of organization ${input.organizationId}` : `${account.email} is not a member of any organization`);
  }
  const session = await createSession(deps, account.id, chosen.orgId, "password", { at: deps.now() }, origin);
  return {
    raw: session.raw,
    body: { account: { id: account.id, email: account.email }, organization_id: chosen.orgId, role: chosen.role, csrf_token: session.csrfToken },
  };
}
