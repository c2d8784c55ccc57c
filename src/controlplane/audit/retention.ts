// Retention (issue 15): an organization's audit records older than its retention period
// (settings `audit_retention_days`) are deleted in batches of at most RETENTION_BATCH rows per
// transaction (on SQLite sized to take ~BATCH_TARGET_MS, with pauses: Batches), so a large
// backlog never holds a long lock or a request for long (issue 30). Verification of what remains must
// keep working, so chained records are deleted chain by chain from the oldest number up, never
// leaving a hole: in each chain, everything below its first record still inside the period is
// deleted (a record with a skewed clock above that stays), and in the same transaction the
// chain's floor is raised (audit-chain/service.ts raiseFloor): the first number kept and the
// hash of the last record deleted, which the first record kept names. The checkpoint signed
// right after the run carries the floors, and `svc audit verify` walks each chain down to its
// floor instead of #1: a remaining record changed, removed or inserted is still caught. A late
// record below a floor (the batches read on past its number) is swept after the cut.
// Unchained records (written before chaining) are deleted by time alone. Every row deleted
// leaves a gap in its store chain, recorded in the same transaction (audit-chain/store-gaps.ts)
// and signed by the checkpoint after the run.
// A run is one admin event (audit_retention.run, its counts in `after`), written once the
// deletions are done and before the checkpoint, which signs it: by the admin who asked, or by
// `system:retention` for the hourly run (only when it deleted something).
import { and, asc, eq, gt, gte, inArray, isNotNull, isNull, lt } from "drizzle-orm";
import { ciphertextDigest, recordHash } from "../../contract/audit-chain.ts";
import { makeCheckpoint } from "../audit-chain/checkpoints.ts";
import { floorOf, raiseFloor } from "../audit-chain/service.ts";
import { recordStoreGaps } from "../audit-chain/store-gaps.ts";
import { type Db, nextTurn, rawStatements, relaxedTransaction, tables } from "../db/index.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { getOrganization } from "../organizations/service.ts";
import { type Acting, recordChange } from "./admin-events.ts";
import { recordView, viewColumns } from "./query.ts";
import { applyToRollups } from "./rollups.ts";

/** Rows per transaction at most: 1,000 held a bundle poll to a p99 of 115 ms at 1M records (docs/performance.md). */
export const RETENTION_BATCH = 500;
/**
 * A batch's time: the rows of the next are scaled so that it takes about this long. On SQLite
 * a batch holds the one connection, and what it costs a row varies tenfold within a run (pages
 * not yet in memory at its start, the checkpoints' writes on the disk): 500 rows took 5–85 ms.
 */
export const BATCH_TARGET_MS = 10;
const MIN_ROWS = 20;
const FIRST_ROWS = 50;
/** The pause after a batch, as a share of the batch's time: 1, half the time to the run. */
const PAUSE_SHARE = 1;

/** The rows the roll-ups hold: a pending one (an older replica's, not folded yet) was never added (rollup-fold.ts). */
const counted = <R extends { rollupPending: boolean | null }>(rows: R[]): R[] => rows.filter((r) => r.rollupPending !== true);
const DAY_MS = 86_400_000;

export type RetentionReport = { organization_id: string; retention_days: number | null; cutoff: string | null; deleted: number; chains_cut: number; checkpoint: number | null };

/** The record's chain hash, from its stored row (ciphertext included). */
function rowHash(row: Parameters<typeof recordView>[0] & { ciphertext: Buffer | null }): string {
  const v = recordView(row, null);
  return recordHash(
    { ...v, recipient_key_ids: v.encryption.mode === "recipients" ? v.encryption.key_ids : [] },
    ciphertextDigest(row.ciphertext ? Buffer.from(row.ciphertext).toString("base64") : null),
  );
}

/** Deletes `rows` (every column read) in the batch's transaction, with their store-chain gaps and out of the roll-ups. */
async function deleteRows(deps: ControlPlaneDeps, tx: Db, orgId: string, rows: typeof import("./tables.ts").auditRecords.$inferSelect[]): Promise<void> {
  if (rows.length === 0) return;
  const a = tables(tx).auditRecords;
  await recordStoreGaps(tx, orgId, rows, deps.now());
  await applyToRollups(tx, counted(rows), -1);
  await tx.delete(a).where(
    and(
      eq(a.orgId, orgId),
      inArray(
        a.id,
        rows.map((r) => r.id),
      ),
    ),
  );
}

/**
 * A run's batches, each one relaxed transaction (its commit's fsync not on the event loop:
 * db/store.ts). On SQLite, where a batch holds every request, the rows of each are scaled to
 * take about BATCH_TARGET_MS (at most `max`), and a pause as long as the batch follows it. On
 * PostgreSQL a batch holds no one else's request: `max` rows, a turn of the event loop between.
 */
