// Admin identities: accounts, memberships, API tokens and console sessions. Resolving a
// bearer token or session cookie to a principal (account, organization, role) happens here.
import { and, eq, isNull } from "drizzle-orm";
import { SvcError } from "../../contract/errors.ts";
import { newId } from "../../contract/ids.ts";
import { type Db, schema } from "../db/index.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { hashSecret, isKind, newSecret } from "./tokens.ts";

export type Role = "owner" | "admin" | "member";
/**
 * How a console session was authenticated. "password": the account's own credential, good for
 * any organization the account belongs to. "sso": the identity provider of the session's
 * organization, which an admin of that organization controls; it vouches for nothing else.
 */
export type AuthMethod = "password" | "sso";
export type Principal = { accountId: string; email: string; orgId: string; role: Role; via: "token" | "session"; csrfToken?: string; authMethod?: AuthMethod };

export function findAccountByEmail(db: Db, email: string) {
  return db.select().from(schema.accounts).where(eq(schema.accounts.email, email.toLowerCase())).get();
}

export async function createAccount(db: Db, input: { email: string; password?: string; displayName?: string }) {
  const id = newId("account");
  const passwordHash = input.password ? await Bun.password.hash(input.password, { algorithm: "argon2id" }) : null;
  db.insert(schema.accounts).values({ id, email: input.email.toLowerCase(), displayName: input.displayName ?? null, passwordHash }).run();
  return db.select().from(schema.accounts).where(eq(schema.accounts.id, id)).get()!;
}

export async function setPassword(db: Db, accountId: string, password: string) {
  const passwordHash = await Bun.password.hash(password, { algorithm: "argon2id" });
  db.update(schema.accounts).set({ passwordHash }).where(eq(schema.accounts.id, accountId)).run();
}

/** Checks a password; null on any mismatch, without saying whether the account exists. */
export async function verifyPassword(db: Db, email: string, password: string) {
  const account = findAccountByEmail(db, email);
  if (!account?.passwordHash) {
    await Bun.password.verify(password, DUMMY_HASH).catch(() => false);
    return null;
  }
  return (await Bun.password.verify(password, account.passwordHash)) ? account : null;
}
const DUMMY_HASH = "$argon2id$v=19$m=65536,t=2,p=1$c29tZXNhbHRzb21lc2FsdA$0GqHOHpsSMY4S6dw2Hh9qNRwdXIyjexG7bJ8ZnBm5Gk";

export function addMembership(db: Db, accountId: string, orgId: string, role: Role) {
  db.insert(schema.memberships).values({ accountId, orgId, role }).onConflictDoUpdate({ target: [schema.memberships.accountId, schema.memberships.orgId], set: { role } }).run();
}

export function membership(db: Db, accountId: string, orgId: string) {
  return db
    .select()
    .from(schema.memberships)
    .where(and(eq(schema.memberships.accountId, accountId), eq(schema.memberships.orgId, orgId)))
    .get();
}

