// Directory sync for one organization: its configuration (the client secret KMS-wrapped,
// never returned), running a sync (fetch from Graph, then plan + apply + record the run in
// one transaction), and the report of the last run. One run per organization at a time in
// this process; a second request joins the running one.
import { and, desc, eq, lt, notInArray } from "drizzle-orm";
import { SvcError } from "../../contract/errors.ts";
import { newId } from "../../contract/ids.ts";
import { type Db, schema } from "../db/index.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { checkOutboundUrl } from "../http/outbound.ts";
import { applyChanges, readDirectoryState } from "./apply.ts";
import { DEFAULT_AUTHORITY_URL, DEFAULT_GRAPH_URL, GraphClient } from "./graph.ts";
import { type Change, countChanges, plan } from "./plan.ts";

export const DEFAULT_INTERVAL_SECONDS = 3600;
export const MIN_INTERVAL_SECONDS = 60;
export const MAX_INTERVAL_SECONDS = 7 * 24 * 3600;
/** Runs kept per organization; older ones are pruned. */
export const KEPT_RUNS = 50;

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

type ConfigRow = typeof schema.directorySyncConfigs.$inferSelect;
type RunRow = typeof schema.directorySyncRuns.$inferSelect;

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

export function reportView(row: RunRow) {
  return {
    id: row.id,
    started_at: new Date(row.startedAt).toISOString(),
    finished_at: row.finishedAt === null ? null : new Date(row.finishedAt).toISOString(),
    dry_run: row.dryRun,
    status: row.status,
    counts: row.counts,
    changes: row.changes as Change[],
    errors: row.errors,
  };
}
export type DirectorySyncReport = ReturnType<typeof reportView>;

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

export function getConfig(db: Db, orgId: string): ConfigRow | undefined {
  return db.select().from(schema.directorySyncConfigs).where(eq(schema.directorySyncConfigs.orgId, orgId)).get();
}

function requireConfig(db: Db, orgId: string): ConfigRow {
  const row = getConfig(db, orgId);
  if (!row) throw new SvcError("directory_sync_not_configured", "directory sync is not configured; run `svc directory-sync set` first");
  return row;
}

/**
 * Creates or replaces the configuration; keeps the stored secret when none is given, and keeps
 * `enabled`. The authority and Graph URLs must be https and (unless the operator allows private
 * outbound calls) reach only public addresses: 422 outbound_url_refused.
 */
export async function setConfig(deps: ControlPlaneDeps, orgId: string, input: DirectorySyncInput): Promise<DirectorySyncConfigView> {
  const tenant = input.tenant_id.trim();
  if (!GUID_RE.test(tenant) && !TENANT_DOMAIN_RE.test(tenant)) throw new SvcError("validation_failed", `tenant_id "${tenant}" is not a tenant GUID or domain`);
  for (const [field, v] of [["client_id", input.client_id], ["app_id", input.app_id]] as const) {
    if (!GUID_RE.test(v.trim())) throw new SvcError("validation_failed", `${field} "${v}" is not a GUID (the application's client id, for example 00000000-0000-0000-0000-000000000000)`);
  }
  const interval = input.interval_seconds ?? DEFAULT_INTERVAL_SECONDS;
  if (!Number.isInteger(interval) || interval < MIN_INTERVAL_SECONDS || interval > MAX_INTERVAL_SECONDS) {
    throw new SvcError("validation_failed", `interval_seconds must be a whole number from ${MIN_INTERVAL_SECONDS} to ${MAX_INTERVAL_SECONDS}`);
  }
  const authorityUrl = baseUrl("authority_url", input.authority_url ?? DEFAULT_AUTHORITY_URL);
  const graphUrl = baseUrl("graph_url", input.graph_url ?? DEFAULT_GRAPH_URL);
  for (const [what, url] of [["authority_url", authorityUrl], ["graph_url", graphUrl]] as const) {
    await checkOutboundUrl(url, { what, allowPrivate: deps.config.allowPrivateOutbound, stage: "save" });
  }
  const existing = getConfig(deps.db, orgId);
  let wrapped = existing?.wrappedClientSecret;
  if (input.client_secret !== undefined) {
    if (!input.client_secret.trim()) throw new SvcError("validation_failed", "client_secret is empty");
    wrapped = deps.kms.wrap(new TextEncoder().encode(input.client_secret), secretContext(orgId));
  }
  if (!wrapped) throw new SvcError("validation_failed", "client_secret is required when directory sync is first set");
  const values = {
    tenantId: tenant,
    clientId: input.client_id.trim().toLowerCase(),
    appId: input.app_id.trim().toLowerCase(),
    wrappedClientSecret: wrapped,
    dryRun: input.dry_run,
    createUsers: input.create_users,
    authorityUrl,
    graphUrl,
    intervalSeconds: interval,
    updatedAt: deps.now(),
  };
  deps.db
    .insert(schema.directorySyncConfigs)
    .values({ orgId, ...values })
    .onConflictDoUpdate({ target: schema.directorySyncConfigs.orgId, set: values })
    .run();
  return configView(requireConfig(deps.db, orgId));
}

