// Each organization's Ed25519 checkpoint-signing key. The private key is stored only wrapped
// by the KMS (context names the organization), so whoever can write the database cannot sign.
// The public key the control plane serves and signs with is always DERIVED from that private
// key, never read from the stored `public_key` column: a key swapped in that column changes
// nothing, and verifiers pin the derived key outside the store (bootstrap prints it).
// Rotation (`svc audit signing-key rotate`) hands over in one transaction: the admin event,
// then a checkpoint signed by the OLD key that names the new one (`next_key`), then the new key
// stored; verifiers holding the old pin follow that hand-over and pin the new key.
import { createPrivateKey, createPublicKey, generateKeyPairSync, type KeyObject } from "node:crypto";
import { eq } from "drizzle-orm";
import { keyFingerprint, publicKeyText } from "../../contract/audit-chain.ts";
import { type Db, tables } from "../db/index.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import type { Kms } from "../kms/index.ts";

const keyContext = (orgId: string) => `audit-checkpoint-key:${orgId}`;

export type SigningKey = { publicKey: string; privateKey: KeyObject; createdAt: number; wrapped: string };

/** Unwrapped keys by wrapped text: a GET of the checkpoints need not unwrap each time. */
const unwrapped = new Map<string, KeyObject>();

function unwrapKey(kms: Kms, orgId: string, wrapped: string): KeyObject {
  const cacheKey = `${kms.keyId}:${orgId}:${wrapped}`;
  let key = unwrapped.get(cacheKey);
  if (!key) {
    key = createPrivateKey({ key: Buffer.from(kms.unwrap(wrapped, keyContext(orgId))), format: "der", type: "pkcs8" });
    if (unwrapped.size > 1000) unwrapped.clear();
    unwrapped.set(cacheKey, key);
  }
  return key;
}

/**
 * The public keys this process derived from each organization's private key, newest last (a few:
 * runs signed before a rotation still verify). What verification-seal.ts checks a run's
 * signature against when no KMS is at hand (budgets read it with a store handle only).
 */
const derived = new Map<string, KeyObject[]>();

function noteDerived(orgId: string, publicKey: KeyObject): void {
  const keys = (derived.get(orgId) ?? []).filter((k) => !k.equals(publicKey));
  keys.push(publicKey);
  if (derived.size > 10_000) derived.clear();
  derived.set(orgId, keys.slice(-4));
}

/** The organization's public keys this process has derived (empty before the first use of its key). */
export function derivedPublicKeys(orgId: string): readonly KeyObject[] {
  return derived.get(orgId) ?? [];
}

/** A new key pair, the private half wrapped for the organization (KMS work: outside a transaction). */
export function newSigningKey(kms: Kms, orgId: string): { publicKey: string; wrapped: string } {
  const pair = generateKeyPairSync("ed25519");
  return { publicKey: publicKeyText(pair.publicKey), wrapped: kms.wrap(new Uint8Array(pair.privateKey.export({ format: "der", type: "pkcs8" })), keyContext(orgId)) };
}

/** The organization's key as stored now (in `db`, a transaction's too), or null before the first. */
export async function currentSigningKey(db: Db, kms: Kms, orgId: string, log?: ControlPlaneDeps["log"]): Promise<SigningKey | null> {
  const k = tables(db).auditSigningKeys;
  const [row] = await db.select().from(k).where(eq(k.orgId, orgId));
  if (!row) return null;
  const privateKey = unwrapKey(kms, orgId, row.wrappedPrivateKey);
  const publicObject = createPublicKey(privateKey);
  noteDerived(orgId, publicObject);
  const publicKey = publicKeyText(publicObject);
  if (publicKey !== row.publicKey) log?.error("audit signing key: the stored public key is not the private key's; the private key's is used", { org_id: orgId });
  return { publicKey, privateKey, createdAt: row.createdAt, wrapped: row.wrappedPrivateKey };
}

/** The organization's key, made (and stored wrapped) the first time. Bootstrap calls it, so the key exists to be printed. */
export async function ensureSigningKey(deps: ControlPlaneDeps, orgId: string): Promise<SigningKey> {
  const existing = await currentSigningKey(deps.db, deps.kms, orgId, deps.log);
  if (existing) return existing;
  const made = newSigningKey(deps.kms, orgId);
  const k = tables(deps.db).auditSigningKeys;
  await deps.db.insert(k).values({ orgId, publicKey: made.publicKey, wrappedPrivateKey: made.wrapped }).onConflictDoNothing({ target: k.orgId });
  // Another replica may have made one first: use whichever was stored.
  return (await currentSigningKey(deps.db, deps.kms, orgId, deps.log))!;
}

/** Replaces the stored key in the caller's transaction (the rotation's last step). */
export async function storeSigningKey(tx: Db, orgId: string, key: { publicKey: string; wrapped: string }, now: number): Promise<void> {
  const k = tables(tx).auditSigningKeys;
  await tx.update(k).set({ publicKey: key.publicKey, wrappedPrivateKey: key.wrapped, createdAt: now }).where(eq(k.orgId, orgId));
}

export const fingerprintOf = keyFingerprint;
