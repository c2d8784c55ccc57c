// Tamper evidence on the control plane (issue 15): continuity of each proxy chain checked at
// ingest (continuity.ts), the control plane's own proxy-form chain of admin events, and where
// retention cut a proxy chain. Checkpoints are checkpoints.ts, the signing key signing-key.ts,
// the store chains store-heads.ts.
import { and, desc, eq, inArray } from "drizzle-orm";
import type { AuditRecord } from "../../contract/audit.ts";
import { ciphertextDigest, recordHash } from "../../contract/audit-chain.ts";
import { newId } from "../../contract/ids.ts";
import type { ChainFlag } from "../../contract/admin-api.ts";
import { type Db, tables } from "../db/index.ts";
import { type Flag, type Head, type Link, advance } from "./continuity.ts";

/**
 * Checks the newly stored records of one installation's batch against their chains' heads and
 * moves the heads; flags what does not continue. Runs in the ingest transaction (`tx`): one
 * read and one write per chain in the batch. `hashes`: the records' chain hashes, when the
 * caller computed them already (ingest does, for the store chain).
 */
export async function checkContinuity(tx: Db, caller: { orgId: string; installationId: string }, records: readonly AuditRecord[], now: number, hashes?: ReadonlyMap<string, string>): Promise<Flag[]> {
  const byChain = new Map<string, { replicaId: string | null; links: Link[] }>();
  for (const r of records) {
    if (r.chain_id === undefined || r.chain_seq === undefined) continue;
    const entry = byChain.get(r.chain_id) ?? { replicaId: r.replica_id ?? null, links: [] };
    entry.links.push({ recordId: r.id, seq: r.chain_seq, prev: r.chain_prev ?? null, hash: hashes?.get(r.id) ?? recordHash(r, ciphertextDigest(r.ciphertext)) });
    byChain.set(r.chain_id, entry);
  }
  if (byChain.size === 0) return [];
  const { auditChainHeads: h, auditChainFlags: f } = tables(tx);
  const key = (chainId: string) => `${caller.orgId}:${chainId}`;
  const rows = await tx
    .select()
    .from(h)
    .where(inArray(h.id, [...byChain.keys()].map(key)));
  const heads = new Map(rows.map((row) => [row.chainId, row]));
  const all: Flag[] = [];
  for (const [chainId, { replicaId, links }] of byChain) {
    const row = heads.get(chainId);
    // A chain is one process's: another installation naming it is a fork of its own kind.
    if (row && row.installationId !== caller.installationId) {
      const first = links[0]!;
      all.push({ kind: "fork", recordId: first.recordId, seq: first.seq, detail: `chain ${chainId} belongs to installation ${row.installationId}` });
      await tx.insert(f).values({
        id: newId("auditChainFlag", now),
        orgId: caller.orgId,
        chainId,
        installationId: caller.installationId,
        kind: "fork",
        recordId: first.recordId,
        seq: first.seq,
        detail: all[all.length - 1]!.detail,
        at: now,
      });
      continue;
    }
    const before: Head | null = row ? { seq: row.seq, hash: row.hash } : null;
    const { head, flags } = advance(before, links);
    if (head && (!before || head.seq !== before.seq)) {
      if (row)
        await tx
          .update(h)
          .set({ seq: head.seq, hash: head.hash, updatedAt: now })
          .where(eq(h.id, key(chainId)));
      else await tx.insert(h).values({ id: key(chainId), orgId: caller.orgId, chainId, installationId: caller.installationId, replicaId, seq: head.seq, hash: head.hash, updatedAt: now });
    }
    if (flags.length > 0) {
      await tx.insert(f).values(
        flags.map((fl) => ({
          id: newId("auditChainFlag", now),
          orgId: caller.orgId,
          chainId,
          installationId: caller.installationId,
          kind: fl.kind,
          recordId: fl.recordId,
          seq: fl.seq,
          detail: fl.detail,
          at: now,
        })),
      );
      all.push(...flags);
    }
  }
  return all;
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
