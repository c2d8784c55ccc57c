// Directory sync for one organization: its configuration (the client secret KMS-wrapped,
// never returned), running a sync (fetch from Graph, then plan + apply + record the run in
// one transaction), and the report of the last run. One run per organization at a time, across
// every replica sharing the database: a run is claimed by one conditional insert of its
// "running" record (claimRun). A second request in the same process joins the running run; on
// another replica it waits for that run's record and answers with its report.
import { loggableError } from "../db/errors.ts";
import { and, desc, eq, gt, lt, notExists, notInArray, or, sql } from "drizzle-orm";
import { SvcError } from "../../contract/errors.ts";
import { newId } from "../../contract/ids.ts";
import { type Db, type Tables, tables } from "../db/index.ts";
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
/** A "running" record older than this is taken as abandoned (its process died). */
export const ABANDONED_RUN_MS = 30 * 60_000;
/** How often a request waiting for another replica's run looks at its record. */
const JOIN_POLL_MS = 250;

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

type ConfigRow = Tables["directorySyncConfigs"]["$inferSelect"];
type RunRow = Tables["directorySyncRuns"]["$inferSelect"];

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

export async function getConfig(db: Db, orgId: string): Promise<ConfigRow | undefined> {
  const c = tables(db).directorySyncConfigs;
  const [row] = await db.select().from(c).where(eq(c.orgId, orgId));
  return row;
}

function notConfigured(): SvcError {
  return new SvcError("directory_sync_not_configured", "directory sync is not configured; run `svc directory-sync set` first");
}

async function requireConfig(db: Db, orgId: string): Promise<ConfigRow> {
  const row = await getConfig(db, orgId);
  if (!row) throw notConfigured();
  return row;
}

/**
 * Creates or replaces the configuration; keeps the stored secret when none is given, and keeps
 * `enabled`. The authority and Graph URLs must be https and (unless the operator allows private
 * outbound calls) reach only public addresses: 422 outbound_url_refused. One statement either
 * way: an upsert with a new secret, else an update that leaves the stored secret as it is.
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
  const c = tables(deps.db).directorySyncConfigs;
  let row: ConfigRow | undefined;
  if (input.client_secret !== undefined) {
    const withSecret = { ...values, wrappedClientSecret: deps.kms.wrap(new TextEncoder().encode(input.client_secret), secretContext(orgId)) };
    [row] = await deps.db
      .insert(c)
      .values({ orgId, ...withSecret })
      .onConflictDoUpdate({ target: c.orgId, set: withSecret })
      .returning();
  } else {
    [row] = await deps.db.update(c).set(values).where(eq(c.orgId, orgId)).returning();
  }
  if (!row) throw new SvcError("validation_failed", "client_secret is required when directory sync is first set");
  return configView(row);
}

export async function readConfig(db: Db, orgId: string): Promise<DirectorySyncConfigView> {
  return configView(await requireConfig(db, orgId));
}

export async function setEnabled(deps: ControlPlaneDeps, orgId: string, enabled: boolean): Promise<DirectorySyncConfigView> {
  const c = tables(deps.db).directorySyncConfigs;
  const [row] = await deps.db.update(c).set({ enabled, updatedAt: deps.now() }).where(eq(c.orgId, orgId)).returning();
  if (!row) throw notConfigured();
  return configView(row);
}

export async function latestRun(db: Db, orgId: string): Promise<RunRow | undefined> {
  const r = tables(db).directorySyncRuns;
  const [row] = await db
    .select()
    .from(r)
    .where(eq(r.orgId, orgId))
    .orderBy(desc(r.startedAt), desc(r.id))
    .limit(1);
  return row;
}

/** The last run; 409 when sync is not configured, 404 when it has never run. */
export async function lastReport(db: Db, orgId: string): Promise<DirectorySyncReport> {
  await requireConfig(db, orgId);
  const row = await latestRun(db, orgId);
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
  await Promise.allSettled(runs.map(async (r) => r.promise));
}

export type RunOptions = { dryRun?: boolean; extraCa?: string | undefined };

type Claim = { dryRun: boolean; intervalSeconds?: number; enabledOnly?: boolean };