export function readConfig(db: Db, orgId: string): DirectorySyncConfigView {
  return configView(requireConfig(db, orgId));
}

export function setEnabled(deps: ControlPlaneDeps, orgId: string, enabled: boolean): DirectorySyncConfigView {
  requireConfig(deps.db, orgId);
  deps.db.update(schema.directorySyncConfigs).set({ enabled, updatedAt: deps.now() }).where(eq(schema.directorySyncConfigs.orgId, orgId)).run();
  return readConfig(deps.db, orgId);
}

export function latestRun(db: Db, orgId: string): RunRow | undefined {
  const r = schema.directorySyncRuns;
  return db.select().from(r).where(eq(r.orgId, orgId)).orderBy(desc(r.startedAt), desc(r.id)).limit(1).get();
}

/** The last run; 409 when sync is not configured, 404 when it has never run. */
export function lastReport(db: Db, orgId: string): DirectorySyncReport {
  requireConfig(db, orgId);
  const row = latestRun(db, orgId);
  if (!row) throw new SvcError("not_found", "directory sync has not run yet; run `svc directory-sync enable`");
  return reportView(row);
}

// ── running ───────────────────────────────────────────────────────────────────────────

type InFlight = { promise: Promise<DirectorySyncReport>; abort: AbortController };
const inFlight = new WeakMap<ControlPlaneDeps, Map<string, InFlight>>();

function runsOf(deps: ControlPlaneDeps): Map<string, InFlight> {
  let m = inFlight.get(deps);
  if (!m) inFlight.set(deps, (m = new Map()));
  return m;
}

export function isRunning(deps: ControlPlaneDeps, orgId: string): boolean {
  return runsOf(deps).has(orgId);
}

/** Aborts this process's running syncs and waits for them to record their end. */
export async function stopRuns(deps: ControlPlaneDeps): Promise<void> {
  const runs = [...runsOf(deps).values()];
  for (const r of runs) r.abort.abort(new Error("the control plane is stopping"));
  await Promise.allSettled(runs.map((r) => r.promise));
}

export type RunOptions = { dryRun?: boolean; extraCa?: string | undefined };

/**
 * Runs a sync now (or joins the one running) and resolves with its report. The run record is
 * written as "running" before any network call, so the report shows a sync in progress.
 */
export function runSync(deps: ControlPlaneDeps, orgId: string, options: RunOptions = {}): Promise<DirectorySyncReport> {
  const runs = runsOf(deps);
  const running = runs.get(orgId);
  if (running) return running.promise;
  const config = requireConfig(deps.db, orgId);
  const dryRun = options.dryRun ?? config.dryRun;
  const runId = newId("syncRun", deps.now());
  deps.db
    .insert(schema.directorySyncRuns)
    .values({ id: runId, orgId, startedAt: deps.now(), dryRun, status: "running", counts: {}, changes: [], errors: [] })
    .run();
  const abort = new AbortController();
  const promise = execute(deps, config, runId, dryRun, abort.signal, options.extraCa ?? deps.config.extraCaPem).finally(() => runs.delete(orgId));
  runs.set(orgId, { promise, abort });
  return promise;
}

