// Admin identities: accounts, memberships, API tokens and console sessions. Resolving a
// bearer token or session cookie to a principal (account, organization, role) happens here.
import { and, eq, inArray, isNull } from "drizzle-orm";
import { SvcError } from "../../contract/errors.ts";
import { newId } from "../../contract/ids.ts";
import { type Db, tables } from "../db/index.ts";
import { organizationNames } from "../organizations/service.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import type { IdpSubject } from "./idp-subjects.ts";
import type { AuthMethod, Principal, Role } from "./principal.ts";
import { type Grant, recordGrant, roleChangeKind } from "./membership-grants.ts";
import { hashSecret, isKind } from "./tokens.ts";

export type { AuthMethod, Principal, Role, SignIn } from "./principal.ts";

export async function findAccountByEmail(db: Db, email: string) {
  const a = tables(db).accounts;
  const [row] = await db.select().from(a).where(eq(a.email, email.toLowerCase()));
  return row;
}

/** argon2id of a password, computed before any transaction (it takes tens of milliseconds). */
export async function hashPassword(password: string): Promise<string> {
  return Bun.password.hash(password, { algorithm: "argon2id" });
}

/**
 * Creates an account. An account with that email made meanwhile by another request is a 409
 * conflict, never a duplicate. Inside a transaction pass `passwordHash` (from hashPassword,
 * computed before it), not `password`.
 */
export async function createAccount(db: Db, input: { email: string; password?: string; passwordHash?: string; displayName?: string }) {
  const a = tables(db).accounts;
  const email = input.email.toLowerCase();
  const passwordHash = input.passwordHash ?? (input.password ? await hashPassword(input.password) : null);
  const [row] = await db
    .insert(a)
    .values({ id: newId("account"), email, displayName: input.displayName ?? null, passwordHash })
    .onConflictDoNothing()
    .returning();
  if (!row) throw new SvcError("conflict", `an account for ${email} already exists`);
  return row;
}

/** Checks a password; null on any mismatch, without saying whether the account exists. */
export async function verifyPassword(db: Db, email: string, password: string) {
  const account = await findAccountByEmail(db, email);
  if (!account?.passwordHash) {
    await Bun.password.verify(password, DUMMY_HASH).catch(() => false);
    return null;
  }
  return (await Bun.password.verify(password, account.passwordHash)) ? account : null;
}
const DUMMY_HASH = "$argon2id$v=19$m=65536,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$0GqHOHpsSMY4S6dw2Hh9qNRwdXIyjexG7bJ8ZnBm5Gk";

/** Account id → email, for the given ids (unknown ids are left out). */
export async function emailsOfAccounts(db: Db, ids: string[]): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  const a = tables(db).accounts;
  const rows = await db
    .select({ id: a.id, email: a.email })
    .from(a)
    .where(inArray(a.id, [...new Set(ids)]));
  return new Map(rows.map((r) => [r.id, r.email]));
}

/**
 * Makes the account a member with `role`, or changes its role, and records who did it
 * (membership-grants.ts) in the same transaction: call it inside the caller's transaction.
 */
export async function addMembership(db: Db, accountId: string, orgId: string, role: Role, grant: Grant) {
  const m = tables(db).memberships;
  const current = await membership(db, accountId, orgId);
  await db
    .insert(m)
    .values({ accountId, orgId, role, createdAt: grant.at })
    .onConflictDoUpdate({ target: [m.accountId, m.orgId], set: { role } });
  const kind = current ? roleChangeKind(current.role, role) : grant.join;
  if (kind) await recordGrant(db, { orgId, accountId, kind, role, previousRole: current?.role ?? null, by: grant.by, at: grant.at });
}

export async function membership(db: Db, accountId: string, orgId: string) {
  const m = tables(db).memberships;
  const [row] = await db
    .select()
    .from(m)
    .where(and(eq(m.accountId, accountId), eq(m.orgId, orgId)));
  return row;
}

/** The account's organizations with their names and its role in each. */
export async function membershipsOf(db: Db, accountId: string) {
  const m = tables(db).memberships;
  const rows = await db.select({ orgId: m.orgId, role: m.role }).from(m).where(eq(m.accountId, accountId));
  const names = await organizationNames(
    db,
    rows.map((r) => r.orgId),
  );
  return rows.flatMap((r) => {
    const name = names.get(r.orgId);
    return name === undefined ? [] : [{ orgId: r.orgId, name, role: r.role }];
  });
}

/** The organization's members (account id, email, role), by email. */
export async function membersOf(db: Db, orgId: string): Promise<Array<{ accountId: string; email: string; role: Role }>> {
  const { accounts: a, memberships: m } = tables(db);
  return db.select({ accountId: a.id, email: a.email, role: m.role }).from(m).innerJoin(a, eq(a.id, m.accountId)).where(eq(m.orgId, orgId)).orderBy(a.email);
}

export async function ownerCount(db: Db, orgId: string): Promise<number> {
  const m = tables(db).memberships;
  const owners = await db
    .select({ accountId: m.accountId })
    .from(m)
    .where(and(eq(m.orgId, orgId), eq(m.role, "owner")));
  return owners.length;
}

export async function removeMembership(db: Db, accountId: string, orgId: string): Promise<void> {
  const m = tables(db).memberships;
  await db.delete(m).where(and(eq(m.accountId, accountId), eq(m.orgId, orgId)));
}