class Batches {
  rows: number;
  /** Whether a batch holds the event loop: SQLite's (bun:sqlite is synchronous), never PostgreSQL's. */
  readonly #holds: boolean;
  constructor(
    private readonly deps: ControlPlaneDeps,
    private readonly max: number,
    private readonly progress: (n: number) => Promise<void>,
  ) {
    this.#holds = rawStatements(deps.db).dialect === "sqlite";
    // SQLite's first batches read pages not yet in memory (500 rows took up to 85 ms): small, then doubling
    this.rows = this.#holds ? Math.min(max, FIRST_ROWS) : max;
  }

  /** Runs `body` with the rows it may take; it returns how many it deleted. */
  async run<T extends { n: number }>(body: (tx: Db, rows: number) => Promise<T>): Promise<T> {
    const rows = this.rows;
    // from the batch's start (not the wait for the connection) to its commit's end
    let began = 0;
    const result = await relaxedTransaction(this.deps.db, async (tx) => {
      began = performance.now();
      return body(tx, rows);
    });
    const ms = performance.now() - began;
    await this.progress(result.n);
    if (!this.#holds) {
      await nextTurn();
      return result;
    }
    // no more than doubling or halving at once: one slow batch (a page fault, the disk) is not the rule
    const scaled = Math.round((rows * BATCH_TARGET_MS) / Math.max(ms, 0.1));
    this.rows = Math.max(Math.min(MIN_ROWS, this.max), Math.min(this.max, rows * 2, Math.max(scaled, Math.floor(rows / 2))));
    // a pause as long as the batch: the requests that came meanwhile, and the next steps of
    // those under way (each waited for the batch at every statement), run before the next one
    await new Promise((resume) => setTimeout(resume, PAUSE_SHARE * ms));
    return result;
  }
}

/**
 * Deletes one chain's records from its bottom up to its first record still inside the period
 * (the first, in number order, not older than `cutoff`), a batch at a time, then the late ones
 * below its floor (sweepBelowFloor). The cut is found as the batches reach it, never by a scan
 * of the whole chain in one statement. Each batch reads on from where the last one stopped
 * (its top number, where a fork's twins may remain), never from the chain's bottom again: on
 * PostgreSQL the index keeps the entries of the rows deleted (dead until vacuumed), and a read
 * from the bottom walked all of them, slower with every batch (101 ms a read 1.45M rows into a
 * run). Returns how many were deleted.
 */
async function cutChain(deps: ControlPlaneDeps, orgId: string, chainId: string, cutoff: number, batches: Batches): Promise<number> {
  let deleted = 0;
  const start = (await floorOf(deps.db, orgId, chainId)) ?? 0;
  let from = start;
  let floor = start;
  for (;;) {
    const { n, last, top } = await batches.run(async (tx, limit) => {
      const a = tables(tx).auditRecords;
      const bottom = await tx
        .select()
        .from(a)
        .where(and(eq(a.orgId, orgId), eq(a.chainId, chainId), gte(a.chainSeq, from)))
        .orderBy(asc(a.chainSeq), asc(a.id))
        .limit(limit);
      // Everything below the first number that holds a record inside the period (a fork's
      // twins at that number stay with it).
      const keep = bottom.find((r) => r.ts >= cutoff);
      const rows = keep ? bottom.filter((r) => r.chainSeq! < keep.chainSeq!) : bottom;
      if (rows.length === 0) return { n: 0, last: true, top: null };
      const top = rows[rows.length - 1]!.chainSeq!;
      // The last record deleted: the one the next record names (several at one number: a fork).
      const lastRows = await tx
        .select({ ...viewColumns(a), ciphertext: a.ciphertext })
        .from(a)
        .where(and(eq(a.orgId, orgId), eq(a.chainId, chainId), eq(a.chainSeq, top)));
      const [next] = await tx
        .select({ prev: a.chainPrev })
        .from(a)
        .where(and(eq(a.orgId, orgId), eq(a.chainId, chainId), eq(a.chainSeq, top + 1)))
        .limit(1);
      const hashes = lastRows.map(rowHash);
      const prev = hashes.find((h) => h === next?.prev) ?? hashes[0]!;
      await deleteRows(deps, tx, orgId, rows);
      await raiseFloor(tx, orgId, chainId, { seq: top + 1, prev }, deps.now());
      // a batch that reached the first record kept, or the chain's top, is the chain's last
      return { n: rows.length, last: keep !== undefined || bottom.length < limit, top };
    });
    deleted += n;
    if (top !== null) {
      from = top;
      floor = Math.max(floor, top + 1);
    }
    if (last) break;
  }
  return deleted + (floor > 0 ? await sweepBelowFloor(deps, orgId, chainId, floor, cutoff, batches) : 0);
}