export function membershipsOf(db: Db, accountId: string) {
  return db
    .select({ orgId: schema.organizations.id, name: schema.organizations.name, role: schema.memberships.role })
    .from(schema.memberships)
    .innerJoin(schema.organizations, eq(schema.organizations.id, schema.memberships.orgId))
    .where(eq(schema.memberships.accountId, accountId))
    .all();
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
export function sessionAuthenticatedFor(db: Db, p: Principal, orgId: string): boolean {
  if (p.via !== "session") return false;
  if (p.orgId === orgId) return true;
  return p.authMethod === "password" && !!membership(db, p.accountId, orgId);
}

/** Issues an API token for the CLI; the raw value is returned once and stored only hashed. */
export function issueApiToken(deps: ControlPlaneDeps, input: { accountId: string; orgId: string; name: string; ttlSeconds?: number }) {
  const token = newSecret("admin");
  const id = newId("apiToken");
  deps.db
    .insert(schema.apiTokens)
    .values({
      id,
      accountId: input.accountId,
      orgId: input.orgId,
      name: input.name,
      tokenHash: hashSecret(token),
      expiresAt: input.ttlSeconds ? deps.now() + input.ttlSeconds * 1000 : null,
    })
    .run();
  return { id, token };
}

export function revokeApiToken(db: Db, tokenId: string, now: number) {
  db.update(schema.apiTokens).set({ revokedAt: now }).where(eq(schema.apiTokens.id, tokenId)).run();
}

const isoOrNull = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** The organization's API tokens (revoked ones included), oldest first: never the token or its hash. */
export function listApiTokens(db: Db, orgId: string) {
  const t = schema.apiTokens;
  return db
    .select({ id: t.id, name: t.name, email: schema.accounts.email, createdAt: t.createdAt, lastUsedAt: t.lastUsedAt, expiresAt: t.expiresAt, revokedAt: t.revokedAt })
    .from(t)
    .innerJoin(schema.accounts, eq(schema.accounts.id, t.accountId))
    .where(eq(t.orgId, orgId))
    .orderBy(t.id)
    .all()
    .map((r) => ({
      id: r.id,
      name: r.name,
      account_email: r.email,
      created_at: isoOrNull(r.createdAt),
      last_used_at: isoOrNull(r.lastUsedAt),
      expires_at: isoOrNull(r.expiresAt),
      revoked_at: isoOrNull(r.revokedAt),
    }));
}

/**
 * An admin revokes any API token of the organization; it fails (401) from the next request on.
 * A token of another organization is "not found". Revoking a revoked token changes nothing
 * (the first revocation time stays).
 */
export function revokeOrgApiToken(deps: ControlPlaneDeps, orgId: string, tokenId: string): void {
  const t = schema.apiTokens;
  const row = deps.db.select({ id: t.id, revokedAt: t.revokedAt }).from(t).where(and(eq(t.orgId, orgId), eq(t.id, tokenId))).get();
  if (!row) throw new SvcError("not_found", `API token ${tokenId} not found`);
  if (row.revokedAt === null) revokeApiToken(deps.db, row.id, deps.now());
}

/**
 * Ends an account's access to one organization: its console sessions there are deleted and its
 * API tokens there revoked. Its sessions and tokens of other organizations are untouched.
 */
export function endAccountAccess(db: Db, accountId: string, orgId: string, now: number): void {
  db.delete(schema.sessions).where(and(eq(schema.sessions.accountId, accountId), eq(schema.sessions.orgId, orgId))).run();
  db.update(schema.apiTokens)
    .set({ revokedAt: now })
    .where(and(eq(schema.apiTokens.accountId, accountId), eq(schema.apiTokens.orgId, orgId), isNull(schema.apiTokens.revokedAt)))
    .run();
}

/** Opens a session of the account in `orgId`, recording how the person proved who they are. */
export function createSession(deps: ControlPlaneDeps, accountId: string, orgId: string, authMethod: AuthMethod) {
  const raw = newSecret("session");
  const csrfToken = newSecret("session").slice(7, 39);
  deps.db
    .insert(schema.sessions)
    .values({ idHash: hashSecret(raw), accountId, orgId, csrfToken, authMethod, expiresAt: deps.now() + deps.config.sessionTtlSeconds * 1000 })
    .run();
  return { raw, csrfToken };
}

export function deleteSession(db: Db, raw: string) {
  db.delete(schema.sessions).where(eq(schema.sessions.idHash, hashSecret(raw))).run();
}

function principalFor(db: Db, accountId: string, orgId: string, via: Principal["via"], session?: { csrfToken: string; authMethod: AuthMethod }): Principal | null {
  const row = db
    .select({ email: schema.accounts.email, role: schema.memberships.role })
    .from(schema.memberships)
    .innerJoin(schema.accounts, eq(schema.accounts.id, schema.memberships.accountId))
    .where(and(eq(schema.memberships.accountId, accountId), eq(schema.memberships.orgId, orgId)))
    .get();
  if (!row) return null;
  return { accountId, email: row.email, orgId, role: row.role, via, ...(session ? { csrfToken: session.csrfToken, authMethod: session.authMethod } : {}) };
}

export function principalFromToken(deps: ControlPlaneDeps, token: string): Principal | null {
  if (!isKind(token, "admin")) return null;
  const row = deps.db
    .select()
    .from(schema.apiTokens)
    .where(and(eq(schema.apiTokens.tokenHash, hashSecret(token)), isNull(schema.apiTokens.revokedAt)))
    .get();
  if (!row || (row.expiresAt !== null && row.expiresAt <= deps.now())) return null;
  // Recorded at most once a minute: a disk flush per admin request would buy nothing.
  if (row.lastUsedAt === null || deps.now() - row.lastUsedAt > 60_000) {
    deps.db.update(schema.apiTokens).set({ lastUsedAt: deps.now() }).where(eq(schema.apiTokens.id, row.id)).run();
  }
  return principalFor(deps.db, row.accountId, row.orgId, "token");
}

export function principalFromSession(deps: ControlPlaneDeps, raw: string): Principal | null {
  if (!isKind(raw, "session")) return null;
  const row = deps.db.select().from(schema.sessions).where(eq(schema.sessions.idHash, hashSecret(raw))).get();
  if (!row || row.expiresAt <= deps.now()) return null;
  return principalFor(deps.db, row.accountId, row.orgId, "session", { csrfToken: row.csrfToken, authMethod: row.authMethod });
}

export function requireAdmin(p: Principal): void {
  if (p.role !== "owner" && p.role !== "admin") {
    throw new SvcError("forbidden", `role "${p.role}" cannot do admin work; ask an owner or admin of the organization`);
  }
}
