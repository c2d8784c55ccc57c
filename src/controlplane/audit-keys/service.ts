// Customer audit-encryption keys (spec §2 "Audit-encryption key", §3): age X25519 recipients
// the runtimes encrypt call content to. The private identity never reaches the service.
// Disabling is permanent; a disabled key stays listed so old records still name it.
import { and, asc, count, eq } from "drizzle-orm";
import { recipientProblem } from "../../contract/age-recipient.ts";
import { SvcError } from "../../contract/errors.ts";
import { newId } from "../../contract/ids.ts";
import { type Db, schema } from "../db/index.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { bumpRevision } from "../organizations/service.ts";

export type AuditKeyRow = typeof schema.auditKeys.$inferSelect;

export type AuditKeyView = {
  id: string;
  name: string;
  public_key: string;
  status: "active" | "disabled";
  created_at: string;
  disabled_at: string | null;
};

export function keyView(row: AuditKeyRow): AuditKeyView {
  return {
    id: row.id,
    name: row.name,
    public_key: row.publicKey,
    status: row.status,
    created_at: new Date(row.createdAt).toISOString(),
    disabled_at: row.disabledAt === null ? null : new Date(row.disabledAt).toISOString(),
  };
}

export function listKeys(db: Db, orgId: string): AuditKeyRow[] {
  return db.select().from(schema.auditKeys).where(eq(schema.auditKeys.orgId, orgId)).orderBy(asc(schema.auditKeys.id)).all();
}

export function getKey(db: Db, orgId: string, id: string): AuditKeyRow {
  const row = db
    .select()
    .from(schema.auditKeys)
    .where(and(eq(schema.auditKeys.orgId, orgId), eq(schema.auditKeys.id, id)))
    .get();
  if (!row) throw new SvcError("not_found", `audit-encryption key ${id} not found`);
  return row;
}

/** Active customer keys, oldest first: the recipients new records are encrypted to. */
export function activeKeys(db: Db, orgId: string): AuditKeyRow[] {
  return db
    .select()
    .from(schema.auditKeys)
    .where(and(eq(schema.auditKeys.orgId, orgId), eq(schema.auditKeys.status, "active")))
    .orderBy(asc(schema.auditKeys.id))
    .all();
}

export function activeKeyCount(db: Db, orgId: string): number {
  return (
    db
      .select({ n: count() })
      .from(schema.auditKeys)
      .where(and(eq(schema.auditKeys.orgId, orgId), eq(schema.auditKeys.status, "active")))
      .get()?.n ?? 0
  );
}

/**
 * Registers a customer key. The public key must parse as an age X25519 recipient. A public
 * key registered before (even disabled) is refused: re-registering it would re-enable a
 * disabled key, and disabling is permanent.
 */
export function createKey(deps: ControlPlaneDeps, orgId: string, input: { name: string; publicKey: string }): AuditKeyRow {
  const name = input.name.trim();
  if (!name) throw new SvcError("validation_failed", "the key needs a name");
  const publicKey = input.publicKey.trim();
  const problem = recipientProblem(publicKey);
  if (problem) throw new SvcError("invalid_recipient", problem);
  const id = newId("auditKey", deps.now());
  deps.db.transaction((tx) => {
    const same = tx
      .select({ id: schema.auditKeys.id, status: schema.auditKeys.status })
      .from(schema.auditKeys)
      .where(and(eq(schema.auditKeys.orgId, orgId), eq(schema.auditKeys.publicKey, publicKey)))
      .get();
    if (same) {
      throw new SvcError(
        "conflict",
        same.status === "active"
          ? `this public key is already registered as ${same.id}`
          : `this public key was registered as ${same.id} and disabled; disabling is permanent, generate a new identity with \`svc audit keys create\``,
      );
    }
    tx.insert(schema.auditKeys).values({ id, orgId, name, publicKey, status: "active", createdAt: deps.now() }).run();
    bumpRevision(tx, orgId);
  });
  return getKey(deps.db, orgId, id);
}

/** Disables a key for good: new records are no longer encrypted to it; old ones keep naming it. */
export function disableKey(deps: ControlPlaneDeps, orgId: string, id: string): AuditKeyRow {
  deps.db.transaction((tx) => {
    const k = schema.auditKeys;
    const changed = tx
      .update(k)
      .set({ status: "disabled", disabledAt: deps.now() })
      .where(and(eq(k.orgId, orgId), eq(k.id, id), eq(k.status, "active")))
      .returning({ id: k.id })
      .all();
    if (changed.length === 0) {
      const row = getKey(tx as unknown as Db, orgId, id);
      if (row.status === "disabled") {
        throw new SvcError("key_disabled", `audit-encryption key ${id} was already disabled at ${new Date(row.disabledAt ?? 0).toISOString()}; disabling is permanent`);
      }
    }
    bumpRevision(tx, orgId);
  });
  return getKey(deps.db, orgId, id);
}
