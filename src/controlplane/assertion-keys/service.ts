// The organization's identity-assertion signing keys (issue 32, docs/mcp.md "Identity at the
// tool"). ES256 key pairs made here; the private half KMS-wrapped at rest like the digest key,
// and handed out only sealed with age to one runtime replica's credential-sync recipient (GET
// runtime/assertion-key), so it is in clear nowhere but this process for a moment and the
// runtime's memory: never in the bundle, the admin API, the admin trail or a log. The public
// halves are the JWKS (unauthenticated, per organization). The newest key not retired is
// current; a rotation retires it and keeps it published until what it signed has expired
// (RETIRED_KEY_PUBLISHED_SECONDS), or withdraws it at once.
import { Encrypter } from "age-encryption";
import { and, asc, desc, eq, isNull } from "drizzle-orm";
import { exportJWK, generateKeyPair } from "jose";
import { ASSERTION_ALG, type AssertionJwks, type AssertionKeyMaterial, type AssertionPublicJwk, RETIRED_KEY_PUBLISHED_SECONDS } from "../../contract/identity-assertion.ts";
import { SvcError } from "../../contract/errors.ts";
import { newId } from "../../contract/ids.ts";
import type { Principal } from "../auth/principal.ts";
import { type Db, type Tables, tables } from "../db/index.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { recordKeyRotation } from "../organizations/key-rotation.ts";
import { replicasOf } from "../installations/replicas.ts";

export const ROTATE_ACTION = "assertion_key.rotate";

type KeyRow = Tables["assertionKeys"]["$inferSelect"];
type NewKey = { id: string; orgId: string; publicJwk: AssertionPublicJwk; privateWrapped: string };

function wrapContext(orgId: string, keyId: string): string {
  return `assertion-key:${orgId}:${keyId}`;
}

/** A fresh key pair, the private half wrapped: made outside any transaction (KMS and key generation stay out of SQLite's writer). */
export async function newAssertionKey(deps: Pick<ControlPlaneDeps, "kms" | "now">, orgId: string): Promise<NewKey> {
  const id = newId("assertionKey", deps.now());
  const { publicKey, privateKey } = await generateKeyPair(ASSERTION_ALG, { extractable: true });
  const pub = await exportJWK(publicKey);
  const priv = { ...(await exportJWK(privateKey)), kid: id, alg: ASSERTION_ALG };
  const publicJwk: AssertionPublicJwk = { kty: "EC", crv: "P-256", x: pub.x!, y: pub.y!, kid: id, alg: ASSERTION_ALG, use: "sig" };
  return { id, orgId, publicJwk, privateWrapped: deps.kms.wrap(new TextEncoder().encode(JSON.stringify(priv)), wrapContext(orgId, id)) };
}

async function current(db: Db, orgId: string): Promise<KeyRow | null> {
  const k = tables(db).assertionKeys;
  const [row] = await db
    .select()
    .from(k)
    .where(and(eq(k.orgId, orgId), isNull(k.retiredAt)))
    .orderBy(desc(k.id))
    .limit(1);
  return row ?? null;
}

/** The current key's id (the bundle carries it when a server asks for assertions); null when the organization has none yet. */
export async function currentAssertionKeyId(db: Db, orgId: string): Promise<string | null> {
  return (await current(db, orgId))?.id ?? null;
}

/**
 * Makes the organization's first key when it has none (a server asking for assertions is
 * created or changed). Two concurrent first calls may both make one: the newer is current and
 * both are published, which verifies either way.
 */
export async function ensureAssertionKey(deps: ControlPlaneDeps, orgId: string): Promise<void> {
  if (await current(deps.db, orgId)) return;
  const key = await newAssertionKey(deps, orgId);
  await deps.db.insert(tables(deps.db).assertionKeys).values(key);
}

/**
 * The current key for one replica of the caller's installation: the private JWK sealed with age
 * to the credential-sync recipient that replica registered at bootstrap. A replica this
 * installation never bootstrapped gets 409, as a heartbeat does.
 */
export async function assertionKeyForReplica(deps: ControlPlaneDeps, caller: { orgId: string; installationId: string }, replicaId: string | null): Promise<AssertionKeyMaterial> {
  if (!replicaId)
    throw new SvcError("validation_failed", "GET assertion-key needs the x-svc-replica header naming a bootstrapped replica", { errors: [{ path: "/x-svc-replica", message: "required" }] });
  const replica = (await replicasOf(deps.db, caller.installationId)).find((r) => r.id === replicaId);
  if (!replica) throw new SvcError("conflict", `replica ${replicaId} is not bootstrapped under this installation; bootstrap first`);
  const row = await current(deps.db, caller.orgId);
  if (!row) throw new SvcError("not_found", "this organization has no identity-assertion key yet: no tool server asks for assertions");
  const e = new Encrypter();
  e.addRecipient(replica.credentialSyncRecipient);
  const sealed = await e.encrypt(deps.kms.unwrap(row.privateWrapped, wrapContext(caller.orgId, row.id)));
  return { id: row.id, alg: ASSERTION_ALG, issuer: deps.config.publicUrl, sealed_private_jwk: Buffer.from(sealed).toString("base64") };
}

