// Signed checkpoints (issue 15, issue 27). A checkpoint is the list of every chain's head of one
// organization (the proxies' chains and the control plane's store chains: sequence number and
// hash of the last record, as stored), with the store chains' retention gaps, the proxy
// chains' floors and whether rows stored before the store chains may still await adoption;
// numbered, naming the hash of the checkpoint before it, signed with the organization's key
// (signing-key.ts). Rows changed, removed or inserted after a checkpoint no longer hash up to a
// head it signed, which `svc audit verify` shows against a key pinned outside the store.
import { sign } from "node:crypto";
import { and, asc, desc, eq } from "drizzle-orm";
import { CHECKPOINT_VERSION, type CheckpointBody, type CheckpointFloor, type CheckpointGap, type CheckpointHead, type CheckpointView, bodyHash } from "../../contract/audit-chain.ts";
import { SvcError } from "../../contract/errors.ts";
import { newId } from "../../contract/ids.ts";
import { adoptionState, pendingAdoptions } from "../audit/adoption.ts";
import { type Db, tables } from "../db/index.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { type SigningKey, currentSigningKey, ensureSigningKey, fingerprintOf } from "./signing-key.ts";

function checkpointView(r: { id: string; number: number; at: number; body: string; signature: string }): CheckpointView {
  return { id: r.id, number: r.number, at: new Date(r.at).toISOString(), body: r.body, signature: r.signature };
}

/**
 * The last checkpoint this process signed or found, per organization (and store: tests run many).
 * Someone who can write the database could delete the checkpoints and let the next one be
 * signed as #1 over a history they rewrote; a running control plane refuses to sign over a
 * checkpoint it knew that is gone or changed, and says so in its log, until it is restarted.
 */
const known = new WeakMap<object, Map<string, { number: number; hash: string }>>();

async function checkKnown(tx: Db, db: object, orgId: string, last: { number: number; body: string } | undefined): Promise<void> {
  const seen = known.get(db)?.get(orgId);
  if (!seen) return;
  const c = tables(tx).auditCheckpoints;
  const [then] =
    last && last.number >= seen.number
      ? await tx
          .select({ body: c.body })
          .from(c)
          .where(and(eq(c.orgId, orgId), eq(c.number, seen.number)))
      : [];
  if (!then || bodyHash(then.body) !== seen.hash) {
    throw new SvcError(
      "conflict",
      `checkpoint #${seen.number}, which this control plane signed or read before, is ${then ? "changed" : "gone"} in the store: the audit's history was rewritten in the database; no checkpoint is signed over it (restore the store from a backup, or restart the control plane to sign anyway)`,
    );
  }
}

/** After the transaction that read or wrote `cp` committed: it is what this process knows last. */
export function rememberCheckpoint(db: object, orgId: string, cp: { number: number; body: string }): void {
  let m = known.get(db);
  if (!m) known.set(db, (m = new Map()));
  const seen = m.get(orgId);
  if (!seen || cp.number >= seen.number) m.set(orgId, { number: cp.number, hash: bodyHash(cp.body) });
}

/**
 * Signs the organization's heads as its next checkpoint, in the caller's transaction, with
 * `key`. Without `force`, nothing is made when nothing moved since the last one (the last one
 * is returned). `nextKey` makes it the hand-over of a key rotation.
 */
