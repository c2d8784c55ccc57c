// Audit records in the order they were committed, after a cursor: what SIEM sinks stream
// (sinks/deliver.ts). Each row the control plane stores gets the next number of its
// organization's "store" chain (runtime records) or "admin" chain (admin events) inside the
// writing transaction, and the next number is only given once the transaction holding the one
// before has committed (audit-chain/store-heads.ts). So a reader that goes on from the last
// number it took never passes a record still to come: a slow commit or a replica whose clock
// is off cannot make a record be skipped (issue 28: with the receive-time order of before, a
// commit landing 2 s after its receive time, or a replica's clock behind, lost records for
// good). Rows stored before the store chains ("legacy": no chain, or adopted) are read first,
// in the old (received_at, id) order, once; `settledBefore` still guards that order.
import { and, asc, count, eq, gt, isNull, lte, or } from "drizzle-orm";
import type { StoreChainId } from "../../contract/store-chain.ts";
import { type Db, tables } from "../db/index.ts";
import { emailsOfUsers } from "../directory/service.ts";
import { type AuditRecordView, recordView, viewColumns } from "./query.ts";
import { bytesDigest } from "./stored.ts";

export type IngestCursor = { receivedAt: number; id: string };

export type StreamedRecord = AuditRecordView & { ciphertext_sha256: string | null; ciphertext?: string };

/** The chains delivered in commit order, in the order a batch takes them. */
export const DELIVERED_CHAINS = ["store", "admin"] as const satisfies readonly StoreChainId[];

/** Legacy rows: stored before the store chains, not yet adopted or adopted since. */
function legacy(db: Db) {
  const a = tables(db).auditRecords;
  return or(isNull(a.storeChain), eq(a.storeChain, "adopted"))!;
}

function afterLegacy(db: Db, orgId: string, cursor: IngestCursor, settledBefore: number) {
  const a = tables(db).auditRecords;
  return and(eq(a.orgId, orgId), legacy(db), or(gt(a.receivedAt, cursor.receivedAt), and(eq(a.receivedAt, cursor.receivedAt), gt(a.id, cursor.id))), lte(a.receivedAt, settledBefore));
}

type StreamRow = Parameters<typeof recordView>[0] & { ciphertext: Buffer | null };

async function streamed(db: Db, orgId: string, rows: StreamRow[], withCiphertext: boolean): Promise<StreamedRecord[]> {
  const emails = await emailsOfUsers(db, orgId, [...new Set(rows.flatMap((r) => (r.userId ? [r.userId] : [])))]);
  return rows.map(({ ciphertext, ...r }) => ({
    ...recordView(r, r.userId ? (emails.get(r.userId) ?? null) : null),
    ciphertext_sha256: bytesDigest(ciphertext),
    ...(withCiphertext && ciphertext ? { ciphertext: Buffer.from(ciphertext).toString("base64") } : {}),
  }));
}

/** The next `limit` legacy records after the cursor, in (received_at, id) order. */
export async function legacyRecordsAfter(
  db: Db,
  orgId: string,
  cursor: IngestCursor,
  o: { settledBefore: number; limit: number; withCiphertext: boolean },
): Promise<{ records: StreamedRecord[]; next: IngestCursor | null }> {
  const a = tables(db).auditRecords;
  const rows = await db
    .select({ ...viewColumns(a), ciphertext: a.ciphertext })
    .from(a)
    .where(afterLegacy(db, orgId, cursor, o.settledBefore))
    .orderBy(asc(a.receivedAt), asc(a.id))
    .limit(o.limit);
  if (rows.length === 0) return { records: [], next: null };
  const last = rows[rows.length - 1]!;
  return { records: await streamed(db, orgId, rows, o.withCiphertext), next: { receivedAt: last.receivedAt, id: last.id } };
}

/** Where a sink stands in the chains delivered in commit order. */
export type ChainCursor = Record<(typeof DELIVERED_CHAINS)[number], number>;

/**
 * The next `limit` records after the cursor: the store chain's first, then the admin chain's,
 * each in number order (the (org, store_chain, store_seq) index). `next` is the cursor after them.
 */
export async function chainRecordsAfter(db: Db, orgId: string, cursor: ChainCursor, o: { limit: number; withCiphertext: boolean }): Promise<{ records: StreamedRecord[]; next: ChainCursor }> {
  const a = tables(db).auditRecords;
  const next = { ...cursor };
  const rows: StreamRow[] = [];
  for (const chain of DELIVERED_CHAINS) {
    if (rows.length >= o.limit) break;
    const page = await db
      .select({ ...viewColumns(a), ciphertext: a.ciphertext })
      .from(a)
      .where(and(eq(a.orgId, orgId), eq(a.storeChain, chain), gt(a.storeSeq, cursor[chain])))
      .orderBy(asc(a.storeSeq))
      .limit(o.limit - rows.length);
    if (page.length > 0) next[chain] = page[page.length - 1]!.storeSeq!;
    rows.push(...page);
  }
  return { records: await streamed(db, orgId, rows, o.withCiphertext), next };
}

/** How far behind a legacy cursor is: legacy records after it (counted up to `cap`) and the receipt time of the oldest. */
export async function legacyBacklog(db: Db, orgId: string, cursor: IngestCursor, o: { cap: number }): Promise<{ records: number; capped: boolean; oldestReceivedAt: number | null }> {
  const a = tables(db).auditRecords;
  const where = afterLegacy(db, orgId, cursor, Number.MAX_SAFE_INTEGER);
  const [first] = await db.select({ receivedAt: a.receivedAt }).from(a).where(where).orderBy(asc(a.receivedAt), asc(a.id)).limit(1);
  if (!first) return { records: 0, capped: false, oldestReceivedAt: null };
  const sub = db
    .select({ id: a.id })
    .from(a)
    .where(where)
    .limit(o.cap + 1)
    .as("backlog");
  const [n] = await db.select({ n: count() }).from(sub);
  const records = Number(n?.n ?? 0);
  return { records: Math.min(records, o.cap), capped: records > o.cap, oldestReceivedAt: first.receivedAt };
}

/** The receipt time of the oldest record after a chain cursor, or null when there is none. */
export async function oldestAfter(db: Db, orgId: string, cursor: ChainCursor): Promise<number | null> {
  const a = tables(db).auditRecords;
  let oldest: number | null = null;
  for (const chain of DELIVERED_CHAINS) {
    const [first] = await db
      .select({ receivedAt: a.receivedAt })
      .from(a)
      .where(and(eq(a.orgId, orgId), eq(a.storeChain, chain), gt(a.storeSeq, cursor[chain])))
      .orderBy(asc(a.storeSeq))
      .limit(1);
    if (first && (oldest === null || first.receivedAt < oldest)) oldest = first.receivedAt;
  }
  return oldest;
}
