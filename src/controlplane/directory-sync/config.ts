// Directory sync's configuration for one organization (the client secret KMS-wrapped, never
// returned): set, read, enable and disable, each change with its admin event. Running a sync
// is service.ts.
import { eq } from "drizzle-orm";
import { SvcError } from "../../contract/errors.ts";
import { type Acting, recordChange, secretDigest } from "../audit/admin-events.ts";
import { type Db, type Tables, tables } from "../db/index.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { checkOutboundUrl } from "../http/outbound.ts";
import { DEFAULT_AUTHORITY_URL, DEFAULT_GRAPH_URL } from "./graph.ts";

export const DEFAULT_INTERVAL_SECONDS = 3600;
export const MIN_INTERVAL_SECONDS = 60;
export const MAX_INTERVAL_SECONDS = 7 * 24 * 3600;
const GUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const TENANT_DOMAIN_RE = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)+$/i;

export function secretContext(orgId: string): string {
  return `directory-sync:${orgId}`;
}

export type DirectorySyncInput = {
  tenant_id: string;
  client_id: string;
  app_id: string;
  client_secret?: string | undefined;
  dry_run: boolean;
  create_users: boolean;
  authority_url?: string | undefined;
  graph_url?: string | undefined;
  interval_seconds?: number | undefined;
};

export type ConfigRow = Tables["directorySyncConfigs"]["$inferSelect"];

export function configView(row: ConfigRow) {
  return {
    tenant_id: row.tenantId,
    client_id: row.clientId,
    app_id: row.appId,
    dry_run: row.dryRun,
    create_users: row.createUsers,
    authority_url: row.authorityUrl,
    graph_url: row.graphUrl,
    interval_seconds: row.intervalSeconds,
    enabled: row.enabled,
    has_client_secret: true,
    updated_at: new Date(row.updatedAt).toISOString(),
  };
}
export type DirectorySyncConfigView = ReturnType<typeof configView>;

function baseUrl(field: string, value: string): string {
  let u: URL;
  try {
    u = new URL(value);
  } catch {
    throw new SvcError("validation_failed", `${field} "${value}" is not a URL`);
  }
  if (u.protocol !== "https:") throw new SvcError("validation_failed", `${field} must use https`);
  if (u.username || u.password || u.search || u.hash) throw new SvcError("validation_failed", `${field} must not carry credentials, a query or a fragment`);
  return value.replace(/\/+$/, "");
}

export async function getConfig(db: Db, orgId: string): Promise<ConfigRow | undefined> {
  const c = tables(db).directorySyncConfigs;
  const [row] = await db.select().from(c).where(eq(c.orgId, orgId));
  return row;
}

function notConfigured(): SvcError {
  return new SvcError("directory_sync_not_configured", "directory sync is not configured; run `svc directory-sync set` first");
}

export async function requireConfig(db: Db, orgId: string): Promise<ConfigRow> {
  const row = await getConfig(db, orgId);
  if (!row) throw notConfigured();
  return row;
}

/**
 * Creates or replaces the configuration; keeps the stored secret when none is given, and keeps
 * `enabled`. The authority and Graph URLs must be https and (unless the operator allows private
 * outbound calls) reach only public addresses: 422 outbound_url_refused. One write either way
 * (an upsert with a new secret, else an update that leaves the stored secret as it is), with
 * its event (directory_sync.configure; a new secret only as a digest) in the same transaction.
 */
