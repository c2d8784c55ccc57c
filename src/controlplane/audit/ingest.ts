// Audit ingest (POST /api/v1/runtime/audit-records): a batch from one installation's shipper
// is stored in one transaction, 500 rows per INSERT. Insert-or-ignore by record id
// makes a batch resent after a crash harmless; every id stored, new or not, is acknowledged.
// Each record is checked on its own first (record-check.ts: the contract's shape and size
// bounds, the caller's own installation, organization, workspace and agent, a timestamp within
// the accepted window); one that fails, or whose id is already held by another installation's
// record, is not stored and is named in `rejected` with the reason; the rest of the batch is
// stored all the same, so one bad record never blocks a shipper. Resending gives the same
// answer. Ciphertext is stored as bytes and never looked into.
import { and, eq, getTableName, inArray } from "drizzle-orm";
import { t } from "elysia";
import type { AuditRecord } from "../../contract/audit.ts";
import type { AuditBatchResponse } from "../../contract/runtime-api.ts";
import { type Db, rawStatements, tables } from "../db/index.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import type { RuntimeCaller } from "../installations/runtime-auth.ts";
import { ciphertextDigest, recordHash } from "../../contract/audit-chain.ts";
import { extendChain, storeDigestOf } from "../../contract/store-chain.ts";
import { checkContinuity } from "../audit-chain/service.ts";
import { type StoreHead, lockStoreHead, moveStoreHead } from "../audit-chain/store-heads.ts";
import { checkRecord } from "./record-check.ts";
import { applyToRollups } from "./rollups.ts";
import { recordRow } from "./row.ts";

/**
 * The batch envelope the route validates: up to 5000 entries, each checked by checkRecord, so a
 * malformed record is rejected alone instead of failing the batch with 422.
 */
export const AuditBatchEnvelope = t.Object(
  { records: t.Array(t.Unknown({ description: "an AuditRecord (src/contract/audit.ts); malformed ones are rejected one by one" }), { minItems: 1, maxItems: 5000 }) },
  { additionalProperties: false },
);

/** Rows per INSERT: 42 parameters each stays under SQLite's (32,766) and PostgreSQL's (65,535) parameter limits. */
const CHUNK = 500;

export { recordRow } from "./row.ts";

type Row = ReturnType<typeof recordRow>;
const ROW_KEYS = Object.keys(recordRow({ subject: {}, ts: "", ciphertext: null } as unknown as AuditRecord, 0)) as (keyof Row)[];
const insertTexts = new Map<string, string>();

/**
 * `INSERT … VALUES (…), (…) ON CONFLICT (id) DO NOTHING RETURNING id` written by hand, one text
 * per dialect and row count (prepared once by the driver): drizzle's query builder spent more
 * on a 500-row, 31-column batch than the database did storing it (~130 µs per row, measured).
 * Values still go through each column's own driver mapping. Returns the ids stored now.
 */
async function insertNewRows(tx: Db, rows: Row[]): Promise<string[]> {
  const a = tables(tx).auditRecords;
  // The transaction's own connection (PostgreSQL's reserved one, or SQLite's behind the gate).
  const raw = rawStatements(tx);
  const dialect = raw.dialect;
  const columns = ROW_KEYS.map((k) => a[k] as unknown as { name: string; mapToDriverValue(v: unknown): unknown });
  const key = `${dialect}:${rows.length}`;
  let text = insertTexts.get(key);
  if (!text) {
    let n = 0;
    const row = () => `(${columns.map(() => (dialect === "postgres" ? `$${++n}` : "?")).join(",")})`;
    text = `INSERT INTO "${getTableName(a)}" (${columns.map((c) => `"${c.name}"`).join(",")}) VALUES ${rows.map(row).join(",")} ON CONFLICT ("id") DO NOTHING RETURNING "id"`;
    insertTexts.set(key, text);
  }
  const params: unknown[] = [];
  for (const r of rows) for (let i = 0; i < ROW_KEYS.length; i++) params.push(r[ROW_KEYS[i]!] === null ? null : columns[i]!.mapToDriverValue(r[ROW_KEYS[i]!]));
  return (await raw.rows(text, params)).map((r) => r[0] as string);
}

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
 * Numbers `rows` after the store head and inserts them; returns how many were stored. All of
 * them must be new: one already held would leave a number unused (the caller then knows).
 */