export async function signCheckpoint(
  tx: Db,
  orgId: string,
  key: SigningKey,
  o: { force: boolean; nextKey?: string; now: number; store: object },
): Promise<{ checkpoint: CheckpointView | null; created: boolean }> {
  const { auditChainHeads: h, auditCheckpoints: c, auditChainFloors: fl, auditStoreGaps: g } = tables(tx);
  const [last] = await tx.select().from(c).where(eq(c.orgId, orgId)).orderBy(desc(c.number)).limit(1);
  await checkKnown(tx, o.store, orgId, last);
  const heads: CheckpointHead[] = (await tx.select().from(h).where(eq(h.orgId, orgId)).orderBy(asc(h.chainId))).map((r) => ({
    chain_id: r.chainId,
    installation_id: r.installationId,
    replica_id: r.replicaId,
    seq: r.seq,
    hash: r.hash,
  }));
  const floors: CheckpointFloor[] = (await tx.select().from(fl).where(eq(fl.orgId, orgId)).orderBy(asc(fl.chainId))).map((r) => ({ chain_id: r.chainId, seq: r.seq, prev: r.prev }));
  const gaps: CheckpointGap[] = (await tx.select().from(g).where(eq(g.orgId, orgId)).orderBy(asc(g.chain), asc(g.fromSeq))).map((r) => ({
    chain_id: r.chain,
    from: r.fromSeq,
    to: r.toSeq,
    prev: r.prev,
    hash: r.hash,
  }));
  const adoption = await adoptionState(tx, orgId);
  const lastBody = last ? (JSON.parse(last.body) as CheckpointBody) : null;
  const same =
    lastBody &&
    lastBody.public_key === key.publicKey &&
    !lastBody.next_key &&
    lastBody.adoption === adoption &&
    JSON.stringify(lastBody.heads) === JSON.stringify(heads) &&
    JSON.stringify(lastBody.floors ?? []) === JSON.stringify(floors) &&
    JSON.stringify(lastBody.gaps ?? []) === JSON.stringify(gaps);
  if (last && !o.force && !o.nextKey && same) return { checkpoint: checkpointView(last), created: false };
  if (!last && heads.length === 0 && !o.force && !o.nextKey) return { checkpoint: null, created: false };
  const number = (last?.number ?? 0) + 1;
  const body: CheckpointBody = {
    v: CHECKPOINT_VERSION,
    organization_id: orgId,
    number,
    at: new Date(o.now).toISOString(),
    prev: last ? bodyHash(last.body) : null,
    public_key: key.publicKey,
    heads,
    ...(floors.length > 0 ? { floors } : {}),
    ...(gaps.length > 0 ? { gaps } : {}),
    adoption,
    ...(o.nextKey ? { next_key: o.nextKey } : {}),
  };
  const text = JSON.stringify(body);
  const signature = sign(null, Buffer.from(text), key.privateKey).toString("base64");
  const [row] = await tx
    .insert(c)
    .values({ id: newId("auditCheckpoint", o.now), orgId, number, at: o.now, body: text, signature })
    .returning();
  return { checkpoint: checkpointView(row!), created: true };
}

/**
 * The next checkpoint, in a transaction of its own. Two replicas making one at once: the
 * number is unique per organization, and the transaction that loses runs again. The key is
 * read inside the transaction, so a rotation in between is never signed over.
 */
export async function makeCheckpoint(deps: ControlPlaneDeps, orgId: string, opts: { force?: boolean } = {}): Promise<{ checkpoint: CheckpointView | null; created: boolean }> {
  await ensureSigningKey(deps, orgId);
  const now = deps.now();
  const made = await deps.db.transaction(async (tx) => {
    const key = (await currentSigningKey(tx, deps.kms, orgId, deps.log))!;
    return signCheckpoint(tx, orgId, key, { force: !!opts.force, now, store: deps.db });
  });
  if (made.checkpoint) rememberCheckpoint(deps.db, orgId, made.checkpoint);
  return made;
}

/** Every checkpoint, oldest first, the key the control plane signs with (derived from its private key) and when the next is due. */
export async function listCheckpoints(deps: ControlPlaneDeps, orgId: string) {
  const c = tables(deps.db).auditCheckpoints;
  const key = await currentSigningKey(deps.db, deps.kms, orgId, deps.log);
  const rows = await deps.db.select().from(c).where(eq(c.orgId, orgId)).orderBy(asc(c.number));
  const next = deps.checkpointDueAt?.() ?? null;
  return {
    public_key: key?.publicKey ?? null,
    fingerprint: key ? fingerprintOf(key.publicKey) : null,
    next_at: next === null ? null : new Date(next).toISOString(),
    checkpoints: rows.map(checkpointView),
  };
}

/** Organizations a periodic checkpoint may be due for: any with a chain head, or with adoption pending. */
export async function checkpointOrganizations(db: Db): Promise<string[]> {
  const h = tables(db).auditChainHeads;
  const orgs = new Set((await db.selectDistinct({ orgId: h.orgId }).from(h)).map((r) => r.orgId));
  for (const orgId of await pendingAdoptions(db)) orgs.add(orgId);
  return [...orgs];
}
