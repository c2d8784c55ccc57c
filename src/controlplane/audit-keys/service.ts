// Customer audit-encryption keys (spec §2 "Audit-encryption key", §3): age X25519 recipients
// the runtimes encrypt call content to. The private identity never reaches the service.
// Disabling is permanent; a disabled key stays listed so old records still name it.
import { and, asc, count, eq } from "drizzle-orm";
import { recipientProblem } from "../../contract/age-recipient.ts";
import { SvcError } from "../../contract/errors.ts";
import { newId } from "../../contract/ids.ts";
import { type Acting, actingAsSystem, recordChange } from "../audit/admin-events.ts";
import { type Db, type Tables, tables } from "../db/index.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { bumpRevision } from "../organizations/service.ts";

export type AuditKeyRow = Tables["auditKeys"]["$inferSelect"];

export type AuditKeyView = {
  id: string;
  name: string;
  public_key: string;
  /** The spec's statuses. For the escrow key, "disabled" means no records go to it now; disabled_reason says why and what brings it back. */
  status: "active" | "disabled";
  created_at: string;
  disabled_at: string | null;
  /** Why the service disabled the key itself (an unusable recipient); null when an admin did, or active. */
  disabled_reason: string | null;
  /** customer: the admin holds the identity; escrow: the service holds it, KMS-wrapped (break-glass). */
  kind: "customer" | "escrow";
};

export function keyView(row: AuditKeyRow): AuditKeyView {
  return {
    id: row.id,
    name: row.name,
    public_key: row.publicKey,
    status: row.status,
    created_at: new Date(row.createdAt).toISOString(),
    disabled_at: row.disabledAt === null ? null : new Date(row.disabledAt).toISOString(),
    disabled_reason: row.disabledReason ?? null,
    kind: "customer",
  };
}

/**
 * The escrow key as a key: "active" while records are encrypted to it, otherwise "disabled"
 * with the reason and what brings it back. Unlike a customer key's, its status follows the
 * escrow switch in the settings (spec §3: escrow only while a customer key is active); it is
 * never disabled as a key. Pure.
 */
export function escrowKeyView(e: { id: string; recipient: string; createdAt: number; active: boolean; enabled: boolean }): AuditKeyView {
  const reason = e.active
    ? null
    : e.enabled
      ? "escrow is switched on but no customer key is active (escrow needs one): records go to it again once a customer key is registered"
      : "escrow is switched off in the organization settings: records go to it again once escrow is switched on";
  return {
    id: e.id,
    name: "escrow (service-held, break-glass)",
    public_key: e.recipient,
    status: e.active ? "active" : "disabled",
    created_at: new Date(e.createdAt).toISOString(),
    disabled_at: null,
    disabled_reason: reason,
    kind: "escrow",
  };
}

export async function listKeys(db: Db, orgId: string): Promise<AuditKeyRow[]> {
  const k = tables(db).auditKeys;
  return db.select().from(k).where(eq(k.orgId, orgId)).orderBy(asc(k.id));
}

export async function getKey(db: Db, orgId: string, id: string): Promise<AuditKeyRow> {
  const k = tables(db).auditKeys;
  const [row] = await db
    .select()
    .from(k)
    .where(and(eq(k.orgId, orgId), eq(k.id, id)));
  if (!row) throw new SvcError("not_found", `audit-encryption key ${id} not found`);
  return row;
}

/** Active customer keys, oldest first: the recipients new records are encrypted to. */
export async function activeKeys(db: Db, orgId: string): Promise<AuditKeyRow[]> {
  const k = tables(db).auditKeys;
  return db
    .select()
    .from(k)
    .where(and(eq(k.orgId, orgId), eq(k.status, "active")))
    .orderBy(asc(k.id));
}

export async function activeKeyCount(db: Db, orgId: string): Promise<number> {
  const k = tables(db).auditKeys;
  const [row] = await db
    .select({ n: count() })
    .from(k)
    .where(and(eq(k.orgId, orgId), eq(k.status, "active")));
  return Number(row?.n ?? 0);
}

/**
 * Registers a customer key. The public key must parse as an age X25519 recipient. A public
 * key registered before (even disabled) is refused: re-registering it would re-enable a
 * disabled key, and disabling is permanent. No index makes the public key unique, so the
 * check, the insert and the revision bump are one transaction.
 */
const keyTarget = (row: AuditKeyRow) => ({ type: "audit_key", id: row.id, name: row.name });

