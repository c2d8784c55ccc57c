// Running directory sync for one organization (fetch from Graph, then plan + apply + record the
// run and its admin event in one transaction) and the report of the last run; the
// configuration is config.ts. One run per organization at a time, across every replica
// sharing the database: a run is claimed by one conditional insert of its "running" record
// (claimRun). A second request in the same process joins the running run; on another replica
// it waits for that run's record and answers with its report.
// A run is one admin event, directory_sync.run, naming who started it (an admin, or
// `system:directory-sync` for the scheduler's runs, written only when they changed something
// or failed: an hourly run that finds nothing to do is no news).
import { loggableError } from "../db/errors.ts";
import { and, desc, eq, gt, lt, notExists, notInArray, or, sql } from "drizzle-orm";
import { SvcError } from "../../contract/errors.ts";
import { newId } from "../../contract/ids.ts";
import { type Acting, recordChange } from "../audit/admin-events.ts";
import { type Db, type Tables, tables } from "../db/index.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { checkOutboundUrl } from "../http/outbound.ts";
import { applyChanges, readDirectoryState } from "./apply.ts";
import { type ConfigRow, requireConfig, secretContext } from "./config.ts";
import { GraphClient } from "./graph.ts";
import { type Change, countChanges, plan } from "./plan.ts";

type RunRow = Tables["directorySyncRuns"]["$inferSelect"];

/** Changes an event lists at most (the run's report keeps them all). */
const EVENT_CHANGES_MAX = 100;

/** Runs kept per organization; older ones are pruned. */
export const KEPT_RUNS = 50;
/** A "running" record older than this is taken as abandoned (its process died). */
export const ABANDONED_RUN_MS = 30 * 60_000;
/** How often a request waiting for another replica's run looks at its record. */
const JOIN_POLL_MS = 250;

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

export async function latestRun(db: Db, orgId: string): Promise<RunRow | undefined> {
  const r = tables(db).directorySyncRuns;
  const [row] = await db.select().from(r).where(eq(r.orgId, orgId)).orderBy(desc(r.startedAt), desc(r.id)).limit(1);
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
async function start(deps: ControlPlaneDeps, config: ConfigRow, run: { id: string; dryRun: boolean; by: Acting }, extraCa: string | undefined): Promise<DirectorySyncReport> {
  const runs = runsOf(deps);
  const abort = new AbortController();
  const promise = execute(deps, config, run, abort.signal, extraCa).finally(() => runs.delete(config.orgId));
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
export async function runSync(deps: ControlPlaneDeps, orgId: string, by: Acting, options: RunOptions = {}): Promise<DirectorySyncReport> {
  const runs = runsOf(deps);
  for (;;) {
    const running = runs.get(orgId);
    if (running) return running.promise;
    const config = await requireConfig(deps.db, orgId);
    const dryRun = options.dryRun ?? config.dryRun;
    const runId = await claimRun(deps, orgId, { dryRun });
    if (runId) return start(deps, config, { id: runId, dryRun, by }, options.extraCa ?? deps.config.extraCaPem);
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
export async function startSync(deps: ControlPlaneDeps, orgId: string, by: Acting): Promise<boolean> {
  if (isRunning(deps, orgId)) return false;
  return startInBackground(deps, await requireConfig(deps.db, orgId), by);
}

/**
 * The scheduler's run: started only when the organization's sync is enabled, its last run
 * started at least its interval ago, and no run is in progress on any replica, all decided by
 * the one conditional insert of claimRun. Resolves with whether it was started.
 */
export async function startIfDue(deps: ControlPlaneDeps, config: ConfigRow, by: Acting): Promise<boolean> {
  if (isRunning(deps, config.orgId)) return false;
  return startInBackground(deps, config, by, { intervalSeconds: config.intervalSeconds, enabledOnly: true });
}

async function startInBackground(deps: ControlPlaneDeps, config: ConfigRow, by: Acting, when: { intervalSeconds?: number; enabledOnly?: boolean } = {}): Promise<boolean> {
  const runId = await claimRun(deps, config.orgId, { dryRun: config.dryRun, ...when });
  if (!runId) return false;
  start(deps, config, { id: runId, dryRun: config.dryRun, by }, deps.config.extraCaPem).catch((e) =>
    deps.log.error("directory sync run failed", { org_id: config.orgId, run_id: runId, error: loggableError(e) }),
  );
  return true;
}

/** The run's event, in the transaction that records its end; the scheduler's quiet runs write none. */
async function recordRun(
  tx: Db,
  run: { id: string; dryRun: boolean; by: Acting },
  orgId: string,
  end: { status: "succeeded" | "failed"; counts: Record<string, number>; changes: Change[]; errors: string[] },
  now: number,
): Promise<void> {
  const changed = end.changes.length > 0 && !run.dryRun;
  if (run.by.actor.credential.kind === "system" && end.status === "succeeded" && !changed) return;
  await recordChange(
    tx,
    { ...run.by, at: now },
    {
      orgId,
      action: "directory_sync.run",
      target: { type: "directory_sync", id: orgId, name: null },
      after: { run_id: run.id, status: end.status, dry_run: run.dryRun, counts: end.counts, changes: end.changes.slice(0, EVENT_CHANGES_MAX), changes_total: end.changes.length, errors: end.errors },
      ...(end.status === "failed" ? { severity: "notice" as const } : {}),
    },
  );
}

async function execute(deps: ControlPlaneDeps, config: ConfigRow, run: { id: string; dryRun: boolean; by: Acting }, signal: AbortSignal, extraCa: string | undefined): Promise<DirectorySyncReport> {
  const orgId = config.orgId;
  const { id: runId, dryRun } = run;
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
      await recordRun(tx, run, orgId, { status: "succeeded", counts, changes, errors: [] }, deps.now());
    });
    deps.log.info("directory sync finished", { org_id: orgId, run_id: runId, dry_run: dryRun, graph_requests: graphRequests });
  } catch (e) {
    const message = (e as Error)?.message ?? String(e);
    const counts = { graph_requests: client?.requests ?? 0 };
    await deps.db.transaction(async (tx) => {
      const r = tables(tx).directorySyncRuns;
      await tx
        .update(r)
        .set({ status: "failed", finishedAt: deps.now(), counts, errors: [message] })
        .where(eq(r.id, runId));
      await recordRun(tx, run, orgId, { status: "failed", counts, changes: [], errors: [message] }, deps.now());
    });
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
    const keep = await tx.select({ id: r.id, startedAt: r.startedAt }).from(r).where(eq(r.orgId, orgId)).orderBy(desc(r.startedAt), desc(r.id)).limit(KEPT_RUNS);
    if (keep.length < KEPT_RUNS) return;
    const oldest = keep[keep.length - 1]!;
    await tx.delete(r).where(
      and(
        eq(r.orgId, orgId),
        lt(r.startedAt, oldest.startedAt),
        notInArray(
          r.id,
          keep.map((k) => k.id),
        ),
      ),
    );
  });
}
