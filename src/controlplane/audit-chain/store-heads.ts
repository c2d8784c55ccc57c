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
import { type Db, rawStatements, tables } from "../db/index.ts";

/** The installation id a store chain's head names: the control plane itself. */
const CONTROL_PLANE = "controlplane";

export type StoreHead = { seq: number; hash: string | null };

const headId = (orgId: string, chain: StoreChainId) => `${orgId}:${chain}`;

async function selectForUpdate(tx: Db, id: string): Promise<StoreHead | null> {
  const raw = rawStatements(tx);
  const rows = await raw.rows(`SELECT "seq", "hash" FROM "audit_chain_heads" WHERE "id" = ${raw.dialect === "postgres" ? "$1 FOR UPDATE" : "?"}`, [id]);
  const row = rows[0];
  if (!row) return null;
  return { seq: Number(row[0]), hash: row[1] === "" ? null : (row[1] as string) };
}

/** Takes the chain's head for the rest of the transaction `tx` (made, empty, the first time). */
export async function lockStoreHead(tx: Db, orgId: string, chain: StoreChainId, now: number): Promise<StoreHead> {
  const id = headId(orgId, chain);
  const head = await selectForUpdate(tx, id);
  if (head) return head;
  // Two first writers at once: one inserts, the other's insert waits for it and does nothing.
  const h = tables(tx).auditChainHeads;
  await tx.insert(h).values({ id, orgId, chainId: chain, installationId: CONTROL_PLANE, replicaId: null, seq: 0, hash: "", updatedAt: now }).onConflictDoNothing({ target: h.id });
  return (await selectForUpdate(tx, id))!;
}

/** Moves a head taken with lockStoreHead. */
export async function moveStoreHead(tx: Db, orgId: string, chain: StoreChainId, head: StoreHead, now: number): Promise<void> {
  const h = tables(tx).auditChainHeads;
  await tx
    .update(h)
    .set({ seq: head.seq, hash: head.hash ?? "", updatedAt: now })
    .where(eq(h.id, headId(orgId, chain)));
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