/**
 * Claims a run of the organization for this process: one INSERT … SELECT of its "running"
 * record, which inserts nothing when a run of the organization is in progress anywhere (a
 * "running" record younger than ABANDONED_RUN_MS), when `intervalSeconds` is given and a run
 * started less than that ago (not due yet), or when the organization has no (with
 * `enabledOnly`, no enabled) configuration. It runs in a transaction: on PostgreSQL
 * (SERIALIZABLE) only one of two replicas' concurrent claims inserts, on SQLite the
 * transaction holds the only writer. The new run's id when the run is this caller's.
 */
async function claimRun(deps: ControlPlaneDeps, orgId: string, claim: Claim): Promise<string | null> {
  const claimed = await deps.db.transaction(async (tx) => {
    const now = deps.now();
    const { directorySyncConfigs: c, directorySyncRuns: r } = tables(tx);
    const busy = [and(eq(r.status, "running"), gt(r.startedAt, now - ABANDONED_RUN_MS))];
    if (claim.intervalSeconds !== undefined) busy.push(gt(r.startedAt, now - claim.intervalSeconds * 1000));
    const inProgressOrRecent = tx
      .select({ one: sql`1` })
      .from(r)
      .where(and(eq(r.orgId, orgId), or(...busy)));
    // Every column of the run, in the table's order, as INSERT … SELECT wants them.
    const value = <T>(v: T, column: (typeof r)[keyof typeof r.$inferSelect]) => sql<T>`${sql.param(v, column)}`.as(column.name);
    return tx
      .insert(r)
      .select((qb) =>
        qb
          .select({
            id: value(newId("syncRun", now), r.id),
            orgId: c.orgId,
            startedAt: value(now, r.startedAt),
            finishedAt: sql<number | null>`null`.as(r.finishedAt.name),
            dryRun: value(claim.dryRun, r.dryRun),
            status: value("running" as const, r.status),
            counts: value<Record<string, number>>({}, r.counts),
            changes: value<unknown[]>([], r.changes),
            errors: value<string[]>([], r.errors),
          })
          .from(c)
          .where(and(eq(c.orgId, orgId), claim.enabledOnly ? eq(c.enabled, true) : undefined, notExists(inProgressOrRecent))),
      )
      .returning({ id: r.id });
  });
  return claimed[0]?.id ?? null;
}

/** Runs a claimed run in this process; joiners in this process get the same promise. */
async function start(deps: ControlPlaneDeps, config: ConfigRow, runId: string, dryRun: boolean, extraCa: string | undefined): Promise<DirectorySyncReport> {
  const runs = runsOf(deps);
  const abort = new AbortController();
  const promise = execute(deps, config, runId, dryRun, abort.signal, extraCa).finally(() => runs.delete(config.orgId));
  runs.set(config.orgId, { promise, abort });
  return promise;
}

/**
 * Waits for another replica's run to record its end and returns its report; undefined when
 * the run is abandoned (or pruned) meanwhile, so the caller may claim a run itself.
 */
async function awaitOtherRun(deps: ControlPlaneDeps, runId: string): Promise<DirectorySyncReport | undefined> {
  const r = tables(deps.db).directorySyncRuns;
  for (;;) {
    const [row] = await deps.db.select().from(r).where(eq(r.id, runId));
    if (!row || (row.status === "running" && deps.now() - row.startedAt >= ABANDONED_RUN_MS)) return undefined;
    if (row.status !== "running") return reportView(row);
    await Bun.sleep(JOIN_POLL_MS);
  }
}

/**
 * Runs a sync now (or joins the one running, in this process or on another replica) and
 * resolves with its report. The run record is written as "running" before any network call,
 * so the report shows a sync in progress.
 */
export async function runSync(deps: ControlPlaneDeps, orgId: string, options: RunOptions = {}): Promise<DirectorySyncReport> {
  const runs = runsOf(deps);
  for (;;) {
    const running = runs.get(orgId);
    if (running) return running.promise;
    const config = await requireConfig(deps.db, orgId);
    const dryRun = options.dryRun ?? config.dryRun;
    const runId = await claimRun(deps, orgId, { dryRun });
    if (runId) return start(deps, config, runId, dryRun, options.extraCa ?? deps.config.extraCaPem);
    // A run was in progress: join it here, or wait for its record if another replica runs it
    // (it may have ended meanwhile: its report is the answer).
    const joined = runs.get(orgId);
    if (joined) return joined.promise;
    const other = await latestRun(deps.db, orgId);
    if (!other) continue;
    if (other.status !== "running") return reportView(other);
    const report = await awaitOtherRun(deps, other.id);
    if (report) return report; // else it was abandoned: claim again
  }
}

