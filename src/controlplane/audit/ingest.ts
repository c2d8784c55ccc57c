// Audit ingest (POST /api/v1/runtime/audit-records): a batch from one installation's shipper
// is stored in one transaction, 500 rows per INSERT. Insert-or-ignore by record id
// makes a batch resent after a crash harmless; every id stored, new or not, is acknowledged.
// Each record is checked on its own first (record-check.ts: the contract's shape and size
// bounds, the caller's own installation, organization, workspace and agent, a timestamp within
// the accepted window); one that fails, or whose id is already held by another installation's
// record, is not stored and is named in `rejected` with the reason; the rest of the batch is
// stored all the same, so one bad record never blocks a shipper. Resending gives the same
// answer. Ciphertext is stored as bytes and never looked into.
import { inArray } from "drizzle-orm";
import { t } from "elysia";
import type { AuditRecord } from "../../contract/audit.ts";
import type { AuditBatchResponse } from "../../contract/runtime-api.ts";
import { type Db, type Statement, rawStatements, tables } from "../db/index.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import type { RuntimeCaller } from "../installations/runtime-auth.ts";
import { ciphertextDigest, recordHash } from "../../contract/audit-chain.ts";
import { extendChain, storeDigestOf } from "../../contract/store-chain.ts";
import { chainHeadsRead, chainLinks, continuityWrites } from "../audit-chain/service.ts";
import { lockStoreHeadThenRead, moveStoreHeadStatement } from "../audit-chain/store-heads.ts";
import { checkRecord } from "./record-check.ts";
import { CHUNK, completeDecisions, insertRecords, isHeldIdConflict } from "./ingest-statements.ts";
import { rollupStatements } from "./rollups.ts";
import { recordRow } from "./row.ts";

/**
 * The batch envelope the route validates: up to 5000 entries, each checked by checkRecord, so a
 * malformed record is rejected alone instead of failing the batch with 422.
 */
export const AuditBatchEnvelope = t.Object(
  { records: t.Array(t.Unknown({ description: "an AuditRecord (src/contract/audit.ts); malformed ones are rejected one by one" }), { minItems: 1, maxItems: 5000 }) },
  { additionalProperties: false },
);

export { recordRow } from "./row.ts";

/** Ids among `ids` already stored, with their owner. */
async function heldIds(tx: Db, ids: string[]): Promise<Map<string, { orgId: string; installationId: string }>> {
  const a = tables(tx).auditRecords;
  const held = new Map<string, { orgId: string; installationId: string }>();
  for (let k = 0; k < ids.length; k += CHUNK) {
    const rows = await tx
      .select({ id: a.id, orgId: a.orgId, installationId: a.installationId })
      .from(a)
      .where(inArray(a.id, ids.slice(k, k + CHUNK)));
    for (const row of rows) held.set(row.id, row);
  }
  return held;
}

type Prepared = { record: AuditRecord; row: ReturnType<typeof recordRow>; digest: string };

/**
 * The insert found ids already held: with the held ids unknown (a resent batch), or read just
 * before (another organization's ingest took one meanwhile, on PostgreSQL). Run it all again.
 */
class HeldIds extends Error {}

