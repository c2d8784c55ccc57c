// Where retention deleted store-chain rows (audit/retention.ts): in the deleting transaction,
// the deleted numbers of each store chain become gaps (audit_store_gaps), merged with the
// gaps next to them, each keeping what the first deleted row named (`prev`) and the last
// deleted row's link hash (`hash`, which the row after it names). Checkpoints sign the gaps;
// `svc audit verify` steps over them. Retention deletes proxy chain by proxy chain, so while a
// run is under way rows of several installations leave gaps between each other's; they merge
// as the run deletes the rest.
import { and, eq, inArray } from "drizzle-orm";
import { storeDigest, storeLinkHash } from "../../contract/store-chain.ts";
import { type RowColumns, storedFromRow } from "../audit/stored.ts";
import { type Db, tables } from "../db/index.ts";

/** A row about to be deleted, every column (its link hash is computed from them). */
type Deleted = RowColumns & { storeChain: string | null; storeSeq: number | null; storePrev: string | null };

/** Runs of consecutive numbers among `seqs` (sorted): [from, to] pairs. Pure. */
export function runsOf(seqs: readonly number[]): [number, number][] {
  const runs: [number, number][] = [];
  for (const s of seqs) {
    const last = runs[runs.length - 1];
    if (last && s === last[1] + 1) last[1] = s;
    else if (!last || s > last[1]) runs.push([s, s]);
  }
  return runs;
}

/** Records, in the transaction `tx` that deletes them, the store-chain numbers of `rows` as gaps. */
export async function recordStoreGaps(tx: Db, orgId: string, rows: readonly Deleted[], now: number): Promise<void> {
  const g = tables(tx).auditStoreGaps;
  const byChain = new Map<string, Map<number, Deleted>>();
  for (const r of rows) {
    if (r.storeChain === null || r.storeSeq === null) continue;
    const m = byChain.get(r.storeChain) ?? new Map<number, Deleted>();
    m.set(r.storeSeq, r);
    byChain.set(r.storeChain, m);
  }
  for (const [chain, at] of byChain) {
    for (const [from, to] of runsOf([...at.keys()].sort((x, y) => x - y))) {
      const last = at.get(to)!;
      const hash = storeLinkHash({ chain, seq: to, prev: last.storePrev }, storeDigest(storedFromRow(last)));
      let gap = { from, to, prev: at.get(from)!.storePrev, hash };
      const [before] = await tx
        .select()
        .from(g)
        .where(and(eq(g.orgId, orgId), eq(g.chain, chain), eq(g.toSeq, from - 1)));
      const [after] = await tx
        .select()
        .from(g)
        .where(and(eq(g.orgId, orgId), eq(g.chain, chain), eq(g.fromSeq, to + 1)));
      if (before) gap = { ...gap, from: before.fromSeq, prev: before.prev };
      if (after) gap = { ...gap, to: after.toSeq, hash: after.hash };
      const stale = [before?.id, after?.id].filter((x): x is string => !!x);
      if (stale.length > 0) await tx.delete(g).where(inArray(g.id, stale));
      await tx.insert(g).values({ id: `${orgId}:${chain}:${gap.from}`, orgId, chain, fromSeq: gap.from, toSeq: gap.to, prev: gap.prev, hash: gap.hash, updatedAt: now });
    }
  }
}
