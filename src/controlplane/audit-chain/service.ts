// Tamper evidence on the control plane (issue 15): continuity of each proxy chain checked at
// ingest (continuity.ts), the control plane's own proxy-form chain of admin events, and where
// retention cut a proxy chain. Checkpoints are checkpoints.ts, the signing key signing-key.ts,
// the store chains store-heads.ts.
import { and, desc, eq } from "drizzle-orm";
import type { AuditRecord } from "../../contract/audit.ts";
import { ciphertextDigest, recordHash } from "../../contract/audit-chain.ts";
import { newId } from "../../contract/ids.ts";
import type { ChainFlag } from "../../contract/admin-api.ts";
import { type Db, type Dialect, type Statement, placeholders, tables } from "../db/index.ts";
import { type Flag, type Head, type Link, advance } from "./continuity.ts";

type ChainLinks = Map<string, { replicaId: string | null; links: Link[] }>;

/** The newly stored records of one installation's batch, by proxy chain. `hashes`: their chain hashes, when the caller computed them already (ingest does, for the store chain). */
export function chainLinks(records: readonly AuditRecord[], hashes?: ReadonlyMap<string, string>): ChainLinks {
  const byChain: ChainLinks = new Map();
  for (const r of records) {
    if (r.chain_id === undefined || r.chain_seq === undefined) continue;
    const entry = byChain.get(r.chain_id) ?? { replicaId: r.replica_id ?? null, links: [] };
    entry.links.push({ recordId: r.id, seq: r.chain_seq, prev: r.chain_prev ?? null, hash: hashes?.get(r.id) ?? recordHash(r, ciphertextDigest(r.ciphertext)) });
    byChain.set(r.chain_id, entry);
  }
  return byChain;
}

/**
 * The read of the heads of the chains `chainIds` (rows: chain id, installation, seq, hash), or
 * null for none. Ingest sends it right behind its store-head lock (store-heads.ts): the heads of
 * an organization's proxy chains only move under that lock.
 */
export function chainHeadsRead(dialect: Dialect, orgId: string, chainIds: readonly string[]): Statement | null {
  if (chainIds.length === 0) return null;
  const p = placeholders(dialect);
  return {
    text: `SELECT "chain_id", "installation_id", "seq", "hash" FROM "audit_chain_heads" WHERE "id" IN (${chainIds.map(() => p()).join(",")})`,
    params: chainIds.map((c) => `${orgId}:${c}`),
  };
}

/**
 * Checks the newly stored records of one installation's batch (`byChain`) against their
 * chains' heads (`headRows`, as chainHeadsRead reads them): the statements that move the heads
 * and store what does not continue (flags), to run in the ingest transaction. Pure.
 */
export function continuityWrites(
  dialect: Dialect,
  caller: { orgId: string; installationId: string },
  byChain: ChainLinks,
  headRows: readonly unknown[][],
  now: number,
): { flags: Flag[]; statements: Statement[] } {
  const heads = new Map(headRows.map((r) => [r[0] as string, { installationId: r[1] as string, seq: Number(r[2]), hash: r[3] as string }]));
  const key = (chainId: string) => `${caller.orgId}:${chainId}`;
  const all: Flag[] = [];
  const statements: Statement[] = [];
  const flagRows: unknown[][] = [];
  for (const [chainId, { replicaId, links }] of byChain) {
    const row = heads.get(chainId);
    // A chain is one process's: another installation naming it is a fork of its own kind.
    if (row && row.installationId !== caller.installationId) {
      const first = links[0]!;
      const flag: Flag = { kind: "fork", recordId: first.recordId, seq: first.seq, detail: `chain ${chainId} belongs to installation ${row.installationId}` };
      all.push(flag);
      flagRows.push([newId("auditChainFlag", now), caller.orgId, chainId, caller.installationId, flag.kind, flag.recordId, flag.seq, flag.detail, now]);
      continue;
    }
    const before: Head | null = row ? { seq: row.seq, hash: row.hash } : null;
    const { head, flags } = advance(before, links);
    if (head && (!before || head.seq !== before.seq)) {
      const p = placeholders(dialect);
      statements.push(
        row
          ? { text: `UPDATE "audit_chain_heads" SET "seq" = ${p()}, "hash" = ${p()}, "updated_at" = ${p()} WHERE "id" = ${p()}`, params: [head.seq, head.hash, now, key(chainId)] }
          : {
              text: `INSERT INTO "audit_chain_heads" ("id", "org_id", "chain_id", "installation_id", "replica_id", "seq", "hash", "updated_at") VALUES (${Array.from({ length: 8 }, p).join(",")})`,
              params: [key(chainId), caller.orgId, chainId, caller.installationId, replicaId, head.seq, head.hash, now],
            },
      );
    }
    for (const fl of flags) flagRows.push([newId("auditChainFlag", now), caller.orgId, chainId, caller.installationId, fl.kind, fl.recordId, fl.seq, fl.detail, now]);
    all.push(...flags);
  }
  // 500 rows a statement: 4,500 parameters, under either store's limit
  for (let k = 0; k < flagRows.length; k += 500) {
    const p = placeholders(dialect);
    const chunk = flagRows.slice(k, k + 500);
    statements.push({
      text: `INSERT INTO "audit_chain_flags" ("id", "org_id", "chain_id", "installation_id", "kind", "record_id", "seq", "detail", "at") VALUES ${chunk.map((r) => `(${r.map(p).join(",")})`).join(",")}`,
      params: chunk.flat(),
    });
  }
  return { flags: all, statements };
}

