// Rows outside the per-hour roll-ups (tables.ts rollup_pending). During a rolling upgrade on
// PostgreSQL, a control-plane replica of an older release (0.1.30, or a build before the
// roll-ups) stores records without counting them: its INSERT does not name the column, so the
// database marks them pending. Older releases before 0.2.0 never register as replicas
// (replicas/), so the rows themselves say what is missing, not which replicas are live. Until
// counted, budgets and usage add them to the roll-ups (usage.ts); the fold counts them here, a
// slice per transaction: the rows are marked counted by an UPDATE … WHERE rollup_pending
// RETURNING, and only what it returned is added, so two replicas folding at once count each row
// once. Retention leaves pending rows' counts alone (they were never added). On SQLite (one
// replica, no older writer) there is never a pending row: a pass is one seek of an empty index.
import { and, eq, inArray, sql } from "drizzle-orm";
import { type Db, nextTurn, tables } from "../db/index.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { applyToRollups } from "./rollups.ts";

export const FOLD_SLICE = 1000;
const FOLD_EVERY_MS = 30_000;

/** Counts up to `limit` pending rows of one organization in the roll-ups, in one transaction; returns how many. */
export async function foldSlice(db: Db, orgId: string, limit = FOLD_SLICE): Promise<number> {
  return db.transaction(async (tx) => {
    const a = tables(tx).auditRecords;
    // `rollup_pending` as the bare column, as the partial index's WHERE is written (tables.ts).
    const pending = await tx
      .select({ id: a.id })
      .from(a)
      .where(and(eq(a.orgId, orgId), sql`${a.rollupPending}`))
      .orderBy(a.orgId, a.ts)
      .limit(limit);
    if (pending.length === 0) return 0;
    const counted = await tx
      .update(a)
      .set({ rollupPending: false })
      .where(
        and(
          inArray(
            a.id,
            pending.map((r) => r.id),
          ),
          sql`${a.rollupPending}`,
        ),
      )
      .returning({
        orgId: a.orgId,
        ts: a.ts,
        kind: a.kind,
        action: a.action,
        task: a.task,
        decision: a.decision,
        toolName: a.toolName,
        userId: a.userId,
        model: a.model,
        agentId: a.agentId,
        replicaId: a.replicaId,
        promptTokens: a.promptTokens,
        completionTokens: a.completionTokens,
        cost: a.cost,
      });
    await applyToRollups(tx, counted);
    return counted.length;
  });
}

/** Organizations with a pending row: one seek of the partial index per organization found. */
async function orgsWithPending(db: Db): Promise<string[]> {
  const a = tables(db).auditRecords;
  const out: string[] = [];
  for (;;) {
    const after = out.at(-1);
    const [row] = await db
      .select({ orgId: a.orgId })
      .from(a)
      .where(and(sql`${a.rollupPending}`, after === undefined ? undefined : sql`${a.orgId} > ${after}`))
      .orderBy(a.orgId, a.ts)
      .limit(1);
    if (!row) return out;
    out.push(row.orgId);
  }
}

/** Folds every pending row (slices with a turn of the event loop between them); returns how many. */
export async function foldPending(db: Db, o: { stopped?: () => boolean; slice?: number } = {}): Promise<number> {
  let total = 0;
  for (const orgId of await orgsWithPending(db)) {
    for (;;) {
      if (o.stopped?.()) return total;
      const n = await foldSlice(db, orgId, o.slice ?? FOLD_SLICE);
      total += n;
      if (n < (o.slice ?? FOLD_SLICE)) break;
      await nextTurn();
    }
  }
  return total;
}

/** The fold of `svc controlplane serve`: a pass at start and every 30 s. Returns the stop function. */
export function startRollupFold(deps: ControlPlaneDeps): () => Promise<void> {
  let stopped = false;
  let running: Promise<void> | null = null;
  const tick = () => {
    if (stopped || running) return;
    running = foldPending(deps.db, { stopped: () => stopped })
      .then((n) => {
        if (n > 0) deps.log.info("audit records of an older control-plane replica counted in the roll-ups", { rows: n });
      })
      .catch((e: unknown) => deps.log.error("audit roll-up fold failed", { error: (e as Error).message }))
      .finally(() => {
        running = null;
      });
  };
  const timer = setInterval(tick, FOLD_EVERY_MS);
  queueMicrotask(tick);
  return async () => {
    stopped = true;
    clearInterval(timer);
    await running;
  };
}
