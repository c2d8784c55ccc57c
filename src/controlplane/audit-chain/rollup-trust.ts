// Whether the per-hour roll-ups may be read, as the latest finished verification found them.
// Apart from verify-store.ts so budgets and usage (audit/usage.ts) ask without importing the
// verifier, which reads through the export and would close an import cycle.
import { and, desc, eq, inArray, isNotNull } from "drizzle-orm";
import { type Db, tables } from "../db/index.ts";

/**
 * What a run that checked the roll-ups and found them equal stores as `rollup_detail`. A run of
 * a release before the check stores nothing there (NULL) and 0 mismatches by the column's
 * default: during a rolling upgrade such a run, finishing after the check found a mismatch,
 * must not lift it, so only runs that checked count (rollupsDistrusted).
 */
export const ROLLUPS_EQUAL = "";

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
    .where(and(eq(v.orgId, orgId), inArray(v.state, ["verified", "unsigned", "tampered"]), isNotNull(v.rollupDetail)))
    .orderBy(desc(v.startedAt))
    .limit(1);
  return (row?.mismatches ?? 0) > 0;
}
