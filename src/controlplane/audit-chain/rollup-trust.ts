// Whether the per-hour roll-ups may be read, as the latest finished verification found them.
// Apart from verify-store.ts so budgets and usage (audit/usage.ts) ask without importing the
// verifier, which reads through the export and would close an import cycle.
import { and, desc, eq, inArray } from "drizzle-orm";
import { type Db, tables } from "../db/index.ts";

/**
 * Whether budgets and usage must not read the organization's roll-ups: the latest run that
 * finished found them different from the records (audit/usage.ts then sums the records, as
 * before the roll-ups, until a run finds them equal again).
 */
export async function rollupsDistrusted(db: Db, orgId: string): Promise<boolean> {
  const v = tables(db).auditVerifications;
  const [row] = await db
    .select({ mismatches: v.rollupMismatches })
    .from(v)
    .where(and(eq(v.orgId, orgId), inArray(v.state, ["verified", "unsigned", "tampered"])))
    .orderBy(desc(v.startedAt))
    .limit(1);
  return (row?.mismatches ?? 0) > 0;
}
