// Adoption: rows stored before the store chains existed (contract/store-chain.ts) are linked,
// as they are found, into their organization's "adopted" chain, so that afterwards every row
// belongs to a chain and `svc audit verify` flags any row that does not (a back-dated insert,
// a row of an installation that never chained). The migration that added the store chains
// listed the organizations that had rows (audit_adoption); for each, a background pass takes
// at most ADOPTION_SLICE unlinked rows per transaction, with a turn of the event loop between
// slices, so the control plane keeps answering (issue 30), and resumes where it stopped after
// a restart (the unlinked rows are the work left: the index on (org, store_chain, store_seq)
// finds them). An organization is complete when a pass finds none and ADOPTION_QUIET_MS have
// passed since adoption began (control-plane replicas of the old version, during a rolling
// upgrade, may still write unlinked rows meanwhile; they are adopted too). Checkpoints sign
// the state; once complete it never goes back. What adoption cannot know: a row someone wrote
// into the database before it was adopted is adopted as found (docs/audit.md).
import { and, eq, isNull } from "drizzle-orm";
import { extendChain, storeDigest } from "../../contract/store-chain.ts";
import { lockStoreHead, moveStoreHead } from "../audit-chain/store-heads.ts";
import { type Db, nextTurn, tables } from "../db/index.ts";
import type { ControlPlaneDeps } from "../deps.ts";
import { storedFromRow } from "./stored.ts";

export const ADOPTION_SLICE = 1000;
export const ADOPTION_QUIET_MS = 10 * 60_000;
/** How often pending organizations get a pass (and the quiet period its last one). */
const PASS_EVERY_MS = 60_000;

/** Links up to `limit` unlinked rows of the organization into its adopted chain, in one transaction; returns how many. */
export async function adoptSlice(deps: ControlPlaneDeps, orgId: string, limit = ADOPTION_SLICE): Promise<number> {
  const now = deps.now();
  return deps.db.transaction(async (tx) => {
    const { auditRecords: a, auditAdoption: t } = tables(tx);
    const rows = await tx
      .select()
      .from(a)
      .where(and(eq(a.orgId, orgId), isNull(a.storeChain)))
      .orderBy(a.orgId, a.storeChain, a.storeSeq)
      .limit(limit);
    if (rows.length === 0) return 0;
    const head = await lockStoreHead(tx, orgId, "adopted", now);
    const { links, head: next } = extendChain(
      "adopted",
      head,
      rows.map((r) => storeDigest(storedFromRow(r))),
    );
    for (const [i, r] of rows.entries()) {
      const link = links[i]!;
      await tx
        .update(a)
        .set({ storeChain: "adopted", storeSeq: link.seq, storePrev: link.prev })
        .where(and(eq(a.id, r.id), isNull(a.storeChain)));
    }
    await moveStoreHead(tx, orgId, "adopted", next, now);
    const [state] = await tx.select({ adopted: t.adopted }).from(t).where(eq(t.orgId, orgId));
    if (state)
      await tx
        .update(t)
        .set({ adopted: state.adopted + rows.length })
        .where(eq(t.orgId, orgId));
    return rows.length;
  });
}

/**
 * One pass over an organization: slices until none is left (or `stopped`); then complete when
 * the quiet period is over. Returns the rows adopted.
 */
export async function adoptionPass(deps: ControlPlaneDeps, orgId: string, o: { stopped?: () => boolean; quietMs?: number; slice?: number } = {}): Promise<number> {
  // Complete (or never needed): a row without a link from now on is an insertion, never adopted.
  if ((await adoptionState(deps.db, orgId)) === "complete") return 0;
  let total = 0;
  for (;;) {
    if (o.stopped?.()) return total;
    const n = await adoptSlice(deps, orgId, o.slice ?? ADOPTION_SLICE);
    total += n;
    if (n < (o.slice ?? ADOPTION_SLICE)) break;
    await nextTurn();
  }
  const t = tables(deps.db).auditAdoption;
  const [state] = await deps.db.select().from(t).where(eq(t.orgId, orgId));
  if (total === 0 && state && state.completedAt === null && deps.now() - state.startedAt >= (o.quietMs ?? ADOPTION_QUIET_MS)) {
    await deps.db
      .update(t)
      .set({ completedAt: deps.now() })
      .where(and(eq(t.orgId, orgId), isNull(t.completedAt)));
    deps.log.info("audit adoption complete", { org_id: orgId, adopted: state.adopted });
  }
  return total;
}

/** Whether rows stored before the store chains may still be unlinked: what checkpoints sign. */
export async function adoptionState(db: Db, orgId: string): Promise<"pending" | "complete"> {
  const t = tables(db).auditAdoption;
  const [row] = await db.select({ completedAt: t.completedAt }).from(t).where(eq(t.orgId, orgId));
  return row && row.completedAt === null ? "pending" : "complete";
}

/** Organizations whose adoption is not complete. */
export async function pendingAdoptions(db: Db): Promise<string[]> {
  const t = tables(db).auditAdoption;
  return (await db.select({ orgId: t.orgId }).from(t).where(isNull(t.completedAt))).map((r) => r.orgId);
}

/** The background adoption of `svc controlplane serve`: a pass at start and every minute while any organization is pending. */
export function startAdoption(deps: ControlPlaneDeps): () => Promise<void> {
  let stopped = false;
  let running: Promise<void> | null = null;
  const tick = () => {
    if (stopped || running) return;
    running = (async () => {
      for (const orgId of await pendingAdoptions(deps.db)) {
        if (stopped) return;
        const n = await adoptionPass(deps, orgId, { stopped: () => stopped });
        if (n > 0) deps.log.info("audit rows adopted into the store chain", { org_id: orgId, rows: n });
      }
    })()
      .catch((e: unknown) => deps.log.error("audit adoption failed", { error: (e as Error).message }))
      .finally(() => {
        running = null;
      });
  };
  const timer = setInterval(tick, PASS_EVERY_MS);
  queueMicrotask(tick);
  return async () => {
    stopped = true;
    clearInterval(timer);
    await running;
  };
}