/** Whether a key is in the JWKS at `now` (pure): not withdrawn, and current or retired less than the published window ago. */
export function isPublished(k: Pick<KeyRow, "retiredAt" | "withdrawnAt">, now: number): boolean {
  if (k.withdrawnAt !== null) return false;
  return k.retiredAt === null || now < k.retiredAt + RETIRED_KEY_PUBLISHED_SECONDS * 1000;
}

/** The organization's JWKS: the keys a verifier should accept now, newest first. An unknown organization has none (never a 404 that tells ids apart). */
export async function publishedJwks(deps: ControlPlaneDeps, orgId: string): Promise<AssertionJwks> {
  const k = tables(deps.db).assertionKeys;
  const rows = await deps.db.select({ publicJwk: k.publicJwk, retiredAt: k.retiredAt, withdrawnAt: k.withdrawnAt }).from(k).where(eq(k.orgId, orgId)).orderBy(desc(k.id));
  const now = deps.now();
  return { keys: rows.filter((r) => isPublished(r, now)).map((r) => r.publicJwk as AssertionPublicJwk) };
}

export type AssertionKeyView = { id: string; status: "current" | "retired" | "withdrawn" | "expired"; created_at: string; retired_at: string | null; published_until: string | null };

/** A key as admins see it (pure): never its private half. */
export function assertionKeyView(r: Pick<KeyRow, "id" | "createdAt" | "retiredAt" | "withdrawnAt">, now: number): AssertionKeyView {
  const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
  const until = r.withdrawnAt ?? (r.retiredAt === null ? null : r.retiredAt + RETIRED_KEY_PUBLISHED_SECONDS * 1000);
  const status = r.retiredAt === null ? "current" : r.withdrawnAt !== null ? "withdrawn" : isPublished(r, now) ? "retired" : "expired";
  return { id: r.id, status, created_at: new Date(r.createdAt).toISOString(), retired_at: iso(r.retiredAt), published_until: iso(until) };
}

export async function listAssertionKeys(deps: ControlPlaneDeps, orgId: string): Promise<AssertionKeyView[]> {
  const k = tables(deps.db).assertionKeys;
  const rows = await deps.db.select({ id: k.id, createdAt: k.createdAt, retiredAt: k.retiredAt, withdrawnAt: k.withdrawnAt }).from(k).where(eq(k.orgId, orgId)).orderBy(asc(k.id));
  const now = deps.now();
  return rows.map((r) => assertionKeyView(r, now));
}

/**
 * Makes a new current key and retires the previous one: kept in the JWKS until what it signed
 * has expired, or (withdrawPrevious) taken out at once, for a key thought exposed: assertions
 * it signed are refused from then on, so calls signed before the runtimes switch fail too.
 * The revision bump makes every runtime's next poll fetch the new key. The admin event (high)
 * names the ids, never key material.
 */
export async function rotateAssertionKey(deps: ControlPlaneDeps, by: Principal, o: { withdrawPrevious: boolean }): Promise<{ key: AssertionKeyView; retired: AssertionKeyView | null }> {
  const key = await newAssertionKey(deps, by.orgId);
  const at = deps.now();
  const retiredId = await deps.db.transaction(async (tx) => {
    const k = tables(tx).assertionKeys;
    const before = await current(tx, by.orgId);
    await tx
      .update(k)
      .set({ retiredAt: at, ...(o.withdrawPrevious ? { withdrawnAt: at } : {}) })
      .where(and(eq(k.orgId, by.orgId), isNull(k.retiredAt)));
    await tx.insert(k).values(key);
    const previous = before?.id ?? null;
    await recordKeyRotation(
      tx,
      by,
      {
        action: ROTATE_ACTION,
        targetType: "assertion_key",
        current: key.id,
        previous,
        after: { previous: before ? (o.withdrawPrevious ? "withdrawn" : "published until expiry") : null },
        reason: `${by.email} rotated the identity-assertion key: ${previous ?? "(none)"} ${o.withdrawPrevious ? "withdrawn" : "retired"}, ${key.id} current`,
      },
      at,
    );
    return previous;
  });
  const keys = await listAssertionKeys(deps, by.orgId);
  return { key: keys.find((k) => k.id === key.id)!, retired: keys.find((k) => k.id === retiredId) ?? null };
}