/**
 * The chain's records below its floor and older than the period: late ones, shipped while the
 * cut was passing their number (or since the last run) and so behind the batches' reads.
 * Deleted as the cut deletes (their store gaps, the roll-ups); the floor stays where it is. One
 * inside the period is left where it is: it claims a number retention deleted, and
 * verification reports it as inserted.
 */
async function sweepBelowFloor(deps: ControlPlaneDeps, orgId: string, chainId: string, floor: number, cutoff: number, batches: Batches): Promise<number> {
  let deleted = 0;
  for (;;) {
    const { n, more } = await batches.run(async (tx, limit) => {
      const a = tables(tx).auditRecords;
      const rows = await tx
        .select()
        .from(a)
        .where(and(eq(a.orgId, orgId), eq(a.chainId, chainId), lt(a.chainSeq, floor), lt(a.ts, cutoff)))
        .orderBy(asc(a.chainSeq), asc(a.id))
        .limit(limit);
      await deleteRows(deps, tx, orgId, rows);
      return { n: rows.length, more: rows.length === limit };
    });
    deleted += n;
    if (!more) return deleted;
  }
}

/**
 * The organization's proxy chains, one index seek each along (org, chain, seq): never a scan
 * of its records (a million rows in one statement held every other request on SQLite).
 */
async function* chainsOf(deps: ControlPlaneDeps, orgId: string): AsyncGenerator<string> {
  const a = tables(deps.db).auditRecords;
  let after: string | null = null;
  for (;;) {
    const [row] = await deps.db
      .select({ chainId: a.chainId })
      .from(a)
      .where(and(eq(a.orgId, orgId), after === null ? isNotNull(a.chainId) : gt(a.chainId, after)))
      .orderBy(asc(a.chainId))
      .limit(1);
    if (!row?.chainId) return;
    yield row.chainId;
    after = row.chainId;
  }
}

/**
 * Runs retention for one organization now: deletes what is older than its period (nothing
 * when it has none), then signs a checkpoint carrying the new floors.
 */
export async function runRetention(deps: ControlPlaneDeps, orgId: string, by: Acting, opts: { batch?: number; progress?: (deleted: number) => Promise<void> } = {}): Promise<RetentionReport> {
  const batch = opts.batch ?? RETENTION_BATCH;
  const org = await getOrganization(deps.db, orgId);
  const days = org.auditRetentionDays;
  const scheduled = by.actor.credential.kind === "system";
  const record = async (report: Omit<RetentionReport, "checkpoint">) => {
    if (scheduled && report.deleted === 0) return;
    await deps.db.transaction(async (tx) =>
      recordChange(tx, { ...by, at: deps.now() }, { orgId, action: "audit_retention.run", target: { type: "organization", id: orgId, name: org.name }, after: report }),
    );
  };
  if (days === null) {
    const report = { organization_id: orgId, retention_days: null, cutoff: null, deleted: 0, chains_cut: 0 };
    await record(report);
    return { ...report, checkpoint: null };
  }
  const cutoff = deps.now() - days * DAY_MS;
  let deleted = 0;
  let chainsCut = 0;
  const progress = async (n: number) => {
    deleted += n;
    await opts.progress?.(deleted);
  };
  const batches = new Batches(deps, batch, progress);
  for await (const chainId of chainsOf(deps, orgId)) {
    if ((await cutChain(deps, orgId, chainId, cutoff, batches)) > 0) chainsCut++;
  }
  // Records written before chaining, by time alone (along the chain index's null chain, as
  // before: ordered by id, SQLite read every id).
  for (;;) {
    const { more } = await batches.run(async (tx, limit) => {
      const t = tables(tx).auditRecords;
      const rows = await tx
        .select()
        .from(t)
        .where(and(eq(t.orgId, orgId), isNull(t.chainId), lt(t.ts, cutoff)))
        .limit(limit);
      await deleteRows(deps, tx, orgId, rows);
      return { n: rows.length, more: rows.length === limit };
    });
    if (!more) break;
  }
  await record({ organization_id: orgId, retention_days: days, cutoff: new Date(cutoff).toISOString(), deleted, chains_cut: chainsCut });
  // The new floors and store-chain gaps (and the run's event), signed at once.
  const { checkpoint } = deleted > 0 ? await makeCheckpoint(deps, orgId) : { checkpoint: null };
  if (deleted > 0) deps.log.info("audit retention ran", { org_id: orgId, deleted, chains_cut: chainsCut, retention_days: days });
  return { organization_id: orgId, retention_days: days, cutoff: new Date(cutoff).toISOString(), deleted, chains_cut: chainsCut, checkpoint: checkpoint?.number ?? null };
}
