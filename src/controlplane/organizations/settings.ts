// Organization settings (GET/PATCH /organizations/{org}/settings) and the escrow service.
// Escrow adds the service's own age X25519 recipient next to the customer keys, so the
// service could decrypt records if a customer loses its identities. It may be on only
// while at least one customer key is active (spec §3, §8); its identity is generated on
// first enable and kept wrapped by the KMS under the context `escrow:<orgId>`.
import { Settings } from "../../contract/admin-api.ts";
import { generateX25519Identity, identityToRecipient } from "age-encryption";
import { eq, isNotNull } from "drizzle-orm";
import { Elysia, t } from "elysia";
import { SvcError } from "../../contract/errors.ts";
import { newId } from "../../contract/ids.ts";
import { activeKeyCount } from "../audit-keys/service.ts";
import { type Acting, acting, recordChange } from "../audit/admin-events.ts";
import { authPlugin } from "../auth/plugin.ts";
import { type Db, tables } from "../db/index.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { bumpRevision, getOrganization } from "./service.ts";

export const RETENTION_MAX_DAYS = 36_500;

/** The answer of GET/PATCH …/settings, declared in the contract. */
export const OrganizationSettings = Settings;
export type OrganizationSettings = Settings;

export const SettingsPatch = t.Object(
  {
    escrow_enabled: t.Optional(t.Boolean()),
    audit_retention_days: t.Optional(t.Union([t.Integer({ minimum: 1, maximum: RETENTION_MAX_DAYS }), t.Null()], { description: "days to keep audit records (1–36500), or null to keep them all" })),
  },
  { additionalProperties: false },
);

export function escrowContext(orgId: string): string {
  return `escrow:${orgId}`;
}

async function escrowKeyRow(db: Db, orgId: string) {
  const e = tables(db).escrowKeys;
  const [row] = await db.select().from(e).where(eq(e.orgId, orgId));
  return row;
}

/** The escrow recipient while escrow is switched on (whatever the customer keys); null otherwise. */
export async function enabledEscrowRecipient(db: Db, orgId: string): Promise<{ id: string; recipient: string } | null> {
  const { organizations: o, escrowKeys: e } = tables(db);
  const [row] = await db
    .select({ enabled: o.escrowEnabled, id: e.id, recipient: e.recipient })
    .from(o)
    .leftJoin(e, eq(e.orgId, o.id))
    .where(eq(o.id, orgId));
  if (!row?.enabled || !row.id || !row.recipient) return null;
  return { id: row.id, recipient: row.recipient };
}

/**
 * The escrow key as `svc audit keys list` shows it (issue 15): its id (the one records name in
 * recipient_key_ids), recipient and whether new records are encrypted to it now; null before
 * escrow was first enabled.
 */
export async function escrowKeySummary(db: Db, orgId: string): Promise<EscrowKeySummary | null> {
  const row = await escrowKeyRow(db, orgId);
  if (!row) return null;
  const { escrow_active, escrow_enabled } = await getSettings(db, orgId);
  return { id: row.id, recipient: row.recipient, createdAt: row.createdAt, active: escrow_active, enabled: escrow_enabled };
}

/** The escrow key as the keys list shows it: active only while records are encrypted to it (escrow on and a customer key active). */
export type EscrowKeySummary = { id: string; recipient: string; createdAt: number; active: boolean; enabled: boolean };

export async function getSettings(db: Db, orgId: string): Promise<OrganizationSettings> {
  const org = await getOrganization(db, orgId);
  const escrow = await escrowKeyRow(db, orgId);
  return {
    escrow_enabled: org.escrowEnabled,
    audit_retention_days: org.auditRetentionDays ?? null,
    escrow_recipient: escrow?.recipient ?? null,
    escrow_active: org.escrowEnabled && escrow !== undefined && (await activeKeyCount(db, orgId)) > 0,
  };
}

/** The escrow identity, unwrapped (for a recovery tool; never sent over the API). */
export async function escrowIdentity(deps: ControlPlaneDeps, orgId: string): Promise<string | null> {
  const row = await escrowKeyRow(deps.db, orgId);
  return row ? new TextDecoder().decode(deps.kms.unwrap(row.wrappedIdentity, escrowContext(orgId))) : null;
}

/**
 * Switches escrow on or off. Enabling needs an active customer key (409 escrow_requires_key)
 * and creates the escrow identity the first time. The identity is generated before the
 * transaction; if another request stored one first, that one is kept.
 */
