// The organization's audit digest keys (docs/digest-key.md): HMAC-SHA-256 keys, KMS-wrapped,
// one per organization at a time. The newest is current: bootstrap and GET digest-key hand it
// to the runtimes, and every bundle names its id so a proxy holding another fetches it. A
// rotation adds a new key and keeps the old ones (records name their key id, and grouping by
// digest works within one key id); the material never leaves this module but to a runtime.
import { randomBytes } from "node:crypto";
import { asc, desc, eq } from "drizzle-orm";
import type { DigestKey } from "../../contract/admin-api.ts";
import { SvcError } from "../../contract/errors.ts";
import { newId } from "../../contract/ids.ts";
import type { Principal } from "../auth/principal.ts";
import { type Db, tables } from "../db/index.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { recordKeyRotation } from "./key-rotation.ts";

export const ROTATE_ACTION = "digest_key.rotate";

type NewKey = { id: string; orgId: string; wrapped: string; createdAt: number };

function digestKeyContext(orgId: string, keyId: string): string {
  return `digest-key:${orgId}:${keyId}`;
}

/** 32 fresh random bytes, wrapped: made outside any transaction (KMS work stays out of SQLite's writer). */
export function newDigestKey(deps: Pick<ControlPlaneDeps, "kms" | "now">, orgId: string): NewKey {
  const now = deps.now();
  const id = newId("digestKey", now);
  return { id, orgId, wrapped: deps.kms.wrap(randomBytes(32), digestKeyContext(orgId, id)), createdAt: now };
}

export async function storeDigestKey(tx: Db, key: NewKey): Promise<void> {
  await tx.insert(tables(tx).digestKeys).values(key);
}

/** The current key's id (the bundle carries it); null when the organization has none. */
export async function currentDigestKeyId(db: Db, orgId: string): Promise<string | null> {
  const d = tables(db).digestKeys;
  const [row] = await db.select({ id: d.id }).from(d).where(eq(d.orgId, orgId)).orderBy(desc(d.id)).limit(1);
  return row?.id ?? null;
}

/** The current key, unwrapped: handed to the organization's runtimes (bootstrap, GET digest-key). */
export async function currentDigestKey(deps: ControlPlaneDeps, orgId: string): Promise<{ id: string; key: Uint8Array }> {
  const d = tables(deps.db).digestKeys;
  const [row] = await deps.db.select().from(d).where(eq(d.orgId, orgId)).orderBy(desc(d.id)).limit(1);
  if (!row) throw new SvcError("internal", `organization ${orgId} has no digest key`);
  return { id: row.id, key: deps.kms.unwrap(row.wrapped, digestKeyContext(orgId, row.id)) };
}

/** Every key of the organization, oldest first, as admins see them (pure over the rows). */
export function digestKeyViews(rows: { id: string; createdAt: number }[]): DigestKey[] {
  return rows.map((r, i) => {
    const next = rows[i + 1];
    return { id: r.id, status: next ? "retired" : "current", created_at: new Date(r.createdAt).toISOString(), retired_at: next ? new Date(next.createdAt).toISOString() : null };
  });
}

export async function listDigestKeys(db: Db, orgId: string): Promise<DigestKey[]> {
  const d = tables(db).digestKeys;
  return digestKeyViews(await db.select({ id: d.id, createdAt: d.createdAt }).from(d).where(eq(d.orgId, orgId)).orderBy(asc(d.id)));
}

export async function getDigestKey(db: Db, orgId: string, id: string): Promise<DigestKey> {
  const key = (await listDigestKeys(db, orgId)).find((k) => k.id === id);
  if (!key) throw new SvcError("not_found", `digest key ${id} not found in this organization; list them with \`svc audit digest-key list\``);
  return key;
}

/**
 * Makes a new current key. The revision bump in the same transaction (recordKeyRotation) makes
 * every runtime's next bundle poll name the new id, so each proxy fetches the key and stops using
 * the old one; the admin event (severity high) names both ids, never material.
 */
export async function rotateDigestKey(deps: ControlPlaneDeps, by: Principal): Promise<{ key: DigestKey; retired: DigestKey }> {
  const key = newDigestKey(deps, by.orgId);
  await deps.db.transaction(async (tx) => {
    const d = tables(tx).digestKeys;
    const [before] = await tx.select({ id: d.id }).from(d).where(eq(d.orgId, by.orgId)).orderBy(desc(d.id)).limit(1);
    await storeDigestKey(tx, key);
    const previous = before?.id ?? null;
    await recordKeyRotation(
      tx,
      by,
      { action: ROTATE_ACTION, targetType: "digest_key", current: key.id, previous, reason: `${by.email} rotated the audit digest key: ${previous ?? "(none)"} retired, ${key.id} current` },
      key.createdAt,
    );
  });
  const keys = await listDigestKeys(deps.db, by.orgId);
  const at = keys.findIndex((k) => k.id === key.id);
  // A concurrent rotation may have made a newer key meanwhile: this one is then retired too.
  return { key: keys[at]!, retired: keys[at - 1] ?? keys[at]! };
}
