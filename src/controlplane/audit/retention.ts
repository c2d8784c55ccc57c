// Retention (issue 15): an organization's audit records older than its retention period
// (settings `audit_retention_days`) are deleted in batches of at most RETENTION_BATCH rows per
// transaction, so a large backlog never holds a long lock. Verification of what remains must
// keep working, so chained records are deleted chain by chain from the oldest number up, never
// leaving a hole: in each chain, everything below its first record still inside the period is
// deleted (a record with a skewed clock above that stays), and in the same transaction the
// chain's floor is raised (audit-chain/service.ts raiseFloor): the first number kept and the
// hash of the last record deleted, which the first record kept names. The checkpoint signed
// right after the run carries the floors, and `svc audit verify` walks each chain down to its
// floor instead of #1: a remaining record changed, removed or inserted is still caught.
// Unchained records (written before chaining) are deleted by time alone. Every row deleted
// leaves a gap in its store chain, recorded in the same transaction (audit-chain/store-gaps.ts)
// and signed by the checkpoint after the run.
// A run is one admin event (audit_retention.run, its counts in `after`), written once the
// deletions are done and before the checkpoint, which signs it: by the admin who asked, or by
// `system:retention` for the hourly run (only when it deleted something).
import { and, asc, eq, gt, inArray, isNotNull, isNull, lt } from "drizzle-orm";
import { ciphertextDigest, recordHash } from "../../contract/audit-chain.ts";
import { makeCheckpoint } from "../audit-chain/checkpoints.ts";
import { raiseFloor } from "../audit-chain/service.ts";
import { recordStoreGaps } from "../audit-chain/store-gaps.ts";
import { nextTurn, tables } from "../db/index.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { getOrganization } from "../organizations/service.ts";
import { type Acting, recordChange } from "./admin-events.ts";
import { recordView, viewColumns } from "./query.ts";
import { applyToRollups } from "./rollups.ts";

/**
 * Rows per transaction. 500, not 1,000: on SQLite each batch holds the one connection, and at
 * 1,000 (~40 ms a batch) a bundle poll waited behind it to a p99 of 115 ms; at 500 the poll p99
 * was 58 ms and the run no slower (bench/audit-scale.ts, 1M records, docs/performance.md).
 */
export const RETENTION_BATCH = 500;

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

/**
 * Deletes one chain's records from its bottom up to its first record still inside the period
 * (the first, in number order, not older than `cutoff`), `batch` at a time, each batch one
 * transaction with a turn of the event loop after it. Each batch reads the chain's next
 * `batch` rows from its bottom (the (org, chain, seq) index): the cut is found as the batches
 * reach it, never by a scan of the whole chain in one statement. Returns how many were deleted.
 */
async function cutChain(deps: ControlPlaneDeps, orgId: string, chainId: string, cutoff: number, batch: number, progress: (n: number) => Promise<void>): Promise<number> {
  let deleted = 0;
  for (;;) {
    const { n, last } = await deps.db.transaction(async (tx) => {
      const a = tables(tx).auditRecords;
      const bottom = await tx
        .select()
        .from(a)
        .where(and(eq(a.orgId, orgId), eq(a.chainId, chainId)))
        .orderBy(asc(a.chainSeq), asc(a.id))
        .limit(batch);
      // Everything below the first number that holds a record inside the period (a fork's
      // twins at that number stay with it).
      const keep = bottom.find((r) => r.ts >= cutoff);
      const rows = keep ? bottom.filter((r) => r.chainSeq! < keep.chainSeq!) : bottom;
      if (rows.length === 0) return { n: 0, last: true };
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
      const ids = rows.map((r) => r.id);
      await recordStoreGaps(tx, orgId, rows, deps.now());
      await applyToRollups(tx, counted(rows), -1);
      await tx.delete(a).where(and(eq(a.orgId, orgId), inArray(a.id, ids)));
      await raiseFloor(tx, orgId, chainId, { seq: top + 1, prev }, deps.now());
      // a batch that reached the first record kept, or the chain's top, is the chain's last
      return { n: ids.length, last: keep !== undefined || bottom.length < batch };
    });
    deleted += n;
    await progress(n);
    await nextTurn();
    if (last) return deleted;
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
  for await (const chainId of chainsOf(deps, orgId)) {
    if ((await cutChain(deps, orgId, chainId, cutoff, batch, progress)) > 0) chainsCut++;
  }
  for (;;) {
    const n = await deps.db.transaction(async (tx) => {
      const t = tables(tx).auditRecords;
      const rows = await tx
        .select()
        .from(t)
        .where(and(eq(t.orgId, orgId), isNull(t.chainId), lt(t.ts, cutoff)))
        .limit(batch);
      if (rows.length === 0) return 0;
      await recordStoreGaps(tx, orgId, rows, deps.now());
      await applyToRollups(tx, counted(rows), -1);
      await tx.delete(t).where(
        and(
          eq(t.orgId, orgId),
          inArray(
            t.id,
            rows.map((r) => r.id),
          ),
        ),
      );
      return rows.length;
    });
    await progress(n);
    await nextTurn();
    if (n < batch) break;
  }
  await record({ organization_id: orgId, retention_days: days, cutoff: new Date(cutoff).toISOString(), deleted, chains_cut: chainsCut });
  // The new floors and store-chain gaps (and the run's event), signed at once.
  const { checkpoint } = deleted > 0 ? await makeCheckpoint(deps, orgId) : { checkpoint: null };
  if (deleted > 0) deps.log.info("audit retention ran", { org_id: orgId, deleted, chains_cut: chainsCut, retention_days: days });
  return { organization_id: orgId, retention_days: days, cutoff: new Date(cutoff).toISOString(), deleted, chains_cut: chainsCut, checkpoint: checkpoint?.number ?? null };
}
