// The organization's bundle revision: the ETag every runtime polls against.
import { eq, sql } from "drizzle-orm";
import { type Db, tables } from "../db/index.ts";

/**
 * Marks every policy bundle of the organization as changed. Call it in the same transaction as
 * any write that can change a bundle (policies, tools, identities, groups, profiles,
 * assignments, audit keys, escrow): the revision is the bundle's ETag.
 */
export async function bumpRevision(db: Db, orgId: string): Promise<void> {
  const o = tables(db).organizations;
  await db
    .update(o)
    .set({ revision: sql`${o.revision} + 1` })
    .where(eq(o.id, orgId));
}
