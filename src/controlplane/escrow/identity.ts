// The escrow identity (issue 36 item 1: it lived in organizations/settings.ts): the service's
// own age X25519 identity per organization, added next to the customer keys while escrow is on
// so the service could decrypt records if a customer loses its identities. It is generated on
// first enable and kept wrapped by the KMS under the context `escrow:<orgId>`; this module owns
// the escrow_keys table. The switch itself (escrow_enabled) is an organization setting
// (organizations/settings.ts), which calls newEscrowIdentity and storeEscrowKey here.
import { generateX25519Identity, identityToRecipient } from "age-encryption";
import { eq } from "drizzle-orm";
import { newId } from "../../contract/ids.ts";
import { activeKeyCount } from "../audit-keys/service.ts";
import { type Db, tables } from "../db/index.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { getOrganization } from "../organizations/service.ts";

export function escrowContext(orgId: string): string {
  return `escrow:${orgId}`;
}

/** The stored escrow key, or undefined before escrow was first enabled. */
export async function escrowKeyRow(db: Db, orgId: string) {
  const e = tables(db).escrowKeys;
  const [row] = await db.select().from(e).where(eq(e.orgId, orgId));
  return row;
}

/** The escrow recipient while escrow is switched on (whatever the customer keys); null otherwise. */
export async function enabledEscrowRecipient(db: Db, orgId: string): Promise<{ id: string; recipient: string } | null> {
  // The switch is the organization's (read through its service); the key is ours.
  if (!(await getOrganization(db, orgId)).escrowEnabled) return null;
  const row = await escrowKeyRow(db, orgId);
  return row ? { id: row.id, recipient: row.recipient } : null;
}

/** The escrow key as the keys list shows it: active only while records are encrypted to it (escrow on and a customer key active). */
export type EscrowKeySummary = { id: string; recipient: string; createdAt: number; active: boolean; enabled: boolean };

/**
 * The escrow key as `svc audit keys list` shows it (issue 15): its id (the one records name in
 * recipient_key_ids), recipient and whether new records are encrypted to it now; null before
 * escrow was first enabled.
 */
export async function escrowKeySummary(db: Db, orgId: string): Promise<EscrowKeySummary | null> {
  const row = await escrowKeyRow(db, orgId);
  if (!row) return null;
  const enabled = (await getOrganization(db, orgId)).escrowEnabled;
  const active = enabled && (await activeKeyCount(db, orgId)) > 0;
  return { id: row.id, recipient: row.recipient, createdAt: row.createdAt, active, enabled };
}

/** The escrow identity, unwrapped (for a recovery tool; never sent over the API). */
export async function escrowIdentity(deps: ControlPlaneDeps, orgId: string): Promise<string | null> {
  const row = await escrowKeyRow(deps.db, orgId);
  return row ? new TextDecoder().decode(deps.kms.unwrap(row.wrappedIdentity, escrowContext(orgId))) : null;
}

/** A fresh identity, wrapped by the KMS: made before the transaction that stores it (storeEscrowKey). */
export async function newEscrowIdentity(deps: ControlPlaneDeps, orgId: string): Promise<{ recipient: string; wrappedIdentity: string }> {
  const identity = await generateX25519Identity();
  return { recipient: await identityToRecipient(identity), wrappedIdentity: deps.kms.wrap(new TextEncoder().encode(identity), escrowContext(orgId)) };
}

/** Stores the organization's escrow key; if another request stored one first, that one is kept. */
export async function storeEscrowKey(tx: Db, deps: ControlPlaneDeps, orgId: string, fresh: { recipient: string; wrappedIdentity: string }): Promise<void> {
  await tx
    .insert(tables(tx).escrowKeys)
    .values({ id: newId("auditKey", deps.now()), orgId, recipient: fresh.recipient, wrappedIdentity: fresh.wrappedIdentity, createdAt: deps.now() })
    .onConflictDoNothing();
}
