// Retention runs in the background (issue 30): `POST …/audit-retention/run` starts a run and
// answers at once (202) with it; `GET …/audit-retention/run` shows the latest, with the records
// deleted so far, on any replica (audit_retention_runs, one row per organization, its figures
// written every second at most). A run of a large backlog takes minutes; a request waiting for it
// timed out in the CLI, whose advice to run it again started a second one. An organization has
// one run at a time: a start while one is running gets that one. A run whose control plane
// stopped (no batch for STALE_MS) shows as interrupted, and a start begins a new one.
// The hourly run (startRetentionScheduler) goes through the same row, written only once it
// deletes something, so an hourly run with nothing to do never hides an admin's last run.
import { eq } from "drizzle-orm";
import type { RetentionRun } from "../../contract/admin-api.ts";
import { SvcError } from "../../contract/errors.ts";
import { newId } from "../../contract/ids.ts";
import { type Db, tables } from "../db/index.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { periodically } from "../periodic.ts";
import { retentionOrganizations } from "../organizations/settings.ts";
import { type Acting, actingAsSystem } from "./admin-events.ts";
import { type RetentionReport, runRetention } from "./retention.ts";

/** A run with no batch for this long is taken as interrupted (batches take milliseconds). */
export const STALE_MS = 120_000;
/**
 * The run row's figures are written at the first deletions, then at most this often, not after every batch: each write is a
 * commit of its own with its fsync on SQLite's event loop (11–17 ms under load, one per batch
 * of ~10 ms: docs/performance.md).
 */
export const PROGRESS_EVERY_MS = 1_000;

type Row = typeof import("./tables.ts").auditRetentionRuns.$inferSelect;

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

function view(r: Row, now: number): RetentionRun {
  const interrupted = r.state === "running" && now - r.updatedAt > STALE_MS;
  return {
    id: r.id,
    state: interrupted ? "interrupted" : r.state,
    actor: r.actor,
    organization_id: r.orgId,
    retention_days: r.retentionDays,
    cutoff: iso(r.cutoff),
    deleted: r.deleted,
    chains_cut: r.chainsCut,
    checkpoint: r.checkpoint,
    started_at: iso(r.startedAt)!,
    updated_at: iso(r.updatedAt)!,
    finished_at: iso(r.finishedAt),
    detail: r.detail,
  };
}

async function latestRow(db: Db, orgId: string): Promise<Row | undefined> {
  const t = tables(db).auditRetentionRuns;
  return (await db.select().from(t).where(eq(t.orgId, orgId)))[0];
}

export async function latestRetentionRun(deps: ControlPlaneDeps, orgId: string): Promise<RetentionRun> {
  const row = await latestRow(deps.db, orgId);
  if (!row) throw new SvcError("not_found", "no retention run yet for this organization; start one with `svc audit retention run` (POST …/audit-retention/run)");
  return view(row, deps.now());
}

/** This process's runs, by organization. */
const running = new Map<string, Promise<RetentionReport | null>>();

/**
 * Claims the organization's run row, unless a live run holds it (then returns that run).
 * One transaction: two replicas starting at once serialize here and the second sees the first.
 */
async function claim(deps: ControlPlaneDeps, orgId: string, by: Acting, id: string): Promise<Row | null> {
  return deps.db.transaction(async (tx) => {
    const t = tables(tx).auditRetentionRuns;
    const [held] = await tx.select().from(t).where(eq(t.orgId, orgId));
    const now = deps.now();
    if (held && held.state === "running" && now - held.updatedAt <= STALE_MS) return held;
    const fresh = {
      id,
      state: "running" as const,
      actor: by.actor.id,
      startedAt: now,
      updatedAt: now,
      finishedAt: null,
      retentionDays: null,
      cutoff: null,
      deleted: 0,
      chainsCut: 0,
      checkpoint: null,
      detail: null,
    };
    if (held) await tx.update(t).set(fresh).where(eq(t.orgId, orgId));
    else await tx.insert(t).values({ orgId, ...fresh });
    return null;
  });
}