export type ChainFlagView = ChainFlag;

export async function listFlags(db: Db, orgId: string, limit = 200): Promise<ChainFlagView[]> {
  const f = tables(db).auditChainFlags;
  const rows = await db.select().from(f).where(eq(f.orgId, orgId)).orderBy(desc(f.id)).limit(limit);
  return rows.map((r) => ({ id: r.id, chain_id: r.chainId, installation_id: r.installationId, kind: r.kind, record_id: r.recordId, seq: r.seq, detail: r.detail, at: new Date(r.at).toISOString() }));
}

/**
 * The next link of a chain the control plane writes itself (admin events, audit/admin-events.ts):
 * reads the chain's head, lets `hashOf` hash the record with its link, and moves the head to it.
 * Runs in the caller's transaction, so the record and the head move together; checkpoints then
 * sign the head like any proxy chain's.
 */
export async function appendOwnChain(
  tx: Db,
  orgId: string,
  chainId: string,
  installationId: string,
  now: number,
  hashOf: (link: { chain_id: string; chain_seq: number; chain_prev: string | null }) => string,
): Promise<{ chain_id: string; chain_seq: number; chain_prev: string | null }> {
  const h = tables(tx).auditChainHeads;
  const id = `${orgId}:${chainId}`;
  const [head] = await tx.select().from(h).where(eq(h.id, id));
  const link = { chain_id: chainId, chain_seq: (head?.seq ?? 0) + 1, chain_prev: head?.hash ?? null };
  const hash = hashOf(link);
  if (head)
    await tx
      .update(h)
      .set({ seq: link.chain_seq, hash, updatedAt: now })
      .where(and(eq(h.id, id), eq(h.seq, head.seq)));
  else await tx.insert(h).values({ id, orgId, chainId, installationId, replicaId: null, seq: link.chain_seq, hash, updatedAt: now });
  return link;
}

/** A chain's retention floor: the first number kept (records below it were deleted), or null when none was. */
export async function floorOf(db: Db, orgId: string, chainId: string): Promise<number | null> {
  const fl = tables(db).auditChainFloors;
  const [row] = await db
    .select({ seq: fl.seq })
    .from(fl)
    .where(eq(fl.id, `${orgId}:${chainId}`));
  return row?.seq ?? null;
}

/**
 * Raises a chain's retention floor (audit/retention.ts) in the caller's transaction: records
 * below `seq` are gone and `prev` is the hash of the last one deleted. A floor never goes down.
 */
export async function raiseFloor(tx: Db, orgId: string, chainId: string, floor: { seq: number; prev: string }, now: number): Promise<void> {
  const fl = tables(tx).auditChainFloors;
  const id = `${orgId}:${chainId}`;
  const [row] = await tx.select().from(fl).where(eq(fl.id, id));
  if (row && row.seq >= floor.seq) return;
  if (row) await tx.update(fl).set({ seq: floor.seq, prev: floor.prev, updatedAt: now }).where(eq(fl.id, id));
  else await tx.insert(fl).values({ id, orgId, chainId, seq: floor.seq, prev: floor.prev, updatedAt: now });
}