export async function ingestBatch(deps: ControlPlaneDeps, caller: RuntimeCaller, records: readonly unknown[]): Promise<AuditBatchResponse> {
  const receivedAt = deps.now();
  const window = { now: receivedAt, maxAgeMs: deps.config.auditMaxAgeSeconds * 1000, maxFutureMs: deps.config.auditMaxFutureSeconds * 1000 };
  const rejected: NonNullable<AuditBatchResponse["rejected"]> = [];
  const own: AuditRecord[] = [];
  records.forEach((raw, index) => {
    const verdict = checkRecord(raw, index, caller, window);
    if (verdict.ok) own.push(verdict.record);
    else rejected.push({ id: verdict.id, reason: verdict.reason, code: verdict.code });
  });
  if (rejected.length > 0) deps.log.warn("audit records rejected", { installation: caller.installationId, count: rejected.length, first: rejected[0]!.reason.slice(0, 300) });
  // Rows and their store-chain digests before the transaction: under the head's lock only the
  // numbering is left. The proxy-form hash is the chain continuity's too (computed once).
  const hashes = new Map<string, string>();
  const prepared: Prepared[] = own.map((r) => {
    const row = recordRow(r, receivedAt);
    const proxyHash = recordHash(r, ciphertextDigest(r.ciphertext));
    hashes.set(r.id, proxyHash);
    return {
      record: r,
      row,
      digest: storeDigestOf(proxyHash, {
        received_at: receivedAt,
        harness: row.harness,
        task: row.task,
        tool_server: row.toolServer,
        upstream_identity: row.upstreamIdentity,
        shadow_decision: row.shadowDecision,
        shadow_policy_id: row.shadowPolicyId,
        shadow_reason: row.shadowReason,
        actor_id: null,
        target: null,
        detail: null,
      }),
    };
  });
  const seen = new Set<string>();
  const unique = prepared.filter((p) => !seen.has(p.record.id) && seen.add(p.record.id));
  let fresh: AuditRecord[] = [];
  // Usually every record is new: numbered and inserted at once (`knownHeld` false). When the
  // insert finds an id already held (a batch resent after a lost answer), the transaction is
  // rolled back (a number would be left unused) and run again with `knownHeld`, reading the
  // held ids first. On PostgreSQL the transaction is three round trips (db/postgres.ts): BEGIN;
  // the store head's lock with the proxy chains' heads read behind it; then every write with
  // the COMMIT behind them. Only the numbering and the continuity check run in between.
  const run = async (knownHeld: boolean) =>
    deps.db.transaction(
      async (tx) => {
        // The transaction may run again (a PostgreSQL conflict): what it adds to the answer starts afresh.
        const refused = [...rejected];
        const raw = rawStatements(tx);
        // Reads that need no lock come before it.
        const held = knownHeld ? await heldIds(tx, [...seen]) : new Map<string, { orgId: string; installationId: string }>();
        const storing = held.size > 0 ? unique.filter((p) => !held.has(p.record.id)) : unique;
        fresh = storing.map((p) => p.record);
        const byChain = chainLinks(fresh, hashes);
        // First the head of the organization's store chain: ingests of one organization take turns from here on.
        const { head, rows: chainHeads } = await lockStoreHeadThenRead(tx, caller.orgId, "store", receivedAt, chainHeadsRead(raw.dialect, caller.orgId, [...byChain.keys()]));
        const { links, head: next } = extendChain(
          "store",
          head,
          storing.map((p) => p.digest),
        );
        const a = tables(tx).auditRecords;
        const inserts: Statement[] = [];
        for (let k = 0; k < storing.length; k += CHUNK) {
          inserts.push(
            insertRecords(
              raw.dialect,
              a,
              storing.slice(k, k + CHUNK).map((p, i) => ({ ...p.row, storeChain: "store", storeSeq: links[k + i]!.seq, storePrev: links[k + i]!.prev })),
            ),
          );
        }
        // Tamper evidence: new records continue their proxy's hash chain, or are flagged (audit-chain/).
        const continuity = continuityWrites(raw.dialect, caller, byChain, chainHeads, receivedAt);
        const results = await raw.finish([
          ...inserts,
          // The roll-ups count the records stored now, never a duplicate (rollups.ts).
          ...rollupStatements(
            raw.dialect,
            storing.map((p) => p.row),
          ),
          // An outcome completes its decision record, once: when the outcome is new (after the inserts: it may be in this batch).
          ...completeDecisions(raw.dialect, caller, fresh),
          ...continuity.statements,
          ...(next.seq !== head.seq ? [moveStoreHeadStatement(raw.dialect, caller.orgId, "store", next, receivedAt)] : []),
        ]);
        // SQLite's insert skips a held id: the body throws and the transaction rolls back (PostgreSQL's fails instead).
        if (results.slice(0, inserts.length).reduce((n, rows) => n + rows.length, 0) !== storing.length) throw new HeldIds();
        const acknowledged: string[] = [];
        const stored = new Set(fresh.map((r) => r.id));
        for (const r of own) {
          if (stored.delete(r.id)) {
            acknowledged.push(r.id);
            continue;
          }
          // Held already: acknowledged only when the stored record is the caller's own.
          const h = held.get(r.id);
          if (h && (h.installationId !== caller.installationId || h.orgId !== caller.orgId)) {
            refused.push({ id: r.id, code: "id_taken", reason: `record id ${r.id} is already used by another installation's record` });
            continue;
          }
          acknowledged.push(r.id);
        }
        return { acknowledged, inserted: fresh.length, duplicates: acknowledged.length - fresh.length, rejected: refused };
      },
      // The store head is taken FOR UPDATE first (store-heads.ts): READ COMMITTED then waits for it instead of failing.
      { isolationLevel: "read committed" },
    );
  let answer: Awaited<ReturnType<typeof run>>;
  for (let attempt = 1; ; attempt++) {
    try {
      answer = await run(attempt > 1);
      break;
    } catch (e) {
      if (!(e instanceof HeldIds || isHeldIdConflict(e)) || attempt >= 3) throw e;
    }
  }
  deps.metrics?.ingested(fresh, { duplicates: answer.duplicates, rejected: answer.rejected.length });
  return answer;
}