export async function setConfig(deps: ControlPlaneDeps, orgId: string, input: DirectorySyncInput, by: Acting): Promise<DirectorySyncConfigView> {
  const tenant = input.tenant_id.trim();
  if (!GUID_RE.test(tenant) && !TENANT_DOMAIN_RE.test(tenant)) throw new SvcError("validation_failed", `tenant_id "${tenant}" is not a tenant GUID or domain`);
  for (const [field, v] of [
    ["client_id", input.client_id],
    ["app_id", input.app_id],
  ] as const) {
    if (!GUID_RE.test(v.trim())) throw new SvcError("validation_failed", `${field} "${v}" is not a GUID (the application's client id, for example 00000000-0000-0000-0000-000000000000)`);
  }
  const interval = input.interval_seconds ?? DEFAULT_INTERVAL_SECONDS;
  if (!Number.isInteger(interval) || interval < MIN_INTERVAL_SECONDS || interval > MAX_INTERVAL_SECONDS) {
    throw new SvcError("validation_failed", `interval_seconds must be a whole number from ${MIN_INTERVAL_SECONDS} to ${MAX_INTERVAL_SECONDS}`);
  }
  const authorityUrl = baseUrl("authority_url", input.authority_url ?? DEFAULT_AUTHORITY_URL);
  const graphUrl = baseUrl("graph_url", input.graph_url ?? DEFAULT_GRAPH_URL);
  for (const [what, url] of [
    ["authority_url", authorityUrl],
    ["graph_url", graphUrl],
  ] as const) {
    await checkOutboundUrl(url, { what, allowPrivate: deps.config.allowPrivateOutbound, stage: "save" });
  }
  if (input.client_secret !== undefined && !input.client_secret.trim()) throw new SvcError("validation_failed", "client_secret is empty");
  const values = {
    tenantId: tenant,
    clientId: input.client_id.trim().toLowerCase(),
    appId: input.app_id.trim().toLowerCase(),
    dryRun: input.dry_run,
    createUsers: input.create_users,
    authorityUrl,
    graphUrl,
    intervalSeconds: interval,
    updatedAt: deps.now(),
  };
  const secret = input.client_secret;
  const wrapped = secret !== undefined ? deps.kms.wrap(new TextEncoder().encode(secret), secretContext(orgId)) : null;
  return deps.db.transaction(async (tx) => {
    const c = tables(tx).directorySyncConfigs;
    const before = await getConfig(tx, orgId);
    let row: ConfigRow | undefined;
    if (wrapped !== null) {
      const withSecret = { ...values, wrappedClientSecret: wrapped };
      [row] = await tx
        .insert(c)
        .values({ orgId, ...withSecret })
        .onConflictDoUpdate({ target: c.orgId, set: withSecret })
        .returning();
    } else {
      [row] = await tx.update(c).set(values).where(eq(c.orgId, orgId)).returning();
    }
    if (!row) throw new SvcError("validation_failed", "client_secret is required when directory sync is first set");
    const view = configView(row);
    await recordChange(tx, by, {
      orgId,
      action: "directory_sync.configure",
      target: TARGET(orgId),
      ...(before ? { before: eventView(configView(before)) } : {}),
      after: { ...eventView(view), ...(secret !== undefined ? { client_secret: secretDigest(secret) } : {}) },
    });
    return view;
  });
}

const TARGET = (orgId: string) => ({ type: "directory_sync", id: orgId, name: null });

/** The configuration as its events show it (no timestamp: it changes with every write). */
function eventView(v: DirectorySyncConfigView) {
  const { updated_at: _, has_client_secret: __, ...rest } = v;
  return rest;
}

export async function readConfig(db: Db, orgId: string): Promise<DirectorySyncConfigView> {
  return configView(await requireConfig(db, orgId));
}

/** Enables or disables the periodic runs; switching to the state it has writes no event. */
export async function setEnabled(deps: ControlPlaneDeps, orgId: string, enabled: boolean, by: Acting): Promise<DirectorySyncConfigView> {
  return deps.db.transaction(async (tx) => {
    const c = tables(tx).directorySyncConfigs;
    const before = await requireConfig(tx, orgId);
    const [row] = await tx.update(c).set({ enabled, updatedAt: deps.now() }).where(eq(c.orgId, orgId)).returning();
    if (before.enabled !== enabled) {
      await recordChange(tx, by, { orgId, action: enabled ? "directory_sync.enable" : "directory_sync.disable", target: TARGET(orgId), before: { enabled: before.enabled }, after: { enabled } });
    }
    return configView(row!);
  });
}

/** Enabled configurations, for the scheduler. */
export async function enabledConfigs(db: Db): Promise<ConfigRow[]> {
  const c = tables(db).directorySyncConfigs;
  return db.select().from(c).where(eq(c.enabled, true));
}