async function insertLinked(tx: Db, head: StoreHead, rows: Prepared[]): Promise<{ stored: number; head: StoreHead }> {
  const { links, head: next } = extendChain(
    "store",
    head,
    rows.map((p) => p.digest),
  );
  let stored = 0;
  for (let k = 0; k < rows.length; k += CHUNK) {
    const chunk = rows.slice(k, k + CHUNK).map((p, i) => ({ ...p.row, storeChain: "store", storeSeq: links[k + i]!.seq, storePrev: links[k + i]!.prev }));
    stored += (await insertNewRows(tx, chunk)).length;
  }
  return { stored, head: next };
}

/**
 * A batch's records stored, linked into the store chain: the new ones only. Usually every
 * record is new, and they are numbered and inserted at once (`knownHeld` false). When the
 * insert finds an id already held (a batch resent after a lost answer), numbers would be left
 * unused: the caller rolls the transaction back and runs it again with `knownHeld`, which reads
 * the held ids first. Returns the new ids, the ids held, and the new head.
 */
async function storeNew(
  tx: Db,
  head: StoreHead,
  prepared: Prepared[],
  knownHeld: boolean,
): Promise<{ fresh: Set<string>; held: Map<string, { orgId: string; installationId: string }>; head: StoreHead }> {
  const seen = new Set<string>();
  const unique = prepared.filter((p) => !seen.has(p.record.id) && seen.add(p.record.id));
  const held = knownHeld ? await heldIds(tx, [...seen]) : new Map<string, { orgId: string; installationId: string }>();
  const fresh = held.size > 0 ? unique.filter((p) => !held.has(p.record.id)) : unique;
  const r = await insertLinked(tx, head, fresh);
  if (r.stored !== fresh.length) throw new HeldIds();
  return { fresh: new Set(fresh.map((p) => p.record.id)), held, head: r.head };
}

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
  let fresh: AuditRecord[] = [];
  const run = async (knownHeld: boolean) =>
    deps.db.transaction(
      async (tx) => {
        // The transaction may run again (a PostgreSQL conflict): what it adds to the answer starts afresh.
        const refused = [...rejected];
        fresh = [];
        const a = tables(tx).auditRecords;
        // First the head of the organization's store chain: ingests of one organization take turns from here on.
        const head = await lockStoreHead(tx, caller.orgId, "store", receivedAt);
        const stored = await storeNew(tx, head, prepared, knownHeld);
        // The roll-ups count the records stored now, never a duplicate (rollups.ts).
        await applyToRollups(
          tx,
          prepared.filter((p) => stored.fresh.has(p.record.id)).map((p) => p.row),
        );
        const acknowledged: string[] = [];
        for (const r of own) {
          if (stored.fresh.delete(r.id)) {
            acknowledged.push(r.id);
            fresh.push(r);
            // An outcome completes its decision record, once: when the outcome is new.
            if (r.kind === "outcome" && r.ref) {
              await tx
                .update(a)
                .set({ outcome: r.outcome ?? null, exitCode: r.exit_code ?? null })
                .where(and(eq(a.id, r.ref), eq(a.orgId, caller.orgId), eq(a.installationId, caller.installationId)));
            }
            continue;
          }
          // Held already: acknowledged only when the stored record is the caller's own.
          const h = stored.held.get(r.id);
          if (h && (h.installationId !== caller.installationId || h.orgId !== caller.orgId)) {
            refused.push({ id: r.id, code: "id_taken", reason: `record id ${r.id} is already used by another installation's record` });
            continue;
          }
          acknowledged.push(r.id);
        }
        // Tamper evidence: new records continue their proxy's hash chain, or are flagged (audit-chain/).
        await checkContinuity(tx, caller, fresh, receivedAt, hashes);
        if (stored.head.seq !== head.seq) await moveStoreHead(tx, caller.orgId, "store", stored.head, receivedAt);
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
      if (!(e instanceof HeldIds) || attempt >= 3) throw e;
    }
  }
  deps.metrics?.ingested(fresh, { duplicates: answer.duplicates, rejected: answer.rejected.length });
  return answer;
}