/** The organization a sign-in lands in when none is asked for: the oldest (lowest id). */
export function defaultOrganization<T extends { orgId: string }>(orgs: readonly T[]): T | undefined {
  return [...orgs].sort((a, b) => a.orgId.localeCompare(b.orgId))[0];
}

/**
 * Whether a console session's authentication counts for `orgId` without signing in again: its
 * own organization always; another organization of the account only for a password session.
 * A single sign-on session is bound to the organization whose identity provider vouched for
 * it: that provider is run by that organization's admins, who may assert any email.
 */
export async function sessionAuthenticatedFor(db: Db, p: Principal, orgId: string): Promise<boolean> {
  if (p.via !== "session") return false;
  if (p.orgId === orgId) return true;
  return p.authMethod === "password" && !!(await membership(db, p.accountId, orgId));
}

/**
 * Ends an account's access to one organization: its console sessions there are deleted and its
 * API tokens there revoked. Its sessions and tokens of other organizations are untouched.
 */
export async function endAccountAccess(db: Db, accountId: string, orgId: string, now: number): Promise<{ sessionsEnded: number; apiTokensRevoked: number }> {
  const { sessions: s, apiTokens: t } = tables(db);
  const ended = await db
    .delete(s)
    .where(and(eq(s.accountId, accountId), eq(s.orgId, orgId)))
    .returning({ idHash: s.idHash });
  const revoked = await db
    .update(t)
    .set({ revokedAt: now })
    .where(and(eq(t.accountId, accountId), eq(t.orgId, orgId), isNull(t.revokedAt)))
    .returning({ id: t.id });
  return { sessionsEnded: ended.length, apiTokensRevoked: revoked.length };
}

/**
 * Whether single sign-on may speak for a member with this role. Never for an owner: whoever
 * runs the identity provider could otherwise sign in as the owner (and an admin who pointed the
 * organization at a provider they control would become owner). Owners use their password.
 */
export function ssoMayOpen(role: Role): boolean {
  return role !== "owner";
}

async function principalFor(
  db: Db,
  accountId: string,
  orgId: string,
  via: Principal["via"],
  credentialId: string,
  signIn: { authenticatedAt: number | null; idp: IdpSubject | null },
  session?: { csrfToken: string; authMethod: AuthMethod },
): Promise<Principal | null> {
  const { memberships: m, accounts: a } = tables(db);
  const [row] = await db
    .select({ email: a.email, role: m.role })
    .from(m)
    .innerJoin(a, eq(a.id, m.accountId))
    .where(and(eq(m.accountId, accountId), eq(m.orgId, orgId)));
  if (!row) return null;
  // A single sign-on session of an account made owner since: it ends (sign in with the password).
  if (session?.authMethod === "sso" && !ssoMayOpen(row.role)) return null;
  return {
    accountId,
    email: row.email,
    orgId,
    role: row.role,
    via,
    credentialId,
    authenticatedAt: signIn.authenticatedAt,
    idp: signIn.idp,
    ...(session ? { csrfToken: session.csrfToken, authMethod: session.authMethod } : {}),
  };
}

export async function principalFromToken(deps: ControlPlaneDeps, token: string, client?: string | null): Promise<Principal | null> {
  if (!isKind(token, "admin")) return null;
  const t = tables(deps.db).apiTokens;
  const [row] = await deps.db
    .select()
    .from(t)
    .where(and(eq(t.tokenHash, hashSecret(token)), isNull(t.revokedAt)));
  if (!row) return null;
  // Tokens issued before expiry existed carry none: they last the default TTL from their creation.
  const expiresAt = row.expiresAt ?? row.createdAt + deps.config.apiTokenTtlSeconds * 1000;
  if (expiresAt <= deps.now()) return null;
  // Recorded at most once a minute: a disk flush per admin request would buy nothing.
  const lastClient = client ? client.slice(0, 100) : row.lastClient;
  if (row.lastUsedAt === null || deps.now() - row.lastUsedAt > 60_000 || lastClient !== row.lastClient) {
    await deps.db.update(t).set({ lastUsedAt: deps.now(), lastClient }).where(eq(t.id, row.id));
  }
  const p = await principalFor(deps.db, row.accountId, row.orgId, "token", row.id, row);
  return p && { ...p, tokenExpiresAt: expiresAt };
}

export async function principalFromSession(deps: ControlPlaneDeps, raw: string): Promise<Principal | null> {
  if (!isKind(raw, "session")) return null;
  const s = tables(deps.db).sessions;
  const [row] = await deps.db
    .select()
    .from(s)
    .where(eq(s.idHash, hashSecret(raw)));
  if (!row || row.expiresAt <= deps.now()) return null;
  return principalFor(deps.db, row.accountId, row.orgId, "session", sessionCredentialId(row.idHash), row, { csrfToken: row.csrfToken, authMethod: row.authMethod });
}

/** How the admin trail names a session: the first 16 hex digits of its stored hash (never the cookie). */
export function sessionCredentialId(idHash: string): string {
  return idHash.slice(0, 16);
}

export function requireAdmin(p: Principal): void {
  if (p.role !== "owner" && p.role !== "admin") {
    throw new SvcError("forbidden", `role "${p.role}" cannot do admin work; ask an owner or admin of the organization`);
  }
}