export async function updateSettings(deps: ControlPlaneDeps, orgId: string, patch: { escrow_enabled?: boolean; audit_retention_days?: number | null }, by: Acting): Promise<OrganizationSettings> {
  await getOrganization(deps.db, orgId);
  const days = patch.audit_retention_days;
  if (days !== undefined && days !== null && (!Number.isInteger(days) || days < 1 || days > RETENTION_MAX_DAYS)) {
    throw new SvcError("validation_failed", `audit_retention_days must be a whole number of days from 1 to ${RETENTION_MAX_DAYS}, or null`);
  }
  const enable = patch.escrow_enabled;
  let fresh: { identity: string; recipient: string } | null = null;
  if (enable && !(await escrowKeyRow(deps.db, orgId))) {
    const identity = await generateX25519Identity();
    fresh = { identity, recipient: await identityToRecipient(identity) };
  }
  const wrappedIdentity = fresh ? deps.kms.wrap(new TextEncoder().encode(fresh.identity), escrowContext(orgId)) : null;
  await deps.db.transaction(async (tx) => {
    const t = tables(tx);
    const org = await getOrganization(tx, orgId);
    const before = { escrow_enabled: org.escrowEnabled, audit_retention_days: org.auditRetentionDays ?? null };
    const after = { escrow_enabled: enable ?? org.escrowEnabled, audit_retention_days: days === undefined ? before.audit_retention_days : days };
    if (after.audit_retention_days !== before.audit_retention_days) await tx.update(t.organizations).set({ auditRetentionDays: after.audit_retention_days }).where(eq(t.organizations.id, orgId));
    if (after.escrow_enabled !== before.escrow_enabled) await switchEscrow(tx, deps, orgId, after.escrow_enabled, fresh && wrappedIdentity ? { recipient: fresh.recipient, wrappedIdentity } : null);
    // Only what changed is told; a patch that changes nothing writes no event.
    const changed = (Object.keys(after) as (keyof typeof after)[]).filter((k) => after[k] !== before[k]);
    if (changed.length === 0) return;
    await recordChange(tx, by, {
      orgId,
      action: "settings.update",
      target: { type: "organization", id: orgId, name: org.name },
      before: Object.fromEntries(changed.map((k) => [k, before[k]])),
      after: Object.fromEntries(changed.map((k) => [k, after[k]])),
      // The escrow switch decides whether the service can read arguments: high.
      severity: changed.includes("escrow_enabled") ? "high" : "notice",
    });
  });
  return getSettings(deps.db, orgId);
}

/** Turns escrow on (needs an active customer key; stores the fresh identity the first time) or off. */
async function switchEscrow(tx: Db, deps: ControlPlaneDeps, orgId: string, enable: boolean, fresh: { recipient: string; wrappedIdentity: string } | null): Promise<void> {
  const t = tables(tx);
  if (enable) {
    if ((await activeKeyCount(tx, orgId)) === 0) {
      throw new SvcError("escrow_requires_key", "escrow can be enabled only while at least one customer audit-encryption key is active; register one first (`svc audit keys create`)");
    }
    if (fresh) {
      await tx
        .insert(t.escrowKeys)
        .values({ id: newId("auditKey", deps.now()), orgId, recipient: fresh.recipient, wrappedIdentity: fresh.wrappedIdentity, createdAt: deps.now() })
        .onConflictDoNothing();
    }
  }
  await tx.update(t.organizations).set({ escrowEnabled: enable }).where(eq(t.organizations.id, orgId));
  await bumpRevision(tx, orgId);
}

/** Organizations with an audit retention period (audit/retention.ts runs for these). */
export async function retentionOrganizations(db: Db): Promise<string[]> {
  const o = tables(db).organizations;
  return (await db.select({ id: o.id }).from(o).where(isNotNull(o.auditRetentionDays))).map((r) => r.id);
}

export function settingsRoutes(deps: ControlPlaneDeps) {
  return new Elysia({ name: "settings-routes", prefix: "/organizations/:org" })
    .use(authPlugin(deps))
    .get("/settings", async ({ principal }) => getSettings(deps.db, principal.orgId), {
      admin: true,
      response: OrganizationSettings,
      detail: { summary: "Organization settings (the escrow switch)", tags: ["settings"] },
    })
    .patch("/settings", async ({ principal, body }) => updateSettings(deps, principal.orgId, body, acting(deps, principal)), {
      admin: true,
      body: SettingsPatch,
      response: OrganizationSettings,
      detail: { summary: "Change settings: escrow (enabling needs an active customer key) and the audit retention period", tags: ["settings"] },
    });
}