async function execute(deps: ControlPlaneDeps, config: ConfigRow, runId: string, dryRun: boolean, signal: AbortSignal, extraCa: string | undefined): Promise<DirectorySyncReport> {
  const orgId = config.orgId;
  const runs = schema.directorySyncRuns;
  let client: GraphClient | null = null;
  try {
    let clientSecret: string;
    try {
      clientSecret = new TextDecoder().decode(deps.kms.unwrap(config.wrappedClientSecret, secretContext(orgId)));
    } catch (e) {
      throw new Error(`the stored client secret cannot be unwrapped (${(e as Error).message}); set it again with \`svc directory-sync set\``);
    }
    client = new GraphClient({
      tenantId: config.tenantId,
      clientId: config.clientId,
      clientSecret,
      appId: config.appId,
      authorityUrl: config.authorityUrl,
      graphUrl: config.graphUrl,
      extraCa,
      signal,
      // Checked again before every call: the stored URL's name may resolve elsewhere by now.
      checkUrl: async (url) => {
        const u = new URL(url);
        if (u.protocol !== "https:") throw new SvcError("outbound_url_refused", `directory sync calls only https URLs, not ${u.origin}`);
        await checkOutboundUrl(u, { what: "directory sync", allowPrivate: deps.config.allowPrivateOutbound, stage: "fetch" });
      },
    });
    const snapshot = await client.snapshot();
    deps.db.transaction((tx) => {
      const db = tx as unknown as Db;
      const changes = plan(snapshot, readDirectoryState(db, orgId), { createUsers: config.createUsers });
      if (!dryRun) applyChanges(db, orgId, changes);
      const counts = {
        ...countChanges(changes),
        app_roles: snapshot.appRoles.length,
        assignments: snapshot.assignments.length,
        directory_users: Object.keys(snapshot.users).length,
        graph_requests: client!.requests,
      };
      db.update(runs).set({ status: "succeeded", finishedAt: deps.now(), counts, changes }).where(eq(runs.id, runId)).run();
    });
    deps.log.info("directory sync finished", { org_id: orgId, run_id: runId, dry_run: dryRun, graph_requests: client.requests });
  } catch (e) {
    const message = (e as Error)?.message ?? String(e);
    deps.db
      .update(runs)
      .set({ status: "failed", finishedAt: deps.now(), counts: { graph_requests: client?.requests ?? 0 }, errors: [message] })
      .where(eq(runs.id, runId))
      .run();
    deps.log.warn("directory sync failed", { org_id: orgId, run_id: runId, error: message });
  }
  pruneRuns(deps.db, orgId);
  return reportView(deps.db.select().from(runs).where(eq(runs.id, runId)).get()!);
}

function pruneRuns(db: Db, orgId: string): void {
  const r = schema.directorySyncRuns;
  const keep = db.select({ id: r.id }).from(r).where(eq(r.orgId, orgId)).orderBy(desc(r.startedAt), desc(r.id)).limit(KEPT_RUNS).all();
  if (keep.length < KEPT_RUNS) return;
  const oldest = keep[keep.length - 1]!;
  const oldestRow = db.select({ startedAt: r.startedAt }).from(r).where(eq(r.id, oldest.id)).get()!;
  db.delete(r)
    .where(and(eq(r.orgId, orgId), lt(r.startedAt, oldestRow.startedAt), notInArray(r.id, keep.map((k) => k.id))))
    .run();
}

/** Enabled configurations, for the scheduler. */
export function enabledConfigs(db: Db): ConfigRow[] {
  return db.select().from(schema.directorySyncConfigs).where(eq(schema.directorySyncConfigs.enabled, true)).all();
}