/**
 * Starts a run now in the background, unless one is in progress here or on another replica:
 * resolves once its "running" record is written (true), or with false when a run was in
 * progress. The run records its own outcome (GET …/report).
 */
export async function startSync(deps: ControlPlaneDeps, orgId: string): Promise<boolean> {
  if (isRunning(deps, orgId)) return false;
  return startInBackground(deps, await requireConfig(deps.db, orgId));
}

/**
 * The scheduler's run: started only when the organization's sync is enabled, its last run
 * started at least its interval ago, and no run is in progress on any replica, all decided by
 * the one conditional insert of claimRun. Resolves with whether it was started.
 */
export async function startIfDue(deps: ControlPlaneDeps, config: ConfigRow): Promise<boolean> {
  if (isRunning(deps, config.orgId)) return false;
  return startInBackground(deps, config, { intervalSeconds: config.intervalSeconds, enabledOnly: true });
}

async function startInBackground(deps: ControlPlaneDeps, config: ConfigRow, when: { intervalSeconds?: number; enabledOnly?: boolean } = {}): Promise<boolean> {
  const runId = await claimRun(deps, config.orgId, { dryRun: config.dryRun, ...when });
  if (!runId) return false;
  start(deps, config, runId, config.dryRun, deps.config.extraCaPem).catch((e) =>
    deps.log.error("directory sync run failed", { org_id: config.orgId, run_id: runId, error: loggableError(e) }),
  );
  return true;
}

async function execute(deps: ControlPlaneDeps, config: ConfigRow, runId: string, dryRun: boolean, signal: AbortSignal, extraCa: string | undefined): Promise<DirectorySyncReport> {
  const orgId = config.orgId;
  const runs = tables(deps.db).directorySyncRuns;
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
    const graphRequests = client.requests;
    // Graph is read first, outside: the plan, every change and the run's record are one transaction.
    await deps.db.transaction(async (tx) => {
      const changes = plan(snapshot, await readDirectoryState(tx, orgId), { createUsers: config.createUsers });
      if (!dryRun) await applyChanges(tx, orgId, changes);
      const counts = {
        ...countChanges(changes),
        app_roles: snapshot.appRoles.length,
        assignments: snapshot.assignments.length,
        directory_users: Object.keys(snapshot.users).length,
        graph_requests: graphRequests,
      };
      const r = tables(tx).directorySyncRuns;
      await tx.update(r).set({ status: "succeeded", finishedAt: deps.now(), counts, changes }).where(eq(r.id, runId));
    });
    deps.log.info("directory sync finished", { org_id: orgId, run_id: runId, dry_run: dryRun, graph_requests: graphRequests });
  } catch (e) {
    const message = (e as Error)?.message ?? String(e);
    await deps.db
      .update(runs)
      .set({ status: "failed", finishedAt: deps.now(), counts: { graph_requests: client?.requests ?? 0 }, errors: [message] })
      .where(eq(runs.id, runId));
    deps.log.warn("directory sync failed", { org_id: orgId, run_id: runId, error: message });
  }
  await pruneRuns(deps.db, orgId);
  const [row] = await deps.db.select().from(runs).where(eq(runs.id, runId));
  return reportView(row!);
}

/** Deletes the organization's runs beyond the newest KEPT_RUNS. */
async function pruneRuns(db: Db, orgId: string): Promise<void> {
  await db.transaction(async (tx) => {
    const r = tables(tx).directorySyncRuns;
    const keep = await tx
      .select({ id: r.id, startedAt: r.startedAt })
      .from(r)
      .where(eq(r.orgId, orgId))
      .orderBy(desc(r.startedAt), desc(r.id))
      .limit(KEPT_RUNS);
    if (keep.length < KEPT_RUNS) return;
    const oldest = keep[keep.length - 1]!;
    await tx.delete(r).where(and(eq(r.orgId, orgId), lt(r.startedAt, oldest.startedAt), notInArray(r.id, keep.map((k) => k.id))));
  });
}

/** Enabled configurations, for the scheduler. */
export async function enabledConfigs(db: Db): Promise<ConfigRow[]> {
  const c = tables(db).directorySyncConfigs;
  return db.select().from(c).where(eq(c.enabled, true));
}
