// Tamper evidence on the control plane (issue 15): continuity of each proxy chain checked at
// ingest (continuity.ts), and signed checkpoints. A checkpoint is the list of every chain's
// head (sequence number and hash of its last record, as received) for one organization,
// numbered, naming the hash of the checkpoint before it, signed with the organization's
// Ed25519 key. The private key is stored only wrapped by the KMS, so whoever can write the
// database cannot sign: rows changed, removed or inserted after a checkpoint no longer hash up
// to a head it signed, which `svc audit verify` shows.
import { createPrivateKey, generateKeyPairSync, type KeyObject, sign } from "node:crypto";
import { and, asc, desc, eq, inArray } from "drizzle-orm";
import type { AuditRecord } from "../../contract/audit.ts";
import { CHECKPOINT_VERSION, type CheckpointBody, type CheckpointFloor, type CheckpointHead, type CheckpointView, bodyHash, ciphertextDigest, publicKeyText, recordHash } from "../../contract/audit-chain.ts";
import { newId } from "../../contract/ids.ts";
import type { ChainFlag } from "../../contract/admin-api.ts";
import { type Db, tables } from "../db/index.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { type Flag, type Head, type Link, advance } from "./continuity.ts";

/**
 * Checks the newly stored records of one installation's batch against their chains' heads and
 * moves the heads; flags what does not continue. Runs in the ingest transaction (`tx`): one
 * read and one write per chain in the batch.
 */
