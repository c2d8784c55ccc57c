// Audit records in ingest order, (received_at, id), after a cursor: what SIEM sinks stream
// (sinks/deliver.ts). Records of one batch share received_at and follow by id; `settledBefore`
// leaves out the most recent ones so a slower ingest transaction stamped earlier still commits
// before the cursor passes its time (sinks/README.md).
import { createHash } from "node:crypto";
import { and, asc, count, eq, gt, lte, or } from "drizzle-orm";
import { type Db, tables } from "../db/index.ts";
import { emailsOfUsers } from "../directory/service.ts";
import { type AuditRecordView, recordView, viewColumns } from "./query.ts";

export type IngestCursor = { receivedAt: number; id: string };

export type StreamedRecord = AuditRecordView & { ciphertext_sha256: string | null; ciphertext?: string };

function after(db: Db, orgId: string, cursor: IngestCursor, settledBefore: number) {
  const a = tables(db).auditRecords;
  return and(
    eq(a.orgId, orgId),
    or(gt(a.receivedAt, cursor.receivedAt), and(eq(a.receivedAt, cursor.receivedAt), gt(a.id, cursor.id))),
    lte(a.receivedAt, settledBefore),
  );
}

/** The next `limit` records after the cursor, each with the digest of its ciphertext and, when asked, the ciphertext (base64). */
export async function recordsAfter(db: Db, orgId: string, cursor: IngestCursor, o: { settledBefore: number; limit: number; withCiphertext: boolean }): Promise<{ records: StreamedRecord[]; next: IngestCursor | null }> {
  const a = tables(db).auditRecords;
  const rows = await db
    .select({ ...viewColumns(a), ciphertext: a.ciphertext })
    .from(a)
    .where(after(db, orgId, cursor, o.settledBefore))
    .orderBy(asc(a.receivedAt), asc(a.id))
    .limit(o.limit);
  if (rows.length === 0) return { records: [], next: null };
  const emails = await emailsOfUsers(db, orgId, [...new Set(rows.flatMap((r) => (r.userId ? [r.userId] : [])))]);
  const records = rows.map(({ ciphertext, ...r }) => ({
    ...recordView(r, r.userId ? (emails.get(r.userId) ?? null) : null),
    ciphertext_sha256: ciphertext ? createHash("sha256").update(ciphertext).digest("hex") : null,
    ...(o.withCiphertext && ciphertext ? { ciphertext: Buffer.from(ciphertext).toString("base64") } : {}),
  }));
  const last = rows[rows.length - 1]!;
  return { records, next: { receivedAt: last.receivedAt, id: last.id } };
}

/** How far behind a cursor is: records after it (counted up to `cap`) and the receipt time of the oldest. */
export async function backlogAfter(db: Db, orgId: string, cursor: IngestCursor, o: { settledBefore: number; cap: number }): Promise<{ records: number; capped: boolean; oldestReceivedAt: number | null }> {
  const a = tables(db).auditRecords;
  const [first] = await db.select({ receivedAt: a.receivedAt }).from(a).where(after(db, orgId, cursor, o.settledBefore)).orderBy(asc(a.receivedAt), asc(a.id)).limit(1);
  if (!first) return { records: 0, capped: false, oldestReceivedAt: null };
  const sub = db.select({ id: a.id }).from(a).where(after(db, orgId, cursor, o.settledBefore)).limit(o.cap + 1).as("backlog");
  const [n] = await db.select({ n: count() }).from(sub);
  const records = Number(n?.n ?? 0);
  return { records: Math.min(records, o.cap), capped: records > o.cap, oldestReceivedAt: first.receivedAt };
}
