// The heads of an organization's store chains (contract/store-chain.ts), kept in
// audit_chain_heads beside the proxy chains' (so every checkpoint signs them), under the chain
// ids "store", "admin" and "adopted". A writer takes the head for its transaction, numbers its
// rows after it, and moves it, so numbers follow commit order:
//   - PostgreSQL: `SELECT … FOR UPDATE` on the head row. Ingest runs READ COMMITTED
//     (audit/ingest.ts), so a second writer waits for the row and then reads the committed
//     head, instead of failing with a serialization error as a SERIALIZABLE transaction would
//     (issue 30: concurrent shippers got 500s). The head is the first row an ingest locks, so
//     two ingests of one organization never deadlock.
//   - SQLite: the transaction already holds the only write lock (BEGIN IMMEDIATE).
// A transaction number N+1 is therefore only given once the one holding N has committed:
// whoever reads a chain in number order (SIEM delivery) never passes a number still to come.
import { eq } from "drizzle-orm";
import type { StoreChainId } from "../../contract/store-chain.ts";
import { type Db, type Dialect, type Statement, rawStatements, tables } from "../db/index.ts";

/** The installation id a store chain's head names: the control plane itself. */
const CONTROL_PLANE = "controlplane";

export type StoreHead = { seq: number; hash: string | null };

const headId = (orgId: string, chain: StoreChainId) => `${orgId}:${chain}`;

const SELECT_HEAD = { postgres: `SELECT "seq", "hash" FROM "audit_chain_heads" WHERE "id" = $1 FOR UPDATE`, sqlite: `SELECT "seq", "hash" FROM "audit_chain_heads" WHERE "id" = ?` };
const headOf = (rows: unknown[][]): StoreHead | null => (rows[0] ? { seq: Number(rows[0][0]), hash: rows[0][1] === "" ? null : (rows[0][1] as string) } : null);

/** Takes the chain's head for the rest of the transaction `tx` (made, empty, the first time). */
export async function lockStoreHead(tx: Db, orgId: string, chain: StoreChainId, now: number): Promise<StoreHead> {
  return (await lockStoreHeadThenRead(tx, orgId, chain, now, null)).head;
}

/**
 * lockStoreHead, with `read` sent right behind the lock: on PostgreSQL both travel in one round
 * trip and `read` runs once the head is taken (READ COMMITTED: its own snapshot, taken after the
 * lock was granted, so it sees what the head's last holder committed). Returns its rows too.
 */
export async function lockStoreHeadThenRead(tx: Db, orgId: string, chain: StoreChainId, now: number, read: Statement | null): Promise<{ head: StoreHead; rows: unknown[][] }> {
  const raw = rawStatements(tx);
  const id = headId(orgId, chain);
  const locked = raw.rows(SELECT_HEAD[raw.dialect], [id]);
  const after = read ? raw.rows(read.text, read.params) : Promise.resolve([]);
  // both awaited together: a failure of either is not left unhandled
  const [headRows, rows] = await Promise.all([locked, after]);
  const head = headOf(headRows);
  if (head) return { head, rows };
  // Two first writers at once: one inserts, the other's insert waits for it and does nothing.
  const h = tables(tx).auditChainHeads;
  await tx.insert(h).values({ id, orgId, chainId: chain, installationId: CONTROL_PLANE, replicaId: null, seq: 0, hash: "", updatedAt: now }).onConflictDoNothing({ target: h.id });
  // read again under the lock: the first read may have run before another first writer's insert committed
  return { head: headOf(await raw.rows(SELECT_HEAD[raw.dialect], [id]))!, rows: read ? await raw.rows(read.text, read.params) : [] };
}

/** Moves a head taken with lockStoreHead. */
export async function moveStoreHead(tx: Db, orgId: string, chain: StoreChainId, head: StoreHead, now: number): Promise<void> {
  const raw = rawStatements(tx);
  const { text, params } = moveStoreHeadStatement(raw.dialect, orgId, chain, head, now);
  await raw.rows(text, params);
}

/** The statement that moves a head taken with lockStoreHead (for a transaction's last statements). */
export function moveStoreHeadStatement(dialect: Dialect, orgId: string, chain: StoreChainId, head: StoreHead, now: number): Statement {
  const text =
    dialect === "postgres"
      ? `UPDATE "audit_chain_heads" SET "seq" = $1, "hash" = $2, "updated_at" = $3 WHERE "id" = $4`
      : `UPDATE "audit_chain_heads" SET "seq" = ?, "hash" = ?, "updated_at" = ? WHERE "id" = ?`;
  return { text, params: [head.seq, head.hash ?? "", now, headId(orgId, chain)] };
}

/** A chain's head as stored (no lock): SIEM lag, a new sink's starting point. */
export async function storeHead(db: Db, orgId: string, chain: StoreChainId): Promise<StoreHead> {
  const h = tables(db).auditChainHeads;
  const [row] = await db
    .select({ seq: h.seq, hash: h.hash })
    .from(h)
    .where(eq(h.id, headId(orgId, chain)));
  return row ? { seq: row.seq, hash: row.hash === "" ? null : row.hash } : { seq: 0, hash: null };
}