export async function checkContinuity(tx: Db, caller: { orgId: string; installationId: string }, records: readonly AuditRecord[], now: number): Promise<Flag[]> {
  const byChain = new Map<string, { replicaId: string | null; links: Link[] }>();
  for (const r of records) {
    if (r.chain_id === undefined || r.chain_seq === undefined) continue;
    const entry = byChain.get(r.chain_id) ?? { replicaId: r.replica_id ?? null, links: [] };
    entry.links.push({ recordId: r.id, seq: r.chain_seq, prev: r.chain_prev ?? null, hash: recordHash(r, ciphertextDigest(r.ciphertext)) });
    byChain.set(r.chain_id, entry);
  }
  if (byChain.size === 0) return [];
  const { auditChainHeads: h, auditChainFlags: f } = tables(tx);
  const key = (chainId: string) => `${caller.orgId}:${chainId}`;
  const rows = await tx.select().from(h).where(inArray(h.id, [...byChain.keys()].map(key)));
  const heads = new Map(rows.map((row) => [row.chainId, row]));
  const all: Flag[] = [];
  for (const [chainId, { replicaId, links }] of byChain) {
    const row = heads.get(chainId);
    // A chain is one process's: another installation naming it is a fork of its own kind.
    if (row && row.installationId !== caller.installationId) {
      const first = links[0]!;
      all.push({ kind: "fork", recordId: first.recordId, seq: first.seq, detail: `chain ${chainId} belongs to installation ${row.installationId}` });
      await tx.insert(f).values({ id: newId("auditChainFlag", now), orgId: caller.orgId, chainId, installationId: caller.installationId, kind: "fork", recordId: first.recordId, seq: first.seq, detail: all[all.length - 1]!.detail, at: now });
      continue;
    }
    const before: Head | null = row ? { seq: row.seq, hash: row.hash } : null;
    const { head, flags } = advance(before, links);
    if (head && (!before || head.seq !== before.seq)) {
      if (row) await tx.update(h).set({ seq: head.seq, hash: head.hash, updatedAt: now }).where(eq(h.id, key(chainId)));
      else await tx.insert(h).values({ id: key(chainId), orgId: caller.orgId, chainId, installationId: caller.installationId, replicaId, seq: head.seq, hash: head.hash, updatedAt: now });
    }
    if (flags.length > 0) {
      await tx.insert(f).values(flags.map((fl) => ({ id: newId("auditChainFlag", now), orgId: caller.orgId, chainId, installationId: caller.installationId, kind: fl.kind, recordId: fl.recordId, seq: fl.seq, detail: fl.detail, at: now })));
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

const keyContext = (orgId: string) => `audit-checkpoint-key:${orgId}`;

/** The organization's signing key, made (and stored wrapped) the first time. */
async function signingKey(deps: ControlPlaneDeps, orgId: string): Promise<{ publicKey: string; privateKey: KeyObject }> {
  const k = tables(deps.db).auditSigningKeys;
  let [row] = await deps.db.select().from(k).where(eq(k.orgId, orgId));
  if (!row) {
    const pair = generateKeyPairSync("ed25519");
    const der = pair.privateKey.export({ format: "der", type: "pkcs8" });
    await deps.db
      .insert(k)
      .values({ orgId, publicKey: publicKeyText(pair.publicKey), wrappedPrivateKey: deps.kms.wrap(new Uint8Array(der), keyContext(orgId)) })
      .onConflictDoNothing({ target: k.orgId });
    // Another replica may have made one first: use whichever was stored.
    [row] = await deps.db.select().from(k).where(eq(k.orgId, orgId));
  }
  const der = deps.kms.unwrap(row!.wrappedPrivateKey, keyContext(orgId));
  return { publicKey: row!.publicKey, privateKey: createPrivateKey({ key: Buffer.from(der), format: "der", type: "pkcs8" }) };
}


/**
 * Signs the organization's chain heads as its next checkpoint. Without `force`, nothing is
 * made when no head moved since the last one (the last one is returned). Two replicas making
 * one at once: the number is unique per organization, and the transaction that loses runs again.
 */
export async function makeCheckpoint(deps: ControlPlaneDeps, orgId: string, opts: { force?: boolean } = {}): Promise<{ checkpoint: CheckpointView | null; created: boolean }> {
  const key = await signingKey(deps, orgId);
  const now = deps.now();
  return deps.db.transaction(async (tx) => {
    const { auditChainHeads: h, auditCheckpoints: c, auditChainFloors: fl } = tables(tx);
    const [last] = await tx.select().from(c).where(eq(c.orgId, orgId)).orderBy(desc(c.number)).limit(1);
    const heads: CheckpointHead[] = (await tx.select().from(h).where(eq(h.orgId, orgId)).orderBy(asc(h.chainId))).map((r) => ({ chain_id: r.chainId, installation_id: r.installationId, replica_id: r.replicaId, seq: r.seq, hash: r.hash }));
    const floors: CheckpointFloor[] = (await tx.select().from(fl).where(eq(fl.orgId, orgId)).orderBy(asc(fl.chainId))).map((r) => ({ chain_id: r.chainId, seq: r.seq, prev: r.prev }));
    const lastBody = last ? (JSON.parse(last.body) as CheckpointBody) : null;
    const same = lastBody && JSON.stringify(lastBody.heads) === JSON.stringify(heads) && JSON.stringify(lastBody.floors ?? []) === JSON.stringify(floors);
    if (last && !opts.force && same) return { checkpoint: checkpointView(last), created: false };
    if (!last && heads.length === 0 && !opts.force) return { checkpoint: null, created: false };
    const number = (last?.number ?? 0) + 1;
    const body: CheckpointBody = { v: CHECKPOINT_VERSION, organization_id: orgId, number, at: new Date(now).toISOString(), prev: last ? bodyHash(last.body) : null, public_key: key.publicKey, heads, ...(floors.length > 0 ? { floors } : {}) };
    const text = JSON.stringify(body);
    const signature = sign(null, Buffer.from(text), key.privateKey).toString("base64");
    const [row] = await tx.insert(c).values({ id: newId("auditCheckpoint", now), orgId, number, at: now, body: text, signature }).returning();
    return { checkpoint: checkpointView(row!), created: true };
  });
}

function checkpointView(r: { id: string; number: number; at: number; body: string; signature: string }): CheckpointView {
  return { id: r.id, number: r.number, at: new Date(r.at).toISOString(), body: r.body, signature: r.signature };
}

/** Every checkpoint, oldest first, and the organization's public key (null before the first). */
export async function listCheckpoints(db: Db, orgId: string): Promise<{ public_key: string | null; checkpoints: CheckpointView[] }> {
  const { auditCheckpoints: c, auditSigningKeys: k } = tables(db);
  const [key] = await db.select({ publicKey: k.publicKey }).from(k).where(eq(k.orgId, orgId));
  const rows = await db.select().from(c).where(eq(c.orgId, orgId)).orderBy(asc(c.number));
  return { public_key: key?.publicKey ?? null, checkpoints: rows.map(checkpointView) };
}

/** Organizations with a chain head: the ones a periodic checkpoint may be due for. */
export async function chainedOrganizations(db: Db): Promise<string[]> {
  const h = tables(db).auditChainHeads;
  return (await db.selectDistinct({ orgId: h.orgId }).from(h)).map((r) => r.orgId);
}

/**
 * The next link of a chain the control plane writes itself (admin events, audit/admin-events.ts):
 * reads the chain's head, lets `hashOf` hash the record with its link, and moves the head to it.
 * Runs in the caller's transaction, so the record and the head move together; checkpoints then
 * sign the head like any proxy chain's.
 */
export async function appendOwnChain(tx: Db, orgId: string, chainId: string, installationId: string, now: number, hashOf: (link: { chain_id: string; chain_seq: number; chain_prev: string | null }) => string): Promise<{ chain_id: string; chain_seq: number; chain_prev: string | null }> {
  const h = tables(tx).auditChainHeads;
  const id = `${orgId}:${chainId}`;
  const [head] = await tx.select().from(h).where(eq(h.id, id));
  const link = { chain_id: chainId, chain_seq: (head?.seq ?? 0) + 1, chain_prev: head?.hash ?? null };
  const hash = hashOf(link);
  if (head) await tx.update(h).set({ seq: link.chain_seq, hash, updatedAt: now }).where(and(eq(h.id, id), eq(h.seq, head.seq)));
  else await tx.insert(h).values({ id, orgId, chainId, installationId, replicaId: null, seq: link.chain_seq, hash, updatedAt: now });
  return link;
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