async function update(deps: ControlPlaneDeps, orgId: string, id: string, set: Partial<Row>): Promise<void> {
  const t = tables(deps.db).auditRetentionRuns;
  const [row] = await deps.db.select({ id: t.id }).from(t).where(eq(t.orgId, orgId));
  if (row?.id === id)
    await deps.db
      .update(t)
      .set({ ...set, updatedAt: deps.now() })
      .where(eq(t.orgId, orgId));
}

/**
 * Runs retention for the organization with its progress in the run row `id`: claimed already
 * by an admin's run, or claimed at the first deletion by the hourly one (which, finding another
 * replica's run live, goes on without showing itself: what it deletes is recorded all the same).
 * Resolves with the report, or null when it failed.
 */
async function tracked(deps: ControlPlaneDeps, orgId: string, by: Acting, id: string, claimed: boolean): Promise<RetentionReport | null> {
  let shown = claimed;
  let written = deps.now();
  let shownDeleted = 0;
  try {
    const report = await runRetention(deps, orgId, by, {
      progress: async (deleted) => {
        if (!claimed && deleted > 0) {
          claimed = true;
          shown = (await claim(deps, orgId, by, id)) === null;
        }
        // The first deletions are shown at once (a run of a few batches is over within the second), then once a second.
        if (!shown || (shownDeleted > 0 && deps.now() - written < PROGRESS_EVERY_MS)) return;
        written = deps.now();
        shownDeleted = deleted;
        await update(deps, orgId, id, { deleted });
      },
    });
    if (shown)
      await update(deps, orgId, id, {
        state: "done",
        finishedAt: deps.now(),
        retentionDays: report.retention_days,
        cutoff: report.cutoff ? Date.parse(report.cutoff) : null,
        deleted: report.deleted,
        chainsCut: report.chains_cut,
        checkpoint: report.checkpoint,
      });
    return report;
  } catch (e) {
    deps.log.error("audit retention failed", { org_id: orgId, error: (e as Error).message });
    if (shown) await update(deps, orgId, id, { state: "failed", finishedAt: deps.now(), detail: (e as Error).message.slice(0, 500) }).catch(() => undefined);
    return null;
  }
}

/** Runs `run` as this process's run of the organization. */
async function own(orgId: string, run: Promise<RetentionReport | null>): Promise<RetentionReport | null> {
  const done = run.finally(() => running.delete(orgId));
  running.set(orgId, done);
  return done;
}

/** Starts an admin's run in the background (or returns the one running); resolves with it as it stands. */
export async function startRetentionRun(deps: ControlPlaneDeps, orgId: string, by: Acting): Promise<RetentionRun> {
  // This process's hourly run of the organization: shown once it deletes something (its first
  // batch, milliseconds away), or over having found nothing; then an admin's run starts.
  for (let mine = running.get(orgId); mine; mine = running.get(orgId)) {
    const row = await latestRow(deps.db, orgId);
    if (row?.state === "running" && row.updatedAt >= deps.now() - STALE_MS) return view(row, deps.now());
    await Promise.race([mine, new Promise((r) => setTimeout(r, 50))]);
  }
  const id = newId("retentionRun", deps.now());
  const held = await claim(deps, orgId, by, id);
  if (held) return view(held, deps.now());
  void own(orgId, tracked(deps, orgId, by, id, true));
  return latestRetentionRun(deps, orgId);
}

/** Waits for this process's run of the organization to end (tests, shutdown). */
export async function retentionSettled(orgId: string): Promise<void> {
  await running.get(orgId);
}

/** Every SVC_CP_AUDIT_CHECKPOINT_SECONDS (hourly by default), retention for each organization that has a period. */
export function startRetentionScheduler(deps: ControlPlaneDeps): () => Promise<void> {
  return periodically(deps.config.auditCheckpointSeconds * 1000, async (stopped) => {
    try {
      for (const orgId of await retentionOrganizations(deps.db)) {
        if (stopped()) return;
        // an admin's run of this process is on it already
        if (running.has(orgId)) continue;
        await own(orgId, tracked(deps, orgId, actingAsSystem(deps, "retention"), newId("retentionRun", deps.now()), false));
      }
    } catch (e) {
      deps.log.error("audit retention scheduler failed", { error: (e as Error).message });
    }
  });
}