export async function createKey(deps: ControlPlaneDeps, orgId: string, input: { name: string; publicKey: string }, by: Acting): Promise<AuditKeyRow> {
  const name = input.name.trim();
  if (!name) throw new SvcError("validation_failed", "the key needs a name");
  const publicKey = input.publicKey.trim();
  const problem = recipientProblem(publicKey);
  if (problem) throw new SvcError("invalid_recipient", problem);
  const id = newId("auditKey", deps.now());
  const createdAt = deps.now();
  return deps.db.transaction(async (tx) => {
    const k = tables(tx).auditKeys;
    const [same] = await tx
      .select({ id: k.id, status: k.status })
      .from(k)
      .where(and(eq(k.orgId, orgId), eq(k.publicKey, publicKey)))
      .limit(1);
    if (same) {
      throw new SvcError(
        "conflict",
        same.status === "active"
          ? `this public key is already registered as ${same.id}`
          : `this public key was registered as ${same.id} and disabled; disabling is permanent, generate a new identity with \`svc audit keys create\``,
      );
    }
    const [created] = await tx.insert(k).values({ id, orgId, name, publicKey, status: "active", createdAt }).returning();
    await bumpRevision(tx, orgId);
    // A public key is no secret: the event names it whole.
    await recordChange(tx, by, { orgId, action: "audit_key.create", target: keyTarget(created!), after: keyView(created!) });
    return created!;
  });
}

/**
 * Disables a key for good: new records are no longer encrypted to it; old ones keep naming it.
 * The update only takes an active key, so of two concurrent disables one wins and the other
 * gets key_disabled. Disabling the last active key leaves escrow switched on but inactive
 * (recipients.ts); the revision bump in the same transaction also makes it conflict with a
 * concurrent escrow enable (organizations/settings.ts), which counts active keys in its own.
 */
export async function disableKey(deps: ControlPlaneDeps, orgId: string, id: string, by: Acting): Promise<AuditKeyRow> {
  const disabledAt = deps.now();
  return deps.db.transaction(async (tx) => {
    const k = tables(tx).auditKeys;
    const [changed] = await tx
      .update(k)
      .set({ status: "disabled", disabledAt })
      .where(and(eq(k.orgId, orgId), eq(k.id, id), eq(k.status, "active")))
      .returning();
    if (!changed) {
      const row = await getKey(tx, orgId, id);
      throw new SvcError("key_disabled", `audit-encryption key ${id} was already disabled at ${new Date(row.disabledAt ?? 0).toISOString()}; disabling is permanent`);
    }
    await bumpRevision(tx, orgId);
    await recordChange(tx, by, {
      orgId,
      action: "audit_key.disable",
      target: keyTarget(changed),
      before: { status: "active" },
      after: { status: changed.status, disabled_at: keyView(changed).disabled_at },
    });
    return changed;
  });
}

/**
 * Keys registered before recipients were checked for low order (or otherwise unusable): every
 * record sealed to one fails, so every governed call of its organization would fail. At
 * control-plane start each such active key is disabled, with the reason kept on the key (the
 * console and `svc audit keys list` show it) and a warning logged; the revision bump sends
 * runtimes a bundle without it. Returns the keys disabled.
 */
export async function disableUnusableKeys(deps: ControlPlaneDeps): Promise<AuditKeyRow[]> {
  const k = tables(deps.db).auditKeys;
  const active = await deps.db.select({ id: k.id, orgId: k.orgId, publicKey: k.publicKey }).from(k).where(eq(k.status, "active"));
  const disabled: AuditKeyRow[] = [];
  for (const key of active) {
    const problem = recipientProblem(key.publicKey);
    if (!problem) continue;
    const reason = `disabled by the service: ${problem}`;
    const disabledAt = deps.now();
    const changed = await deps.db.transaction(async (tx) => {
      const kt = tables(tx).auditKeys;
      const [row] = await tx
        .update(kt)
        .set({ status: "disabled", disabledAt, disabledReason: reason })
        .where(and(eq(kt.id, key.id), eq(kt.status, "active")))
        .returning();
      if (row) {
        await bumpRevision(tx, key.orgId);
        await recordChange(tx, actingAsSystem(deps, "controlplane"), {
          orgId: key.orgId,
          action: "audit_key.disable",
          target: keyTarget(row),
          before: { status: "active" },
          after: { status: row.status, disabled_at: keyView(row).disabled_at, disabled_reason: reason },
        });
      }
      return row;
    });
    if (!changed) continue;
    deps.log.warn("audit-encryption key disabled: no record can be sealed to it", { org: key.orgId, key: key.id, reason: problem });
    disabled.push(changed);
  }
  return disabled;
}
