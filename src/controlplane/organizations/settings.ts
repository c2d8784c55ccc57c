// Organization settings (GET/PATCH /organizations/{org}/settings): the escrow switch and the
// audit retention period. Escrow may be on only while at least one customer key is active
// (spec §3, §8); its identity is escrow/'s (escrow/identity.ts), made on first enable.
import { Settings } from "../../contract/admin-api.ts";
import { eq, isNotNull } from "drizzle-orm";
import { Elysia, t } from "elysia";
import { SvcError } from "../../contract/errors.ts";
import { activeKeyCount } from "../audit-keys/service.ts";
import { type Acting, acting, recordChange } from "../audit/admin-events.ts";
import { authPlugin } from "../auth/plugin.ts";
import { type Db, tables } from "../db/index.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { escrowKeyRow, newEscrowIdentity, storeEscrowKey } from "../escrow/identity.ts";
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
  const fresh = enable && !(await escrowKeyRow(deps.db, orgId)) ? await newEscrowIdentity(deps, orgId) : null;
  await deps.db.transaction(async (tx) => {
    const t = tables(tx);
    const org = await getOrganization(tx, orgId);
    const before = { escrow_enabled: org.escrowEnabled, audit_retention_days: org.auditRetentionDays ?? null };
    const after = { escrow_enabled: enable ?? org.escrowEnabled, audit_retention_days: days === undefined ? before.audit_retention_days : days };
    if (after.audit_retention_days !== before.audit_retention_days) await tx.update(t.organizations).set({ auditRetentionDays: after.audit_retention_days }).where(eq(t.organizations.id, orgId));
    if (after.escrow_enabled !== before.escrow_enabled) await switchEscrow(tx, deps, orgId, after.escrow_enabled, fresh);
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
    if (fresh) await storeEscrowKey(tx, deps, orgId, fresh);
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
