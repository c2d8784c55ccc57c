// API tokens for the CLI (`svc login`, the API, bootstrap): issued once, stored only as
// SHA-256, every one expiring. Issuing and revoking one are admin events (api_token.create,
// api_token.revoke) written in the same transaction; the event names the token by its id,
// never by its value.
import { and, eq, isNull } from "drizzle-orm";
import { SvcError } from "../../contract/errors.ts";
import { newId } from "../../contract/ids.ts";
import { type Acting, recordChange } from "../audit/admin-events.ts";
import { type Db, tables } from "../db/index.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import type { SignIn } from "./service.ts";
import { hashSecret, newSecret } from "./tokens.ts";

type TokenDeps = Pick<ControlPlaneDeps, "db" | "now" | "config">;
/**
 * `signIn` is the sign-in the token comes from (the issuing session's or token's; `at` null
 * when unknown): a token carries it on and never renews it (escrow approval needs a fresh one).
 */
type TokenInput = { accountId: string; orgId: string; name: string; signIn: SignIn; ttlSeconds?: number };

const isoOrNull = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** Writes a token row; the caller writes the event (bootstrap's covers its token). */
export async function insertApiToken(deps: TokenDeps, input: TokenInput) {
  const token = newSecret("admin");
  const id = newId("apiToken");
  // Every token expires (issue 20); a token that lives forever is one leak away from lasting access.
  const expiresAt = deps.now() + (input.ttlSeconds ?? deps.config.apiTokenTtlSeconds) * 1000;
  await deps.db
    .insert(tables(deps.db).apiTokens)
    .values({ id, accountId: input.accountId, orgId: input.orgId, name: input.name, tokenHash: hashSecret(token), expiresAt, authenticatedAt: input.signIn.at, idp: input.signIn.idp ?? null });
  return { id, token, expiresAt };
}

/** Issues an API token for the CLI; the raw value is returned once and stored only hashed. */
export async function issueApiToken(deps: TokenDeps, input: TokenInput, by: Acting) {
  return deps.db.transaction(async (tx) => {
    const issued = await insertApiToken({ ...deps, db: tx }, input);
    await recordChange(tx, by, {
      orgId: input.orgId,
      action: "api_token.create",
      target: { type: "api_token", id: issued.id, name: input.name },
      after: { id: issued.id, name: input.name, account_id: input.accountId, expires_at: isoOrNull(issued.expiresAt) },
    });
    return issued;
  });
}

/** The organization's API tokens (revoked ones included), oldest first: never the token or its hash. */
export async function listApiTokens(db: Db, orgId: string) {
  const { apiTokens: t, accounts: a } = tables(db);
  const rows = await db
    .select({ id: t.id, name: t.name, email: a.email, createdAt: t.createdAt, lastUsedAt: t.lastUsedAt, expiresAt: t.expiresAt, revokedAt: t.revokedAt })
    .from(t)
    .innerJoin(a, eq(a.id, t.accountId))
    .where(eq(t.orgId, orgId))
    .orderBy(t.id);
  return rows.map((r) => ({
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
 * (the first revocation time stays, and no event is written).
 */
export async function revokeOrgApiToken(deps: ControlPlaneDeps, orgId: string, tokenId: string, by: Acting): Promise<void> {
  await deps.db.transaction(async (tx) => {
    const { apiTokens: t, accounts: a } = tables(tx);
    const [row] = await tx
      .select({ id: t.id, name: t.name, email: a.email })
      .from(t)
      .innerJoin(a, eq(a.id, t.accountId))
      .where(and(eq(t.orgId, orgId), eq(t.id, tokenId)));
    if (!row) throw new SvcError("not_found", `API token ${tokenId} not found`);
    const [revoked] = await tx
      .update(t)
      .set({ revokedAt: by.at })
      .where(and(eq(t.id, row.id), isNull(t.revokedAt)))
      .returning({ id: t.id });
    if (!revoked) return;
    await recordChange(tx, by, {
      orgId,
      action: "api_token.revoke",
      target: { type: "api_token", id: row.id, name: row.name },
      before: { revoked_at: null, account_email: row.email },
      after: { revoked_at: isoOrNull(by.at) },
    });
  });
}
